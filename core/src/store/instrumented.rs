//! Instrumentation written once, around any store, and applied in one place: [`attach`], the
//! path every store takes to the [`Scheduler`](crate::scheduler::Scheduler), a
//! [`SchedulerClient`](crate::scheduler::client::SchedulerClient) or a
//! [`WorkQueue`](crate::queue::WorkQueue). Every call of [`ExecutionStore`] and [`QueueStore`]
//! then runs in a `tracing` span `docket.store` (field `op`) and records
//! `docket_store_seconds{op}` and, on failure, `docket_store_errors_total{op}` ([`timed`]). The
//! work-queue calls also count what they did: `docket_queue_claims_total`,
//! `docket_queue_finished_total{status}` (submissions, skips, returns, abandons) and
//! `docket_queue_next_for_seconds`.
//!
//! So every backend reports the same metrics without a line of its own. Adding a store
//! operation adds one line here, in `observed!` (or `forwarded!` for what is no database
//! call).

use super::*;
use std::time::Instant;

/// A store with spans and metrics around every call (see the [module docs](self)). Made by
/// [`attach`] only.
#[derive(Debug)]
pub(crate) struct Instrumented<S: ?Sized> {
    inner: Arc<S>,
}

/// A store trait the scheduler, its client or the work queue holds: what [`attach`] checks
/// and how it is instrumented.
pub(crate) trait Attach {
    /// Checks that the table has the schema the holder needs (failing with a
    /// missing-migration error that names the migration).
    fn check(&self) -> Result<(), StoreError>;

    /// `self` inside [`Instrumented`].
    fn instrumented(self: Arc<Self>) -> Arc<Self>;
}

impl Attach for dyn ExecutionStore {
    fn check(&self) -> Result<(), StoreError> {
        self.check_schema()
    }

    fn instrumented(self: Arc<Self>) -> Arc<Self> {
        Arc::new(Instrumented { inner: self })
    }
}

impl Attach for dyn QueueStore {
    fn check(&self) -> Result<(), StoreError> {
        self.check_queue_schema()
    }

    fn instrumented(self: Arc<Self>) -> Arc<Self> {
        Arc::new(Instrumented { inner: self })
    }
}

/// The one place a store is instrumented: `store` as the scheduler, its client or the work
/// queue holds it, instrumented, once its schema is checked (through the instrumentation, as
/// every later call).
pub(crate) fn attach<S: Attach + ?Sized>(store: Arc<S>) -> Result<Arc<S>, StoreError> {
    let store = store.instrumented();
    store.check()?;
    Ok(store)
}

/// Runs `call` in a `docket.store` span named for `op`, records its duration in
/// `docket_store_seconds{op}` and adds the failures `failed` counts in its answer to
/// `docket_store_errors_total{op}`: the instrumentation of every store call.
fn timed<T>(op: &'static str, call: impl FnOnce() -> T, failed: impl FnOnce(&T) -> u64) -> T {
    let span = tracing::debug_span!("docket.store", op);
    let _entered = span.enter();
    let started = Instant::now();
    let answer = call();
    metrics::histogram!("docket_store_seconds", "op" => op).record(started.elapsed().as_secs_f64());
    let failures = failed(&answer);
    if failures > 0 {
        metrics::counter!("docket_store_errors_total", "op" => op).increment(failures);
    }
    answer
}

/// [`timed`] for a call that fails as a whole; a failure is also logged (debug).
fn observe<T>(
    op: &'static str,
    call: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    timed(op, call, |answer| match answer {
        Ok(_) => 0,
        Err(e) => {
            tracing::debug!(error = %e, "store call failed");
            1
        }
    })
}

/// Forwards trait methods to `self.inner`, each inside [`observe`].
macro_rules! observed {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&self $(, $arg: $ty)*) -> Result<$ret, StoreError> {
                observe(stringify!($name), || self.inner.$name($($arg),*))
            }
        )*
    };
}

/// Forwards trait methods that make no database call to `self.inner`, as they are.
macro_rules! forwarded {
    ($(fn $name:ident(&self) -> $ret:ty;)*) => {
        $(
            fn $name(&self) -> $ret {
                self.inner.$name()
            }
        )*
    };
}

impl<S: StoreInfo + ?Sized> StoreInfo for Instrumented<S> {
    forwarded! {
        fn backend(&self) -> &'static str;
        fn capabilities(&self) -> Capabilities;
        fn config(&self) -> &StoreConfig;
        fn wake_signals(&self) -> Option<Arc<dyn WakeSignals>>;
    }

    observed! {
        fn migrate(&self, up_to: Option<&str>) -> Vec<String>;
        fn adopt(&self, up_to: Option<&str>) -> Adopted;
    }
}

impl<S: ExecutionStore + ?Sized> ExecutionStore for Instrumented<S> {
    observed! {
        fn check_schema(&self) -> ();
        fn execution_insert(&self, row: &NewExecution) -> bool;
        fn execution_insert_batch(&self, rows: &[NewExecution]) -> u64;
        fn execution_get(&self, key: &ExecutionKey) -> Option<Execution>;
        fn execution_list(&self, filter: &ListFilter) -> Vec<Execution>;
        fn execution_fetch_due(&self, params: &DueParams<'_>) -> Vec<Execution>;
        fn execution_lock_and_fetch_due(&self, params: &DueParams<'_>, picked_by: &str) -> Vec<Execution>;
        fn execution_update(&self, key: &ExecutionKey, guard: Guard, changes: &Changes) -> bool;
        fn execution_heartbeat(&self, key: &ExecutionKey, version: i64, now: DateTime<Utc>) -> bool;
        fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> bool;
        fn execution_complete_batch(&self, batch: &[Completion]) -> Vec<bool>;
        fn execution_dead_page(&self, page: &DeadPage) -> (Vec<Execution>, Option<DeadCursor>);
        fn execution_dead_counts(&self, older_than: DateTime<Utc>) -> Vec<(String, i64)>;
        fn execution_summary(&self) -> Vec<TaskSummary>;
        fn paused_list(&self) -> Vec<PausedTask>;
        fn paused_page(&self, limit: i64) -> PausedPage;
        fn paused_among(&self, names: &[String]) -> Vec<PausedRead>;
        fn paused_set(&self, task_name: &str, at: DateTime<Utc>, by: Option<&str>) -> bool;
        fn paused_clear(&self, task_name: &str) -> bool;
        fn limit_list(&self) -> Vec<TaskLimit>;
        fn limit_set(&self, limit: &TaskLimit, now: DateTime<Utc>) -> ();
        fn limit_clear(&self, task_name: &str) -> bool;
        fn limit_usage(&self, now: DateTime<Utc>, cap: i64) -> Vec<LimitUse>;
        fn execution_claim_limited(&self, params: &DueParams<'_>, picked_by: &str) -> Vec<Execution>;
        fn execution_names_after(&self, after: Option<&str>, limit: usize) -> Vec<String>;
        fn execution_name_lag(&self, q: &LagQuery<'_>) -> NameLag;
        fn execution_unresolved_names(&self, known: &[String]) -> Vec<String>;
        fn execution_delete_unresolved(&self, known: &[String], before: DateTime<Utc>) -> u64;
        fn server_time(&self) -> DateTime<Utc>;
    }

    forwarded! {
        // The wrapped store's pending reports.
        fn execution_poisoned(&self) -> Vec<PoisonRow>;
    }

    /// Not a database call: the limits the wrapped store read last.
    fn limit_start_window(&self, task_name: &str) -> Option<std::time::Duration> {
        self.inner.limit_start_window(task_name)
    }

    /// One answer per row: each failed row counts as an error.
    fn execution_heartbeat_batch(
        &self,
        rows: &[(ExecutionKey, i64)],
        now: DateTime<Utc>,
    ) -> Vec<Result<bool, StoreError>> {
        timed(
            "execution_heartbeat_batch",
            || self.inner.execution_heartbeat_batch(rows, now),
            |answers| answers.iter().filter(|a| a.is_err()).count() as u64,
        )
    }
}

impl<S: QueueStore + ?Sized> QueueStore for Instrumented<S> {
    observed! {
        fn check_queue_schema(&self) -> ();
        fn item_insert_stream(&self, rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>) -> u64;
        fn item_counts(&self) -> Vec<ItemCount>;
        fn order_index_create(&self, keys: &[CustomKey]) -> IndexChange;
        fn order_index_drop(&self, keys: &[CustomKey]) -> IndexChange;
        fn order_index_exists(&self, keys: &[CustomKey]) -> (String, bool);
        fn item_get(&self, key: &ExecutionKey) -> Option<Item>;
        fn item_list_for(&self, q: &ForWorker<'_>, limit: i64) -> Vec<Item>;
        fn item_extend(&self, key: &ExecutionKey, n: i32) -> bool;
        fn assignment_expired(&self, now: DateTime<Utc>) -> Vec<Assignment>;
        fn assignment_list(&self, key: &ExecutionKey) -> Vec<Assignment>;
        fn item_list_assigned(&self, q: &ItemsQuery<'_>) -> Vec<ItemRead>;
    }

    /// Also counts the claims and times `next_for` per task type.
    fn item_next_for(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError> {
        let started = Instant::now();
        let claimed = observe("item_next_for", || self.inner.item_next_for(q, deadline))?;
        let task = q.task_type.to_owned();
        metrics::histogram!("docket_queue_next_for_seconds", "task" => task.clone())
            .record(started.elapsed().as_secs_f64());
        if claimed.is_some() {
            metrics::counter!("docket_queue_claims_total", "task" => task).increment(1);
        }
        Ok(claimed)
    }

    /// Also counts the finished assignments by status.
    fn assignment_finish(&self, f: &Finishing<'_>) -> Result<bool, StoreError> {
        let finished = observe("assignment_finish", || self.inner.assignment_finish(f))?;
        if finished {
            metrics::counter!(
                "docket_queue_finished_total",
                "task" => f.key.task_name.clone(),
                "status" => f.how.status().as_str()
            )
            .increment(1);
        }
        Ok(finished)
    }
}
