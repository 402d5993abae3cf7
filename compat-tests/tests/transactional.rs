//! Transactional enqueue and stores on the application's own pool, live on PostgreSQL,
//! MySQL/MariaDB and SQLite: the store comes from `from_pool` on a pool the test built, and the
//! application's transaction (on a connection of that pool) schedules with `schedule_in`. A
//! rollback leaves neither the application's row nor the job; a commit leaves both, and a
//! scheduler runs the job.

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, Pool, R2D2Connection};
use diesel::sql_types::BigInt;
use diesel::{Connection, QueryableByName, RunQueryDsl};
use docket::scheduler::PollingStrategy;
use docket::store::ExecutionStore;
use docket::{
    DocketError, ExecutionKey, ScheduleInTransaction, ScheduleOutcome, Scheduler, SchedulerClient,
    SchedulerConfig, StoreConfig, Task, TaskDescriptor,
};
use docket_compat_tests::backends::{Mysql, Postgres, Sqlite};
use docket_compat_tests::Harness;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Welcome {
    user: String,
}

const WELCOME: TaskDescriptor<Welcome> = TaskDescriptor::new("welcome");

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn users<C: Connection>(conn: &mut C, name: &str) -> i64
where
    Count: QueryableByName<C::Backend>,
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Count>,
{
    diesel::sql_query(format!(
        "SELECT COUNT(*) AS n FROM app_users WHERE name = '{name}'"
    ))
    .get_result::<Count>(conn)
    .expect("count users")
    .n
}

/// The scenario, on one backend: `store` was made by `from_pool(pool)`.
fn scenario<S, C, M>(store: Arc<S>, pool: Pool<M>)
where
    S: ScheduleInTransaction<Connection = C> + ExecutionStore + 'static,
    C: R2D2Connection + 'static,
    M: diesel::r2d2::ManageConnection<Connection = C>,
    Count: QueryableByName<C::Backend>,
    diesel::query_builder::SqlQuery: diesel::query_dsl::LoadQuery<'static, C, Count>,
{
    let client = SchedulerClient::new(store.clone()).expect("client");
    let mut pooled = pool.get().expect("a connection of the application's pool");
    let conn: &mut C = &mut pooled;
    conn.batch_execute("CREATE TABLE app_users (name VARCHAR(50) PRIMARY KEY)")
        .expect("create the application's table");
    let mallory = ExecutionKey::new("welcome", "mallory");
    let ada = ExecutionKey::new("welcome", "ada");

    // Rolled back: neither the user nor the job.
    let rolled_back: Result<(), BoxError> = conn.transaction(|tx| {
        tx.batch_execute("INSERT INTO app_users (name) VALUES ('mallory')")?;
        let outcome = store.schedule_in(
            tx,
            WELCOME.instance("mallory").data(Welcome {
                user: "mallory".into(),
            }),
        )?;
        assert_eq!(outcome, ScheduleOutcome::Scheduled);
        Err("declined".into())
    });
    assert_eq!(rolled_back.unwrap_err().to_string(), "declined");
    assert_eq!(
        users(conn, "mallory"),
        0,
        "the application's row rolled back"
    );
    assert_eq!(
        client.get(&mallory).unwrap(),
        None,
        "a rollback leaves no job"
    );

    // Committed: both. Before the commit, nobody else sees the job; a second schedule_in of the
    // same instance reports it exists and leaves the transaction usable.
    let committed: Result<(), BoxError> = conn.transaction(|tx| {
        tx.batch_execute("INSERT INTO app_users (name) VALUES ('ada')")?;
        let welcome = || WELCOME.instance("ada").data(Welcome { user: "ada".into() });
        assert_eq!(
            store.schedule_in(tx, welcome())?,
            ScheduleOutcome::Scheduled
        );
        assert_eq!(
            store.schedule_in(tx, welcome())?,
            ScheduleOutcome::AlreadyExists
        );
        assert_eq!(
            store.schedule_batch_in(
                tx,
                [
                    welcome(),
                    WELCOME
                        .instance("ada-2")
                        .data(Welcome { user: "ada".into() })
                ]
            )?,
            1,
            "the batch skips the existing instance"
        );
        assert_eq!(
            client.get(&ada).unwrap(),
            None,
            "not visible outside the transaction before it commits"
        );
        Ok(())
    });
    committed.expect("the transaction commits");
    assert_eq!(users(conn, "ada"), 1);
    let row = client.get(&ada).unwrap().expect("a commit leaves the job");
    assert_eq!(
        row.data::<Welcome>().unwrap(),
        Some(Welcome { user: "ada".into() })
    );
    assert!(
        (row.execution_time - chrono::Utc::now())
            .num_seconds()
            .abs()
            < 60,
        "due now, in UTC whatever the session: {}",
        row.execution_time
    );

    // Outside a transaction it is refused and nothing is written.
    let refused = store.schedule_in(conn, WELCOME.instance("no-tx"));
    assert!(
        matches!(refused, Err(DocketError::NotInTransaction)),
        "{refused:?}"
    );
    assert_eq!(
        client.get(&ExecutionKey::new("welcome", "no-tx")).unwrap(),
        None
    );
    drop(pooled);

    // The committed jobs run.
    let ran = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = Arc::clone(&ran);
    let scheduler = Scheduler::builder(store.clone())
        .task(Task::typed(WELCOME, move |w: Welcome, ctx| {
            record
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(format!("{}:{}", ctx.key.task_instance, w.user));
            Ok(())
        }))
        .config(SchedulerConfig {
            threads: 2,
            polling: PollingStrategy::lock_and_fetch(),
            polling_interval: Duration::from_millis(50),
            shutdown_max_wait: Duration::from_secs(5),
            scheduler_name: "transactional".into(),
            ..SchedulerConfig::default()
        })
        .build()
        .expect("scheduler");
    scheduler.start().expect("start");
    let deadline = Instant::now() + Duration::from_secs(20);
    while ran.lock().unwrap_or_else(PoisonError::into_inner).len() < 2 && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    scheduler.stop();
    let mut ran = ran.lock().unwrap_or_else(PoisonError::into_inner).clone();
    ran.sort();
    assert_eq!(
        ran,
        ["ada-2:ada", "ada:ada"],
        "the committed jobs ran, the rolled-back one did not"
    );
}

#[test]
fn postgres_rollback_leaves_no_job_commit_runs_it() {
    let space = Postgres.space();
    let pool = Pool::builder()
        .max_size(6)
        .build(ConnectionManager::<diesel::PgConnection>::new(space.url()))
        .expect("the application's pool");
    let store = docket::postgres::from_pool(pool.clone(), StoreConfig::default()).expect("store");
    docket::postgres::migrate(&store, None).expect("migrate");
    scenario(Arc::new(store), pool);
}

#[test]
fn mysql_rollback_leaves_no_job_commit_runs_it() {
    let space = Mysql.space();
    let pool = Pool::builder()
        .max_size(6)
        .build(docket::mysql::MysqlManager::new(&space.url()))
        .expect("the application's pool");
    let store = docket::mysql::from_pool(pool.clone(), StoreConfig::default()).expect("store");
    docket::mysql::migrate(&store, None).expect("migrate");
    scenario(Arc::new(store), pool);
}

#[test]
fn sqlite_rollback_leaves_no_job_commit_runs_it() {
    let space = Sqlite.space();
    let path = docket::sqlite::database_path(&space.url()).to_owned();
    let pool = Pool::builder()
        .max_size(6)
        .connection_customizer(Box::new(docket::sqlite::Pragmas::new(
            &docket::sqlite::SqliteOptions::default(),
        )))
        .build(ConnectionManager::<diesel::SqliteConnection>::new(path))
        .expect("the application's pool");
    let store = docket::sqlite::from_pool(pool.clone(), StoreConfig::default()).expect("store");
    docket::sqlite::migrate(&store, None).expect("migrate");
    scenario(Arc::new(store), pool);
}

/// A MySQL pool whose sessions are not in strict SQL mode is refused: docket relies on it.
#[test]
fn mysql_from_pool_refuses_a_non_strict_pool() {
    #[derive(Debug)]
    struct Lax;
    impl diesel::r2d2::CustomizeConnection<diesel::MysqlConnection, diesel::r2d2::Error> for Lax {
        fn on_acquire(
            &self,
            conn: &mut diesel::MysqlConnection,
        ) -> Result<(), diesel::r2d2::Error> {
            conn.batch_execute("SET SESSION sql_mode = ''")
                .map_err(diesel::r2d2::Error::QueryError)
        }
    }
    let space = Mysql.space();
    let pool = Pool::builder()
        .max_size(1)
        .connection_customizer(Box::new(Lax))
        .build(docket::mysql::MysqlManager::new(&space.url()))
        .expect("the application's pool");
    let err = docket::mysql::from_pool(pool, StoreConfig::default()).unwrap_err();
    assert!(err.to_string().contains("strict SQL mode"), "{err}");
}
