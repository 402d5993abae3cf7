//! What a scheduler does, one step at a time: poll, run, complete, fail, heartbeat, detect dead
//! executions, report unknown tasks. The threads in [`super`] only call these in loops, and the
//! same steps can be driven by hand (with a manual clock) through [`super::Scheduler`].

use super::config::{PollingStrategy, SchedulerConfig};
use crate::clock::Clock;
use crate::error::StoreError;
use crate::listener::{SchedulerEvent, SchedulerListener};
use crate::records::NewExecution;
use crate::records::{Changes, Completion, DueParams, Execution, ExecutionKey, Guard, PickChange};
use crate::store::ExecutionStore;
use crate::task::{ExecutionContext, Task, RECURRING_INSTANCE};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tracing::{debug, error, info, warn};

mod rescue;
mod sync;

pub(crate) use sync::ClockSync;

/// Dead executions read per statement by [`Engine::detect_dead`] (it reads every page).
pub(crate) const DEAD_PAGE: i64 = 500;

/// Work handed from the poller to a worker thread.
#[derive(Debug)]
pub(crate) enum Job {
    /// A due candidate: claim it (optimistic version update), then run it.
    PickAndRun(Execution),
    /// Already claimed by lock-and-fetch: run it.
    Run(Execution),
}

/// What a finished execution reports once its outcome is written.
#[derive(Debug)]
enum Outcome {
    /// The handler returned `Ok` after running this long.
    Completed(Duration),
    /// The handler failed (or panicked); the execution runs again at `retry_at`, or is removed.
    Failed {
        error: String,
        retry_at: Option<DateTime<Utc>>,
    },
}

/// A finished execution whose outcome waits to be written with the next batch.
#[derive(Debug)]
struct Pending {
    execution: Execution,
    /// `None` removes the execution; `Some` reschedules it.
    update: Option<Changes>,
    outcome: Outcome,
    /// Past this, a write that keeps failing is given up (half the dead window after the
    /// handler returned): the execution stays picked and dead detection revives it.
    give_up_at: Instant,
}

/// Outcomes waiting to be written, and since when the oldest has waited.
#[derive(Debug, Default)]
struct Completions {
    pending: Vec<Pending>,
    since: Option<Instant>,
}

pub(crate) struct Engine {
    pub store: Arc<dyn ExecutionStore>,
    pub clock: Arc<dyn Clock>,
    pub config: SchedulerConfig,
    pub tasks: HashMap<String, Task>,
    pub task_names: Vec<String>,
    pub listeners: Vec<Arc<dyn SchedulerListener>>,
    /// Executions running here (or whose outcome is still being recorded), with the version we
    /// hold, for heartbeats.
    running: Mutex<HashMap<ExecutionKey, i64>>,
    /// Set by `Scheduler::stop`: outcome writes stop retrying.
    stopping: AtomicBool,
    /// Outcomes of finished executions, written in batches (see [`Engine::flush_completions`]).
    completions: Mutex<Completions>,
    /// Signalled when a batch of completions is full, and at shutdown.
    completions_ready: Condvar,
    /// The correction of `clock` by the server's, when on.
    sync: Option<ClockSync>,
}

fn chrono(d: std::time::Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl Engine {
    pub fn new(
        store: Arc<dyn ExecutionStore>,
        clock: Arc<dyn Clock>,
        sync: Option<ClockSync>,
        config: SchedulerConfig,
        tasks: HashMap<String, Task>,
        listeners: Vec<Arc<dyn SchedulerListener>>,
    ) -> Self {
        let mut task_names: Vec<String> = tasks.keys().cloned().collect();
        task_names.sort();
        Self {
            store,
            clock,
            config,
            tasks,
            task_names,
            listeners,
            running: Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
            completions: Mutex::new(Completions::default()),
            completions_ready: Condvar::new(),
            sync,
        }
    }

    /// Stops retrying outcome writes (shutdown) and lets the completion writer drain and end.
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _guard = self.completions();
        self.completions_ready.notify_all();
    }

    fn completions(&self) -> MutexGuard<'_, Completions> {
        self.completions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets a running execution for heartbeats, unless it was claimed again meanwhile (a
    /// newer version).
    fn forget(&self, key: &ExecutionKey, version: i64) {
        let mut running = self.running();
        if running.get(key) == Some(&version) {
            running.remove(key);
        }
    }

    fn emit(&self, event: SchedulerEvent) {
        for l in &self.listeners {
            l.on_event(&event);
        }
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<ExecutionKey, i64>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates each recurring task's execution if missing (insert-if-absent: no duplicates
    /// when several schedulers start at once).
    pub fn create_recurring(&self) -> Result<(), StoreError> {
        self.ensure_synced()?;
        let now = self.clock.now();
        for task in self.tasks.values() {
            let Some(schedule) = &task.schedule else {
                continue;
            };
            let Some(first) = schedule.next_after(now) else {
                continue;
            };
            let row = NewExecution {
                task_name: task.name.clone(),
                task_instance: RECURRING_INSTANCE.to_owned(),
                task_data: None,
                execution_time: first,
                priority: Some(task.default_priority.0),
                limit_key: None,
            };
            if self.store.execution_insert(&row)? {
                info!(task = %task.name, at = %first, "created recurring execution");
            }
        }
        Ok(())
    }

    /// One poll: finds up to `limit` due executions and returns them as jobs (claimed already
    /// under lock-and-fetch).
    pub fn poll(&self, limit: usize) -> Result<Vec<Job>, StoreError> {
        self.ensure_synced()?;
        let started = Instant::now();
        let params = DueParams {
            now: self.clock.now(),
            task_names: &self.task_names,
            limit: i64::try_from(limit).unwrap_or(i64::MAX),
            claim_for: Some(self.config.heartbeat_interval),
            clock: Some(&*self.clock),
            include_limited: false,
        };
        // Limited tasks first, each claimed within its limits under its own lock (every other
        // due-query leaves them out): their room is bounded, and a task at its limit holds
        // nothing else back. The rest of the room goes to the ordinary poll. (A limited
        // execution that waits in the queue past its rate limit's margin is handed back unrun
        // when it comes to start: see `late_for_its_rate_limit`.)
        let limited = self
            .store
            .execution_claim_limited(&params, &self.config.scheduler_name)?;
        let params = DueParams {
            limit: params.limit - limited.len() as i64,
            ..params
        };
        let (mut rows, job): (Vec<Execution>, fn(Execution) -> Job) = match self.config.polling {
            _ if params.limit <= 0 => (Vec::new(), Job::Run),
            PollingStrategy::FetchAndLockOnExecute { .. } => {
                (self.store.execution_fetch_due(&params)?, Job::PickAndRun)
            }
            PollingStrategy::LockAndFetch { .. } => (
                self.store
                    .execution_lock_and_fetch_due(&params, &self.config.scheduler_name)?,
                Job::Run,
            ),
        };
        let claimed = limited.len();
        rows.splice(0..0, limited);
        self.report_poison();
        if !rows.is_empty() && !self.listeners.is_empty() {
            self.emit(SchedulerEvent::Handed {
                now: params.now,
                executions: rows.clone(),
            });
        }
        // Claimed now, run later: heart-beat them while they wait for a worker, so a deep
        // queue of claimed executions is never taken for dead.
        let held = match self.config.polling {
            PollingStrategy::LockAndFetch { .. } => rows.len(),
            PollingStrategy::FetchAndLockOnExecute { .. } => claimed,
        };
        {
            let mut running = self.running();
            for e in &rows[..held] {
                running.insert(e.key(), e.version);
            }
        }
        let jobs: Vec<Job> = rows
            .into_iter()
            .enumerate()
            .map(|(i, e)| if i < claimed { Job::Run(e) } else { job(e) })
            .collect();
        let duration = started.elapsed();
        metrics::histogram!("docket_poll_seconds").record(duration.as_secs_f64());
        metrics::histogram!("docket_poll_found").record(jobs.len() as f64);
        debug!(found = jobs.len(), ?duration, "polled");
        self.emit(SchedulerEvent::PollCompleted {
            found: jobs.len(),
            duration,
        });
        Ok(jobs)
    }

    /// Runs a job to its end (claim if needed, handler, completion or failure handling).
    /// Returns `false` when another scheduler claimed the candidate first.
    pub fn process(&self, job: Job) -> bool {
        let execution = match job {
            Job::Run(e) if self.late_for_its_rate_limit(&e) => {
                self.hand_back_late(e);
                None
            }
            Job::Run(e) => self.still_held(e),
            Job::PickAndRun(candidate) => self.claim(candidate),
        };
        let ran = execution.is_some();
        if let Some(execution) = execution {
            self.run(execution);
        }
        ran
    }

    /// Whether a claimed execution of a rate-limited task would begin later after its claim
    /// than the limit's margin ([`ExecutionStore::limit_start_window`]): its start was counted
    /// at the claim, so a handler beginning later could share a window with the next starts.
    fn late_for_its_rate_limit(&self, e: &Execution) -> bool {
        let Some(margin) = self.store.limit_start_window(&e.task_name) else {
            return false;
        };
        e.last_heartbeat
            .is_some_and(|claimed| self.clock.now() - claimed > chrono(margin))
    }

    /// Hands a late execution of a rate-limited task back unrun: due again in its place, not
    /// failed (its start stays counted, so the limit errs on the safe side).
    fn hand_back_late(&self, e: Execution) {
        metrics::counter!("docket_limit_late_starts_total", "task" => e.task_name.clone())
            .increment(1);
        debug!(task = %e.task_name, instance = %e.task_instance,
            "claimed under a rate limit but would start past its margin: handed back");
        self.release(Job::Run(e));
    }

    /// A claimed execution about to start after waiting in the queue, if it is still this
    /// scheduler's: when it waited longer than a heartbeat interval since its claim (the
    /// process was paused, or cut off, and may have passed the dead window), only if a
    /// version-checked heartbeat still matches its row. A lost one is reported and never
    /// started; a heartbeat that fails for another reason (the database away) lets it run,
    /// fenced as always.
    fn still_held(&self, e: Execution) -> Option<Execution> {
        let key = e.key();
        let now = self.clock.now();
        let waited = e
            .last_heartbeat
            .is_none_or(|claimed| now - claimed > chrono(self.config.heartbeat_interval));
        if waited {
            if let Ok(false) = self.store.execution_heartbeat(&key, e.version, now) {
                self.lost(&e, "revived elsewhere while it waited to start");
                return None;
            }
        }
        Some(e)
    }

    /// Reports an execution this scheduler held and lost (its version moved on): forgotten
    /// for heartbeats, logged, counted (`docket_lost_executions_total`) and sent to listeners.
    fn lost(&self, e: &Execution, why: &str) {
        self.forget(&e.key(), e.version);
        warn!(task = %e.task_name, instance = %e.task_instance, version = e.version, why,
            "execution lost: not ours any more, nothing of ours is written");
        metrics::counter!("docket_lost_executions_total").increment(1);
        self.emit(SchedulerEvent::LostExecution(e.clone()));
    }

    /// Hands a claimed execution back unrun (shutdown before it started).
    pub fn release(&self, job: Job) {
        if let Job::Run(e) = job {
            self.forget(&e.key(), e.version);
            let changes = Changes {
                pick: Some(PickChange::Release),
                ..Changes::default()
            };
            if let Err(err) =
                self.store
                    .execution_update(&e.key(), Guard::Version(e.version), &changes)
            {
                warn!(task = %e.task_name, instance = %e.task_instance, %err, "could not release execution at shutdown; dead detection will revive it");
            }
        }
    }

    fn claim(&self, mut candidate: Execution) -> Option<Execution> {
        let now = self.clock.now();
        let by = self.config.scheduler_name.clone();
        let changes = Changes {
            pick: Some(PickChange::Claim {
                by: by.clone(),
                at: now,
            }),
            ..Changes::default()
        };
        match self.store.execution_update(
            &candidate.key(),
            Guard::Version(candidate.version),
            &changes,
        ) {
            Ok(true) => {
                candidate.picked = true;
                candidate.picked_by = Some(by);
                candidate.last_heartbeat = Some(now);
                candidate.version += 1;
                Some(candidate)
            }
            Ok(false) => None, // another scheduler claimed it first
            // The database ended the claim for a concurrent change of the row: on a
            // multi-primary cluster (Galera) another node's claim of the same candidate won
            // certification, so this is the race above lost at commit. Nothing was written;
            // the row is still due if nobody holds it, and the next poll sees it.
            Err(StoreError::Contention { source }) => {
                metrics::counter!("docket_claim_conflicts_total").increment(1);
                debug!(task = %candidate.task_name, error = %source, "claim lost to a concurrent change");
                None
            }
            Err(err) => {
                warn!(task = %candidate.task_name, %err, "claim failed");
                None
            }
        }
    }

    fn run(&self, execution: Execution) {
        let Some(task) = self.tasks.get(&execution.task_name) else {
            // Cannot happen: due-queries select known tasks only. Leave the row alone.
            error!(task = %execution.task_name, "picked an execution of an unknown task");
            return;
        };
        let span = tracing::info_span!("docket.execute", task = %execution.task_name,
            instance = %execution.task_instance, version = execution.version);
        let _entered = span.enter();
        let key = execution.key();
        self.running().insert(key.clone(), execution.version);
        let ctx = ExecutionContext {
            scheduler_name: self.config.scheduler_name.clone(),
            started_at: self.clock.now(),
            key: key.clone(),
            consecutive_failures: execution.consecutive_failures,
        };
        metrics::counter!("docket_executions_started_total", "task" => task.name.clone())
            .increment(1);
        self.emit(SchedulerEvent::ExecutionStarted(execution.clone()));
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| (task.handler)(&execution, &ctx)));
        let duration = started.elapsed();
        metrics::histogram!("docket_execution_seconds", "task" => task.name.clone())
            .record(duration.as_secs_f64());
        let pending = match outcome {
            Ok(Ok(())) => self.complete(task, execution, duration),
            Ok(Err(e)) => self.fail(task, execution, e.message().to_owned()),
            Err(panic) => self.fail(task, execution, panic_message(&panic)),
        };
        // Written with the next batch; heartbeats go on until then.
        self.finish(pending);
    }

    /// Queues an outcome for the completion writer, waking it when the batch starts (so it
    /// times the flush interval) and when the batch is full.
    fn finish(&self, pending: Pending) {
        let mut c = self.completions();
        c.pending.push(pending);
        c.since.get_or_insert_with(Instant::now);
        let n = c.pending.len();
        if n == 1 || n >= self.config.completion_batch_size {
            self.completions_ready.notify_all();
        }
    }

    /// Waits until a batch of completions is due: full, its oldest waited
    /// `completion_flush_interval`, or shutdown began. `false` when shutting down with
    /// nothing left to write.
    pub fn wait_for_completions(&self) -> bool {
        let (size, interval) = (
            self.config.completion_batch_size,
            self.config.completion_flush_interval,
        );
        let mut c = self.completions();
        loop {
            let stopping = self.stopping.load(Ordering::SeqCst);
            match c.since {
                Some(since) => {
                    let waited = since.elapsed();
                    if stopping || c.pending.len() >= size || waited >= interval {
                        return true;
                    }
                    c = self
                        .completions_ready
                        .wait_timeout(c, interval - waited)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                None if stopping => return false,
                None => {
                    c = self
                        .completions_ready
                        .wait(c)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }

    /// Writes every pending outcome in one batch ([`ExecutionStore::execution_complete_batch`]),
    /// then reports each (a fenced-out one as [`SchedulerEvent::LostExecution`]). When the
    /// store fails, the outcomes are kept for the next try (the caller backs off), except those
    /// past their give-up time when the write began or, during shutdown, all: their executions stay picked until
    /// dead detection revives them. Returns `false` when the write failed.
    pub fn flush_completions(&self) -> bool {
        let batch = {
            let mut c = self.completions();
            c.since = None;
            std::mem::take(&mut c.pending)
        };
        if batch.is_empty() {
            return true;
        }
        let writes: Vec<Completion> = batch
            .iter()
            .map(|p| Completion {
                key: p.execution.key(),
                version: p.execution.version,
                update: p.update.clone(),
            })
            .collect();
        metrics::histogram!("docket_completion_batch").record(writes.len() as f64);
        // A retry without delay (or a recurrence already due) is work due now: announced to
        // the listening schedulers (this one's included) once written, like a client's.
        let now = self.clock.now();
        let due_now = writes.iter().any(|w| {
            w.update
                .as_ref()
                .and_then(|u| u.execution_time)
                .is_some_and(|t| t <= now)
        });
        // Give-up times are checked against when this write began: a write that hung past
        // them (a Galera node leaving its cluster holds a commit for seconds before refusing
        // it) gets one more try, on a connection the pool may have opened elsewhere.
        let attempted = Instant::now();
        match self.store.execution_complete_batch(&writes) {
            Ok(written) => {
                let announce = due_now && written.iter().any(|w| *w);
                for (p, written) in batch.into_iter().zip(written) {
                    self.recorded(p, written);
                }
                if announce {
                    if let Some(signals) = self.store.wake_signals() {
                        signals.announce();
                    }
                }
                true
            }
            Err(err) => {
                let stopping = self.stopping.load(Ordering::SeqCst);
                let (keep, drop): (Vec<_>, Vec<_>) = batch
                    .into_iter()
                    .partition(|p| !stopping && attempted < p.give_up_at);
                warn!(%err, kept = keep.len(), given_up = drop.len(),
                    "could not record outcomes; retrying");
                for p in drop {
                    let e = &p.execution;
                    error!(task = %e.task_name, instance = %e.task_instance, %err,
                        "could not record the outcome; the execution stays picked until dead detection revives it");
                    self.forget(&e.key(), e.version);
                }
                if !keep.is_empty() {
                    let mut c = self.completions();
                    let newer = std::mem::replace(&mut c.pending, keep);
                    c.pending.extend(newer);
                    c.since.get_or_insert_with(Instant::now);
                }
                false
            }
        }
    }

    /// Reports one written (or fenced-out) outcome and stops heart-beating its execution.
    fn recorded(&self, p: Pending, written: bool) {
        let e = p.execution;
        self.record(&e, written);
        match p.outcome {
            Outcome::Completed(duration) => {
                metrics::counter!("docket_executions_completed_total", "task" => e.task_name.clone())
                    .increment(1);
                self.forget(&e.key(), e.version);
                self.emit(SchedulerEvent::ExecutionCompleted {
                    execution: e,
                    duration,
                });
            }
            Outcome::Failed { error, retry_at } => {
                self.forget(&e.key(), e.version);
                self.emit(SchedulerEvent::ExecutionFailed {
                    execution: e,
                    error,
                    retry_at,
                });
            }
        }
    }

    fn record(&self, execution: &Execution, changed: bool) {
        if !changed {
            self.lost(
                execution,
                "outcome not recorded: changed since it was picked",
            );
        }
    }

    /// Half the dead window from now: how long an outcome that cannot be written is retried.
    fn give_up_at(&self) -> Instant {
        Instant::now() + self.config.dead_after() / 2
    }

    /// The release (or removal, when `next` is `None`) that records an outcome.
    fn release_changes(next: Option<DateTime<Utc>>, changes: Changes) -> Option<Changes> {
        next.map(|at| Changes {
            pick: Some(PickChange::Release),
            execution_time: Some(at),
            ..changes
        })
    }

    fn complete(&self, task: &Task, e: Execution, duration: Duration) -> Pending {
        let now = self.clock.now();
        let next = task.schedule.as_ref().and_then(|s| s.next_after(now));
        let success = Changes {
            last_success: Some(now),
            consecutive_failures: Some(0),
            ..Changes::default()
        };
        Pending {
            execution: e,
            update: Self::release_changes(next, success),
            outcome: Outcome::Completed(duration),
            give_up_at: self.give_up_at(),
        }
    }

    fn fail(&self, task: &Task, e: Execution, error: String) -> Pending {
        let now = self.clock.now();
        let failures = e.consecutive_failures.saturating_add(1);
        let n = u32::try_from(failures).unwrap_or(u32::MAX);
        warn!(task = %e.task_name, instance = %e.task_instance, failures, %error, "execution failed");
        metrics::counter!("docket_executions_failed_total", "task" => task.name.clone())
            .increment(1);
        let on_schedule = task.schedule.as_ref().and_then(|s| s.next_after(now));
        let gives_up = task.failure.gives_up(n);
        let retry_at = match (gives_up, on_schedule) {
            (true, None) => None,
            (true, Some(at)) => Some(at),
            (false, _) => Some(match task.failure.delay(n) {
                Some(delay) => now
                    .checked_add_signed(chrono(delay))
                    .unwrap_or(DateTime::<Utc>::MAX_UTC),
                None => on_schedule.unwrap_or(now),
            }),
        };
        if retry_at.is_none() {
            if let Some(hook) = &task.give_up {
                hook(&e);
            }
            self.emit(SchedulerEvent::GaveUp(e.clone()));
        }
        let failure = Changes {
            last_failure: Some(now),
            consecutive_failures: Some(failures),
            ..Changes::default()
        };
        Pending {
            execution: e,
            update: Self::release_changes(retry_at, failure),
            outcome: Outcome::Failed { error, retry_at },
            give_up_at: self.give_up_at(),
        }
    }

    /// Releases a picked execution to run again at `next` with `changes` applied, or removes
    /// it when `next` is `None`; either only if it still has the version we hold (fencing).
    fn release_or_remove(
        &self,
        e: &Execution,
        next: Option<DateTime<Utc>>,
        changes: Changes,
    ) -> Result<bool, StoreError> {
        let guard = Guard::Version(e.version);
        let update = Self::release_changes(next, changes);
        // The database may be gone for a while (restart, failover): retry with backoff for up
        // to half the dead window, as the completion writer does.
        let give_up_at = self.give_up_at();
        let mut backoff = Duration::from_millis(100);
        loop {
            let written = match &update {
                Some(changes) => self.store.execution_update(&e.key(), guard, changes),
                None => self.store.execution_remove(&e.key(), guard),
            };
            match written {
                Err(err)
                    if Instant::now() + backoff < give_up_at
                        && !self.stopping.load(Ordering::SeqCst) =>
                {
                    warn!(task = %e.task_name, instance = %e.task_instance, %err, ?backoff,
                        "could not record the outcome; retrying");
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                other => return other,
            }
        }
    }

    /// Updates `last_heartbeat` of every execution running here, in key order, in as few
    /// statements as the dialect's key limit allows (one statement per execution cost a round
    /// trip each: over a slow link a round took longer than the dead window). A failed
    /// heartbeat does not stop the others (one row held by a lock, or a trigger rejecting it,
    /// must not let every execution after it look dead and run twice); the first error is
    /// returned once all were tried.
    pub fn heartbeat(&self) -> Result<(), StoreError> {
        self.ensure_synced()?;
        let now = self.clock.now();
        let mut running: Vec<_> = self
            .running()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        running.sort_unstable();
        let mut first_error = None;
        let round = Instant::now();
        let answers = self.store.execution_heartbeat_batch(&running, now);
        debug!(executions = running.len(), took = ?round.elapsed(), "heartbeat round");
        for ((key, version), answer) in running.into_iter().zip(answers) {
            match answer {
                Ok(true) => {}
                // Revived elsewhere, or its outcome was written after the round began (so
                // this is not reported as a loss: a fenced outcome is, and a queued execution
                // checks its row before it starts, see `still_held`).
                Ok(false) => debug!(task = %key.task_name, instance = %key.task_instance,
                    version, "heartbeat matched no row"),
                Err(err) => {
                    warn!(task = %key.task_name, instance = %key.task_instance, %err,
                        "heartbeat failed; the other executions still get theirs");
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Reports task names nobody here knows, and deletes their unpicked rows older than
    /// `delete_unresolved_after`. Returns the unknown names.
    pub fn check_unresolved(&self) -> Result<Vec<String>, StoreError> {
        let names = self.store.execution_unresolved_names(&self.task_names)?;
        metrics::gauge!("docket_unresolved_tasks").set(names.len() as f64);
        if !names.is_empty() {
            warn!(?names, "executions of unknown tasks are left alone");
            self.emit(SchedulerEvent::UnresolvedTasks(names.clone()));
            let before = self.clock.now() - chrono(self.config.delete_unresolved_after);
            let deleted = self
                .store
                .execution_delete_unresolved(&self.task_names, before)?;
            if deleted > 0 {
                warn!(deleted, "deleted old executions of unknown tasks");
            }
        }
        Ok(names)
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_owned());
    format!("handler panicked: {text}")
}
