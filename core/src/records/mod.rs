//! The records docket stores and the parameters of store calls: plain data, no behaviour that
//! needs a database. A leaf module: it imports nothing of docket but the errors, so every other
//! module (ordering, dialect, store, scheduler, queue) can use it without an import circle.

mod due;
mod item;
mod limits;
mod record_key;

pub use due::{Due, DueFilter, DueParams, Limited, LimitedClaim};
pub use item::{
    Assignment, AssignmentStatus, Finish, Finishing, ForWorker, IndexChange, Item, ItemCount,
    ItemRead, ItemsQuery, ListedAssignment, ListedItem, NewItem, StatusRead, UnreadableItem,
};
pub use limits::{LimitRoom, LimitUse, Rate, TaskLimit, MAX_LIMIT_KEY_LEN};
pub use record_key::{format_record_date, parse_record_date, RecordKey};

use crate::error::DocketError;
use crate::ordering::OrderingPolicy;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use std::cmp::Ordering;

/// Identifies an execution.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExecutionKey {
    /// Task name.
    pub task_name: String,
    /// Instance id.
    pub task_instance: String,
}

impl ExecutionKey {
    /// A key.
    pub fn new(task_name: impl Into<String>, task_instance: impl Into<String>) -> Self {
        Self {
            task_name: task_name.into(),
            task_instance: task_instance.into(),
        }
    }
}

/// A row of the executions table.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// Task name.
    pub task_name: String,
    /// Instance id.
    pub task_instance: String,
    /// Serialized data.
    pub task_data: Option<Vec<u8>>,
    /// When it is (or was) due.
    pub execution_time: DateTime<Utc>,
    /// Claimed by a scheduler.
    pub picked: bool,
    /// Which scheduler claimed it.
    pub picked_by: Option<String>,
    /// Last successful run.
    pub last_success: Option<DateTime<Utc>>,
    /// Last failed run.
    pub last_failure: Option<DateTime<Utc>>,
    /// Failures since the last success.
    pub consecutive_failures: i32,
    /// Last heartbeat while picked.
    pub last_heartbeat: Option<DateTime<Utc>>,
    /// Fencing token: every change of the row increments it.
    pub version: i64,
    /// Priority (always `None` when the priority toggle is off).
    pub priority: Option<i16>,
}

impl Execution {
    /// A fresh, unpicked execution (used by tests and in-memory sorting).
    pub fn new(task_name: &str, task_instance: &str, execution_time: DateTime<Utc>) -> Self {
        Self {
            task_name: task_name.to_owned(),
            task_instance: task_instance.to_owned(),
            task_data: None,
            execution_time,
            picked: false,
            picked_by: None,
            last_success: None,
            last_failure: None,
            consecutive_failures: 0,
            last_heartbeat: None,
            version: 1,
            priority: None,
        }
    }

    /// The key.
    pub fn key(&self) -> ExecutionKey {
        ExecutionKey::new(&self.task_name, &self.task_instance)
    }

    /// Compares with `other` in hand-out order under `policy` (`Less` = handed out first), for
    /// rows a backend returns unordered (`UPDATE ... RETURNING`). Executions carry no record or
    /// custom attributes: only [`PrimaryOrder::ExecutionTime`](crate::PrimaryOrder) applies to
    /// them (the scheduler rejects other primary orders; the work queue sorts in SQL).
    pub fn cmp_in_hand_out_order(&self, other: &Execution, policy: &OrderingPolicy) -> Ordering {
        let by_priority = if policy.priority {
            // Some(_) > None, so NULL sorts last when reversed.
            other.priority.cmp(&self.priority)
        } else {
            Ordering::Equal
        };
        by_priority.then_with(|| self.execution_time.cmp(&other.execution_time))
    }

    /// Deserializes JSON data written by [`TaskInstance::data`](crate::TaskInstance::data).
    pub fn data<T: DeserializeOwned>(&self) -> Result<Option<T>, DocketError> {
        self.task_data
            .as_deref()
            .map(serde_json::from_slice)
            .transpose()
            .map_err(|e| DocketError::Data {
                task: self.task_name.clone(),
                instance: self.task_instance.clone(),
                reason: match self.task_data.as_deref() {
                    Some(bytes) if bytes.starts_with(&JAVA_SERIALIZATION_MAGIC) => format!(
                        "the data is Java-serialized (as db-scheduler writes it by default); \
                         docket reads JSON: {e}"
                    ),
                    _ => e.to_string(),
                },
            })
    }
}

/// The first bytes of a Java object stream (`ObjectOutputStream`: magic `0xACED`, version 5),
/// db-scheduler's default task data format.
pub const JAVA_SERIALIZATION_MAGIC: [u8; 4] = [0xAC, 0xED, 0x00, 0x05];

/// A row of the executions table that cannot be decoded (a NULL where a value is needed, a
/// value out of docket's range, a value the driver cannot read): a *poison row*. It never
/// blocks a poll or other rows, is never left claimed, and is reported with its key and the
/// failing column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoisonRow {
    /// The row's key (as text, lossily, when the key columns themselves are unreadable).
    pub key: ExecutionKey,
    /// The first column that failed to decode.
    pub column: &'static str,
    /// Why it failed.
    pub reason: String,
}

/// A row to insert.
#[derive(Debug, Clone, PartialEq)]
pub struct NewExecution {
    /// Task name.
    pub task_name: String,
    /// Instance id.
    pub task_instance: String,
    /// Serialized data.
    pub task_data: Option<Vec<u8>>,
    /// When it becomes due.
    pub execution_time: DateTime<Utc>,
    /// Priority (written only when the priority toggle is on).
    pub priority: Option<i16>,
    /// The key its task's per-key limits count it under (`0009_limits`), e.g. a customer id.
    pub limit_key: Option<String>,
}

impl NewExecution {
    /// The key.
    pub fn key(&self) -> ExecutionKey {
        ExecutionKey::new(&self.task_name, &self.task_instance)
    }
}

/// Condition an update or delete must meet besides the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// None.
    Any,
    /// The row still has this version (fencing: nobody changed it since it was read).
    Version(i64),
    /// The row is not picked (client-side changes never touch running executions).
    Unpicked,
}

/// Claim or release a row.
#[derive(Debug, Clone, PartialEq)]
pub enum PickChange {
    /// Mark picked by `by`, heartbeat at `at`.
    Claim {
        /// Scheduler name.
        by: String,
        /// Claim time (first heartbeat).
        at: DateTime<Utc>,
    },
    /// Clear picked, picked_by and last_heartbeat.
    Release,
}

/// Column changes of an update; `None` leaves a column as it is. Every update bumps `version`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// Claim or release.
    pub pick: Option<PickChange>,
    /// New execution time.
    pub execution_time: Option<DateTime<Utc>>,
    /// New data (`Some(None)` clears it).
    pub data: Option<Option<Vec<u8>>>,
    /// New priority (ignored when the priority toggle is off).
    pub priority: Option<Option<i16>>,
    /// Last success.
    pub last_success: Option<DateTime<Utc>>,
    /// Last failure.
    pub last_failure: Option<DateTime<Utc>>,
    /// Consecutive failures.
    pub consecutive_failures: Option<i32>,
}

/// What a scheduler writes when it is done with an execution it holds: remove it, or apply
/// changes (reschedule, retry later). Fenced: written only if the row still has `version`,
/// the version the scheduler holds (see [`Guard::Version`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The execution.
    pub key: ExecutionKey,
    /// The version the scheduler holds.
    pub version: i64,
    /// `None` removes the execution; `Some` applies these changes (and bumps `version`).
    pub update: Option<Changes>,
}

/// Filter for listing executions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only this task.
    pub task_name: Option<String>,
    /// Only picked (`Some(true)`) or unpicked (`Some(false)`) ones.
    pub picked: Option<bool>,
    /// Only executions with failures.
    pub failing_only: bool,
    /// At most this many.
    pub limit: Option<i64>,
}

/// Per-task counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSummary {
    /// Task name.
    pub task_name: String,
    /// Executions.
    pub total: i64,
    /// Currently picked.
    pub picked: i64,
    /// With consecutive failures.
    pub failing: i64,
    /// Earliest execution time.
    pub next_execution_time: Option<DateTime<Utc>>,
}

/// A task paused cluster-wide (`0008_paused_tasks`): no scheduler claims its executions until
/// it is resumed; those already running finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausedTask {
    /// The task name.
    pub task_name: String,
    /// When it was paused.
    pub paused_at: DateTime<Utc>,
    /// Who paused it, as they said (free text, e.g. `docket web`).
    pub paused_by: Option<String>,
}

/// A row of the paused tasks holding a value docket cannot decode (a `paused_at` out of range,
/// written by SQL or another program): the task is paused (its row exists), but since when or
/// by whom cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadablePaused {
    /// The task name.
    pub task_name: String,
    /// The column that could not be decoded.
    pub column: &'static str,
    /// Why.
    pub reason: String,
}

/// One row of the paused tasks, decoded on its own: one bad row does not hide the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PausedRead {
    /// A paused task.
    Paused(PausedTask),
    /// A paused task whose row could not be decoded.
    Unreadable(UnreadablePaused),
}

impl PausedRead {
    /// The paused task's name (known either way).
    pub fn task_name(&self) -> &str {
        match self {
            Self::Paused(p) => &p.task_name,
            Self::Unreadable(u) => &u.task_name,
        }
    }
}

/// The first paused tasks by name, and how many are paused in all
/// ([`ExecutionStore::paused_page`](crate::store::ExecutionStore::paused_page)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PausedPage {
    /// At most the limit asked for, by name.
    pub tasks: Vec<PausedRead>,
    /// Paused tasks in all.
    pub total: i64,
}

/// A count that stops at a cap: `count` rows were counted, and `capped` says there were more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CappedCount {
    /// Rows counted, at most the cap.
    pub count: i64,
    /// Whether counting stopped at the cap (the real count is larger).
    pub capped: bool,
}

impl CappedCount {
    /// `read` rows read by a statement limited to `cap + 1`: at most `cap` counted.
    pub fn of(read: i64, cap: i64) -> Self {
        Self {
            count: read.min(cap),
            capped: read > cap,
        }
    }
}

/// One priority level of a task's (or task type's) waiting rows, as [`NameLag`] reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelLag {
    /// The level (`None`: no priority, or priority off).
    pub priority: Option<i16>,
    /// Its oldest waiting row's time (due since, or arrived at).
    pub oldest: DateTime<Utc>,
    /// Its waiting rows among those read (at most the cap in all levels together).
    pub count: i64,
}

/// What [`ExecutionStore::execution_name_lag`](crate::store::ExecutionStore::execution_name_lag)
/// reads: the rows waiting under `name` at `now`, each count stopping at `cap`; with `items`
/// (the table has the work-queue columns) a name whose rows are items is read as a task type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagQuery<'a> {
    /// Task name or task type.
    pub name: &'a str,
    /// The time rows are due (or arrived) by.
    pub now: DateTime<Utc>,
    /// Where each count stops (at least 1).
    pub cap: i64,
    /// Whether the table has the work-queue columns.
    pub items: bool,
}

/// What waits under one task name: for a scheduler task its due executions (not picked,
/// execution time passed), for a work-queue task type its open items (assignable, arrived).
/// Read by [`ExecutionStore::execution_name_lag`](crate::store::ExecutionStore::execution_name_lag)
/// from the lag indexes (`0007_lag_indexes`), each count stopping at a cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameLag {
    /// Task name or task type.
    pub name: String,
    /// Whether the name's rows are work-queue items.
    pub queue_type: bool,
    /// The oldest waiting row's time: due since (task) or arrived at (item).
    pub oldest: Option<DateTime<Utc>>,
    /// Waiting rows: due executions or open items.
    pub waiting: CappedCount,
    /// The waiting rows read, by level, highest first and `None` last; a level holds its
    /// oldest row exactly, except that levels whose rows all lie beyond the cap are missing
    /// (when `waiting.capped`).
    pub levels: Vec<LevelLag>,
    /// Scheduled executions (not picked, in the future); items not arrived yet for a type.
    pub scheduled: CappedCount,
    /// Picked executions (running or dead); zero for a type (items are never picked).
    pub picked: CappedCount,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_serialized_data_is_named_in_the_error() {
        let at = DateTime::from_timestamp(0, 0).unwrap_or_default();
        let mut e = Execution::new("report", "1", at);
        e.task_data = Some([&JAVA_SERIALIZATION_MAGIC[..], b"t\x00\x05hello"].concat());
        let err = e.data::<String>().expect_err("not JSON");
        assert!(err.to_string().contains("Java-serialized"), "{err}");
        e.task_data = Some(b"{".to_vec());
        let err = e.data::<String>().expect_err("not JSON either");
        assert!(!err.to_string().contains("Java"), "{err}");
        e.task_data = Some(b"\"hello\"".to_vec());
        assert_eq!(e.data::<String>().unwrap().as_deref(), Some("hello"));
    }
}

/// Where a page of dead executions starts: after the row with this heartbeat and key.
pub type DeadCursor = (DateTime<Utc>, ExecutionKey);

/// One page of the dead executions (picked, heartbeat at or before `older_than`), in
/// `(last_heartbeat, task_name, task_instance)` order: at most `limit` rows after `after`.
/// Reading every page, each starting after the last row of the one before, reads every dead
/// row once (see [`crate::ExecutionStore::execution_dead_page`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadPage {
    /// Heartbeat bound.
    pub older_than: DateTime<Utc>,
    /// Only this task's rows (`None`: every task's).
    pub task_name: Option<String>,
    /// Start after this row: its heartbeat and key (`None`: from the first).
    pub after: Option<DeadCursor>,
    /// Most rows.
    pub limit: i64,
}

impl DeadPage {
    /// The first page.
    pub fn first(older_than: DateTime<Utc>, limit: i64) -> Self {
        Self {
            older_than,
            task_name: None,
            after: None,
            limit,
        }
    }
}
