//! The stores: the interfaces through which the scheduler and the work queue reach a
//! database. [`ExecutionStore`] serves the scheduler and its client, [`QueueStore`] the work
//! queue; both share [`StoreInfo`], and [`Store`] is anything that is both (every SQL backend,
//! through [`SqlStore`](crate::backend::SqlStore)). Operations are named noun-first (`execution_*`, `item_*`) and
//! take plain parameter values from [`crate::records`]; every time-dependent one takes `now`
//! from the caller's [`Clock`](crate::Clock).

mod instrumented;
pub mod row;
pub mod sql;
pub mod wake;

pub use crate::migrate::{MIGRATION_BASE, MIGRATION_PRIORITY};
pub use crate::records::{
    CappedCount, LagQuery, LevelLag, LimitUse, NameLag, PausedPage, PausedRead, PausedTask,
    TaskLimit, UnreadablePaused,
};
pub use crate::records::{
    Changes, Completion, DeadCursor, DeadPage, DueParams, Execution, ExecutionKey, Guard,
    ListFilter, NewExecution, PickChange, PoisonRow, TaskSummary,
};
pub(crate) use instrumented::attach;
pub use row::{Cell, Row};
pub use wake::{WakeListener, WakeSignals};

use crate::dialect::Capabilities;
use crate::error::{DocketError, StoreError};
use crate::ident::TableName;
use crate::ordering::{CustomKey, Level, OrderingPolicy};
use crate::records::{
    Assignment, Finishing, ForWorker, IndexChange, Item, ItemCount, ItemRead, ItemsQuery, NewItem,
};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Most task names one [`ExecutionStore::paused_among`] statement binds.
pub const PAUSED_NAMES_PER_STATEMENT: usize = 100;

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

/// What every store states about itself.
pub trait StoreInfo: Send + Sync + std::fmt::Debug {
    /// Backend name, e.g. `postgres`.
    fn backend(&self) -> &'static str;
    /// What the backend can do.
    fn capabilities(&self) -> Capabilities;
    /// Table and ordering.
    fn config(&self) -> &StoreConfig;
    /// Applies the backend's pending migrations to the table, up to and including `up_to`
    /// (all when `None`); returns the versions applied now.
    fn migrate(&self, up_to: Option<&str>) -> Result<Vec<String>, StoreError>;

    /// [`StoreInfo::migrate`] for a table that may already exist without docket's migration
    /// history, such as one created by db-scheduler's DDL (`docket migrate --adopt`): checks
    /// its columns and their types ([`StoreError::Incompatible`] names the first that does not
    /// fit), records the migrations the table already satisfies without running them
    /// (`0001_base`, and `0002_priority` when it has a `priority` column), creates only the
    /// indexes those migrations would have created and the table lacks, then applies the
    /// remaining migrations up to `up_to` as `migrate` does. Never re-creates or rewrites the
    /// table. A missing table is simply migrated. Default: [`StoreError::Unsupported`].
    fn adopt(&self, up_to: Option<&str>) -> Result<Adopted, StoreError> {
        let _ = up_to;
        Err(StoreError::Unsupported {
            backend: self.backend(),
            capability: "adopting an existing table",
        })
    }

    /// The backend's wake-ups across processes for this table ([`WakeSignals`]: PostgreSQL's
    /// `LISTEN`/`NOTIFY`), or `None` where the database has none (the default). Clients
    /// announce due work through them; schedulers listen.
    fn wake_signals(&self) -> Option<Arc<dyn WakeSignals>> {
        None
    }
}

/// What [`StoreInfo::adopt`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Adopted {
    /// Versions recorded as applied because the table already had what they create.
    pub adopted: Vec<String>,
    /// Indexes created for the adopted migrations (the table lacked them).
    pub created_indexes: Vec<String>,
    /// Versions applied normally afterwards (e.g. `0002_priority` on a table without
    /// `priority`, when `up_to` allows).
    pub applied: Vec<String>,
}

/// The scheduler's store: executions. Implemented once for SQL databases by
/// [`SqlStore`](crate::backend::SqlStore); backends supply a [`sql::SqlConnector`].
pub trait ExecutionStore: StoreInfo {
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
    /// Heartbeats of many picked executions, each at its version, in as few statements as the
    /// dialect's key limit allows; the answer per execution in order: `Ok(false)` when it is
    /// no longer ours, an error when its own heartbeat failed (one row's failure, a lock or a
    /// trigger, never fails the others': a batch that does not change every row is written
    /// row by row).
    fn execution_heartbeat_batch(
        &self,
        rows: &[(ExecutionKey, i64)],
        now: DateTime<Utc>,
    ) -> Vec<Result<bool, StoreError>>;
    /// Removes an execution if `guard` holds.
    fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError>;
    /// Writes what schedulers finished: each [`Completion`] removes or updates its execution
    /// only if the row still has the completion's version (fencing). Returns, in order, whether
    /// each was written; `false` means the execution was changed by someone else meanwhile
    /// (revived elsewhere), which the scheduler reports as lost. Removals are one statement and
    /// updates one statement per chunk of the batch, in one transaction.
    fn execution_complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError>;
    /// One page of the dead executions ([`DeadPage`]: picked, heartbeat at or before
    /// `older_than`): at most `page.limit` rows, after
    /// `page.after`, in `(last_heartbeat, task_name, task_instance)` order. The rows that do
    /// not decode are left out (and reported as [`ExecutionStore::execution_poisoned`] says);
    /// the second value is the cursor of the next page (the page's last row, decoded or not),
    /// `None` when this page was the last.
    fn execution_dead_page(
        &self,
        page: &DeadPage,
    ) -> Result<(Vec<Execution>, Option<DeadCursor>), StoreError>;
    /// Dead executions (picked, heartbeat at or before `older_than`) counted per task name,
    /// by name.
    fn execution_dead_counts(
        &self,
        older_than: DateTime<Utc>,
    ) -> Result<Vec<(String, i64)>, StoreError>;
    /// Per-task counts.
    fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError>;
    /// The tasks paused cluster-wide, by name (none when the table lacks `0008_paused_tasks`).
    fn paused_list(&self) -> Result<Vec<PausedTask>, StoreError>;
    /// The first `limit` paused tasks by name (one statement bounded by `limit`), each row
    /// decoded on its own, and how many are paused in all (a `COUNT(*)`, run only when the
    /// page is full); empty when the table lacks `0008_paused_tasks`.
    fn paused_page(&self, limit: i64) -> Result<PausedPage, StoreError>;
    /// Which of `names` are paused, by name, each row decoded on its own (statements of at
    /// most [`PAUSED_NAMES_PER_STATEMENT`] names each); none when the table lacks
    /// `0008_paused_tasks`.
    fn paused_among(&self, names: &[String]) -> Result<Vec<PausedRead>, StoreError>;
    /// Pauses `task_name` from `at`; `false` when it was paused already.
    /// [`StoreError::MissingMigration`] when the table lacks `0008_paused_tasks`.
    fn paused_set(
        &self,
        task_name: &str,
        at: DateTime<Utc>,
        by: Option<&str>,
    ) -> Result<bool, StoreError>;
    /// Resumes `task_name`; `false` when it was not paused.
    fn paused_clear(&self, task_name: &str) -> Result<bool, StoreError>;
    /// Every task's limits, by task name (none when the table lacks `0009_limits`).
    fn limit_list(&self) -> Result<Vec<TaskLimit>, StoreError>;
    /// Sets the limits of `limit.task_name` (replacing its old ones) as of `now`.
    /// [`StoreError::MissingMigration`] when the table lacks `0009_limits`.
    fn limit_set(&self, limit: &TaskLimit, now: DateTime<Utc>) -> Result<(), StoreError>;
    /// Removes the limits of `task_name`; `false` when it had none.
    fn limit_clear(&self, task_name: &str) -> Result<bool, StoreError>;
    /// Each limit with what it holds at `now`: executions running, keys running, starts in
    /// its window, due executions waiting (counted up to `cap`).
    fn limit_usage(&self, now: DateTime<Utc>, cap: i64) -> Result<Vec<LimitUse>, StoreError>;
    /// How late after its claim an execution of `task_name` may still start: its rate limits'
    /// margin ([`Rate::counted_for`](crate::records::Rate::counted_for) minus the window), as
    /// the last limited claim read them; `None` when it has no rate limit (not a database
    /// call). A claimed execution that would start later is handed back unrun: a start is
    /// counted when claimed, and a handler that began later than the margin could fall into a
    /// window with the next starts.
    fn limit_start_window(&self, task_name: &str) -> Option<std::time::Duration> {
        let _ = task_name;
        None
    }
    /// Claims due executions of the limited tasks among `params.task_names`, each task in one
    /// transaction that locks its limit, so that no two claimers anywhere take the same room:
    /// at most `params.limit` in all, in hand-out order within each task, never past a limit.
    /// Held-back executions stay due, untouched. Empty when nothing is limited.
    fn execution_claim_limited(
        &self,
        params: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError>;
    /// The task names in the table (scheduler tasks and work-queue task types alike) after
    /// `after`, in name order, at most `limit`: one primary-key seek per name.
    fn execution_names_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    /// What waits under a name ([`LagQuery`], [`NameLag`]), read from the lag indexes
    /// (`0007_lag_indexes`).
    fn execution_name_lag(&self, q: &LagQuery<'_>) -> Result<NameLag, StoreError>;
    /// Task names in the table that are not in `known`.
    fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError>;
    /// Deletes unpicked executions of unknown tasks due before `before`; returns how many.
    fn execution_delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    /// The database server's current time, read by one statement when it runs (UTC, to the
    /// server clock's precision, truncated to microseconds). The scheduler estimates how far
    /// its own clock is from it and corrects every time it writes or compares by that
    /// (docs/RELIABILITY.md, "Which clock"). Default: [`StoreError::Unsupported`] (the
    /// scheduler then uses its clock uncorrected).
    fn server_time(&self) -> Result<DateTime<Utc>, StoreError> {
        Err(StoreError::Unsupported {
            backend: self.backend(),
            capability: "reading the server's clock",
        })
    }
    /// The poison rows (rows that do not decode) the due and dead queries skipped since the
    /// last call, each reported once while the store holds it back. Default: none.
    fn execution_poisoned(&self) -> Vec<PoisonRow> {
        Vec::new()
    }
}

/// The work queue's store: items and assignments.
pub trait QueueStore: StoreInfo {
    /// Fails with [`StoreError::MissingMigration`] naming `0003_ordering` or `0004_work_queue`
    /// when the table lacks the work-queue schema (and `0002_priority` when priority is on),
    /// and with [`StoreError::Unsupported`] when the backend has no work queue.
    fn check_queue_schema(&self) -> Result<(), StoreError>;
    /// Inserts items in one transaction, all or none (an existing id is
    /// [`StoreError::DuplicateItem`]); [`QueueStore::item_insert_stream`] over `rows`.
    fn item_insert_batch(&self, rows: &[NewItem]) -> Result<u64, StoreError> {
        self.item_insert_stream(&mut rows.iter().cloned().map(Ok))
    }
    /// Inserts the items `rows` yields in one transaction, all or none, reading them as it
    /// goes: a chunk at a time, each chunk one multi-row insert, so memory does not grow with
    /// the input. An id that exists (in the table, or earlier in `rows`) is
    /// [`StoreError::DuplicateItem`], or [`StoreError::RepeatedItem`] where the database
    /// ended the transaction before saying which id of a chunk repeats one of an earlier
    /// chunk; an error `rows` yields is [`StoreError::Input`]; either way nothing is inserted.
    /// Returns how many were inserted.
    fn item_insert_stream(
        &self,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
    ) -> Result<u64, StoreError>;
    /// Items per task type (none when the table lacks the work-queue columns).
    fn item_counts(&self) -> Result<Vec<ItemCount>, StoreError>;
    /// Creates the index serving the custom order `keys` on the table (and its generated
    /// columns, where the dialect needs them), unless it exists. See
    /// [`crate::dialect::order_index`].
    fn order_index_create(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError>;
    /// Drops the index serving `keys` (and its generated columns), if it exists.
    fn order_index_drop(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError>;
    /// Whether the index serving `keys` exists; its name.
    fn order_index_exists(&self, keys: &[CustomKey]) -> Result<(String, bool), StoreError>;
    /// One item.
    fn item_get(&self, key: &ExecutionKey) -> Result<Option<Item>, StoreError>;
    /// Claims the first item `worker` may take (see [`crate::WorkQueue::next_for`]; by the
    /// priority mode `q.mode`) and records an ACCEPTED assignment with `deadline`, in one
    /// transaction.
    fn item_next_for(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError>;
    /// The items `q.worker` may take, in order, without claiming.
    fn item_list_for(&self, q: &ForWorker<'_>, limit: i64) -> Result<Vec<Item>, StoreError>;
    /// Raises `max_assignments` by `n`; `false` when there is no such item.
    fn item_extend(&self, key: &ExecutionKey, n: i32) -> Result<bool, StoreError>;
    /// Ends the worker's ACCEPTED assignment on the item as `f.how` says and releases the item,
    /// in one transaction; `false` (nothing changed) when there is no such accepted assignment.
    fn assignment_finish(&self, f: &Finishing<'_>) -> Result<bool, StoreError>;
    /// ACCEPTED assignments past their deadline at `now`.
    fn assignment_expired(&self, now: DateTime<Utc>) -> Result<Vec<Assignment>, StoreError>;
    /// The assignments of one item.
    fn assignment_list(&self, key: &ExecutionKey) -> Result<Vec<Assignment>, StoreError>;
    /// The items `q` selects, each with its version, its first assignments and their count, in
    /// one statement (bounded by `q.limit` items and `q.assignments` assignments per item). An
    /// assignment status this version does not know is read as
    /// [`StatusRead::Unknown`](crate::records::StatusRead::Unknown), not as an error; an item
    /// whose row holds a value docket cannot decode is [`ItemRead::Unreadable`] in its place.
    fn item_list_assigned(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemRead>, StoreError>;
}

/// A store for both the scheduler and the work queue: what backends hand out. An
/// `Arc<dyn Store>` coerces to `Arc<dyn ExecutionStore>` and `Arc<dyn QueueStore>`.
pub trait Store: ExecutionStore + QueueStore {}

impl<T: ExecutionStore + QueueStore + ?Sized> Store for T {}
