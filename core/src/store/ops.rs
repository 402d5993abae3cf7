//! The thin store: one method per database operation, parameter values in, rows out, nothing
//! remembered between calls and no hand-out policy (River's driver executor is the model).
//! [`sql::SqlOps`] implements it once for every SQL backend; the planner
//! (`crate::planner`) decides above it which operations a poll or a `next_for` runs, and
//! joins the two into a [`Store`].
//!
//! The operations that take part in the hand-out are [`DueSource`] and [`ItemSource`]; the
//! others mirror [`ExecutionStore`] and [`QueueStore`], whose documentation they share.

use super::*;
use crate::dialect::OrderIndex;
use crate::records::Due;

/// Rows a due-query or claim returned: those that decode, and the poison rows that do not
/// (a claim never leaves those claimed).
#[derive(Debug, Default)]
pub struct Decoded {
    /// The executions that decoded.
    pub rows: Vec<Execution>,
    /// The rows that did not, each named by key and column.
    pub poison: Vec<PoisonRow>,
}

/// What one probe of a level found: the `execution_time` of its first row, read without
/// decoding the rest of the row (a poison row must not fail a poll).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// No row.
    Empty,
    /// The first row's time.
    At(DateTime<Utc>),
    /// A row whose time does not decode.
    Unreadable,
}

/// What the planner reads of a store's executions, each call one statement (the hand-out
/// part of [`ExecutionOps`]).
pub trait DueSource {
    /// The highest priority level below `below` (every level when `None`), as one statement;
    /// where [`DueSource::lists_all_levels`], every level below it, highest first.
    fn levels_below(&self, below: Option<i16>) -> Result<Vec<i16>, StoreError>;
    /// Whether [`DueSource::levels_below`] lists every level at once.
    fn lists_all_levels(&self) -> bool;
    /// The due, unpicked rows `due` asks for, in its level's order, without claiming.
    fn due_rows(&self, due: &Due<'_>) -> Result<Decoded, StoreError>;
    /// Claims the rows `due` asks for (lock-and-fetch), skipping rows others hold; poison rows
    /// are returned apart and never left claimed.
    fn claim_rows(&self, due: &Due<'_>, picked_by: &str) -> Result<Decoded, StoreError>;
    /// The time of the oldest unpicked row of `level` due by `now`.
    fn first_due(
        &self,
        level: Level,
        now: DateTime<Utc>,
        task_names: &[String],
    ) -> Result<Probe, StoreError>;
    /// When the next unpicked row of `level` falls due after `now`.
    fn next_due(&self, level: Level, now: DateTime<Utc>) -> Result<Probe, StoreError>;
}

/// What the planner reads of a store's work-queue items, each call one statement or one claim
/// transaction.
pub trait ItemSource {
    /// The levels holding items `q.worker` may take (any level), each with the arrival time of
    /// its longest-waiting one.
    fn item_levels(&self, q: &ForWorker<'_>) -> Result<Vec<(Level, DateTime<Utc>)>, StoreError>;
    /// Claims the first item `q` selects (its level, its arrival bound), sorted by `index`'s
    /// columns where given, and records an ACCEPTED assignment until `deadline`.
    fn item_claim(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
        index: Option<&OrderIndex>,
    ) -> Result<Option<Item>, StoreError>;
    /// The items `q` selects, in order, without claiming.
    fn item_list(
        &self,
        q: &ForWorker<'_>,
        limit: i64,
        index: Option<&OrderIndex>,
    ) -> Result<Vec<Item>, StoreError>;
    /// The order index of `keys` when the queries must name it to use it (the dialect indexes
    /// with generated columns), else `None`.
    fn named_order_index(&self, keys: &[CustomKey]) -> Result<Option<OrderIndex>, StoreError>;
    /// Whether `index` exists.
    fn order_index_present(&self, index: &OrderIndex) -> Result<bool, StoreError>;
}

/// The executions table's operations (see [`ExecutionStore`] for each).
pub trait ExecutionOps: StoreInfo + DueSource {
    /// [`ExecutionStore::check_schema`].
    fn check_schema(&self) -> Result<(), StoreError>;
    /// [`ExecutionStore::execution_insert`].
    fn execution_insert(&self, row: &NewExecution) -> Result<bool, StoreError>;
    /// [`ExecutionStore::execution_insert_batch`].
    fn execution_insert_batch(&self, rows: &[NewExecution]) -> Result<u64, StoreError>;
    /// [`ExecutionStore::execution_get`].
    fn execution_get(&self, key: &ExecutionKey) -> Result<Option<Execution>, StoreError>;
    /// [`ExecutionStore::execution_list`].
    fn execution_list(&self, filter: &ListFilter) -> Result<Vec<Execution>, StoreError>;
    /// [`ExecutionStore::execution_update`].
    fn execution_update(
        &self,
        key: &ExecutionKey,
        guard: Guard,
        changes: &Changes,
    ) -> Result<bool, StoreError>;
    /// [`ExecutionStore::execution_heartbeat`].
    fn execution_heartbeat(
        &self,
        key: &ExecutionKey,
        version: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError>;
    /// [`ExecutionStore::execution_heartbeat_batch`].
    fn execution_heartbeat_batch(
        &self,
        rows: &[(ExecutionKey, i64)],
        now: DateTime<Utc>,
    ) -> Vec<Result<bool, StoreError>>;
    /// [`ExecutionStore::execution_remove`].
    fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError>;
    /// [`ExecutionStore::execution_complete_batch`].
    fn execution_complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError>;
    /// [`ExecutionStore::execution_dead_page`], with the rows that do not decode apart, and
    /// the next page's cursor: the last decoded row when the page is full, else `None` (a full
    /// page of nothing but poison rows ends the walk too).
    fn execution_dead_rows(
        &self,
        page: &DeadPage,
    ) -> Result<(Decoded, Option<DeadCursor>), StoreError>;
    /// [`ExecutionStore::execution_dead_counts`].
    fn execution_dead_counts(
        &self,
        older_than: DateTime<Utc>,
    ) -> Result<Vec<(String, i64)>, StoreError>;
    /// [`ExecutionStore::execution_summary`].
    fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError>;
    /// [`ExecutionStore::paused_list`].
    fn paused_list(&self) -> Result<Vec<PausedTask>, StoreError>;
    /// [`ExecutionStore::paused_page`].
    fn paused_page(&self, limit: i64) -> Result<PausedPage, StoreError>;
    /// [`ExecutionStore::paused_among`].
    fn paused_among(&self, names: &[String]) -> Result<Vec<PausedRead>, StoreError>;
    /// [`ExecutionStore::paused_set`].
    fn paused_set(
        &self,
        task_name: &str,
        at: DateTime<Utc>,
        by: Option<&str>,
    ) -> Result<bool, StoreError>;
    /// [`ExecutionStore::paused_clear`].
    fn paused_clear(&self, task_name: &str) -> Result<bool, StoreError>;
    /// [`ExecutionStore::execution_names_after`].
    fn execution_names_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    /// [`ExecutionStore::execution_name_lag`].
    fn execution_name_lag(&self, q: &LagQuery<'_>) -> Result<NameLag, StoreError>;
    /// [`ExecutionStore::execution_unresolved_names`].
    fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError>;
    /// [`ExecutionStore::execution_delete_unresolved`].
    fn execution_delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    /// [`ExecutionStore::server_time`].
    fn server_time(&self) -> Result<DateTime<Utc>, StoreError>;
}

/// The work queue's operations (see [`QueueStore`] for each).
pub trait QueueOps: StoreInfo + ItemSource {
    /// [`QueueStore::check_queue_schema`].
    fn check_queue_schema(&self) -> Result<(), StoreError>;
    /// [`QueueStore::item_insert_stream`].
    fn item_insert_stream(
        &self,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
    ) -> Result<u64, StoreError>;
    /// [`QueueStore::item_counts`].
    fn item_counts(&self) -> Result<Vec<ItemCount>, StoreError>;
    /// [`QueueStore::order_index_create`].
    fn order_index_create(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError>;
    /// [`QueueStore::order_index_drop`].
    fn order_index_drop(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError>;
    /// [`QueueStore::order_index_exists`].
    fn order_index_exists(&self, keys: &[CustomKey]) -> Result<(String, bool), StoreError>;
    /// [`QueueStore::item_get`].
    fn item_get(&self, key: &ExecutionKey) -> Result<Option<Item>, StoreError>;
    /// [`QueueStore::item_extend`].
    fn item_extend(&self, key: &ExecutionKey, n: i32) -> Result<bool, StoreError>;
    /// [`QueueStore::assignment_finish`].
    fn assignment_finish(&self, f: &Finishing<'_>) -> Result<bool, StoreError>;
    /// [`QueueStore::assignment_expired`].
    fn assignment_expired(&self, now: DateTime<Utc>) -> Result<Vec<Assignment>, StoreError>;
    /// [`QueueStore::assignment_list`].
    fn assignment_list(&self, key: &ExecutionKey) -> Result<Vec<Assignment>, StoreError>;
    /// [`QueueStore::item_list_assigned`].
    fn item_list_assigned(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemRead>, StoreError>;
}
