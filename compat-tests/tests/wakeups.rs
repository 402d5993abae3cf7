//! Wake-ups across processes, live: a job scheduled through a store and client of its own (no
//! waker shared with the scheduler, as from another process) starts long before the
//! scheduler's next poll. On PostgreSQL the scheduler `LISTEN`s and the client `NOTIFY`s
//! (`schedule`, and `schedule_in` inside the caller's transaction); turning the listener off
//! restores polling only. On MariaDB, which cannot signal, the short poll finds it.
//!
//! The polling interval is 30 s and every job is scheduled after the scheduler's first poll,
//! so a start within 2 s can only be a wake-up (or the short poll).

use diesel::connection::SimpleConnection;
use diesel::sql_types::{Integer, Text};
use diesel::{Connection, QueryableByName, RunQueryDsl};
use docket::scheduler::{FailurePolicy, Retry};
use docket::store::{ExecutionStore, TableName};
use docket::{
    ScheduleInTransaction, Scheduler, SchedulerClient, SchedulerConfig, StoreConfig, Task,
    TaskDescriptor, TaskError,
};
use docket_compat_tests::backends::{Mysql, Postgres};
use docket_compat_tests::Harness;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

const PING: TaskDescriptor<()> = TaskDescriptor::new("ping");

const POLLING: Duration = Duration::from_secs(30);

/// When each instance's handler started.
type Started = Arc<Mutex<HashMap<String, Instant>>>;

fn scheduler(store: Arc<dyn ExecutionStore>, config: SchedulerConfig) -> (Scheduler, Started) {
    let started: Started = Arc::default();
    let record = Arc::clone(&started);
    let scheduler = Scheduler::builder(store)
        .task(Task::typed(PING, move |(), ctx| {
            record
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(ctx.key.task_instance.clone(), Instant::now());
            Ok(())
        }))
        .config(SchedulerConfig {
            threads: 2,
            polling_interval: POLLING,
            shutdown_max_wait: Duration::from_secs(5),
            scheduler_name: "wakeups".into(),
            ..config
        })
        .build()
        .expect("scheduler");
    scheduler.start().expect("start");
    // Past the first poll (it runs at start), so only a wake-up or the short poll can be
    // quick from here on.
    std::thread::sleep(Duration::from_millis(500));
    (scheduler, started)
}

/// Waits up to `within` for `instance` to start; how long after `since` it did.
fn started_within(
    started: &Started,
    instance: &str,
    since: Instant,
    within: Duration,
) -> Option<Duration> {
    let deadline = since + within;
    loop {
        if let Some(at) = started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(instance)
        {
            return Some(at.saturating_duration_since(since));
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn postgres_a_job_scheduled_by_another_client_starts_on_notify() {
    let space = Postgres.space();
    let config = StoreConfig::default();
    space.migrate(&config, None);
    let (scheduler, started) = scheduler(
        space.store(config.clone(), None),
        SchedulerConfig::default(),
    );

    // Another store (its own pool) and a client without the scheduler's waker.
    let producer =
        Arc::new(docket::postgres::connect(&space.url(), config).expect("producer store"));
    let client = SchedulerClient::new(producer.clone()).expect("client");
    for instance in ["first", "second"] {
        let at = Instant::now();
        client.schedule(PING.instance(instance)).expect("schedule");
        let took = started_within(&started, instance, at, Duration::from_secs(2));
        assert!(
            took.is_some(),
            "{instance}: not started within 2 s of its commit (polling interval {POLLING:?})"
        );
    }

    // Inside the application's transaction: signalled on commit, not before.
    let mut conn = diesel::PgConnection::establish(&space.url()).expect("application connection");
    let at = Instant::now();
    conn.transaction(|tx| {
        producer
            .schedule_in(tx, PING.instance("in-tx"))
            .map_err(|e| diesel::result::Error::QueryBuilderError(Box::new(e)))?;
        // Held open: the job is invisible and the signal unsent until the commit.
        std::thread::sleep(Duration::from_millis(300));
        Ok::<_, diesel::result::Error>(())
    })
    .expect("transaction commits");
    let took = started_within(&started, "in-tx", at, Duration::from_secs(2));
    assert!(
        took.is_some_and(|t| t >= Duration::from_millis(300)),
        "in-tx: expected to start after the commit and within 2 s of it, got {took:?}"
    );
    conn.batch_execute("SELECT 1").expect("connection usable");
    assert!(scheduler.stop());
}

#[test]
fn postgres_without_the_listener_a_job_waits_for_the_poll() {
    let space = Postgres.space();
    let config = StoreConfig::default();
    space.migrate(&config, None);
    let (scheduler, started) = scheduler(
        space.store(config.clone(), None),
        SchedulerConfig {
            wake_listener: false,
            ..SchedulerConfig::default()
        },
    );
    let producer = docket::postgres::connect(&space.url(), config).expect("producer store");
    let client = SchedulerClient::new(Arc::new(producer)).expect("client");
    let at = Instant::now();
    client.schedule(PING.instance("polled")).expect("schedule");
    let took = started_within(&started, "polled", at, Duration::from_secs(1));
    assert_eq!(
        took, None,
        "with wake_listener off the job must wait for the next poll ({POLLING:?})"
    );
    assert!(scheduler.stop());
}

#[test]
fn mysql_a_job_scheduled_by_another_client_starts_at_the_short_poll() {
    let space = Mysql.space();
    let config = StoreConfig::default();
    space.migrate(&config, None);
    let (scheduler, started) = scheduler(
        space.store(config.clone(), None),
        SchedulerConfig::default(),
    );
    let client = SchedulerClient::new(space.store(config, None)).expect("client");
    // Idle for a while: the short poll has backed off to its longest wait (1 s).
    std::thread::sleep(Duration::from_secs(2));
    let at = Instant::now();
    client.schedule(PING.instance("probed")).expect("schedule");
    let took = started_within(&started, "probed", at, Duration::from_secs(2));
    assert!(
        took.is_some(),
        "not started within 2 s with the short poll on (polling interval {POLLING:?})"
    );
    assert!(scheduler.stop());
}

#[test]
fn mysql_without_the_short_poll_a_job_waits_for_the_poll() {
    let space = Mysql.space();
    let config = StoreConfig::default();
    space.migrate(&config, None);
    let (scheduler, started) = scheduler(
        space.store(config.clone(), None),
        SchedulerConfig {
            short_poll: None,
            ..SchedulerConfig::default()
        },
    );
    let client = SchedulerClient::new(space.store(config, None)).expect("client");
    let at = Instant::now();
    client.schedule(PING.instance("polled")).expect("schedule");
    assert_eq!(
        started_within(&started, "polled", at, Duration::from_secs(1)),
        None,
        "with short_poll off the job must wait for the next poll ({POLLING:?})"
    );
    assert!(scheduler.stop());
}

#[derive(QueryableByName)]
struct Pid {
    #[diesel(sql_type = Integer)]
    pid: i32,
}

/// The server processes of the connections whose last statement was `LISTEN` on `channel`
/// (a listener runs nothing else in its first 30 s).
fn listeners(conn: &mut diesel::PgConnection, channel: &str) -> Vec<i32> {
    diesel::sql_query("SELECT pid FROM pg_stat_activity WHERE query = $1")
        .bind::<Text, _>(format!("LISTEN \"{channel}\""))
        .load::<Pid>(conn)
        .expect("pg_stat_activity")
        .into_iter()
        .map(|p| p.pid)
        .collect()
}

/// A listener whose connection the server ends listens again, and wake-ups work after it.
#[test]
fn postgres_a_lost_listener_listens_again() {
    let space = Postgres.space();
    // A table name of its own: a channel no other test listens on.
    let config = StoreConfig {
        table: TableName::parse("wake_reconnect").expect("table name"),
        ..StoreConfig::default()
    };
    space.migrate(&config, None);
    let (scheduler, started) = scheduler(
        space.store(config.clone(), None),
        SchedulerConfig::default(),
    );
    let mut admin = diesel::PgConnection::establish(&space.url()).expect("admin connection");
    let channel = "docket_wake_reconnect";
    let before = listeners(&mut admin, channel);
    assert_eq!(before.len(), 1, "one listener: {before:?}");
    diesel::sql_query("SELECT pg_terminate_backend($1)")
        .bind::<Integer, _>(before[0])
        .execute(&mut admin)
        .expect("terminate the listener's connection");
    // Reopened after a 100 ms backoff.
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let now = listeners(&mut admin, channel);
        if !now.is_empty() && now != before {
            break now;
        }
        assert!(Instant::now() < deadline, "no new listener within 5 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(after.len(), 1, "one listener again: {after:?}");
    let producer = docket::postgres::connect(&space.url(), config).expect("producer store");
    let client = SchedulerClient::new(Arc::new(producer)).expect("client");
    let at = Instant::now();
    client.schedule(PING.instance("after")).expect("schedule");
    assert!(
        started_within(&started, "after", at, Duration::from_secs(2)).is_some(),
        "not woken after the listener reconnected"
    );
    assert!(scheduler.stop());
}

/// A burst of single-row transactions is debounced: far fewer notifications than jobs.
#[test]
fn postgres_a_burst_of_schedules_sends_few_notifications() {
    let space = Postgres.space();
    let config = StoreConfig {
        table: TableName::parse("wake_burst").expect("table name"),
        ..StoreConfig::default()
    };
    space.migrate(&config, None);
    let mut listener = diesel::PgConnection::establish(&space.url()).expect("listener");
    listener
        .batch_execute("LISTEN \"docket_wake_burst\"")
        .expect("listen");
    let producer = docket::postgres::connect(&space.url(), config).expect("producer store");
    let client = SchedulerClient::new(Arc::new(producer)).expect("client");
    const JOBS: usize = 1_000;
    for i in 0..JOBS {
        client
            .schedule(PING.instance(format!("burst-{i}")))
            .expect("schedule");
    }
    // The trailing signal of the last window, then whatever is in flight.
    std::thread::sleep(Duration::from_millis(500));
    let mut received = 0;
    for note in listener.notifications_iter() {
        let note = note.expect("notification");
        assert_eq!(note.channel, "docket_wake_burst");
        assert_eq!(note.payload, "");
        received += 1;
    }
    eprintln!("{received} notifications for {JOBS} single-row transactions");
    assert!(received >= 1, "the burst was never announced");
    assert!(
        received <= JOBS / 4,
        "{received} notifications for {JOBS} single-row transactions: not debounced"
    );
}

/// A retry without delay is announced by the completion writer: the second attempt does not
/// wait for the 30 s poll.
#[test]
fn postgres_a_retry_without_delay_starts_on_notify() {
    let space = Postgres.space();
    let config = StoreConfig::default();
    space.migrate(&config, None);
    let attempts: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let record = Arc::clone(&attempts);
    let task = Task::typed(PING, move |(), ctx| {
        record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Instant::now());
        if ctx.consecutive_failures == 0 {
            return Err(TaskError::from(std::io::Error::other("first try fails")));
        }
        Ok(())
    })
    .on_failure(FailurePolicy {
        retry: Retry::Fixed(Duration::ZERO),
        max_retries: None,
    });
    let scheduler = Scheduler::builder(space.store(config.clone(), None))
        .task(task)
        .config(SchedulerConfig {
            threads: 2,
            polling_interval: POLLING,
            shutdown_max_wait: Duration::from_secs(5),
            scheduler_name: "wakeups-retry".into(),
            ..SchedulerConfig::default()
        })
        .build()
        .expect("scheduler");
    scheduler.start().expect("start");
    std::thread::sleep(Duration::from_millis(500));
    let producer = docket::postgres::connect(&space.url(), config).expect("producer store");
    SchedulerClient::new(Arc::new(producer))
        .expect("client")
        .schedule(PING.instance("retried"))
        .expect("schedule");
    let deadline = Instant::now() + Duration::from_secs(5);
    let tries = loop {
        let tries = attempts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if tries.len() >= 2 || Instant::now() >= deadline {
            break tries;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(
        tries.len(),
        2,
        "the retry did not start within 5 s: {tries:?}"
    );
    let gap = tries[1] - tries[0];
    assert!(
        gap < Duration::from_secs(2),
        "the retry started {gap:?} after the failure (polling interval {POLLING:?})"
    );
    assert!(scheduler.stop());
}
