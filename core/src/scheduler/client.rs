//! The client API: schedule, reschedule, cancel and inspect executions, with or without a
//! running scheduler.

use crate::clock::{to_micros, Clock, SystemClock};
use crate::error::{DocketError, Result};
use crate::records::{
    Changes, DeadCursor, DeadPage, DueParams, Execution, ExecutionKey, Guard, LagQuery, ListFilter,
    NameLag, NewExecution, PausedPage, PausedRead, PausedTask, TaskSummary,
};
use crate::store::{attach, ExecutionStore, StoreConfig, WakeSignals};
use crate::task::{Priority, TaskInstance};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Arc;

/// What `schedule` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleOutcome {
    /// A new execution was created.
    Scheduled,
    /// The instance existed; nothing changed.
    AlreadyExists,
    /// The instance existed and was replaced (only with [`SchedulerClient::schedule_or_replace`]).
    Replaced,
}

type Waker = Arc<dyn Fn() + Send + Sync>;

/// Due executions counted per task and per priority level by [`SchedulerClient::due_counts`],
/// from one due-query that reads at most `cap + 1` rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DueCounts {
    /// Due rows counted per task name (at most `cap` rows counted in all).
    pub per_task: HashMap<String, i64>,
    /// Due rows counted per priority level, highest first, `None` (no priority) last; one
    /// `None` level when the store's ordering has priority off.
    pub per_level: Vec<(Option<i16>, i64)>,
    /// Whether there were more than `cap` due rows (the counts then stop at `cap`, in
    /// hand-out order: the last level's count is a lower bound).
    pub capped: bool,
}

/// What waits in the table and since when ([`SchedulerClient::lag`]): per task name, read
/// from the lag indexes with every count capped, so its cost does not grow with the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lag {
    /// The clock's now, the time every age is measured from.
    pub now: DateTime<Utc>,
    /// Per task name (scheduler tasks and task types), by name.
    pub names: Vec<NameLag>,
    /// Whether the table holds more names than were read.
    pub names_capped: bool,
    /// Each count stops at this many rows.
    pub cap: i64,
}

/// Schedules and inspects executions. Cheap to clone.
#[derive(Clone)]
pub struct SchedulerClient {
    store: Arc<dyn ExecutionStore>,
    clock: Arc<dyn Clock>,
    /// Known tasks and their default priorities (`None`: accept any task name).
    tasks: Option<Arc<HashMap<String, Priority>>>,
    waker: Option<Waker>,
    /// The store's wake-up signals, if it has any.
    signals: Option<Arc<dyn WakeSignals>>,
}

impl std::fmt::Debug for SchedulerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerClient")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl SchedulerClient {
    /// A client with no scheduler: any task name is accepted and gets
    /// [`Priority::MEDIUM`] by default. Checks the schema first.
    pub fn new(store: Arc<dyn ExecutionStore>) -> Result<Self> {
        Self::with_clock(store, Arc::new(SystemClock))
    }

    /// As [`SchedulerClient::new`], with an injected clock.
    pub fn with_clock(store: Arc<dyn ExecutionStore>, clock: Arc<dyn Clock>) -> Result<Self> {
        let store = attach(store)?;
        Ok(Self {
            signals: store.wake_signals(),
            store,
            clock,
            tasks: None,
            waker: None,
        })
    }

    pub(crate) fn for_scheduler(
        store: Arc<dyn ExecutionStore>,
        clock: Arc<dyn Clock>,
        tasks: HashMap<String, Priority>,
        waker: Waker,
    ) -> Self {
        Self {
            signals: store.wake_signals(),
            store,
            clock,
            tasks: Some(Arc::new(tasks)),
            waker: Some(waker),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ExecutionStore> {
        &self.store
    }

    /// The table and ordering the client works on.
    pub fn config(&self) -> &StoreConfig {
        self.store.config()
    }

    fn row<T>(&self, instance: TaskInstance<T>) -> Result<NewExecution> {
        let default = match &self.tasks {
            Some(tasks) => *tasks
                .get(instance.task_name())
                .ok_or_else(|| DocketError::UnknownTask(instance.task_name().to_owned()))?,
            None => Priority::MEDIUM,
        };
        instance.into_new_execution(self.clock.now(), default)
    }

    /// Wakes this process's scheduler (if the client is one's) and announces the work to
    /// the schedulers of other processes (where the backend has wake-up signals), when the
    /// execution is due now. Called after the write committed. Work due later is found by
    /// polling.
    fn wake_if_due(&self, at: DateTime<Utc>) {
        if at <= self.clock.now() {
            if let Some(wake) = &self.waker {
                wake();
            }
            if let Some(signals) = &self.signals {
                signals.announce();
            }
        }
    }

    /// Schedules the instance unless it exists (schedule-if-not-exists).
    pub fn schedule<T>(&self, instance: TaskInstance<T>) -> Result<ScheduleOutcome> {
        let row = self.row(instance)?;
        if !self.store.execution_insert(&row)? {
            return Ok(ScheduleOutcome::AlreadyExists);
        }
        self.wake_if_due(row.execution_time);
        Ok(ScheduleOutcome::Scheduled)
    }

    /// Schedules the instance, replacing time, data and priority of an existing one that is not
    /// running. A running one is [`DocketError::Running`].
    pub fn schedule_or_replace<T>(&self, instance: TaskInstance<T>) -> Result<ScheduleOutcome> {
        let row = self.row(instance)?;
        let outcome = if self.store.execution_insert(&row)? {
            ScheduleOutcome::Scheduled
        } else {
            let changes = Changes {
                execution_time: Some(row.execution_time),
                data: Some(row.task_data.clone()),
                priority: Some(row.priority),
                ..Changes::default()
            };
            self.update_unpicked(&row.key(), &changes)?;
            ScheduleOutcome::Replaced
        };
        self.wake_if_due(row.execution_time);
        Ok(outcome)
    }

    /// Schedules all instances in one transaction: every row is validated first, and on any
    /// error nothing is written. Existing instances are skipped; returns how many were created.
    pub fn schedule_batch<T>(
        &self,
        instances: impl IntoIterator<Item = TaskInstance<T>>,
    ) -> Result<u64> {
        let rows = instances
            .into_iter()
            .map(|i| self.row(i))
            .collect::<Result<Vec<_>>>()?;
        let inserted = self.store.execution_insert_batch(&rows)?;
        if let Some(earliest) = rows.iter().map(|r| r.execution_time).min() {
            self.wake_if_due(earliest);
        }
        Ok(inserted)
    }

    fn update_unpicked(&self, key: &ExecutionKey, changes: &Changes) -> Result<()> {
        if self.store.execution_update(key, Guard::Unpicked, changes)? {
            return Ok(());
        }
        Err(self.why_unchanged(key)?)
    }

    fn why_unchanged(&self, key: &ExecutionKey) -> Result<DocketError> {
        Ok(match self.store.execution_get(key)? {
            Some(e) => DocketError::Running {
                task: e.task_name,
                instance: e.task_instance,
                picked_by: e.picked_by,
            },
            None => DocketError::NotFound {
                task: key.task_name.clone(),
                instance: key.task_instance.clone(),
            },
        })
    }

    /// Moves an execution that is not running to `at`, keeping its data.
    pub fn reschedule(&self, key: &ExecutionKey, at: DateTime<Utc>) -> Result<()> {
        let at = to_micros(at);
        self.update_unpicked(
            key,
            &Changes {
                execution_time: Some(at),
                ..Changes::default()
            },
        )?;
        self.wake_if_due(at);
        Ok(())
    }

    /// Moves an execution that is not running to `at` and replaces its data (`None` clears it).
    pub fn reschedule_with_data(
        &self,
        key: &ExecutionKey,
        at: DateTime<Utc>,
        data: Option<Vec<u8>>,
    ) -> Result<()> {
        let at = to_micros(at);
        self.update_unpicked(
            key,
            &Changes {
                execution_time: Some(at),
                data: Some(data),
                ..Changes::default()
            },
        )?;
        self.wake_if_due(at);
        Ok(())
    }

    /// Removes an execution that is not running.
    pub fn cancel(&self, key: &ExecutionKey) -> Result<()> {
        if self.store.execution_remove(key, Guard::Unpicked)? {
            return Ok(());
        }
        Err(self.why_unchanged(key)?)
    }

    /// One execution.
    pub fn get(&self, key: &ExecutionKey) -> Result<Option<Execution>> {
        Ok(self.store.execution_get(key)?)
    }

    /// Executions matching `filter`, in hand-out order.
    pub fn list_scheduled(&self, filter: &ListFilter) -> Result<Vec<Execution>> {
        Ok(self.store.execution_list(filter)?)
    }

    /// Executions whose last run failed.
    pub fn list_failing(&self) -> Result<Vec<Execution>> {
        self.list_scheduled(&ListFilter {
            failing_only: true,
            ..ListFilter::default()
        })
    }

    /// Counts per task.
    pub fn summary(&self) -> Result<Vec<TaskSummary>> {
        Ok(self.store.execution_summary()?)
    }

    /// The scheduler task names in the table, by name: every task name but the work-queue
    /// task types (rows with `max_assignments`, where the table has the work-queue columns).
    /// One statement, one row per name.
    pub fn task_names(&self) -> Result<Vec<String>> {
        Ok(self.store.execution_unresolved_names(&[])?)
    }

    /// Due executions (not picked, execution time passed) of `task_names` (all tasks when
    /// empty) counted per task and per priority level, reading at most `cap + 1` rows in
    /// hand-out order (one due-query; the store keeps no counts). `cap` must be at least 1.
    pub fn due_counts(&self, task_names: &[String], cap: i64) -> Result<DueCounts> {
        if cap < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "due_counts: cap must be at least 1, got {cap}"
            )));
        }
        let rows = self.store.execution_fetch_due(&DueParams {
            now: self.clock.now(),
            task_names,
            limit: cap + 1,
            claim_for: None,
            clock: None,
            // A view: the limited tasks' due work waits too.
            include_limited: true,
        })?;
        let capped = rows.len() as i64 > cap;
        let by_priority = self.config().ordering.priority;
        // Highest first, NULL last: Reverse(Some(p)) sorts by p descending, then Reverse(None).
        let mut levels: std::collections::BTreeMap<std::cmp::Reverse<Option<i16>>, i64> =
            std::collections::BTreeMap::new();
        let mut per_task: HashMap<String, i64> = HashMap::new();
        for e in rows.into_iter().take(cap as usize) {
            let level = if by_priority { e.priority } else { None };
            *levels.entry(std::cmp::Reverse(level)).or_default() += 1;
            *per_task.entry(e.task_name).or_default() += 1;
        }
        Ok(DueCounts {
            per_task,
            per_level: levels
                .into_iter()
                .map(|(std::cmp::Reverse(level), n)| (level, n))
                .collect(),
            capped,
        })
    }

    /// Pauses `task_name` cluster-wide: from their next poll no scheduler on this table claims
    /// its executions (those running finish; due ones wait); `by` says who, for the record.
    /// `false` when it was paused already. Needs `0008_paused_tasks`.
    pub fn pause(&self, task_name: &str, by: Option<&str>) -> Result<bool> {
        crate::task::validate_name("task name", task_name, crate::task::MAX_TASK_NAME_LEN)?;
        if let Some(by) = by {
            crate::task::validate_name("paused by", by, 128)?;
        }
        Ok(self.store.paused_set(task_name, self.clock.now(), by)?)
    }

    /// Resumes `task_name`: schedulers claim its executions again from their next poll.
    /// `false` when it was not paused.
    pub fn resume(&self, task_name: &str) -> Result<bool> {
        let resumed = self.store.paused_clear(task_name)?;
        if resumed {
            if let Some(wake) = &self.waker {
                wake();
            }
        }
        Ok(resumed)
    }

    /// The paused tasks, by name (none when the table lacks `0008_paused_tasks`). Reads every
    /// row: see [`SchedulerClient::paused_page`] for a bounded read.
    pub fn paused(&self) -> Result<Vec<PausedTask>> {
        Ok(self.store.paused_list()?)
    }

    /// The first `limit` paused tasks by name (at least 1), each row decoded on its own, and
    /// how many are paused in all: one statement bounded by `limit`, plus a count when the
    /// page is full.
    pub fn paused_page(&self, limit: i64) -> Result<PausedPage> {
        if limit < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "paused_page: limit must be at least 1, got {limit}"
            )));
        }
        Ok(self.store.paused_page(limit)?)
    }

    /// Which of `names` are paused, by name, each row decoded on its own (a primary-key
    /// lookup per name, in statements of at most 100 names).
    pub fn paused_among(&self, names: &[String]) -> Result<Vec<PausedRead>> {
        Ok(self.store.paused_among(names)?)
    }

    /// Sets the limits of `limit.task_name` cluster-wide, replacing its old ones: every
    /// scheduler on the table keeps them from its next poll (other claims leave the task out
    /// at once; its own claim starts within a second). Needs `0009_limits`.
    pub fn set_limit(&self, limit: &crate::records::TaskLimit) -> Result<()> {
        limit.validate()?;
        Ok(self.store.limit_set(limit, self.clock.now())?)
    }

    /// Removes the limits of `task_name`; `false` when it had none. Its due executions are
    /// claimed as any others from the next poll.
    pub fn clear_limit(&self, task_name: &str) -> Result<bool> {
        let cleared = self.store.limit_clear(task_name)?;
        if cleared {
            if let Some(wake) = &self.waker {
                wake();
            }
        }
        Ok(cleared)
    }

    /// Every task's limits, by task name (none when the table lacks `0009_limits`).
    pub fn limits(&self) -> Result<Vec<crate::records::TaskLimit>> {
        Ok(self.store.limit_list()?)
    }

    /// Each limit with what it holds now: running, keys running, starts in its window, due
    /// executions waiting (counted up to `cap`, at least 1).
    pub fn limit_usage(&self, cap: i64) -> Result<Vec<crate::records::LimitUse>> {
        if cap < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "limit_usage: cap must be at least 1, got {cap}"
            )));
        }
        Ok(self.store.limit_usage(self.clock.now(), cap)?)
    }

    /// What waits under each task name at now, and since when: for a scheduler task the
    /// oldest due execution (not picked, execution time passed), per priority level too, and
    /// its due, scheduled and picked executions; for a work-queue task type (when `items`:
    /// the table has the work-queue columns) its oldest open item (assignable, arrived) and
    /// how many are open. Reads the first `max_names` names (one primary-key seek each), then
    /// per name at most four statements, each one seek or one index range read up to
    /// `cap + 1` rows (`0007_lag_indexes`). `max_names` and `cap` must be at least 1.
    pub fn lag(&self, max_names: usize, cap: i64, items: bool) -> Result<Lag> {
        if cap < 1 || max_names < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "lag: max_names and cap must be at least 1, got {max_names} and {cap}"
            )));
        }
        let now = self.clock.now();
        let mut names = self.store.execution_names_after(None, max_names + 1)?;
        let names_capped = names.len() > max_names;
        names.truncate(max_names);
        let names = names
            .iter()
            .map(|name| {
                self.store.execution_name_lag(&LagQuery {
                    name,
                    now,
                    cap,
                    items,
                })
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Lag {
            now,
            names,
            names_capped,
            cap,
        })
    }

    /// One page of the dead executions (picked, heartbeat at or before `page.older_than`),
    /// at most `page.limit` rows in `(last_heartbeat, task_name, task_instance)` order, and the
    /// cursor of the next page (`None` after the last). Rows that do not decode are left out.
    pub fn dead_page(&self, page: &DeadPage) -> Result<(Vec<Execution>, Option<DeadCursor>)> {
        if page.limit < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "dead_page: limit must be at least 1, got {}",
                page.limit
            )));
        }
        Ok(self.store.execution_dead_page(page)?)
    }

    /// Dead executions (picked, heartbeat at or before `older_than`) counted per task name, by
    /// name; one statement, one row per task name.
    pub fn dead_counts(&self, older_than: DateTime<Utc>) -> Result<Vec<(String, i64)>> {
        Ok(self.store.execution_dead_counts(older_than)?)
    }
}
