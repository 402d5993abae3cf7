//! The thin store: one method per database operation, parameter values in, rows out, nothing
//! remembered between calls and no hand-out policy (River's driver executor is the model).
//! [`sql::SqlOps`](super::sql::SqlOps) implements it once for every SQL backend; the
//! [`Planner`](crate::planner::Planner) decides above it which operations a poll or a
//! `next_for` runs, and [`Planned`](crate::planner::Planned) joins the two into a [`Store`].
//!
//! The operations that take part in the hand-out are [`DueSource`] and [`ItemSource`]; the
//! others mirror [`ExecutionStore`] and [`QueueStore`], whose documentation they share.

use super::*;
use crate::planner::{Decoded, DueSource, ItemSource};

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
    /// [`ExecutionStore::execution_remove`].
    fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError>;
    /// [`ExecutionStore::execution_complete_batch`].
    fn execution_complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError>;
    /// [`ExecutionStore::execution_get_dead`], with the rows that do not decode apart.
    fn execution_dead(&self, older_than: DateTime<Utc>) -> Result<Decoded, StoreError>;
    /// [`ExecutionStore::execution_summary`].
    fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError>;
    /// [`ExecutionStore::execution_unresolved_names`].
    fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError>;
    /// [`ExecutionStore::execution_delete_unresolved`].
    fn execution_delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
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
}
