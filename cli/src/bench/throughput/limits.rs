//! `docket bench limits`: what limits (issue 46) cost a scheduler, side by side in one run.
//!
//! Every phase runs on a fresh table (dropped and migrated again, so `0009_limits` is there
//! and every due-query carries its `task_name NOT IN (SELECT task_name FROM <table>_limits)`),
//! with one scheduler of `--workers` threads and docket's default configuration that registers
//! both tasks, the unlimited `bench-throughput` and the limited `bench-limited`, on a
//! [`Recording`](crate::bench::load::Recording) store (statements counted). The phases:
//! - **a, baseline**: `--jobs` jobs of the unlimited task alone, no limit row in the table;
//! - **b, beside a limited task**: the same jobs, and a backlog of `--backlog` jobs of the
//!   limited task due an hour earlier (first in hand-out order; `--backlog-due-in`),
//!   `max_running(--max-running)`;
//!   the unlimited task's jobs/s (its jobs over the time until they are all done) against a;
//! - **c, limited, generous**: the unlimited task's jobs again, the task itself limited to
//!   `max_running(--jobs)`, a limit that never holds anything back: the claim of a limited task
//!   (its own transaction under the limit row) against the ordinary claim of a;
//! - **d, per key, generous**: the same with `max_running_per_key(--jobs)` and the jobs spread
//!   over `--keys` keys.
//!
//! Rounds alternate the order of the phases (a b c d, then d c b a, ...), so that a machine
//! that slows down or speeds up during the run weighs on every phase alike. Every phase checks
//! that each job of the measured task ran exactly once, that no limited job ran twice, and
//! that no more than `--max-running` limited jobs ever ran at once (counted in the handler).

use super::{database_url, empty_table, recording, CpuStart, Measured, Ops, JOB};
use crate::args::parse_table;
use crate::bench::Polls;
use crate::error::CliError;
use crate::progress;
use chrono::Utc;
use docket_core::backend::SqlStore;
use docket_core::store::sql::SqlConnector;
use docket_core::{
    ExecutionStore, Scheduler, SchedulerConfig, SchedulerEvent, StoreInfo, TableName, Task,
    TaskDescriptor, TaskLimit,
};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The limited task of phase b.
const LIMITED: TaskDescriptor = TaskDescriptor::new("bench-limited");

/// Arguments of `docket bench limits`.
#[derive(Debug, clap::Args)]
pub struct LimitsArgs {
    /// postgres, mysql or sqlite.
    #[arg(long, value_name = "BACKEND")]
    backend: String,
    /// Database URL (its database is created when missing); default: DOCKET_POSTGRES_URL /
    /// DOCKET_MYSQL_URL, or a temporary SQLite file.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Jobs of the measured task per phase.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    jobs: u64,
    /// Jobs of the limited task waiting in phase b (due an hour before the measured ones).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    backlog: u64,
    /// When the backlog of phase b is due, in seconds from the enqueue (negative: before the
    /// measured jobs, first in hand-out order, so that every ordinary claim reads past it;
    /// positive: not yet due during the run, so that phase b measures only the limited task's
    /// claim in each poll and the `NOT IN` of the others).
    #[arg(long, default_value_t = -3600, allow_hyphen_values = true)]
    backlog_due_in: i64,
    /// The limited task's `max_running` in phase b.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    max_running: u32,
    /// Keys the jobs of phase d are spread over.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// Rounds of the four phases, each round in the reverse order of the one before.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Worker slots (scheduler threads).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    workers: u32,
    /// Gathers the planner's statistics of the table once its jobs are enqueued, in every
    /// phase (as autovacuum keeps them on a table in use); without it the table is fresh and
    /// never analyzed, as in `docket bench throughput`.
    #[arg(long)]
    analyze: bool,
    /// The benchmark's table (dropped and created again before each phase, dropped at the end).
    #[arg(long, value_name = "TABLE", default_value = "docket_bench_lim", value_parser = parse_table)]
    table: TableName,
}

/// Runs `docket bench limits`.
pub fn run(args: &LimitsArgs) -> Result<(), CliError> {
    let backend = crate::backends::by_name(&args.backend)?;
    let (url, _tmp) = database_url(backend, args.database_url.as_deref())?;
    match backend.name() {
        #[cfg(feature = "postgres")]
        "postgres" => run_all(args, &url, super::postgres_ops()),
        #[cfg(feature = "mysql")]
        "mysql" => run_all(args, &url, super::mysql_ops()),
        "sqlite" => run_all(args, &url, super::sqlite_ops()),
        other => Err(CliError::Bench(format!(
            "bench limits runs on postgres, mysql or sqlite, not {other}"
        ))),
    }
}

/// One phase of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The unlimited task alone, no limit row.
    Baseline,
    /// The unlimited task beside a limited task with a backlog.
    Beside,
    /// The measured task limited by a `max_running` that never holds it back.
    Generous,
    /// The measured task limited per key, never held back.
    PerKey,
}

impl Phase {
    const ALL: [Phase; 4] = [
        Phase::Baseline,
        Phase::Beside,
        Phase::Generous,
        Phase::PerKey,
    ];

    fn label(self) -> &'static str {
        match self {
            Phase::Baseline => "a baseline",
            Phase::Beside => "b beside limited",
            Phase::Generous => "c limited max_running",
            Phase::PerKey => "d limited per key",
        }
    }
}

/// The figures of one phase.
#[derive(Debug, Clone, Copy, Default)]
struct PhaseFigures {
    /// Jobs of the measured task over the time until all of them were done.
    jobs_per_s: f64,
    /// Jobs of the limited task done in that time (phase b).
    limited_done: u64,
    /// Most limited jobs seen running at once (phase b).
    limited_peak: u32,
    /// Statements the store sent per job done (both tasks).
    statements_per_job: f64,
    /// This process's CPU per job done.
    cpu_us_per_job: f64,
    /// Poll time per job handed out (the scheduler's `PollCompleted` durations).
    poll_us_per_job: f64,
    /// Polls of the phase, and jobs per poll.
    polls: u64,
    jobs_per_poll: f64,
}

/// What the limited task's handler counts: jobs done, running now, the most at once, and jobs
/// that ran twice.
#[derive(Debug, Default)]
struct LimitedCount {
    done: AtomicU64,
    running: AtomicU32,
    peak: AtomicU32,
    runs: std::sync::Mutex<std::collections::HashSet<String>>,
    twice: AtomicU64,
}

/// The rows left of the measured task.
fn measured_left<C: SqlConnector>(store: &SqlStore<C>) -> Result<i64, CliError> {
    Ok(store
        .execution_summary()?
        .iter()
        .filter(|s| s.task_name == JOB.name())
        .map(|s| s.total)
        .sum())
}

/// One phase on a fresh table.
fn phase<C: SqlConnector + Clone>(
    ops: &Ops<C>,
    store: &Arc<SqlStore<C>>,
    args: &LimitsArgs,
    which: Phase,
) -> Result<PhaseFigures, CliError> {
    let client = empty_table(ops, store)?;
    let limit = match which {
        Phase::Baseline => None,
        Phase::Beside => Some(TaskLimit::new(LIMITED.name()).max_running(args.max_running)),
        Phase::Generous => Some(TaskLimit::new(JOB.name()).max_running(clamp(args.jobs))),
        Phase::PerKey => Some(TaskLimit::new(JOB.name()).max_running_per_key(clamp(args.jobs))),
    };
    if which == Phase::Beside {
        let at = Utc::now() + chrono::Duration::seconds(args.backlog_due_in);
        let backlog = (0..args.backlog).map(|i| LIMITED.instance(format!("l{i}")).scheduled_to(at));
        client.schedule_batch(backlog)?;
    }
    let keys = args.keys;
    let measured_jobs = (0..args.jobs).map(|i| match which {
        Phase::PerKey => JOB
            .instance(i.to_string())
            .limit_key(format!("k{}", i % keys)),
        _ => JOB.instance(i.to_string()),
    });
    let inserted = client.schedule_batch(measured_jobs)?;
    if inserted != args.jobs {
        return Err(CliError::Bench(format!(
            "enqueued {inserted} of {} jobs",
            args.jobs
        )));
    }
    if args.analyze {
        (ops.analyze)(store)?;
    }
    let recording = recording(store);
    let measured = Measured::new(args.jobs);
    let count = Arc::new(LimitedCount::default());
    let c = Arc::clone(&count);
    let limited = Task::one_time(LIMITED, move |e, _| {
        let now = c.running.fetch_add(1, Ordering::SeqCst) + 1;
        c.peak.fetch_max(now, Ordering::SeqCst);
        let first = c
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(e.task_instance.clone());
        if !first {
            c.twice.fetch_add(1, Ordering::SeqCst);
        }
        c.done.fetch_add(1, Ordering::SeqCst);
        c.running.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    });
    let polls = Arc::new(Polls::default());
    let mut builder = Scheduler::builder(Arc::clone(&recording) as Arc<dyn ExecutionStore>)
        .task(measured.task())
        .task(limited)
        .listener({
            let polls = Arc::clone(&polls);
            Arc::new(move |e: &SchedulerEvent| polls.on_event(e))
        })
        .config(SchedulerConfig {
            threads: args.workers as usize,
            scheduler_name: "bench-limits".into(),
            ..SchedulerConfig::default()
        });
    if let Some(limit) = limit {
        builder = builder.limit(limit);
    }
    let scheduler = builder.build()?;
    recording.connector().take();
    let cpu = CpuStart::now(&args.backend);
    let started = Instant::now();
    scheduler.start()?;
    measured.wait(
        &scheduler,
        || measured_left(store),
        &format!("{}: ", which.label()),
    )?;
    let elapsed = started.elapsed().as_secs_f64();
    let limited_done = count.done.load(Ordering::SeqCst);
    let all = args.jobs + limited_done;
    let (cpu_us_per_job, _) = cpu.per_job(all);
    let statements = recording.connector().take().len();
    scheduler.stop();
    check_runs(&measured.runs, &count, args, which)?;
    let polled = polls.polls.load(Ordering::Relaxed);
    let found = polls.found.load(Ordering::Relaxed);
    if let Some(failure) = polls
        .first_failure
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
    {
        return Err(CliError::Bench(format!(
            "{}: a poll failed: {failure}",
            which.label()
        )));
    }
    Ok(PhaseFigures {
        jobs_per_s: args.jobs as f64 / elapsed,
        limited_done,
        limited_peak: count.peak.load(Ordering::SeqCst),
        statements_per_job: statements as f64 / all as f64,
        cpu_us_per_job,
        poll_us_per_job: polls.micros.load(Ordering::Relaxed) as f64 / found.max(1) as f64,
        polls: polled,
        jobs_per_poll: found as f64 / polled.max(1) as f64,
    })
}

/// A count as a limit (`u32`), at most `u32::MAX`.
fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Fails unless every measured job ran exactly once, no limited job ran twice, and the limited
/// task never ran more than its limit at once.
fn check_runs(
    runs: &[AtomicU32],
    count: &LimitedCount,
    args: &LimitsArgs,
    which: Phase,
) -> Result<(), CliError> {
    let never = runs
        .iter()
        .filter(|r| r.load(Ordering::SeqCst) == 0)
        .count();
    let twice = runs.iter().filter(|r| r.load(Ordering::SeqCst) > 1).count();
    let limited_twice = count.twice.load(Ordering::SeqCst);
    let peak = count.peak.load(Ordering::SeqCst);
    if never != 0 || twice != 0 || limited_twice != 0 || peak > args.max_running {
        return Err(CliError::Bench(format!(
            "{}: {never} jobs never ran, {twice} ran more than once, {limited_twice} limited \
             jobs ran twice, {peak} limited jobs ran at once (limit {})",
            which.label(),
            args.max_running
        )));
    }
    Ok(())
}

fn run_all<C: SqlConnector + Clone>(
    args: &LimitsArgs,
    url: &str,
    ops: Ops<C>,
) -> Result<(), CliError> {
    let store = ops.open(url, &args.table)?;
    let name = store.backend();
    say!(
        "docket bench limits: backend={name} table={} jobs={} workers={} rounds={} \
         (b: backlog {} of {} due in {} s with max_running({}); c: {} with max_running({}); d: {} with \
         max_running_per_key({}) over {} keys; fresh table per phase, {})",
        args.table,
        args.jobs,
        args.workers,
        args.rounds,
        args.backlog,
        LIMITED.name(),
        args.backlog_due_in,
        args.max_running,
        JOB.name(),
        args.jobs,
        JOB.name(),
        args.jobs,
        args.keys,
        if args.analyze {
            "analyzed once enqueued"
        } else {
            "never analyzed"
        }
    );
    let mut all: Vec<[PhaseFigures; 4]> = Vec::new();
    for round in 0..args.rounds {
        let mut order = Phase::ALL;
        if round % 2 == 1 {
            order.reverse();
        }
        let mut figures = [PhaseFigures::default(); 4];
        for which in order {
            let label = format!("round {} {}", round + 1, which.label());
            let f = progress::while_running(&label, || phase(&ops, &store, args, which))?;
            say!(
                "round {} {:<22} {:>8.0} jobs/s  {:.3} statements/job  {:>6.1} us client \
                 CPU/job  {:>6.1} us poll/job  {} polls, {:.1} jobs/poll{}",
                round + 1,
                which.label(),
                f.jobs_per_s,
                f.statements_per_job,
                f.cpu_us_per_job,
                f.poll_us_per_job,
                f.polls,
                f.jobs_per_poll,
                match which {
                    Phase::Beside => format!(
                        "  limited: {} done alongside, at most {} at once",
                        f.limited_done, f.limited_peak
                    ),
                    _ => String::new(),
                }
            );
            figures[which as usize] = f;
        }
        let [a, b, c, d] = figures;
        say!(
            "round {} ratios: b/a {:.2}  c/a {:.2}  d/a {:.2}  statements/job a {:.3} c {:.3} \
             d {:.3}  poll us/job a {:.1} c {:.1} d {:.1}",
            round + 1,
            b.jobs_per_s / a.jobs_per_s,
            c.jobs_per_s / a.jobs_per_s,
            d.jobs_per_s / a.jobs_per_s,
            a.statements_per_job,
            c.statements_per_job,
            d.statements_per_job,
            a.poll_us_per_job,
            c.poll_us_per_job,
            d.poll_us_per_job
        );
        all.push(figures);
    }
    (ops.drop)(&store)?;
    say!("{}", summary(name, &all));
    Ok(())
}

/// The last line: per ratio, its value in each round and the median.
fn summary(backend: &str, all: &[[PhaseFigures; 4]]) -> String {
    let ratios = |p: Phase| -> String {
        let mut r: Vec<f64> = all
            .iter()
            .map(|f| f[p as usize].jobs_per_s / f[Phase::Baseline as usize].jobs_per_s)
            .collect();
        let each: Vec<String> = r.iter().map(|x| format!("{x:.2}")).collect();
        r.sort_by(f64::total_cmp);
        format!("{} (median {:.2})", each.join(","), r[r.len() / 2])
    };
    format!(
        "summary backend={backend} rounds={} beside_over_baseline={} \
         limited_over_baseline={} per_key_over_baseline={}",
        all.len(),
        ratios(Phase::Beside),
        ratios(Phase::Generous),
        ratios(Phase::PerKey)
    )
}
