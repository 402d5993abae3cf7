//! The store: the one interface through which the engine and the client API reach a database.
//! Operations are named noun-first (`execution_*`) and take plain parameter values; every
//! time-dependent one takes `now` from the caller's [`Clock`](crate::Clock).

pub mod sql;

use crate::dialect::Capabilities;
use crate::error::{DocketError, StoreError};
use crate::ident::TableName;
use crate::ordering::{OrderingPolicy, PrimaryOrder};
use crate::queue::{Assignment, Finish, Item, NewItem};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;

/// Name of the migration that creates the executions table.
pub const MIGRATION_BASE: &str = "0001_base";
/// Name of the migration that adds the nullable `priority` column and its index.
pub const MIGRATION_PRIORITY: &str = "0002_priority";

/// Which table a store works on and how it orders due work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreConfig {
    /// The executions table (default `scheduled_tasks`).
    pub table: TableName,
    /// Ordering policy, including the priority toggle.
    pub ordering: OrderingPolicy,
}

impl StoreConfig {
    /// Default table, priority toggle as given.
    pub fn with_priority(priority: bool) -> Self {
        Self {
            table: TableName::default(),
            ordering: OrderingPolicy {
                priority,
                ..OrderingPolicy::default()
            },
        }
    }
}

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

    /// Deserializes JSON data written by [`TaskInstance::data`](crate::TaskInstance::data).
    pub fn data<T: DeserializeOwned>(&self) -> Result<Option<T>, DocketError> {
        self.task_data
            .as_deref()
            .map(serde_json::from_slice)
            .transpose()
            .map_err(|e| DocketError::Data {
                task: self.task_name.clone(),
                instance: self.task_instance.clone(),
                reason: e.to_string(),
            })
    }
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

/// Parameters of the due-queries.
#[derive(Debug, Clone, Copy)]
pub struct DueParams<'a> {
    /// The clock's now.
    pub now: DateTime<Utc>,
    /// Only these tasks (unknown task names are left alone).
    pub task_names: &'a [String],
    /// At most this many rows.
    pub limit: i64,
}

/// A database holding executions. Implemented once for SQL databases by
/// [`sql::SqlStore`]; backends supply a [`sql::SqlConnector`].
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Backend name, e.g. `postgres`.
    fn backend(&self) -> &'static str;
    /// What the backend can do.
    fn capabilities(&self) -> Capabilities;
    /// Table and ordering.
    fn config(&self) -> &StoreConfig;
    /// Fails with [`StoreError::MissingMigration`] when the table lacks what the config needs.
    fn check_schema(&self) -> Result<(), StoreError>;
    /// Inserts unless the key exists; `true` when inserted.
    fn execution_insert(&self, row: &NewExecution) -> Result<bool, StoreError>;
    /// Inserts all rows in one transaction (existing keys are skipped); returns how many were
    /// inserted. On any error nothing is written.
    fn execution_insert_batch(&self, rows: &[NewExecution]) -> Result<u64, StoreError>;
    /// One execution.
    fn execution_get(&self, key: &ExecutionKey) -> Result<Option<Execution>, StoreError>;
    /// Executions matching a filter, in hand-out order.
    fn execution_list(&self, filter: &ListFilter) -> Result<Vec<Execution>, StoreError>;
    /// Due, unpicked executions in hand-out order (fetch-and-lock-on-execute).
    fn execution_fetch_due(&self, params: &DueParams<'_>) -> Result<Vec<Execution>, StoreError>;
    /// Claims due executions in one round trip (lock-and-fetch); returned in hand-out order.
    fn execution_lock_and_fetch_due(
        &self,
        params: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError>;
    /// Applies `changes` if `guard` holds; `true` when a row changed.
    fn execution_update(
        &self,
        key: &ExecutionKey,
        guard: Guard,
        changes: &Changes,
    ) -> Result<bool, StoreError>;
    /// Heartbeat for a picked execution at `version`; `false` if it is no longer ours.
    fn execution_heartbeat(
        &self,
        key: &ExecutionKey,
        version: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// Removes an execution if `guard` holds.
    fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError>;
    /// Picked executions whose heartbeat is at or before `older_than`.
    fn execution_get_dead(&self, older_than: DateTime<Utc>) -> Result<Vec<Execution>, StoreError>;
    /// Per-task counts.
    fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError>;
    /// Task names in the table that are not in `known`.
    fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError>;
    /// Deletes unpicked executions of unknown tasks due before `before`; returns how many.
    fn execution_delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError>;

    /// Fails with [`StoreError::MissingMigration`] naming `0003_ordering` or `0004_work_queue`
    /// when the table lacks the work-queue schema (and `0002_priority` when priority is on).
    fn check_queue_schema(&self) -> Result<(), StoreError>;
    /// Inserts items in one transaction, all or none (an existing id is an error).
    fn item_insert_batch(&self, rows: &[NewItem]) -> Result<u64, StoreError>;
    /// One item.
    fn item_get(&self, key: &ExecutionKey) -> Result<Option<Item>, StoreError>;
    /// Claims the first item `worker` may take (see [`crate::WorkQueue::next_for`]) and records
    /// an ACCEPTED assignment with `deadline`, in one transaction.
    fn item_next_for(
        &self,
        worker: &str,
        task_type: &str,
        order: &PrimaryOrder,
        now: DateTime<Utc>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError>;
    /// The items `worker` may take, in order, without claiming.
    fn item_list_for(
        &self,
        worker: &str,
        task_type: &str,
        order: &PrimaryOrder,
        now: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<Item>, StoreError>;
    /// Raises `max_assignments` by `n`; `false` when there is no such item.
    fn item_extend(&self, key: &ExecutionKey, n: i32) -> Result<bool, StoreError>;
    /// Ends `worker`'s ACCEPTED assignment on `key` as `how` says and releases the item, in one
    /// transaction; `false` (nothing changed) when there is no such accepted assignment.
    fn assignment_finish(
        &self,
        key: &ExecutionKey,
        worker: &str,
        how: Finish,
        now: DateTime<Utc>,
        hidden_until: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// ACCEPTED assignments past their deadline at `now`.
    fn assignment_expired(&self, now: DateTime<Utc>) -> Result<Vec<Assignment>, StoreError>;
    /// The assignments of one item.
    fn assignment_list(&self, key: &ExecutionKey) -> Result<Vec<Assignment>, StoreError>;
}
