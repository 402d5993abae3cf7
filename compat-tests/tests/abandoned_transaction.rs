//! A docket transaction whose client stops sending mid-way (cut off by a partition, paused,
//! killed without the server noticing) must not hold its row locks until the server notices
//! the lost connection. The reliability suite's partition case saw it: the victim was cut off
//! inside a completion batch, both survivors' dead detection waited on its locks for the whole
//! cut, and nothing was revived. docket's transactions carry an idle timeout
//! (`docket_diesel::IDLE_IN_TRANSACTION_TIMEOUT`), so the server ends such a transaction.
//!
//! Here a transaction changes a row, then its client sleeps (standing for the cut-off
//! process); another session's update of that row must go through while it still sleeps, and
//! the sleeper's change must be rolled back. A caller-paced transaction (a stream of items
//! read as they are inserted) is exempt: it may wait longer than the timeout and commit, and
//! the session keeps its setting afterwards.

use docket::StoreConfig;
use docket_compat_tests::backends::{Mysql, Postgres};
use docket_compat_tests::Harness;
use docket_core::dialect::Rendered;
use docket_core::store::sql::SqlConnector;
use docket_diesel::IDLE_IN_TRANSACTION_TIMEOUT;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

fn sql(text: &str) -> Rendered {
    Rendered::text(text.to_owned())
}

fn abandoned<C: SqlConnector + Clone + Send + 'static>(connector: C, create: &str) {
    connector
        .with_session(&mut |s| {
            s.execute(&sql(create))?;
            s.execute(&sql("INSERT INTO t VALUES (1, 0)"))
        })
        .expect("creates t");
    let woke = Arc::new(AtomicBool::new(false));
    let (began, wait_for_begin) = mpsc::channel();
    {
        let (woke, connector) = (Arc::clone(&woke), connector.clone());
        std::thread::spawn(move || {
            connector.in_transaction(&mut |s| {
                s.execute(&sql("UPDATE t SET v = v + 1 WHERE id = 1"))?;
                let _ = began.send(());
                std::thread::sleep(IDLE_IN_TRANSACTION_TIMEOUT * 3);
                woke.store(true, Ordering::SeqCst);
                s.execute(&sql("SELECT 1"))
            })
        });
    }
    wait_for_begin.recv().expect("the transaction began");

    // Waits for the abandoned transaction's row lock: until the server ends it.
    let changed = connector
        .with_session(&mut |s| s.execute(&sql("UPDATE t SET v = v + 10 WHERE id = 1")))
        .expect("updates the row");
    assert_eq!(changed, 1);
    assert!(
        !woke.load(Ordering::SeqCst),
        "the row stayed locked until its abandoned client woke up"
    );
    let mut rows = connector
        .with_session(&mut |s| s.query(&sql("SELECT v FROM t WHERE id = 1")))
        .expect("reads the row");
    assert_eq!(
        rows[0].i64("v").expect("v"),
        10,
        "the abandoned transaction's change was rolled back"
    );
}

#[test]
fn postgres_ends_a_docket_transaction_its_client_abandoned() {
    let space = Postgres.space();
    let store = docket_postgres::connect(&space.url(), StoreConfig::default()).expect("opens");
    abandoned(
        store.connector().clone(),
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)",
    );
}

#[test]
fn mariadb_ends_a_docket_transaction_its_client_abandoned() {
    let space = Mysql.space();
    let store = docket_mysql::connect(&space.url(), StoreConfig::default()).expect("opens");
    abandoned(
        store.connector().clone(),
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB",
    );
}

/// A caller-paced transaction outwaits the timeout and commits; `setting` then reads the
/// session's timeout on the pool's only connection, which must be `expected` again.
fn paced<C: SqlConnector>(connector: C, create: &str, setting: &str, expected: &str) {
    connector
        .with_session(&mut |s| {
            s.execute(&sql(create))?;
            s.execute(&sql("INSERT INTO t VALUES (1, 0)"))
        })
        .expect("creates t");
    connector
        .in_caller_paced_transaction(&mut |s| {
            s.execute(&sql("UPDATE t SET v = v + 1 WHERE id = 1"))?;
            std::thread::sleep(IDLE_IN_TRANSACTION_TIMEOUT + Duration::from_secs(3));
            s.execute(&sql("UPDATE t SET v = v + 1 WHERE id = 1"))
        })
        .expect("a caller-paced transaction outwaits the idle timeout");
    let mut rows = connector
        .with_session(&mut |s| s.query(&sql("SELECT v FROM t WHERE id = 1")))
        .expect("reads the row");
    assert_eq!(rows[0].i64("v").expect("v"), 2);
    let mut rows = connector
        .with_session(&mut |s| s.query(&sql(setting)))
        .expect("reads the setting");
    assert_eq!(rows[0].text("t").expect("t"), expected);
}

#[test]
fn postgres_caller_paced_transaction_is_exempt() {
    let space = Postgres.space();
    let options = docket_postgres::PgOptions {
        max_connections: 1,
        ..Default::default()
    };
    let store = docket_postgres::connect_with(&space.url(), StoreConfig::default(), &options)
        .expect("opens");
    paced(
        store.connector().clone(),
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)",
        "SELECT current_setting('idle_in_transaction_session_timeout') AS t",
        "0",
    );
}

#[test]
fn mariadb_caller_paced_transaction_is_exempt() {
    let space = Mysql.space();
    let options = docket_mysql::MysqlOptions {
        max_connections: 1,
        ..Default::default()
    };
    let store =
        docket_mysql::connect_with(&space.url(), StoreConfig::default(), &options).expect("opens");
    paced(
        store.connector().clone(),
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL) ENGINE=InnoDB",
        "SELECT CAST(@@SESSION.idle_transaction_timeout AS CHAR) AS t",
        &IDLE_IN_TRANSACTION_TIMEOUT.as_secs().to_string(),
    );
}
