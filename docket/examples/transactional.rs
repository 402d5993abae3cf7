//! Transactional enqueue: schedule with the application's own diesel connection, inside its
//! transaction. The execution exists if and only if that transaction commits: a rollback
//! leaves neither the application's row nor the job. The store here shares the application's
//! r2d2 pool (`docket::sqlite::from_pool`).
//!
//! `cargo run -p docket --example transactional`

mod common;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::{Connection, RunQueryDsl, SqliteConnection};
use docket::sqlite::{Pragmas, SqliteOptions};
use docket::{
    ExecutionKey, ScheduleInTransaction, ScheduleOutcome, Scheduler, StoreConfig, Task,
    TaskDescriptor,
};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Serialize, Deserialize)]
struct Welcome {
    user: String,
}

const WELCOME: TaskDescriptor<Welcome> = TaskDescriptor::new("welcome");

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Signs a user up: their row and their welcome job, in one transaction that commits only
/// when `commit` is true.
fn sign_up(
    conn: &mut SqliteConnection,
    store: &docket::sqlite::SqliteStore,
    user: &str,
    commit: bool,
) -> Result<(), Error> {
    conn.transaction(|conn| {
        diesel::sql_query("INSERT INTO users (name) VALUES (?)")
            .bind::<diesel::sql_types::Text, _>(user)
            .execute(conn)?;
        let outcome = store.schedule_in(
            conn,
            WELCOME.instance(user).data(Welcome { user: user.into() }),
        )?;
        assert_eq!(outcome, ScheduleOutcome::Scheduled);
        if commit {
            Ok(())
        } else {
            Err("payment declined: roll back".into())
        }
    })
}

fn main() -> Result<(), Error> {
    let (_dir, url) = common::temp_database()?;
    let path = docket::sqlite::database_path(&url).to_owned();
    // The application's own pool, with docket's pragmas (busy timeout, WAL).
    let pool = Pool::builder()
        .max_size(4)
        .connection_customizer(Box::new(Pragmas::new(&SqliteOptions::default())))
        .build(ConnectionManager::<SqliteConnection>::new(path))?;
    pool.get()?
        .batch_execute("CREATE TABLE users (name TEXT PRIMARY KEY)")?;
    let store = Arc::new(docket::sqlite::from_pool(
        pool.clone(),
        StoreConfig::default(),
    )?);
    docket::sqlite::migrate(&store, None)?;

    let mut conn = pool.get()?;
    let declined = sign_up(&mut conn, &store, "mallory", false);
    println!(
        "mallory: {}",
        declined.err().map(|e| e.to_string()).unwrap_or_default()
    );
    sign_up(&mut conn, &store, "ada", true)?;
    drop(conn);

    let welcomed = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&welcomed);
    let scheduler = Scheduler::builder(store.clone())
        .task(Task::typed(WELCOME, move |welcome: Welcome, _| {
            println!("welcome, {}!", welcome.user);
            count.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }))
        .config(common::quick_config("transactional-example", 1))
        .build()?;
    let client = scheduler.client();
    assert!(
        client
            .get(&ExecutionKey::new("welcome", "mallory"))?
            .is_none(),
        "the rolled-back transaction left no job"
    );
    scheduler.start()?;
    common::wait_until("ada's welcome", || welcomed.load(Ordering::SeqCst) == 1)?;
    scheduler.stop();
    assert_eq!(
        welcomed.load(Ordering::SeqCst),
        1,
        "only the committed sign-up ran"
    );

    // Outside a transaction, schedule_in refuses (the insert would commit on its own).
    let mut conn = pool.get()?;
    let refused = store.schedule_in(&mut conn, WELCOME.instance("no-tx"));
    println!(
        "outside a transaction: {}",
        refused
            .as_ref()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    );
    assert!(refused.is_err());
    Ok(())
}
