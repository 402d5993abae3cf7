//! A query that fails on the server while its rows are read must not leave its connection in
//! the pool. On MariaDB a deadlock victim's locking read gets its error after the result's
//! column metadata; libmariadb then keeps the cached prepared statement marked as having rows
//! to read, and the statement's next execution on that connection waits for them forever (a
//! reliability worker's poller hung so on a contention retry). docket's MySQL family drops such
//! a connection once its transaction has rolled back.
//!
//! The case makes that deadlock on purpose, on a pool of one connection with the statement
//! cache on, then runs the same statement again: it must answer.

use diesel::connection::SimpleConnection;
use diesel::{Connection, MysqlConnection};
use docket::StoreConfig;
use docket_compat_tests::backends::Mysql;
use docket_compat_tests::Harness;
use docket_core::dialect::{Dialect, Rendered, SqlWriter};
use docket_core::store::sql::SqlConnector;
use docket_mysql::MysqlOptions;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `SELECT id, v FROM t WHERE id >= ? ORDER BY id FOR UPDATE`: one bind, so the pool keeps it
/// prepared.
fn locking_read(dialect: &dyn Dialect) -> Rendered {
    let mut w = SqlWriter::new(dialect);
    w.push("SELECT id, v FROM t WHERE id >= ")
        .bind(1_i64)
        .push(" ORDER BY id FOR UPDATE");
    w.finish()
}

/// Waits until the locking read has run for a second (it waits for row 2's lock; InnoDB's
/// own lock-wait tables lag behind).
fn until_a_lock_wait(other: &mut MysqlConnection) {
    use diesel::sql_types::BigInt;
    use diesel::{QueryableByName, RunQueryDsl};
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let waits: N = diesel::sql_query(
            "SELECT COUNT(*) AS n FROM information_schema.processlist \
             WHERE info LIKE 'SELECT id, v FROM t %' AND time >= 1",
        )
        .get_result(other)
        .expect("reads innodb_trx");
        if waits.n > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "the locking read never waited");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn mysql_drops_a_connection_whose_read_failed_mid_result() {
    let space = Mysql.space();
    let url = space.url();
    let mut other = MysqlConnection::establish(&url).expect("connects");
    other
        .batch_execute(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB; \
             INSERT INTO t VALUES (1, 0), (2, 0), (3, 0), (4, 0)",
        )
        .expect("creates t");
    let options = MysqlOptions {
        max_connections: 1,
        statement_cache: true,
        ..MysqlOptions::default()
    };
    let store =
        docket_mysql::connect_with(&url, StoreConfig::default(), &options).expect("opens a pool");
    let connector = store.connector().clone();
    let read = locking_read(connector.dialect());

    // The other session changes rows 2-4 first, so it outweighs the reader and InnoDB picks
    // the reader as the deadlock's victim.
    other
        .batch_execute(
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; BEGIN; \
             UPDATE t SET v = v + 1 WHERE id = 2; UPDATE t SET v = v + 1 WHERE id = 3; \
             UPDATE t SET v = v + 1 WHERE id = 4",
        )
        .expect("locks rows 2-4");
    let reader = {
        let (connector, read) = (connector.clone(), read.clone());
        std::thread::spawn(move || {
            connector.in_transaction(&mut |s| {
                // Row 1 first, then the whole range: it returns row 1 and waits for row 2.
                s.query(&Rendered::text(
                    "SELECT id FROM t WHERE id = 1 FOR UPDATE".to_owned(),
                ))?;
                s.query(&read)?;
                Ok(())
            })
        })
    };
    until_a_lock_wait(&mut other);
    // The other session now wants row 1, which the reader holds: a deadlock.
    other
        .batch_execute("UPDATE t SET v = v + 1 WHERE id = 1")
        .expect("the other session wins the deadlock");
    other.batch_execute("COMMIT").expect("commits");
    let err = reader
        .join()
        .expect("reader thread")
        .expect_err("the reader is the deadlock's victim");
    assert!(
        err.to_string().to_lowercase().contains("deadlock"),
        "unexpected error: {err}"
    );

    // The same cached statement again, on the pool's one connection. Without the fix this
    // waits forever; a thread and a generous bound turn that into a failure.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let rows = connector.with_session(&mut |s| s.query(&read));
        let _ = tx.send(rows.map(|r| r.len()));
    });
    let rows = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the statement answered after the failed read (it hung: the connection was reused)")
        .expect("the statement runs");
    assert_eq!(rows, 4);
}
