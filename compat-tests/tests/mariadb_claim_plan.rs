//! The work queue's claim reads items in index order and checks each candidate against the
//! assignments primary key (`NOT EXISTS`). MariaDB may turn that check into an uncorrelated
//! `IN` and materialize it, and a prepared statement keeps the strategy its first run chose.
//! The MariaDB soak met it: the claim's candidate statement went on copying the worker's whole
//! assignment history into a temporary table on every claim (44,890 rows read by scan per run
//! in a reproduction with 33,000 assignments, 0.3 to 1.6 s against 2 ms for the same statement
//! prepared again), and the queue taker fell behind. docket's MariaDB sessions therefore run
//! with `docket_mysql::MARIADB_OPTIMIZER_SWITCH` (`exists_to_in=off`; docs/RELIABILITY.md,
//! "Found").
//!
//! A test that makes a docket session's cached statement pick materialization was not found
//! (the reproduction needs a client of its own; see RELIABILITY.md), so this one holds the
//! setting: every session of a pool docket opens runs with it, and the claim's candidate
//! statement, cached on that session, reads the open items by key.

use docket::StoreConfig;
use docket_compat_tests::backends::Mysql;
use docket_compat_tests::Harness;
use docket_core::dialect::{Rendered, Statements};
use docket_core::records::ForWorker;
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::{OrderingPolicy, PrimaryOrder, TableName};

fn sql(text: &str) -> Rendered {
    Rendered::text(text.to_owned())
}

#[test]
fn mariadb_sessions_keep_the_claims_assignment_check_a_key_probe() {
    let space = Mysql.space();
    let options = docket_mysql::MysqlOptions {
        max_connections: 2,
        ..Default::default()
    };
    let store =
        docket_mysql::connect_with(&space.url(), StoreConfig::default(), &options).expect("opens");
    docket_mysql::migrate(&store, None).expect("migrates");
    let connector = store.connector().clone();

    // Both connections of the pool: hold one while reading the other.
    let switch = "SELECT @@SESSION.optimizer_switch AS s";
    let read = |c: &docket_mysql::MysqlConnector| {
        c.with_session(&mut |s| s.query(&sql(switch)))
            .expect("reads the switch")[0]
            .text("s")
            .expect("s")
    };
    let outer = connector
        .with_session(&mut |_| Ok(read(&connector)))
        .expect("holds a session");
    for setting in [outer, read(&connector)] {
        assert!(
            setting.split(',').any(|flag| flag == "exists_to_in=off"),
            "{setting}"
        );
    }

    // The candidate statement over taken and open items: only the open ones, each found by
    // key (no scan of the assignments).
    connector
        .with_session(&mut |s| {
            s.execute(&sql(
                "INSERT INTO scheduled_tasks (task_name, task_instance, execution_time, picked, \
                 version, priority, record_date, record_order, max_assignments, assignments, \
                 assignable) SELECT 'review', CONCAT('i-', seq), NOW(6) - INTERVAL 1 HOUR, 0, 1, \
                 1 + seq % 10, NOW(6) - INTERVAL 1 HOUR, seq, 1, seq % 2, 1 - seq % 2 \
                 FROM seq_1_to_2000",
            ))?;
            s.execute(&sql(
                "INSERT INTO scheduled_tasks_assignments (task_name, task_instance, worker, \
                 status, deadline, assigned_at, updated_at) SELECT 'review', CONCAT('i-', seq), \
                 'w1', 'SUBMITTED', NOW(6), NOW(6), NOW(6) FROM seq_1_to_2000 WHERE seq % 2 = 1",
            ))
        })
        .expect("inserts items");
    let statements = Statements::new(
        &docket_mysql::MysqlDialect::MARIADB,
        TableName::default(),
        OrderingPolicy {
            priority: true,
            ..OrderingPolicy::default()
        },
    );
    let order = PrimaryOrder::Fifo;
    let scanned = "SHOW SESSION STATUS LIKE 'Handler_read_rnd_next'";
    let (found, read) = connector
        .with_session(&mut |s| {
            let count = |s: &mut dyn SqlSession| -> Result<u64, docket_core::StoreError> {
                let mut rows = s.query(&sql(scanned))?;
                Ok(rows[0].text("Value")?.parse::<u64>().unwrap_or(u64::MAX))
            };
            let mut found = 0;
            let before = count(s)?;
            for _ in 0..3 {
                let q = ForWorker::new("w1", "review", &order, chrono::Utc::now());
                found = s
                    .query(&statements.item_eligible(&q, Some(8), false))?
                    .len();
            }
            Ok((found, count(s)?.saturating_sub(before)))
        })
        .expect("reads candidates");
    assert_eq!(found, 8);
    assert!(
        read < 1_000,
        "{read} rows read by scan for 3 x 8 candidates"
    );
}
