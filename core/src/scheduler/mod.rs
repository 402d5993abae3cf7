//! The scheduler: worker threads, a polling thread and a housekeeping thread (heartbeats, dead
//! detection, unknown-task report) around the steps in the private `engine` module.

mod claim_size;
pub mod client;
mod clock_sync;
pub mod config;
mod engine;
mod report;

use crate::clock::{Clock, CorrectedClock, SystemClock};
use crate::error::{DocketError, Result};
use crate::listener::SchedulerListener;
use crate::store::{attach, ExecutionStore, WakeSignals};
use crate::task::Task;
use claim_size::ClaimSize;
use client::SchedulerClient;
use config::SchedulerConfig;
use crossbeam_channel::{unbounded, Sender};
use engine::{ClockSync, Engine, Job};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

/// Builds a [`Scheduler`].
pub struct SchedulerBuilder {
    store: Arc<dyn ExecutionStore>,
    tasks: Vec<Task>,
    config: SchedulerConfig,
    /// The clock given by [`SchedulerBuilder::clock`], used as given; `None`: the system clock.
    clock: Option<Arc<dyn Clock>>,
    listeners: Vec<Arc<dyn SchedulerListener>>,
    limits: Vec<crate::records::TaskLimit>,
}

impl SchedulerBuilder {
    /// Sets a task's limits, kept by every scheduler on the table (stored in its table of
    /// limits by [`SchedulerBuilder::build`], replacing that task's old limits; `0009_limits`):
    /// `TaskLimit::new("export").max_running(5)`.
    pub fn limit(mut self, limit: crate::records::TaskLimit) -> Self {
        self.limits.push(limit);
        self
    }

    /// Registers a task. Rows of tasks nobody registered are left alone.
    pub fn task(mut self, task: Task) -> Self {
        self.tasks.push(task);
        self
    }

    /// Registers several tasks.
    pub fn tasks(mut self, tasks: impl IntoIterator<Item = Task>) -> Self {
        self.tasks.extend(tasks);
        self
    }

    /// Replaces the configuration.
    pub fn config(mut self, config: SchedulerConfig) -> Self {
        self.config = config;
        self
    }

    /// Injects a clock (default: the system clock, corrected by the database server's as
    /// [`SchedulerConfig::clock_correction`] says). An injected clock is used as given, never
    /// corrected: a [`ManualClock`](crate::ManualClock) stays exactly where a test sets it.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Adds a listener.
    pub fn listener(mut self, listener: Arc<dyn SchedulerListener>) -> Self {
        self.listeners.push(listener);
        self
    }

    /// Validates the configuration and checks the schema (a missing migration is reported
    /// here, by name), then stores the limits given ([`SchedulerBuilder::limit`]: refused
    /// with [`StoreError::MissingMigration`](crate::StoreError::MissingMigration) on a table
    /// without `0009_limits`). Starts nothing.
    pub fn build(self) -> Result<Scheduler> {
        self.config.validate()?;
        if self.store.config().ordering.primary != crate::ordering::PrimaryOrder::ExecutionTime {
            return Err(DocketError::InvalidConfig(
                "the scheduler orders executions by execution time (FIFO and custom orders \
                 are for the work queue)"
                    .to_owned(),
            ));
        }
        for limit in &self.limits {
            limit.validate()?;
        }
        let store = attach(self.store)?;
        let mut tasks = HashMap::new();
        for task in self.tasks {
            let name = task.name.clone();
            if tasks.insert(name.clone(), task).is_some() {
                return Err(DocketError::InvalidConfig(format!(
                    "task {name:?} registered twice"
                )));
            }
        }
        let (clock, sync) = match self.clock {
            Some(given) => (given, None),
            None if self.config.clock_correction => {
                let corrected = Arc::new(CorrectedClock::new(Arc::new(SystemClock)));
                let clock: Arc<dyn Clock> = Arc::clone(&corrected) as Arc<dyn Clock>;
                (clock, Some(ClockSync::new(corrected)))
            }
            None => (Arc::new(SystemClock) as Arc<dyn Clock>, None),
        };
        for limit in &self.limits {
            store.limit_set(limit, clock.now())?;
        }
        let engine = Engine::new(store, clock, sync, self.config, tasks, self.listeners);
        Ok(Scheduler {
            engine: Arc::new(engine),
            shared: Arc::new(Shared::default()),
            threads: Mutex::new(Vec::new()),
            sender: Mutex::new(None),
            started: AtomicBool::new(false),
        })
    }
}

#[derive(Default)]
struct Signals {
    wake: bool,
    shutdown: bool,
}

/// State shared by the scheduler's threads.
#[derive(Default)]
struct Shared {
    signals: Mutex<Signals>,
    changed: Condvar,
    /// Jobs queued or running.
    in_flight: AtomicUsize,
    /// The last poll filled its batch: more may be due, so poll again as soon as there is room.
    more_due: AtomicBool,
}

impl Shared {
    fn signals(&self) -> MutexGuard<'_, Signals> {
        self.signals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wake(&self) {
        self.signals().wake = true;
        self.changed.notify_all();
    }

    fn shut_down(&self) {
        self.signals().shutdown = true;
        self.changed.notify_all();
    }

    fn is_shutdown(&self) -> bool {
        self.signals().shutdown
    }

    /// Waits up to `timeout` for a wake-up or shutdown (the poller).
    fn wait_for_wake(&self, timeout: Duration) {
        let guard = self.signals();
        let (mut guard, _) = self
            .changed
            .wait_timeout_while(guard, timeout, |s| !s.wake && !s.shutdown)
            .unwrap_or_else(PoisonError::into_inner);
        guard.wake = false;
    }

    /// Waits up to `timeout` unless shut down (the housekeeper).
    fn sleep(&self, timeout: Duration) {
        let guard = self.signals();
        let _unused = self
            .changed
            .wait_timeout_while(guard, timeout, |s| !s.shutdown)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// A scheduler: polls the store for due executions of its tasks and runs them.
///
/// Start it with [`Scheduler::start`], or drive it step by step (for tests with a
/// [`ManualClock`](crate::ManualClock), or an embedding that owns its threads) with
/// [`Scheduler::run_due`], [`Scheduler::heartbeat`], [`Scheduler::detect_dead`] and
/// [`Scheduler::check_unresolved`]. Dropping a started scheduler stops it as
/// [`Scheduler::stop`] does.
pub struct Scheduler {
    engine: Arc<Engine>,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    sender: Mutex<Option<Sender<Job>>>,
    started: AtomicBool,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("name", &self.engine.config.scheduler_name)
            .field("tasks", &self.engine.task_names)
            .finish_non_exhaustive()
    }
}

impl Scheduler {
    /// Starts building a scheduler on `store`.
    pub fn builder(store: Arc<dyn ExecutionStore>) -> SchedulerBuilder {
        SchedulerBuilder {
            store,
            tasks: Vec::new(),
            config: SchedulerConfig::default(),
            clock: None,
            listeners: Vec::new(),
            limits: Vec::new(),
        }
    }

    /// A client that knows this scheduler's tasks (unknown names are errors, default priorities
    /// apply) and wakes the poller when it schedules something already due.
    pub fn client(&self) -> SchedulerClient {
        let defaults = self
            .engine
            .tasks
            .iter()
            .map(|(name, t)| (name.clone(), t.default_priority))
            .collect();
        let shared = Arc::clone(&self.shared);
        SchedulerClient::for_scheduler(
            Arc::clone(&self.engine.store),
            Arc::clone(&self.engine.clock),
            defaults,
            Arc::new(move || shared.wake()),
        )
    }

    /// The configuration.
    pub fn config(&self) -> &SchedulerConfig {
        &self.engine.config
    }

    /// Creates missing executions of recurring tasks (done by [`Scheduler::start`]).
    pub fn create_recurring(&self) -> Result<()> {
        Ok(self.engine.create_recurring()?)
    }

    /// Reads the server's clock and starts on it (see [`Scheduler::sync_clock`]), creates
    /// recurring executions and starts the worker, polling and housekeeping threads. Fails
    /// when the database cannot be read.
    pub fn start(&self) -> Result<()> {
        if self.started.swap(true, Ordering::SeqCst) {
            return Err(DocketError::State("the scheduler was already started"));
        }
        self.sync_clock()?;
        self.create_recurring()?;
        let config = &self.engine.config;
        let (tx, rx) = unbounded::<Job>();
        let (lower, upper) = config.polling.limits(config.threads);
        let size = ClaimSize::new(upper, config.claim_growth(upper));
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        for i in 0..config.threads {
            let (engine, shared, rx) = (
                Arc::clone(&self.engine),
                Arc::clone(&self.shared),
                rx.clone(),
            );
            threads.push(spawn(format!("docket-worker-{i}"), move || {
                for job in rx.iter() {
                    if shared.is_shutdown() {
                        engine.release(job);
                    } else {
                        engine.process(job);
                    }
                    let left = shared.in_flight.fetch_sub(1, Ordering::SeqCst) - 1;
                    if left <= lower && shared.more_due.load(Ordering::SeqCst) {
                        shared.wake();
                    }
                }
            })?);
        }
        let (engine, shared, poll_tx) = (
            Arc::clone(&self.engine),
            Arc::clone(&self.shared),
            tx.clone(),
        );
        threads.push(spawn("docket-poller".into(), move || {
            poll_loop(&engine, &shared, &poll_tx, lower, size)
        })?);
        let (engine, shared) = (Arc::clone(&self.engine), Arc::clone(&self.shared));
        threads.push(spawn("docket-heartbeat".into(), move || {
            heartbeat_loop(&engine, &shared)
        })?);
        let (engine, shared) = (Arc::clone(&self.engine), Arc::clone(&self.shared));
        threads.push(spawn("docket-housekeeper".into(), move || {
            housekeeping_loop(&engine, &shared)
        })?);
        let engine = Arc::clone(&self.engine);
        threads.push(spawn("docket-completer".into(), move || {
            completion_loop(&engine)
        })?);
        if let Some(signals) = self.listening() {
            let shared = Arc::clone(&self.shared);
            let ceiling = config.polling_interval;
            // Not joined by `stop`: it touches no execution, and a connect or a health check
            // can block on an unreachable server far longer than a shutdown should wait
            // (packets dropped: TCP's own timeouts). It ends at its next look at the flag.
            drop(spawn("docket-listener".into(), move || {
                listen_loop(&*signals, &shared, ceiling)
            })?);
        }
        *self.sender.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
        info!(name = %config.scheduler_name, threads = config.threads, polling = ?config.polling, "scheduler started");
        Ok(())
    }

    /// The signals the listener thread subscribes to: the store's, unless turned off.
    fn listening(&self) -> Option<Arc<dyn WakeSignals>> {
        if !self.engine.config.wake_listener {
            return None;
        }
        self.engine.store.wake_signals()
    }

    /// Stops polling, lets running executions finish (up to `shutdown_max_wait`), and hands
    /// claimed-but-unstarted executions back. Returns `true` if every thread ended in time.
    pub fn stop(&self) -> bool {
        self.shared.shut_down();
        self.engine.begin_shutdown();
        drop(
            self.sender
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let handles: Vec<_> = self
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        let deadline = Instant::now() + self.engine.config.shutdown_max_wait;
        while handles.iter().any(|h| !h.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let all_done = handles.iter().all(JoinHandle::is_finished);
        if !all_done {
            // Which threads are still busy says where the wait went (a handler, a blocked
            // statement, a pool check-out).
            let busy: Vec<_> = handles
                .iter()
                .filter(|h| !h.is_finished())
                .map(|h| h.thread().name().unwrap_or("?").to_owned())
                .collect();
            warn!(?busy, "threads still busy at the end of the shutdown wait");
        }
        for h in handles.into_iter().filter(JoinHandle::is_finished) {
            let _ = h.join();
        }
        // Outcomes of handlers that finished after the completion writer ended (one try:
        // shutting down; what cannot be written is revived by dead detection elsewhere).
        self.engine.flush_completions();
        info!(all_done, "scheduler stopped");
        all_done
    }

    /// Polls and runs due executions on the calling thread, with the configured polling
    /// strategy, until none is due; returns how many ran. An execution that becomes due again
    /// while this runs (a zero retry delay, a revival) runs again in the same call.
    pub fn run_due(&self) -> Result<usize> {
        let limit = self.engine.config.threads.max(1);
        let mut ran = 0;
        loop {
            let jobs = self.engine.poll(limit)?;
            if jobs.is_empty() {
                return Ok(ran);
            }
            for job in jobs {
                ran += usize::from(self.engine.process(job));
            }
            // Written before the next poll, as one batch.
            self.engine.flush_completions();
        }
    }

    /// Reads the database server's clock once and corrects this scheduler's clock by the
    /// estimated offset (done at [`Scheduler::start`] and before every heartbeat round; a
    /// scheduler driven step by step takes its first sample at its first step). Returns the
    /// offset now applied (zero when it cannot be told from zero), `None` when the clock is not
    /// corrected ([`SchedulerConfig::clock_correction`] off, an injected clock, a store that
    /// cannot read the server's clock). See docs/RELIABILITY.md, "Which clock".
    pub fn sync_clock(&self) -> Result<Option<chrono::TimeDelta>> {
        Ok(self.engine.sync_clock()?)
    }

    /// The offset by which this scheduler corrects its clock (see [`Scheduler::sync_clock`]),
    /// `None` when it does not.
    pub fn clock_offset(&self) -> Option<chrono::TimeDelta> {
        self.engine.clock_offset()
    }

    /// Sends heartbeats for executions running in this scheduler.
    pub fn heartbeat(&self) -> Result<()> {
        Ok(self.engine.heartbeat()?)
    }

    /// Revives (or cancels, per task policy) dead executions; returns how many.
    pub fn detect_dead(&self) -> Result<usize> {
        Ok(self.engine.detect_dead()?)
    }

    /// Returns (and reports) task names in the table that no registered task knows.
    pub fn check_unresolved(&self) -> Result<Vec<String>> {
        Ok(self.engine.check_unresolved()?)
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        if self.started.load(Ordering::SeqCst) && !self.shared.is_shutdown() {
            self.stop();
        }
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| DocketError::InvalidConfig(format!("cannot start a scheduler thread: {e}")))
}

fn poll_loop(
    engine: &Engine,
    shared: &Shared,
    tx: &Sender<Job>,
    lower: usize,
    mut size: ClaimSize,
) {
    let interval = engine.config.polling_interval;
    // Without signals to wake it, the poller polls at a short interval that backs off while
    // idle; with a listener (or with the short poll off) it waits the polling interval.
    let short = match engine.store.wake_signals() {
        Some(_) => None,
        None => engine.config.short_poll,
    };
    // Polls in a row that found nothing (capped: the wait stops doubling long before), and
    // whether the last poll failed (then the wait is the polling interval).
    let (mut idle_polls, mut failed) = (0u32, false);
    // When the last poll ended: the time since is how long the workers took to run its batch.
    let mut last_poll = Instant::now();
    while !shared.is_shutdown() {
        let in_flight = shared.in_flight.load(Ordering::SeqCst);
        if in_flight <= lower {
            let room = size.cap().saturating_sub(in_flight);
            let started = Instant::now();
            let drained = started - last_poll;
            let polled = engine.poll(room);
            last_poll = Instant::now();
            match polled {
                Ok(jobs) => {
                    // A full poll: more may be due now.
                    let full = jobs.len() >= room;
                    size.learn(full, last_poll - started, drained);
                    failed = false;
                    idle_polls = if jobs.is_empty() {
                        (idle_polls + 1).min(32)
                    } else {
                        0
                    };
                    shared.more_due.store(full, Ordering::SeqCst);
                    for job in jobs {
                        shared.in_flight.fetch_add(1, Ordering::SeqCst);
                        if let Err(unsent) = tx.send(job) {
                            shared.in_flight.fetch_sub(1, Ordering::SeqCst);
                            engine.release(unsent.into_inner());
                        }
                    }
                }
                // The store is unreachable: wait a polling interval, then try again (the pool
                // reconnects). Nothing was claimed, so nothing is lost.
                Err(err) => {
                    failed = true;
                    engine.report_poll_failure(&err);
                }
            }
        }
        // `idle_polls - 1`: the first empty poll after work waits `min`, then it doubles.
        let wait = match short {
            Some(short) if !failed => short.wait(idle_polls.saturating_sub(1), interval),
            _ => interval,
        };
        shared.wait_for_wake(wait);
    }
}

/// Keeps a listener on `signals` open until shutdown and wakes the poller on every signal
/// (a burst that arrives while the poller is busy is one wake-up: the flag is a boolean). A
/// lost connection is opened again after a backoff that doubles from 100 ms up to
/// `ceiling` (the polling interval), which meanwhile keeps finding the work.
fn listen_loop(signals: &dyn WakeSignals, shared: &Shared, ceiling: Duration) {
    const WAIT: Duration = Duration::from_millis(250);
    let first = Duration::from_millis(100);
    let mut backoff = first;
    while !shared.is_shutdown() {
        match signals.listen() {
            Ok(mut listener) => {
                info!(channel = signals.channel(), "listening for wake-ups");
                // What was announced while no listener was open: poll once.
                shared.wake();
                let opened = Instant::now();
                loop {
                    if shared.is_shutdown() {
                        return;
                    }
                    match listener.wait(WAIT) {
                        Ok(true) => shared.wake(),
                        Ok(false) => {}
                        Err(err) => {
                            warn!(%err, channel = signals.channel(), "wake-up listener lost its connection");
                            break;
                        }
                    }
                }
                // A connection that lived a while was not the problem: start the backoff over.
                if opened.elapsed() > ceiling {
                    backoff = first;
                }
            }
            Err(err) => {
                warn!(%err, channel = signals.channel(), ?backoff, "cannot listen for wake-ups; polling meanwhile");
            }
        }
        shared.sleep(backoff);
        backoff = (backoff * 2).min(ceiling.max(first));
    }
}

/// Writes outcomes in batches until shutdown (see `SchedulerConfig::completion_batch_size`);
/// backs off while the store fails.
fn completion_loop(engine: &Engine) {
    let mut backoff = Duration::from_millis(100);
    while engine.wait_for_completions() {
        if engine.flush_completions() {
            backoff = Duration::from_millis(100);
        } else {
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

/// Sends the heartbeats of the executions held here every `heartbeat_interval`, counted from
/// the start of each round (a round that took long is not followed by a full interval). On a
/// thread of its own: behind a slow link (MariaDB, 200 ms round trips) the rounds of the
/// housekeeper took most of the 4 s dead window, and a long dead-detection pass would hold
/// back this scheduler's own heartbeats until its peers took its executions for dead.
fn heartbeat_loop(engine: &Engine, shared: &Shared) {
    every_interval(engine, shared, || {
        if let Err(err) = engine.heartbeat() {
            error!(%err, "heartbeat failed");
        }
    });
}

/// Samples the server's clock, detects dead executions and checks for unknown tasks every
/// `heartbeat_interval`.
fn housekeeping_loop(engine: &Engine, shared: &Shared) {
    every_interval(engine, shared, || {
        // A failed sample keeps the offset of the last one.
        if let Err(err) = engine.sync_clock() {
            warn!(%err, "could not read the server's clock; keeping the last correction");
        }
        if let Err(err) = engine.detect_dead() {
            error!(%err, "dead-execution detection failed");
        }
        if let Err(err) = engine.check_unresolved() {
            error!(%err, "unknown-task check failed");
        }
    });
}

/// Runs `round` every `heartbeat_interval` from the start of the last round until shutdown.
fn every_interval(engine: &Engine, shared: &Shared, mut round: impl FnMut()) {
    let interval = engine.config.heartbeat_interval;
    while !shared.is_shutdown() {
        let started = Instant::now();
        round();
        shared.sleep(interval.saturating_sub(started.elapsed()));
    }
}
