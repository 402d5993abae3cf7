//! # docket
//!
//! Persistent, cluster-safe task scheduling and work queues stored in the database you already
//! run. Add this one crate with the cargo features of your backends (`postgres`, `mysql`,
//! `sqlite` (default, bundled), `mssql`, `oracle`); it re-exports the whole user API, and each
//! enabled backend as a module ([`postgres`], [`mysql`], [`sqlite`], [`mssql`], [`oracle`]).
//!
//! ```no_run
//! # #[cfg(feature = "sqlite")] {
//! use docket::{SchedulerClient, StoreConfig, TaskDescriptor};
//! use std::sync::Arc;
//!
//! const SEND: TaskDescriptor<String> = TaskDescriptor::new("send");
//!
//! let store = docket::sqlite::connect("sqlite://app.db", StoreConfig::default())?;
//! docket::sqlite::migrate(&store, None)?;
//! let client = SchedulerClient::new(Arc::new(store))?;
//! client.schedule(SEND.instance("1").data("hello".to_owned()))?;
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - Handlers: [`Task::typed`] gets the data decoded as the descriptor's type (data that does
//!   not decode fails that execution only), [`Task::one_time`] the raw [`Execution`],
//!   [`Task::recurring`] runs on a [`Schedule`]. They return [`TaskError`], a
//!   [`std::error::Error`]. [`Task::typed_async`] and [`Task::one_time_async`] take async
//!   handlers, run on a tokio runtime ([`AsyncRuntime`]: docket's own or the application's).
//! - Durations are [`std::time::Duration`] everywhere in the API; times are
//!   `chrono::DateTime<Utc>`.
//! - [`ScheduleInTransaction`] (PostgreSQL, MySQL/MariaDB, SQLite) schedules with your own
//!   diesel connection inside your transaction: the execution exists if and only if it
//!   commits. Each of these backends' `from_pool` builds the store on an r2d2 pool you already
//!   have.
//! - A job scheduled by another process starts within milliseconds of its commit: on
//!   PostgreSQL through `LISTEN`/`NOTIFY` (`SchedulerConfig::wake_listener`), elsewhere through
//!   a short poll that backs off while idle ([`ShortPoll`], `SchedulerConfig::short_poll`).
//! - Runnable examples: `docket/examples/` (`cargo run -p docket --example typed_payload`).

pub use docket_core::{
    Aging, AsyncRuntime, Clock, CustomKey, DeadExecutionPolicy, Direction, DocketError, Execution,
    ExecutionContext, ExecutionKey, ExecutionStore, FailurePolicy, KeyType, ListFilter,
    ManualClock, OrderingPolicy, PollingStrategy, PrimaryOrder, Priority, PriorityMode,
    QueueConfig, QueueStore, Schedule, ScheduleOutcome, Scheduler, SchedulerClient,
    SchedulerConfig, SchedulerEvent, SchedulerListener, ShortPoll, Store, StoreConfig, StoreError,
    StoreInfo, SystemClock, TableName, Task, TaskDescriptor, TaskError, TaskInstance, TaskSummary,
    Weights, WorkQueue,
};

pub use docket_core::task::Retry;

/// Scheduling with the application's own diesel connection, inside its transaction: the
/// execution exists if and only if that transaction commits (PostgreSQL, MySQL/MariaDB,
/// SQLite).
#[cfg(any(feature = "postgres", feature = "mysql", feature = "sqlite"))]
pub use docket_diesel::ScheduleInTransaction;

/// The work queue's records and intake types.
pub mod queue {
    pub use docket_core::queue::*;
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
