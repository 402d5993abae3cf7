//! # docket
//!
//! Persistent, cluster-safe task scheduling and work queues stored in the database you already
//! run. Add this one crate with the cargo features of your backends (`postgres`, `mysql`,
//! `sqlite` (default, bundled), `mssql`, `oracle`) and `use docket::prelude::*;`.
//!
//! The whole story, in order: a typed task, a worker (a [`Scheduler`]) started and stopped,
//! scheduling from anywhere, scheduling inside your own transaction, and a work queue.
//!
//! ```
//! use docket::prelude::*;
//! use serde::{Deserialize, Serialize};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! // 1. A typed task: its name and the type of its data (serde).
//! #[derive(Serialize, Deserialize)]
//! struct Email {
//!     to: String,
//! }
//! const SEND_EMAIL: TaskDescriptor<Email> = TaskDescriptor::new("send-email");
//!
//! # let dir = tempfile::tempdir()?;
//! # let url = format!("sqlite://{}", dir.path().join("app.db").display());
//! // 2. The store a URL names (the scheme picks the backend), with docket's tables.
//! let store = docket::connect(&url)?; // e.g. "postgres://app@db/app"
//! store.migrate(None)?;
//!
//! // 3. A worker: a scheduler that polls the table and runs the task's handler.
//! let sent = Arc::new(AtomicUsize::new(0));
//! let counter = Arc::clone(&sent);
//! let send = Task::typed(SEND_EMAIL, move |email: Email, _ctx| {
//!     println!("to {}", email.to);
//!     counter.fetch_add(1, Ordering::SeqCst);
//!     Ok(())
//! });
//! let scheduler = Scheduler::builder(store.clone())
//!     .task(send)
//!     .config(SchedulerConfig {
//!         polling_interval: Duration::from_millis(50),
//!         ..SchedulerConfig::default()
//!     })
//!     .build()?;
//! scheduler.start()?;
//!
//! // 4. Scheduling, here or from any other process on the same table: due now, or later.
//! let client = scheduler.client(); // or SchedulerClient::new(store.clone())? without a worker
//! client.schedule(SEND_EMAIL.instance("welcome-ada").data(Email { to: "ada@example.com".into() }))?;
//! # let deadline = std::time::Instant::now() + Duration::from_secs(20);
//! while sent.load(Ordering::SeqCst) < 1 {
//! #   assert!(std::time::Instant::now() < deadline, "the email was not sent");
//!     std::thread::sleep(Duration::from_millis(20));
//! }
//! scheduler.stop(); // waits for running handlers
//!
//! // 5. Scheduling inside your own transaction (PostgreSQL, MySQL/MariaDB, SQLite): with your
//! //    diesel connection, the job exists if and only if your transaction commits. See
//! //    `ScheduleInTransaction` and `docket/examples/transactional.rs`:
//! //    conn.transaction(|conn| { insert_user(conn)?; store.schedule_in(conn, SEND_EMAIL.instance(..))?; .. })
//!
//! // 6. A work queue: items worked by people, first in first out, each by one worker at a time.
//! let queue = WorkQueue::new(store.clone(), QueueConfig::default())?;
//! queue.enqueue(&Batch {
//!     task_type: "review".into(),
//!     max_assignments: 1,
//!     records: vec![Record::new("r1"), Record::new("r2")],
//! })?;
//! let item = queue.next_for("alice", "review")?.expect("an item for alice");
//! assert_eq!(item.key.task_instance, "r1");
//! queue.submit("alice", &item.key)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - Handlers: [`Task::typed`] gets the data decoded as the descriptor's type (data that does
//!   not decode fails that execution only), [`Task::one_time`] the raw [`Execution`],
//!   [`Task::recurring`] runs on a [`Schedule`]. They return [`TaskError`], a
//!   [`std::error::Error`]. [`Task::typed_async`] and [`Task::one_time_async`] take async
//!   handlers, run on a tokio runtime ([`scheduler::AsyncRuntime`]).
//! - Durations are [`std::time::Duration`] everywhere in the API; times are
//!   `chrono::DateTime<Utc>`.
//! - A job scheduled by another process starts within milliseconds of its commit: on
//!   PostgreSQL through `LISTEN`/`NOTIFY` (`SchedulerConfig::wake_listener`), elsewhere through
//!   a short poll that backs off while idle ([`scheduler::ShortPoll`]).
//! - Where the names live: the scheduler's policies and events in [`scheduler`], ordering in
//!   [`ordering`], the work queue's records in [`queue`], the store traits in [`store`], and
//!   each enabled backend as a module ([`sqlite`], `postgres`, `mysql`, `mssql`, `oracle`),
//!   whose `connect` and `from_pool` take backend options.
//! - Runnable examples: `docket/examples/` (`cargo run -p docket --example typed_payload`).

mod connect;

pub use connect::{connect, connect_with, ConnectError};
pub use docket_core::{
    DocketError, Execution, ExecutionContext, ExecutionKey, Priority, QueueConfig, Schedule,
    ScheduleOutcome, Scheduler, SchedulerClient, SchedulerConfig, StoreConfig, StoreError, Task,
    TaskDescriptor, TaskError, TaskInstance, WorkQueue,
};

/// Scheduling with the application's own diesel connection, inside its transaction: the
/// execution exists if and only if that transaction commits (PostgreSQL, MySQL/MariaDB,
/// SQLite).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use docket_diesel::ScheduleInTransaction;

/// Everything an application names to schedule, work and queue: `use docket::prelude::*;`.
pub mod prelude {
    #[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
    pub use crate::ScheduleInTransaction;
    pub use crate::{
        connect, connect_with, Execution, ExecutionContext, ExecutionKey, Priority, QueueConfig,
        Schedule, ScheduleOutcome, Scheduler, SchedulerClient, SchedulerConfig, StoreConfig, Task,
        TaskDescriptor, TaskError, WorkQueue,
    };
    pub use docket_core::queue::{Batch, Record};
    pub use docket_core::{PollingStrategy, TaskLimit};
}

/// The scheduler's settings, policies, clocks and events beyond [`SchedulerConfig`].
pub mod scheduler {
    pub use docket_core::task::Retry;
    pub use docket_core::{
        AsyncRuntime, Clock, DeadExecutionPolicy, FailurePolicy, LimitUse, ListFilter, ManualClock,
        PollingStrategy, Rate, SchedulerEvent, SchedulerListener, ShortPoll, SystemClock,
        TaskLimit, TaskSummary,
    };
}

/// The order in which due work is handed out: priority modes and custom keys.
pub mod ordering {
    pub use docket_core::{
        Aging, CustomKey, Direction, KeyType, OrderingPolicy, PrimaryOrder, PriorityMode, Weights,
    };
}

/// The work queue's records and intake types.
pub mod queue {
    pub use docket_core::queue::*;
}

/// The store behind a scheduler, client and work queue: what [`connect`] returns, and the
/// traits a backend implements (for tooling and tests; an application only passes it along).
pub mod store {
    pub use docket_core::{ExecutionStore, QueueStore, Store, StoreInfo, TableName};
}

/// Building blocks for backends and tooling (dialects, the SQL store, migrations); not needed to
/// schedule or work tasks.
#[doc(hidden)]
pub use docket_core as core;

/// PostgreSQL.
#[cfg(feature = "postgres")]
pub use docket_postgres as postgres;

/// MySQL 8 and MariaDB.
#[cfg(feature = "mysql")]
pub use docket_mysql as mysql;

/// SQLite (bundled).
#[cfg(feature = "sqlite")]
pub use docket_sqlite as sqlite;

/// SQL Server.
#[cfg(feature = "mssql")]
pub use docket_mssql as mssql;

/// Oracle.
#[cfg(feature = "oracle")]
pub use docket_oracle as oracle;

pub mod backends;

/// The README's examples, compiled as doctests so they cannot rot.
#[doc = include_str!("../../README.md")]
#[cfg(all(doctest, feature = "postgres"))]
pub struct ReadmeDoctests;
