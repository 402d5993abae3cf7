//! A thin store with a planner above it: the [`Store`](crate::Store) the scheduler and the work
//! queue use. The hand-out goes through the planner; every other operation goes to the store,
//! and the planner hears of the writes that can make work due (its level cache) and of the
//! index changes (its custom-order choice).

use super::Planner;
use crate::dialect::Capabilities;
use crate::error::{DocketError, StoreError};
use crate::ordering::CustomKey;
use crate::records::{
    Assignment, Changes, Completion, DeadCursor, DeadPage, DueParams, Execution, ExecutionKey,
    Finishing, ForWorker, Guard, IndexChange, Item, ItemCount, ItemRead, ItemsQuery, LagQuery,
    ListFilter, NameLag, NewExecution, NewItem, PausedPage, PausedRead, PausedTask, PickChange,
    PoisonRow, TaskSummary,
};
use crate::store::{
    Adopted, ExecutionOps, ExecutionStore, QueueOps, QueueStore, StoreConfig, StoreInfo,
};
use chrono::{DateTime, Utc};

/// `store` with `planner` above it (see [`crate::planner`]).
#[derive(Debug)]
pub struct Planned<S> {
    store: S,
    planner: Planner,
}

impl<S: StoreInfo> Planned<S> {
    /// `store` with a planner for its ordering policy.
    pub fn over(store: S) -> Self {
        let planner = Planner::new(store.config().ordering.clone());
        Self { store, planner }
    }
}

impl<S> Planned<S> {
    /// The thin store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The planner.
    pub fn planner(&self) -> &Planner {
        &self.planner
    }

    /// A local update changed a row: a new time, a release or a new priority can make it due
    /// in a level seen empty.
    fn updated(&self, changes: &Changes) {
        let releases = matches!(changes.pick, Some(PickChange::Release));
        if changes.execution_time.is_some() || releases || changes.priority.is_some() {
            self.planner.wrote(changes.priority, changes.execution_time);
        }
    }

    /// Schema changes may add levels (or the priority column): the level cache starts over.
    fn reshaped<T>(&self, done: Result<T, StoreError>) -> Result<T, StoreError> {
        self.planner.wrote(None, None);
        done
    }
}

impl<S: StoreInfo> StoreInfo for Planned<S> {
    fn backend(&self) -> &'static str {
        self.store.backend()
    }

    fn capabilities(&self) -> Capabilities {
        self.store.capabilities()
    }

    fn config(&self) -> &StoreConfig {
        self.store.config()
    }

    fn wake_signals(&self) -> Option<std::sync::Arc<dyn crate::store::WakeSignals>> {
        self.store.wake_signals()
    }

    fn migrate(&self, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
        self.reshaped(self.store.migrate(up_to))
    }

    fn adopt(&self, up_to: Option<&str>) -> Result<Adopted, StoreError> {
        self.reshaped(self.store.adopt(up_to))
    }
}

impl<S: ExecutionOps> ExecutionStore for Planned<S> {
    fn check_schema(&self) -> Result<(), StoreError> {
        self.store.check_schema()
    }

    fn execution_insert(&self, row: &NewExecution) -> Result<bool, StoreError> {
        let inserted = self.store.execution_insert(row)?;
        if inserted {
            self.planner
                .wrote(Some(row.priority), Some(row.execution_time));
        }
        Ok(inserted)
    }

    fn execution_insert_batch(&self, rows: &[NewExecution]) -> Result<u64, StoreError> {
        let inserted = self.store.execution_insert_batch(rows)?;
        for row in rows {
            self.planner
                .wrote(Some(row.priority), Some(row.execution_time));
        }
        Ok(inserted)
    }

    fn execution_get(&self, key: &ExecutionKey) -> Result<Option<Execution>, StoreError> {
        self.store.execution_get(key)
    }

    fn execution_list(&self, filter: &ListFilter) -> Result<Vec<Execution>, StoreError> {
        self.store.execution_list(filter)
    }

    fn execution_fetch_due(&self, p: &DueParams<'_>) -> Result<Vec<Execution>, StoreError> {
        self.planner.due(&self.store, p)
    }

    fn execution_lock_and_fetch_due(
        &self,
        p: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError> {
        if self.capabilities().lock_and_fetch.is_none() {
            return Err(StoreError::Unsupported {
                backend: self.backend(),
                capability: "lock-and-fetch",
            });
        }
        self.planner.claim(&self.store, p, picked_by)
    }

    fn execution_update(
        &self,
        key: &ExecutionKey,
        guard: Guard,
        changes: &Changes,
    ) -> Result<bool, StoreError> {
        let updated = self.store.execution_update(key, guard, changes)?;
        if updated {
            self.updated(changes);
        }
        Ok(updated)
    }

    fn execution_heartbeat(
        &self,
        key: &ExecutionKey,
        version: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.store.execution_heartbeat(key, version, now)
    }

    fn execution_heartbeat_batch(
        &self,
        rows: &[(ExecutionKey, i64)],
        now: DateTime<Utc>,
    ) -> Vec<Result<bool, StoreError>> {
        self.store.execution_heartbeat_batch(rows, now)
    }

    fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError> {
        self.store.execution_remove(key, guard)
    }

    fn execution_complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError> {
        // One transaction: a batch ended by contention wrote nothing and is run again.
        let written = super::levels::retried(|| self.store.execution_complete_batch(batch))?;
        for (completion, done) in batch.iter().zip(&written) {
            if let (Some(changes), true) = (&completion.update, done) {
                self.updated(changes);
            }
        }
        Ok(written)
    }

    fn execution_dead_page(
        &self,
        page: &DeadPage,
    ) -> Result<(Vec<Execution>, Option<DeadCursor>), StoreError> {
        // A dead row that does not decode is reported, not a failed dead-execution check.
        let (dead, next) = self.store.execution_dead_rows(page)?;
        self.planner.hold_back(dead.poison, page.older_than);
        Ok((dead.rows, next))
    }

    fn execution_dead_counts(
        &self,
        older_than: DateTime<Utc>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        self.store.execution_dead_counts(older_than)
    }

    fn paused_list(&self) -> Result<Vec<PausedTask>, StoreError> {
        self.store.paused_list()
    }

    fn paused_page(&self, limit: i64) -> Result<PausedPage, StoreError> {
        self.store.paused_page(limit)
    }

    fn paused_among(&self, names: &[String]) -> Result<Vec<PausedRead>, StoreError> {
        self.store.paused_among(names)
    }

    fn paused_set(
        &self,
        task_name: &str,
        at: DateTime<Utc>,
        by: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.store.paused_set(task_name, at, by)
    }

    fn paused_clear(&self, task_name: &str) -> Result<bool, StoreError> {
        self.store.paused_clear(task_name)
    }

    fn execution_names_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.store.execution_names_after(after, limit)
    }

    fn execution_name_lag(&self, q: &LagQuery<'_>) -> Result<NameLag, StoreError> {
        self.store.execution_name_lag(q)
    }

    fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError> {
        self.store.execution_summary()
    }

    fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError> {
        self.store.execution_unresolved_names(known)
    }

    fn execution_delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        self.store.execution_delete_unresolved(known, before)
    }

    fn server_time(&self) -> Result<DateTime<Utc>, StoreError> {
        self.store.server_time()
    }

    fn execution_poisoned(&self) -> Vec<PoisonRow> {
        self.planner.poisoned()
    }
}

impl<S: QueueOps> QueueStore for Planned<S> {
    fn check_queue_schema(&self) -> Result<(), StoreError> {
        self.store.check_queue_schema()
    }

    fn item_insert_stream(
        &self,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
    ) -> Result<u64, StoreError> {
        self.store.item_insert_stream(rows)
    }

    fn item_counts(&self) -> Result<Vec<ItemCount>, StoreError> {
        self.store.item_counts()
    }

    fn order_index_create(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError> {
        let change = self.store.order_index_create(keys);
        self.planner.forget_order_index(keys);
        change
    }

    fn order_index_drop(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError> {
        let change = self.store.order_index_drop(keys);
        self.planner.forget_order_index(keys);
        change
    }

    fn order_index_exists(&self, keys: &[CustomKey]) -> Result<(String, bool), StoreError> {
        self.store.order_index_exists(keys)
    }

    fn item_get(&self, key: &ExecutionKey) -> Result<Option<Item>, StoreError> {
        self.store.item_get(key)
    }

    fn item_next_for(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError> {
        self.planner.next_for(&self.store, q, deadline)
    }

    fn item_list_for(&self, q: &ForWorker<'_>, limit: i64) -> Result<Vec<Item>, StoreError> {
        self.planner.list_for(&self.store, q, limit)
    }

    fn item_extend(&self, key: &ExecutionKey, n: i32) -> Result<bool, StoreError> {
        self.store.item_extend(key, n)
    }

    fn assignment_finish(&self, f: &Finishing<'_>) -> Result<bool, StoreError> {
        self.store.assignment_finish(f)
    }

    fn assignment_expired(&self, now: DateTime<Utc>) -> Result<Vec<Assignment>, StoreError> {
        self.store.assignment_expired(now)
    }

    fn assignment_list(&self, key: &ExecutionKey) -> Result<Vec<Assignment>, StoreError> {
        self.store.assignment_list(key)
    }

    fn item_list_assigned(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemRead>, StoreError> {
        self.store.item_list_assigned(q)
    }
}
