//! A hook for observing the scheduler (besides `tracing` events and `metrics`).

use crate::records::{Execution, ExecutionKey};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// Something the scheduler did. Listeners must be quick: they run on scheduler threads.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SchedulerEvent {
    /// A poll finished.
    PollCompleted {
        /// Executions handed to workers.
        found: usize,
        /// Time spent in the store.
        duration: Duration,
    },
    /// A poll handed these executions out, in hand-out order: claimed already under
    /// lock-and-fetch, candidates to claim under fetch-and-lock-on-execute. Sent only to
    /// schedulers with listeners, before [`SchedulerEvent::PollCompleted`].
    Handed {
        /// The clock's now the due-query ran with.
        now: DateTime<Utc>,
        /// The executions, in hand-out order.
        executions: Vec<Execution>,
    },
    /// A handler is about to run.
    ExecutionStarted(Execution),
    /// A handler returned `Ok`.
    ExecutionCompleted {
        /// The execution as picked.
        execution: Execution,
        /// Handler run time.
        duration: Duration,
    },
    /// A handler failed or panicked.
    ExecutionFailed {
        /// The execution as picked.
        execution: Execution,
        /// The error or panic message.
        error: String,
        /// When it will run again (`None` if it was removed).
        retry_at: Option<DateTime<Utc>>,
    },
    /// A one-time execution exhausted its retries and was removed.
    GaveUp(Execution),
    /// A dead execution (no heartbeat) was revived or cancelled.
    DeadExecution(Execution),
    /// An update of an execution this scheduler held was rejected because its version moved on
    /// (someone revived it): the fencing token at work. Sent for a fenced outcome and for a
    /// claimed execution that was lost before it started (it never starts).
    LostExecution(Execution),
    /// Rows of task names no registered task knows; they are left alone.
    UnresolvedTasks(Vec<String>),
    /// A due row that cannot be decoded (a poison row): it was skipped (never left claimed),
    /// the other rows of the poll went on, and the store leaves it out of its due-queries for a
    /// while (see `docs/DESIGN.md`, "Poison rows").
    PoisonRow {
        /// The row's key.
        key: ExecutionKey,
        /// The first column that failed to decode.
        column: &'static str,
        /// Why it failed.
        reason: String,
    },
    /// A poll of a started scheduler failed (the store was unreachable, a statement failed);
    /// the poller tries again after the polling interval. Nothing was claimed.
    PollFailed {
        /// The error.
        error: String,
    },
}

/// Receives [`SchedulerEvent`]s.
pub trait SchedulerListener: Send + Sync {
    /// Called for every event.
    fn on_event(&self, event: &SchedulerEvent);
}

impl<F: Fn(&SchedulerEvent) + Send + Sync> SchedulerListener for F {
    fn on_event(&self, event: &SchedulerEvent) {
        self(event)
    }
}
