//! `docket bench priority`: what the priority toggle costs a poll and a cluster, side by side.
//!
//! One run loads a scenario into its own table (the SQL is each backend's module of
//! [`load`]), then measures, at the scheduler's batch sizes (`threads x upper fraction`):
//! - the due-query of one poll, with priority off, with priority on (every statement the store
//!   sends: recorded through [`Recording`], then replayed under the backend's counter), and the
//!   plain single `ORDER BY priority DESC, execution_time` statement;
//! - end-to-end throughput of no-op tasks, N schedulers x threads, lock-and-fetch and fetch,
//!   priority off and on, each run from the same freshly loaded due rows.
//!
//! The last line is the summary (see [`summary`]).
//!
//! `docket bench queue` (module [`queue`]): what `next_for` costs a worker with a long history.
//!
//! `docket bench throughput` (module [`throughput`](mod@throughput)): the engine's own cost against the raw
//! claim1 ceiling of the same driver.
//!
//! `docket bench limits` (module [`throughput`](mod@throughput), its `limits`): what limits
//! cost an unlimited task beside a limited one, and the claim of a limited task, in rounds.
//!
//! `docket bench soak` (module [`soak`]): a steady mixed load for minutes, watching memory,
//! connections, file handles and table size.
//!
//! `docket bench latency` (module [`latency`]): commit-to-start latency across processes,
//! idle and under load, and the idle cost of the wake-up mechanism.

mod child;
mod latency;
mod load;
mod queue;
mod soak;
mod throughput;

use crate::args::{parse_table, store_config};
use crate::error::CliError;
use crate::progress;
use chrono::{SubsecRound, Utc};
use docket_core::backend::SqlStore;
use docket_core::dialect::Level;
use docket_core::store::sql::SqlConnector;
use docket_core::store::DueParams;
use docket_core::store::NewExecution;
use docket_core::{
    ExecutionStore, PollingStrategy, PriorityMode, Scheduler, SchedulerConfig, SchedulerEvent,
    Store, StoreConfig, StoreError, TableName, Task, TaskDescriptor,
};
use load::{Call, Cost, Recorded, Recording, Scenario};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The no-op task every benchmark row belongs to.
const NOOP: TaskDescriptor = TaskDescriptor::new("bench-noop");

/// Arguments of `docket bench`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(Debug, clap::Subcommand)]
enum Which {
    /// Due-query cost and throughput with the priority toggle off and on.
    Priority(PriorityArgs),
    /// Work-queue `next_for` cost for a worker with a long history, against a fresh worker.
    Queue(queue::QueueArgs),
    /// Jobs/s of no-op one-time tasks: raw claim1 ceiling, docket's defaults, each strategy.
    Throughput(throughput::ThroughputArgs),
    /// What limits cost: an unlimited task's jobs/s beside a limited one against the same run
    /// with no limit, and the claim of a limited task against the ordinary claim, in rounds.
    Limits(throughput::LimitsArgs),
    /// A steady mixed load for --minutes: memory, connections, file handles and table size
    /// stay flat, nothing is lost (a verdict line at the end).
    Soak(soak::SoakArgs),
    /// Pick-up latency from commit to handler start, producer and worker in two processes,
    /// idle and under a steady load; with --peers, graphile-worker in the same run.
    Latency(latency::LatencyArgs),
    /// The worker process of `bench latency` (started by it).
    #[command(hide = true)]
    LatencyWorker(latency::WorkerArgs),
    /// A worker process of `bench throughput --processes` (started by it).
    #[command(hide = true)]
    ThroughputWorker(throughput::WorkerArgs),
}

/// Arguments of `docket bench priority`.
#[derive(Debug, clap::Args)]
pub struct PriorityArgs {
    /// postgres, mysql or sqlite.
    #[arg(long, value_name = "BACKEND")]
    backend: String,
    /// Database URL; default: DOCKET_POSTGRES_URL / DOCKET_MYSQL_URL, or a temporary SQLite file.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Due rows generated (spread over the last hour), before draining.
    #[arg(long, default_value_t = 100_000)]
    due: u64,
    /// Future rows (spread over the day after the next: none falls due during a run).
    #[arg(long, default_value_t = 1_000_000)]
    future: u64,
    /// Priorities 1..=levels, uniformly.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(i16).range(1..))]
    levels: i16,
    /// The due rows of the top `drain` levels are removed.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(i16).range(0..))]
    drain: i16,
    /// Worker threads per scheduler (batch sizes follow: threads x 4.0 and x 3.0).
    #[arg(long, default_value_t = 10)]
    threads: usize,
    /// Schedulers in the throughput runs (each with its own pool, like separate processes).
    #[arg(long, default_value_t = 2)]
    schedulers: usize,
    /// Seconds per throughput run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The benchmark's table (created, filled, and dropped at the end unless --keep).
    #[arg(long, value_name = "TABLE", default_value = "docket_bench", value_parser = parse_table)]
    table: TableName,
    /// Keep the table at the end.
    #[arg(long)]
    keep: bool,
    /// Reuse the future rows of a table kept by an earlier run (--keep) when they are what this
    /// run would load (same --future and --levels, loaded less than a day ago); only the due
    /// rows are loaded afresh. Otherwise the table is loaded in full.
    #[arg(long)]
    reuse: bool,
    /// Also print each statement of the first (cold) priority-on poll with its cost.
    #[arg(long)]
    verbose: bool,
    /// Polls of the fairness run: each first makes `threads` executions of the top level
    /// (--levels) due, then claims a batch of `threads`.
    #[arg(long, default_value_t = 200)]
    fair_polls: usize,
    /// The priority mode of the "priority on" figures.
    #[command(flatten)]
    mode: crate::mode::ModeArgs,
}

impl PriorityArgs {
    /// The store configuration: the bench table, the toggle and, with priority on, the mode.
    fn config(&self, priority: bool) -> Result<StoreConfig, CliError> {
        let mut config = store_config(&self.table, priority);
        if priority {
            config.ordering.mode = self.mode.priority_mode()?;
        }
        Ok(config)
    }
}

/// Runs `docket bench`.
pub fn run(args: &Args) -> Result<(), CliError> {
    match &args.which {
        Which::Priority(a) => priority(a),
        Which::Queue(a) => queue::run(a),
        Which::Throughput(a) => throughput::run(a),
        Which::Limits(a) => throughput::run_limits(a),
        Which::Soak(a) => soak::run(a),
        Which::Latency(a) => latency::run(a),
        Which::LatencyWorker(a) => latency::worker(a),
        Which::ThroughputWorker(a) => throughput::worker(a),
    }
}

/// Loads (or reloads the due rows of) a scenario, reporting rows written.
type LoadFn<C> = fn(&SqlStore<C>, &Scenario, &mut dyn FnMut(u64)) -> Result<(), StoreError>;

/// Loads a scenario, or with `reuse` keeps the future rows a kept table already holds; returns
/// whether it did.
type ScenarioFn<C> =
    fn(&SqlStore<C>, &Scenario, bool, &mut dyn FnMut(u64)) -> Result<bool, StoreError>;

/// What the benchmark needs from one backend crate.
struct Ops<C: SqlConnector> {
    connect: fn(&str, StoreConfig) -> Result<SqlStore<C>, StoreError>,
    load: ScenarioFn<C>,
    reload: LoadFn<C>,
    drop: fn(&SqlStore<C>) -> Result<(), StoreError>,
    measure: fn(&SqlStore<C>, &[Recorded]) -> Result<Cost, StoreError>,
    /// What `Cost::reads` counts.
    unit: &'static str,
}

/// The [`Ops`] of a diesel backend: its crate's `connect`, its [`load`] module's `measure`, and
/// the shared loaders of [`load::diesel`] with that module's
/// [`ScenarioSql`](load::diesel::ScenarioSql).
macro_rules! ops {
    ($krate:ident, $load:ident, $scenario:expr, $unit:literal) => {
        Ops {
            connect: $krate::connect,
            load: |st, s, r, p| load::diesel::load_scenario(st, &$scenario(st), s, r, p),
            reload: |st, s, p| load::diesel::reload_due(st, &$scenario(st), s, p),
            drop: load::diesel::drop_scenario,
            measure: load::$load::measure,
            unit: $unit,
        }
    };
}

fn env_url(var: &str, backend: &str) -> Result<String, CliError> {
    std::env::var(var)
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| CliError::Bench(format!("{backend}: pass --database-url or set {var}")))
}

/// The URL a benchmark runs on: `--database-url`, else the backend's environment variable, else
/// (SQLite) a file in a temporary directory, returned so it lives as long as the run. Fails
/// when the URL is for another backend than `--backend`.
fn database_url(
    backend: &'static dyn crate::backends::Backend,
    given: Option<&str>,
) -> Result<(String, Option<tempfile::TempDir>), CliError> {
    let mut tmp = None;
    let url = match (given, backend.name()) {
        (Some(url), _) => url.to_owned(),
        (None, "postgres") => env_url("DOCKET_POSTGRES_URL", "postgres")?,
        (None, "mysql") => env_url("DOCKET_MYSQL_URL", "mysql")?,
        (None, _) => {
            let dir = tempfile::tempdir()?;
            let url = format!("sqlite://{}", dir.path().join("bench.db").display());
            tmp = Some(dir);
            url
        }
    };
    let of_url = crate::backends::for_url(&url)?;
    if of_url.name() != backend.name() {
        return Err(CliError::BackendMismatch {
            backend: backend.name(),
            url: of_url.name(),
        });
    }
    Ok((url, tmp))
}

fn priority(args: &PriorityArgs) -> Result<(), CliError> {
    if args.drain >= args.levels {
        return Err(CliError::Bench(format!(
            "--drain {} must leave a level of --levels {} with due rows",
            args.drain, args.levels
        )));
    }
    let backend = crate::backends::by_name(&args.backend)?;
    let (url, _tmp) = database_url(backend, args.database_url.as_deref())?;
    match backend.name() {
        #[cfg(feature = "postgres")]
        "postgres" => run_priority(
            args,
            &url,
            backend.name(),
            ops!(
                docket_postgres,
                postgres,
                |_| load::postgres::PgScenario,
                "shared buffers hit+read, EXPLAIN (ANALYZE, BUFFERS)"
            ),
        ),
        #[cfg(feature = "mysql")]
        "mysql" => run_priority(
            args,
            &url,
            backend.name(),
            ops!(
                docket_mysql,
                mysql,
                |st: &docket_mysql::MysqlStore| load::mysql::MysqlScenario(
                    st.connector().meta().flavor()
                ),
                "Handler_read_* delta of the session (rows the engine handed over)"
            ),
        ),
        "sqlite" => run_priority(
            args,
            &url,
            backend.name(),
            ops!(
                docket_sqlite,
                sqlite,
                |_| load::sqlite::SqliteScenario,
                "none available; the figures are execution microseconds"
            ),
        ),
        other => Err(CliError::Bench(format!(
            "bench priority runs on postgres, mysql or sqlite, not {other}"
        ))),
    }
}

/// One poll's cost.
struct PollCost {
    cost: Cost,
}

/// The figure compared: reads where the backend counts them, else microseconds.
fn figure(c: &Cost, counted: bool) -> u64 {
    if counted {
        c.reads
    } else {
        c.micros
    }
}

fn ratio(on: f64, off: f64) -> f64 {
    if off > 0.0 {
        on / off
    } else {
        0.0
    }
}

/// Measures `stmts` a few times: reads from the last run, the best time.
fn measure_best<C: SqlConnector>(
    ops: &Ops<C>,
    store: &SqlStore<C>,
    stmts: &[Recorded],
) -> Result<PollCost, CliError> {
    let mut best: Option<Cost> = None;
    for _ in 0..3 {
        let c = (ops.measure)(store, stmts)?;
        best = Some(match best {
            Some(b) if b.micros <= c.micros => Cost {
                reads: c.reads,
                ..b
            },
            _ => c,
        });
    }
    Ok(PollCost {
        cost: best.unwrap_or_default(),
    })
}

/// One poll through a recording store; the statements it sent. With `claims`, the poll of
/// lock-and-fetch (locking reads and the claiming updates; the store's connector rolls every
/// transaction back, so nothing stays claimed), else the due-query of fetch.
fn record_poll<C: SqlConnector>(
    store: &SqlStore<Recording<C>>,
    p: &DueParams<'_>,
    claims: bool,
) -> Result<Vec<Recorded>, CliError> {
    store.connector().take();
    match claims {
        true => store.execution_lock_and_fetch_due(p, "bench-measure")?,
        false => store.execution_fetch_due(p)?,
    };
    Ok(store.connector().take())
}

/// The due-query figures at one batch size: (off, on warm, on cold, naive).
struct DueFigures {
    off: PollCost,
    on: PollCost,
    cold: PollCost,
    naive: PollCost,
}

fn due_figures<C: SqlConnector + Clone>(
    ops: &Ops<C>,
    plain: &SqlStore<C>,
    args: &PriorityArgs,
    s: &Scenario,
    batch: i64,
    claims: bool,
) -> Result<DueFigures, CliError> {
    let names = vec![s.task_name.clone()];
    let p = DueParams {
        now: s.now,
        task_names: &names,
        limit: batch,
        claim_for: None,
        clock: None,
        include_limited: false,
    };
    let recording = |priority| -> Result<_, CliError> {
        Ok(SqlStore::new(
            Recording::rolling_back(plain.connector().clone()),
            args.config(priority)?,
        ))
    };
    let off_store = recording(false)?;
    let off = record_poll(&off_store, &p, claims)?;
    let on_store = recording(true)?;
    let cold = record_poll(&on_store, &p, claims)?;
    // A few more polls at the same instant: what every poll sends while the cache is fresh.
    let mut warm = Vec::new();
    for _ in 0..3 {
        warm = record_poll(&on_store, &p, claims)?;
    }
    let naive = vec![Recorded {
        call: Call::Query,
        stmt: on_store.statements().due(&docket_core::dialect::Due::new(
            Level::Any,
            s.now,
            &names,
            batch,
        )),
    }];
    if args.verbose {
        for _ in 0..3 {
            let c = (ops.measure)(plain, &cold)?;
            eprintln!("cold poll as a whole: {} reads {} us", c.reads, c.micros);
        }
        for r in &cold {
            let c = (ops.measure)(plain, std::slice::from_ref(r))?;
            let binds: Vec<String> = r.stmt.binds.iter().map(|b| format!("{b:?}")).collect();
            eprintln!(
                "{:>6} reads {:>8} us  {}  -- {}",
                c.reads,
                c.micros,
                r.stmt.sql,
                binds.join(", ")
            );
        }
    }
    Ok(DueFigures {
        off: measure_best(ops, plain, &off)?,
        on: measure_best(ops, plain, &warm)?,
        cold: measure_best(ops, plain, &cold)?,
        naive: measure_best(ops, plain, &naive)?,
    })
}

/// What the schedulers of one throughput run did, from their events.
#[derive(Debug, Default)]
struct Polls {
    polls: AtomicU64,
    found: AtomicU64,
    micros: AtomicU64,
    failed: AtomicU64,
    first_failure: std::sync::Mutex<Option<String>>,
}

impl Polls {
    fn on_event(&self, event: &SchedulerEvent) {
        match event {
            SchedulerEvent::PollCompleted { found, duration } => {
                self.polls.fetch_add(1, Ordering::Relaxed);
                self.found.fetch_add(*found as u64, Ordering::Relaxed);
                let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
                self.micros.fetch_add(micros, Ordering::Relaxed);
            }
            SchedulerEvent::PollFailed { error } => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut first = self
                    .first_failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                first.get_or_insert_with(|| error.clone());
            }
            _ => {}
        }
    }

    /// `N polls (M executions, T ms each), F failed (first: ...)`.
    fn report(&self) -> String {
        let polls = self.polls.load(Ordering::Relaxed);
        let each = |total: u64| total as f64 / polls.max(1) as f64;
        let failed = self.failed.load(Ordering::Relaxed);
        let mut line = format!(
            "{polls} polls ({:.1} executions, {:.1} ms each), {failed} failed",
            each(self.found.load(Ordering::Relaxed)),
            each(self.micros.load(Ordering::Relaxed)) / 1000.0
        );
        let first = self
            .first_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(error) = first.as_ref() {
            line.push_str(&format!(" (first: {error})"));
        }
        line
    }
}

/// Executions per second of no-op tasks: `schedulers` x `threads`, for `seconds`; and what
/// the polls did.
fn throughput<C: SqlConnector>(
    ops: &Ops<C>,
    url: &str,
    args: &PriorityArgs,
    priority: bool,
    polling: PollingStrategy,
) -> Result<(f64, Arc<Polls>), CliError> {
    let done = Arc::new(AtomicU64::new(0));
    let polls = Arc::new(Polls::default());
    let mut schedulers = Vec::new();
    for i in 0..args.schedulers {
        let store = (ops.connect)(url, args.config(priority)?)?;
        let count = Arc::clone(&done);
        let task = Task::one_time(NOOP, move |_, _| {
            count.fetch_add(1, Ordering::Relaxed);
            Ok(())
        });
        let scheduler = Scheduler::builder(Arc::new(store) as Arc<dyn Store>)
            .task(task)
            .listener({
                let polls = Arc::clone(&polls);
                Arc::new(move |e: &SchedulerEvent| polls.on_event(e))
            })
            .config(SchedulerConfig {
                threads: args.threads,
                polling,
                polling_interval: Duration::from_millis(500),
                shutdown_max_wait: Duration::from_secs(30),
                scheduler_name: format!("bench-{i}"),
                ..SchedulerConfig::default()
            })
            .build()?;
        schedulers.push(scheduler);
    }
    let started = Instant::now();
    for s in &schedulers {
        s.start()?;
    }
    std::thread::sleep(Duration::from_secs(args.seconds));
    let n = done.load(Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    for s in &schedulers {
        s.stop();
    }
    Ok((n as f64 / elapsed, polls))
}

fn run_priority<C: SqlConnector + Clone>(
    args: &PriorityArgs,
    url: &str,
    name: &str,
    ops: Ops<C>,
) -> Result<(), CliError> {
    let plain = (ops.connect)(url, store_config(&args.table, false))?;
    let mut s = Scenario {
        task_name: NOOP.name().to_owned(),
        now: Utc::now().trunc_subsecs(6),
        due: args.due,
        future: args.future,
        levels: args.levels,
        drain: args.drain,
    };
    let bar = progress::bar(
        args.due + args.future,
        format!("loading {} on {name}", args.table),
    );
    let started = Instant::now();
    let reused = (ops.load)(&plain, &s, args.reuse, &mut |n| bar.inc(n))?;
    bar.finish_and_clear();
    say!(
        "load: {:.0} s ({})",
        started.elapsed().as_secs_f64(),
        match (reused, args.reuse) {
            (true, _) => "future rows of the kept table reused, due rows loaded afresh",
            (false, true) => "no kept table fit --reuse: loaded in full",
            (false, false) => "loaded in full",
        }
    );
    let counted = name != "sqlite";
    say!(
        "docket bench priority: backend={name} table={} due={} future={} levels={} drain={} \
         (due rows of levels {}..{} removed) threads={} schedulers={}",
        args.table,
        args.due,
        args.future,
        args.levels,
        args.drain,
        s.top_kept_level() + 1,
        args.levels,
        args.threads,
        args.schedulers
    );
    say!("cost unit: {}", ops.unit);
    say!(
        "priority on: {}",
        crate::mode::describe(&args.config(true)?.ordering.mode)
    );
    let lock_batch = PollingStrategy::lock_and_fetch().limits(args.threads).1 as i64;
    let fetch_batch = PollingStrategy::fetch().limits(args.threads).1 as i64;
    let mut headline = None;
    for (label, batch, claims) in [
        (
            "lock-and-fetch's claim: locking reads and claiming updates, rolled back",
            lock_batch,
            true,
        ),
        ("fetch's due-query", fetch_batch, false),
    ] {
        let f = progress::while_running(format!("measuring batch {batch}"), || {
            due_figures(&ops, &plain, args, &s, batch, claims)
        })?;
        say!("one poll, batch {batch} = {label}:");
        for (what, c) in [
            ("priority off", &f.off),
            (
                "priority on (cache fresh: what a poll under load sends)",
                &f.on,
            ),
            (
                "priority on, first poll (cache empty: levels + probes)",
                &f.cold,
            ),
            ("single ORDER BY priority DESC, execution_time", &f.naive),
        ] {
            say!(
                "  {what:<58} {:>8} reads {:>9.3} ms {:>3} statement(s)",
                c.cost.reads,
                c.cost.micros as f64 / 1000.0,
                c.cost.statements
            );
        }
        headline.get_or_insert((
            figure(&f.off.cost, counted),
            figure(&f.on.cost, counted),
            figure(&f.naive.cost, counted),
        ));
    }
    let fair =
        progress::while_running("fairness run".to_owned(), || fairness(&ops, url, args, &s))?;
    say!("{}", fair.report(args));
    let mut lock_tp = (0.0, 0.0);
    for (label, polling) in [
        ("lock-and-fetch", PollingStrategy::lock_and_fetch()),
        ("fetch", PollingStrategy::fetch()),
    ] {
        let mut pair = [0.0; 2];
        let mut polled = Vec::new();
        for (i, on) in [false, true].into_iter().enumerate() {
            s.now = Utc::now().trunc_subsecs(6);
            let bar = progress::bar(s.due, format!("reloading due rows on {name}"));
            (ops.reload)(&plain, &s, &mut |n| bar.inc(n))?;
            bar.finish_and_clear();
            let (per_s, polls) = progress::while_running(
                format!(
                    "{label}, priority {}: {} s",
                    if on { "on" } else { "off" },
                    args.seconds
                ),
                || throughput(&ops, url, args, on, polling),
            )?;
            pair[i] = per_s;
            polled.push(polls.report());
        }
        say!(
            "throughput {label:<15} {}x{} threads: priority off {:.0}/s, on {:.0}/s, ratio {:.2}",
            args.schedulers,
            args.threads,
            pair[0],
            pair[1],
            ratio(pair[1], pair[0])
        );
        say!("  polls: priority off {}", polled.join("; on "));
        if label == "lock-and-fetch" {
            lock_tp = (pair[0], pair[1]);
        }
    }
    if !args.keep {
        (ops.drop)(&plain)?;
    }
    let (off, on, naive) = headline.unwrap_or_default();
    say!("{}", fair.summary(name, args));
    say!("{}", summary(name, args, (off, on, naive), lock_tp));
    Ok(())
}

/// The last line: buffers of lock-and-fetch's claim (a fresh-cache poll for `on`), throughput of
/// lock-and-fetch.
fn summary(
    backend: &str,
    args: &PriorityArgs,
    (off, on, naive): (u64, u64, u64),
    (tp_off, tp_on): (f64, f64),
) -> String {
    format!(
        "summary backend={backend} due={} future={} buffers_off={off} buffers_on={on} \
         buffers_naive={naive} buffers_ratio={:.2} throughput_off={:.0} throughput_on={:.0} \
         throughput_ratio={:.2}",
        args.due,
        args.future,
        ratio(on as f64, off as f64),
        tp_off,
        tp_on,
        ratio(tp_on, tp_off)
    )
}

/// What each fed level received in the fairness run, and how long its executions waited.
struct Fairness {
    /// Per fed level, highest first: executions handed out, and the longest wait (due to
    /// handed out, by the run's clock) of one of its executions, those still waiting at the
    /// end counted with their wait so far.
    levels: Vec<(i16, u64, chrono::Duration)>,
    /// The poll that first served the lowest level.
    first_low: Option<usize>,
    /// The mode's bound on the lowest level's longest wait under this feed; `None`: unbounded
    /// (strict).
    bound: Option<chrono::Duration>,
    polls: usize,
}

/// The fed levels: the top one (`--levels`) and the lowest, 1.
const LOWEST: i16 = 1;

impl Fairness {
    fn total(&self) -> u64 {
        self.levels.iter().map(|(_, n, _)| n).sum()
    }

    fn low(&self) -> (u64, chrono::Duration) {
        self.levels
            .last()
            .map_or((0, chrono::Duration::zero()), |(_, n, w)| (*n, *w))
    }

    fn low_share(&self) -> f64 {
        self.low().0 as f64 / self.total().max(1) as f64
    }

    fn within_bound(&self) -> bool {
        self.bound.is_some_and(|b| self.low().1 <= b)
    }

    fn report(&self, args: &PriorityArgs) -> String {
        let total = self.total().max(1) as f64;
        let levels: Vec<String> = self
            .levels
            .iter()
            .map(|(l, n, w)| {
                format!(
                    "{l}: share {:.3}, longest wait {} s",
                    *n as f64 / total,
                    w.num_seconds()
                )
            })
            .collect();
        format!(
            "fairness, {} polls of batch {}, fed per poll {} of level {} and 1 of level \
             {LOWEST} (1 s per poll): {}; level {LOWEST} first served at poll {} \
             (its wait's bound {})",
            self.polls,
            args.threads,
            args.threads,
            args.levels,
            levels.join("; "),
            self.first_low.map_or("never".to_owned(), |p| p.to_string()),
            self.bound.map_or("none: strict".to_owned(), |b| format!(
                "{} s",
                b.num_seconds()
            ))
        )
    }

    fn summary(&self, backend: &str, args: &PriorityArgs) -> String {
        format!(
            "fairness backend={backend} mode={:?} low_share={:.3} low_first_poll={} \
             low_longest_wait_s={} wait_bound_s={} within_bound={}",
            args.mode.mode,
            self.low_share(),
            self.first_low.map_or(-1, |p| p as i64),
            self.low().1.num_seconds(),
            self.bound.map_or(-1, |b| b.num_seconds()),
            self.within_bound()
        )
    }
}

/// The longest a lowest-level execution may wait under the fairness feed (one poll a second,
/// the top level fed at the batch's size, so the queue is over capacity by the lowest
/// level's feed), given the longest wait of the top level's executions (`top_wait`):
/// - weighted: until its pass is the lowest (the two fed levels' weights over its own, in
///   polls), whatever the backlog;
/// - aging: until its effective priority passes that of the top level's waiting work, which
///   ages too: `top - lowest + 1` steps beyond the top level's own wait, plus a poll. Over
///   capacity, aging shares the growing wait between the levels; it bounds the difference;
/// - strict: unbounded.
fn wait_bound(
    mode: &PriorityMode,
    top: i16,
    top_wait: chrono::Duration,
) -> Option<chrono::Duration> {
    match mode {
        PriorityMode::Strict => None,
        PriorityMode::Weighted(w) => {
            let low = u64::from(w.weight_of(Some(LOWEST)).max(1));
            let both = u64::from(w.weight_of(Some(top))) + low;
            Some(chrono::Duration::seconds(both.div_ceil(low) as i64))
        }
        PriorityMode::Aging(a) => {
            let steps = u32::try_from(i32::from(top) - i32::from(LOWEST) + 1).unwrap_or(0);
            let wait = a.step().saturating_mul(steps) + std::time::Duration::from_secs(1);
            chrono::Duration::from_std(wait).ok().map(|w| w + top_wait)
        }
    }
}

/// A continuous feed of the top level, on a task of its own in the scenario's table: per poll
/// (the clock one second on), `threads` fresh executions of level `--levels` and one of level
/// 1, then one lock-and-fetch claim of `threads`. Claimed rows stay claimed (the throughput
/// runs reload the due rows).
fn fairness<C: SqlConnector>(
    ops: &Ops<C>,
    url: &str,
    args: &PriorityArgs,
    s: &Scenario,
) -> Result<Fairness, CliError> {
    let store = (ops.connect)(url, args.config(true)?)?;
    let task = format!("{}-fair", s.task_name);
    let names = vec![task.clone()];
    // Per fed level: handed out, longest wait, and the due times still waiting (with counts).
    type Waiting = std::collections::BTreeMap<chrono::DateTime<chrono::Utc>, usize>;
    let mut fed: Vec<(i16, u64, chrono::Duration, Waiting)> = [args.levels, LOWEST]
        .into_iter()
        .map(|l| (l, 0, chrono::Duration::zero(), Waiting::new()))
        .collect();
    let mut first_low = None;
    let mut now = s.now;
    for poll in 0..args.fair_polls {
        now += chrono::Duration::seconds(1);
        let fresh = |j: usize, priority: i16| NewExecution {
            task_name: task.clone(),
            task_instance: format!("fair-{poll}-{j}"),
            task_data: None,
            execution_time: now,
            priority: Some(priority),
            limit_key: None,
        };
        let mut feed: Vec<NewExecution> =
            (0..args.threads).map(|j| fresh(j, args.levels)).collect();
        feed.push(fresh(args.threads, LOWEST));
        store.execution_insert_batch(&feed)?;
        for e in &feed {
            if let Some(level) = fed.iter_mut().find(|f| Some(f.0) == e.priority) {
                *level.3.entry(now).or_default() += 1;
            }
        }
        let p = DueParams {
            now,
            task_names: &names,
            limit: args.threads as i64,
            claim_for: None,
            clock: None,
            include_limited: false,
        };
        for e in store.execution_lock_and_fetch_due(&p, "bench-fair")? {
            let Some(level) = fed.iter_mut().find(|f| Some(f.0) == e.priority) else {
                continue;
            };
            level.1 += 1;
            level.2 = level.2.max(now - e.execution_time);
            if let Some(n) = level.3.get_mut(&e.execution_time) {
                *n -= 1;
                if *n == 0 {
                    level.3.remove(&e.execution_time);
                }
            }
            if level.0 == LOWEST {
                first_low.get_or_insert(poll);
            }
        }
    }
    let levels: Vec<(i16, u64, chrono::Duration)> = fed
        .into_iter()
        .map(|(l, n, longest, waiting)| {
            let still = waiting
                .keys()
                .next()
                .map_or(longest, |oldest| now - *oldest);
            (l, n, longest.max(still))
        })
        .collect();
    let top_wait = levels.first().map_or(chrono::Duration::zero(), |l| l.2);
    Ok(Fairness {
        levels,
        first_low,
        bound: wait_bound(&args.mode.priority_mode()?, args.levels, top_wait),
        polls: args.fair_polls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::ordering::{Aging, Weights};
    use std::time::Duration;

    #[test]
    fn wait_bounds_follow_the_mode() {
        let secs = chrono::Duration::seconds;
        assert_eq!(wait_bound(&PriorityMode::Strict, 10, secs(5)), None);
        // Weights 9 : 1: the lowest level's pass is the lowest every 10 polls at most.
        let weighted = Weights::new(&[(10, 9), (1, 1)]).expect("weights");
        assert_eq!(
            wait_bound(&PriorityMode::Weighted(weighted), 10, secs(500)),
            Some(secs(10))
        );
        // Aging 5 s a level: 10 steps past the top level's own wait, and a poll.
        let aging = Aging::new(Duration::from_secs(5), 100).expect("aging");
        assert_eq!(
            wait_bound(&PriorityMode::Aging(aging), 10, secs(7)),
            Some(secs(7 + 50 + 1))
        );
    }
}
