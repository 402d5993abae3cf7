//! # docket-core
//!
//! The backend-agnostic heart of docket: the task model, the ordering policy, the SQL dialect
//! abstraction every backend implements, the store trait the engine talks to, the scheduler
//! engine and the client API. This crate names no database; a backend crate (for example
//! `docket-postgres`) supplies a [`Dialect`](dialect::Dialect) and a [`Store`].
//!
//! ## Features
//!
//! - `csv` (off by default): CSV intake of work-queue items, `queue::csv` and
//!   `WorkQueue::enqueue_csv`. Without it the crate has no CSV dependency; typed batches
//!   ([`queue::Batch`]) go through the same resolver ([`queue::Intake`]) either way.
//!
//! Names are validated by the same public functions everywhere (the API, CSV intake, the CLI):
//! [`validate_key`] and [`validate_name`] for task names and instance ids, [`validate_worker`]
//! for worker names, [`AttributeName::parse`](ordering::AttributeName::parse) for attributes.

pub mod backend;
pub mod clock;
pub mod dialect;
pub mod error;
pub mod explain;
pub mod ident;
pub mod listener;
pub mod migrate;
pub mod ordering;
pub mod planner;
pub mod queue;
pub mod records;
pub mod runtime;
pub mod schedule;
pub mod scheduler;
pub mod store;
pub mod task;

pub use clock::{Clock, CorrectedClock, ManualClock, SystemClock};
pub use error::{DocketError, StoreError};
pub use ident::TableName;
pub use listener::{SchedulerEvent, SchedulerListener};
pub use ordering::{
    Aging, CustomKey, Direction, KeyType, OrderingPolicy, PrimaryOrder, PriorityMode, Weights,
};
pub use queue::{QueueConfig, WorkQueue};
pub use records::{
    CappedCount, DeadCursor, DeadPage, Execution, ExecutionKey, LevelLag, LimitUse, ListFilter,
    NameLag, PausedTask, Rate, TaskLimit, TaskSummary,
};
pub use runtime::AsyncRuntime;
pub use schedule::Schedule;
pub use scheduler::{
    client::{DueCounts, Lag, ScheduleOutcome, SchedulerClient},
    config::{PollingStrategy, SchedulerConfig, ShortPoll},
    Scheduler,
};
pub use store::{Adopted, ExecutionStore, QueueStore, Store, StoreConfig, StoreInfo};
pub use task::{
    DeadExecutionPolicy, ExecutionContext, FailurePolicy, Priority, Task, TaskDescriptor,
    TaskError, TaskInstance,
};

// Name validation, shared by the API, CSV intake and the CLI.
pub use ordering::AttributeName;
pub use queue::validate_worker;
pub use task::{validate_key, validate_name};
