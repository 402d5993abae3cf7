//! Issue 44, finding 5: a request that times out must not leave its database work running.
//! `docket web` gives its PostgreSQL and MariaDB stores the request timeout as the sessions'
//! statement bound (`PgOptions::statement_timeout`, `MysqlOptions::max_statement_time`), so
//! the server ends a dashboard statement that runs past it, whatever the request does
//! meanwhile.

use super::router;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use docket_compat_tests::backends::{Mysql, Postgres};
use docket_compat_tests::harness::literal;
use docket_compat_tests::Harness;
use docket_core::{SchedulerClient, Store, StoreConfig, TableName, TaskDescriptor};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tower::ServiceExt;

const EMAIL: TaskDescriptor = TaskDescriptor::new("email");

/// How long the other session holds the table locked.
const LOCK_HELD: Duration = Duration::from_secs(4);
/// The dashboard store's statement bound in this test.
const LIMIT: Duration = Duration::from_millis(300);

/// A real slow statement: another session holds the executions table locked for 4 s
/// (PostgreSQL `LOCK TABLE ... IN ACCESS EXCLUSIVE MODE`, MariaDB `LOCK TABLES ... WRITE`), so
/// the overview's first read waits on the lock (lock waits count towards PostgreSQL's
/// `statement_timeout` and MariaDB's `max_statement_time`). With the dashboard's store opened
/// with a 300 ms bound the server cancels the read: the store answers an error naming the
/// timeout within 2 s and the overview a `503` within 2 s, long before the lock is released.
/// Without the bound the read waited the 4 s for the lock and then succeeded (checked once on
/// each backend with the bound set to `None`: the test fails at `expect_err`).
async fn a_dashboard_statement_is_ended_by_the_server_at_its_timeout(
    harness: &dyn Harness,
    bounded: impl FnOnce(&str, StoreConfig) -> Arc<dyn Store>,
    lock: &str,
    unlock: Option<&'static str>,
    says: &str,
) {
    let space = harness.space();
    let config = StoreConfig::default();
    space.migrate(&config, None);
    let plain = space.store(config.clone(), None);
    SchedulerClient::new(plain)
        .unwrap()
        .schedule(EMAIL.instance("1"))
        .unwrap();
    let bounded = bounded(&space.url(), config);
    let web = super::tests_bad_rows::open_dashboard(bounded.clone());

    let foreign = space.foreign();
    let table = docket_compat_tests::harness::table_sql(foreign.dialect(), &TableName::default());
    let lock = lock.replace("{table}", &table);
    let (locked, is_locked) = mpsc::channel();
    let holder = std::thread::spawn(move || {
        foreign
            .transaction(&mut |s| {
                s.execute(&literal(&lock))?;
                let _ = locked.send(());
                std::thread::sleep(LOCK_HELD);
                if let Some(unlock) = unlock {
                    s.execute(&literal(unlock))?;
                }
                Ok(())
            })
            .unwrap();
    });
    is_locked.recv().unwrap();

    // The store's own read: cancelled by the server.
    let started = Instant::now();
    let read = tokio::task::spawn_blocking(move || bounded.execution_summary())
        .await
        .unwrap();
    let took = started.elapsed();
    let err = read.expect_err("the lock is held: the read cannot succeed in time");
    assert!(err.to_string().contains(says), "the server ended it: {err}");
    assert!(took < Duration::from_secs(2), "ended after {took:?}");

    // The same through the dashboard: a 503 long before the lock is released.
    let started = Instant::now();
    let req = Request::get("/api/overview")
        .header(header::HOST, "localhost")
        .body(Body::empty())
        .unwrap();
    let res = router(web).oneshot(req).await.unwrap();
    let took = started.elapsed();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    holder.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dashboard_statement_is_ended_by_the_server_at_its_timeout_on_postgres() {
    let bounded = |url: &str, config| -> Arc<dyn Store> {
        let options = docket_postgres::PgOptions {
            statement_timeout: Some(LIMIT),
            ..docket_postgres::PgOptions::default()
        };
        Arc::new(docket_postgres::connect_with(url, config, &options).unwrap())
    };
    a_dashboard_statement_is_ended_by_the_server_at_its_timeout(
        &Postgres,
        bounded,
        "LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE",
        None,
        "statement timeout",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dashboard_statement_is_ended_by_the_server_at_its_timeout_on_mariadb() {
    let bounded = |url: &str, config| -> Arc<dyn Store> {
        let options = docket_mysql::MysqlOptions {
            max_statement_time: Some(LIMIT),
            ..docket_mysql::MysqlOptions::default()
        };
        Arc::new(docket_mysql::connect_with(url, config, &options).unwrap())
    };
    a_dashboard_statement_is_ended_by_the_server_at_its_timeout(
        &Mysql,
        bounded,
        "LOCK TABLES {table} WRITE",
        Some("UNLOCK TABLES"),
        "max_statement_time exceeded",
    )
    .await;
}
