//! `docket bench soak`: a steady mixed load for `--minutes`, watching what must stay flat.
//!
//! One process, `--schedulers` schedulers (each with its own store and pool, half
//! lock-and-fetch, half fetch) on one table, fed every 100 ms: one-time executions with
//! priorities 1..=10 (`soak-once`), one in ten failing once and retried a second later
//! (`soak-fail`, so it runs twice), a recurring task every second (`soak-recurring`), and
//! work-queue items that a taker thread takes and submits. Every `--interval-seconds` it
//! prints the process's resident memory, open file handles, open sockets (the database
//! connections) and the table's executions (work-queue items, kept as history, are not
//! counted); at the end it stops feeding, lets the
//! schedulers drain, counts the runs and prints the verdict line: every gauge flat within 10%
//! after the warm-up (the first fifth of the run), no execution lost, no error of the queue
//! taker (each is printed as it happens), duplicates counted.

use super::database_url;
use crate::args::{parse_table, store_config};
use crate::error::CliError;
use docket_core::queue::{Batch, Record};
use docket_core::task::Retry;
use docket_core::{
    ExecutionStore, FailurePolicy, PollingStrategy, QueueConfig, QueueStore, Schedule, Scheduler,
    SchedulerClient, SchedulerConfig, Store, TableName, Task, TaskDescriptor, TaskError, WorkQueue,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

const ONCE: TaskDescriptor = TaskDescriptor::new("soak-once");
const FAIL: TaskDescriptor = TaskDescriptor::new("soak-fail");
const RECURRING: &str = "soak-recurring";
const QUEUE_TYPE: &str = "soak-queue";

/// Arguments of `docket bench soak`.
#[derive(Debug, clap::Args)]
pub struct SoakArgs {
    /// postgres, mysql or sqlite.
    #[arg(long, value_name = "BACKEND")]
    backend: String,
    /// Database URL; default: DOCKET_POSTGRES_URL / DOCKET_MYSQL_URL, or a temporary SQLite file.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// How long the load runs.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    minutes: u64,
    /// Seconds between two samples.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    interval_seconds: u64,
    /// One-time executions scheduled per second (one in ten fails once).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(10..))]
    rate: u64,
    /// Schedulers (half lock-and-fetch, half fetch).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    schedulers: u64,
    /// Worker threads per scheduler.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,
    /// The soak's table (migrated if needed; left in place).
    #[arg(long, value_name = "TABLE", default_value = "docket_bench_soak", value_parser = parse_table)]
    table: TableName,
}

/// A gauge's name, how to read it from a sample, and the absolute slack over 10%.
type Gauge = (&'static str, fn(&Sample) -> u64, u64);

/// One sample of the gauges.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rss_kib: u64,
    fds: u64,
    sockets: u64,
    rows: u64,
}

/// Whether `values` (samples after the warm-up, at least 3) show no upward trend: the highest
/// of the last third stays within 10% (plus `slack`) of the highest of the first third.
/// Returns both highs and the answer.
fn trend(values: &[u64], slack: u64) -> (u64, u64, bool) {
    let third = (values.len() / 3).max(1);
    let early = values[..third].iter().copied().max().unwrap_or(0);
    let late = values[values.len() - third..]
        .iter()
        .copied()
        .max()
        .unwrap_or(0);
    (early, late, late <= early + early / 10 + slack)
}

fn sample(store: &dyn Store) -> Sample {
    let rss_kib = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0);
    let (mut fds, mut sockets) = (0, 0);
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        for entry in dir.flatten() {
            fds += 1;
            if std::fs::read_link(entry.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
            {
                sockets += 1;
            }
        }
    }
    // The scheduler's executions; submitted work-queue items stay in the table as history.
    let rows = store
        .execution_summary()
        .map(|rows| {
            rows.iter()
                .filter(|s| s.task_name != QUEUE_TYPE)
                .map(|s| s.total)
                .sum::<i64>()
        })
        .unwrap_or(-1);
    Sample {
        rss_kib,
        fds,
        sockets,
        rows: u64::try_from(rows).unwrap_or(0),
    }
}

/// Runs still expected per instance id of this run (removed once complete, so memory stays
/// bounded by the backlog), and runs beyond those expected.
struct Ledger {
    /// This run's instance ids start with it (a kept table may hold an earlier run's).
    prefix: String,
    pending: Mutex<HashMap<String, u32>>,
    runs: AtomicU64,
    duplicates: AtomicU64,
}

impl Ledger {
    fn expect(&self, id: String, runs: u32) {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, runs);
    }

    fn ran(&self, id: &str) {
        self.runs.fetch_add(1, Ordering::Relaxed);
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        match pending.get_mut(id) {
            Some(1) => {
                pending.remove(id);
            }
            Some(left) => *left -= 1,
            None if id.starts_with(&self.prefix) => {
                self.duplicates.fetch_add(1, Ordering::Relaxed);
            }
            None => {}
        }
    }

    fn short(&self) -> usize {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// Runs `docket bench soak`.
pub fn run(args: &SoakArgs) -> Result<(), CliError> {
    let backend = crate::backends::by_name(&args.backend)?;
    let (url, _tmp) = database_url(backend, args.database_url.as_deref())?;
    let config = store_config(&args.table, true);
    backend.migrate(&url, config.clone(), None)?;
    let store = backend.connect(&url, config.clone())?;
    // Instances of this run only: a kept table may hold an earlier run's.
    let run_id = chrono::Utc::now().format("%Y%m%d%H%M%S").to_string();
    let ledger = Arc::new(Ledger {
        prefix: format!("{run_id}-"),
        pending: Mutex::default(),
        runs: AtomicU64::default(),
        duplicates: AtomicU64::default(),
    });
    let recurring_runs = Arc::new(AtomicU64::new(0));
    let mut schedulers = Vec::new();
    for i in 0..args.schedulers {
        let scheduler_store: Arc<dyn ExecutionStore> = backend.connect(&url, config.clone())?;
        let (once_runs, fail_runs) = (Arc::clone(&ledger), Arc::clone(&ledger));
        let recurring = Arc::clone(&recurring_runs);
        let tasks = vec![
            Task::one_time(ONCE, move |e, _| {
                once_runs.ran(&e.task_instance);
                std::thread::sleep(Duration::from_millis(2));
                Ok(())
            }),
            Task::one_time(FAIL, move |e, _| {
                fail_runs.ran(&e.task_instance);
                if e.consecutive_failures == 0 {
                    Err(TaskError::new("fails once on purpose"))
                } else {
                    Ok(())
                }
            })
            .on_failure(FailurePolicy {
                retry: Retry::Fixed(Duration::from_secs(1)),
                max_retries: None,
            }),
            Task::recurring(
                RECURRING,
                Schedule::fixed_delay(Duration::from_secs(1))?,
                move |_, _| {
                    recurring.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                },
            ),
        ];
        let scheduler = Scheduler::builder(scheduler_store)
            .tasks(tasks)
            .config(SchedulerConfig {
                threads: usize::try_from(args.threads).unwrap_or(8),
                polling: if i % 2 == 0 {
                    PollingStrategy::lock_and_fetch()
                } else {
                    PollingStrategy::fetch()
                },
                polling_interval: Duration::from_millis(200),
                heartbeat_interval: Duration::from_secs(5),
                scheduler_name: format!("soak-{run_id}-{i}"),
                ..SchedulerConfig::default()
            })
            .build()?;
        scheduler.start()?;
        schedulers.push(scheduler);
    }

    // The feeder: one-time executions and queue items every 100 ms.
    let stop = Arc::new(AtomicBool::new(false));
    let scheduled = Arc::new(AtomicU64::new(0));
    let enqueued = Arc::new(AtomicU64::new(0));
    let feeder = {
        let (stop, ledger, scheduled, enqueued) = (
            Arc::clone(&stop),
            Arc::clone(&ledger),
            Arc::clone(&scheduled),
            Arc::clone(&enqueued),
        );
        let client = SchedulerClient::new(Arc::clone(&store) as Arc<dyn ExecutionStore>)?;
        let queue = WorkQueue::new(
            Arc::clone(&store) as Arc<dyn QueueStore>,
            QueueConfig::default(),
        )?;
        let per_tick = (args.rate / 10).max(1);
        let run_id = run_id.clone();
        std::thread::spawn(move || -> Result<(), CliError> {
            let mut n: u64 = 0;
            while !stop.load(Ordering::SeqCst) {
                let tick = Instant::now();
                let mut once = Vec::new();
                let mut fail = Vec::new();
                for _ in 0..per_tick {
                    let id = format!("{run_id}-{n:09}");
                    let priority = (n % 10) as i16 + 1;
                    if n % 10 == 9 {
                        fail.push(FAIL.instance(id.clone()).priority(priority));
                        ledger.expect(id, 2);
                    } else {
                        once.push(ONCE.instance(id.clone()).priority(priority));
                        ledger.expect(id, 1);
                    }
                    n += 1;
                }
                scheduled.store(n, Ordering::Relaxed);
                client.schedule_batch(once)?;
                client.schedule_batch(fail)?;
                let records = (0..per_tick / 5 + 1)
                    .map(|k| Record::new(format!("{run_id}-{n:09}-{k}")))
                    .collect();
                let items = queue.enqueue(&Batch {
                    task_type: QUEUE_TYPE.into(),
                    max_assignments: 1,
                    records,
                })?;
                enqueued.fetch_add(items, Ordering::Relaxed);
                if let Some(rest) = Duration::from_millis(100).checked_sub(tick.elapsed()) {
                    std::thread::sleep(rest);
                }
            }
            Ok(())
        })
    };
    // The work-queue taker: takes and submits items until the feeder stopped and none is left.
    // An error is printed, counted (the verdict fails on any) and the taker goes on, as an
    // application's would: one that ended the thread hid itself until the run was over.
    let taken = Arc::new(AtomicU64::new(0));
    let queue_errors = Arc::new(AtomicU64::new(0));
    let began = Instant::now();
    let taker = {
        let (stop, taken, errors) = (
            Arc::clone(&stop),
            Arc::clone(&taken),
            Arc::clone(&queue_errors),
        );
        let queue = WorkQueue::new(
            Arc::clone(&store) as Arc<dyn QueueStore>,
            QueueConfig::default(),
        )?;
        std::thread::spawn(move || {
            let worker = "soak-taker";
            loop {
                let took = queue
                    .next_for(worker, QUEUE_TYPE)
                    .and_then(|item| item.map(|i| queue.submit(worker, &i.key)).transpose());
                match took {
                    Ok(Some(())) => {
                        taken.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(None) if stop.load(Ordering::SeqCst) => return,
                    Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                    Err(err) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        eprintln!(
                            "soak t={:>5}s queue taker error: {err}",
                            began.elapsed().as_secs()
                        );
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
            }
        })
    };

    let started = Instant::now();
    let total = Duration::from_secs(args.minutes * 60);
    let interval = Duration::from_secs(args.interval_seconds);
    let warm_up = total / 5;
    let mut samples: Vec<(Duration, Sample)> = Vec::new();
    println!(
        "soak: {} schedulers x {} threads on {} ({}), {} executions/s, {} min, a sample every {} s",
        args.schedulers,
        args.threads,
        backend.name(),
        args.table,
        args.rate,
        args.minutes,
        args.interval_seconds
    );
    while started.elapsed() < total {
        let next = interval * (samples.len() as u32 + 1);
        std::thread::sleep(next.min(total).saturating_sub(started.elapsed()));
        let at = started.elapsed();
        let s = sample(&*store);
        let done = ledger.runs.load(Ordering::Relaxed);
        println!(
            "soak t={:>5}s rss={:.1} MiB fds={} sockets={} rows={} runs={} recurring={} queue_taken={}",
            at.as_secs(),
            s.rss_kib as f64 / 1024.0,
            s.fds,
            s.sockets,
            s.rows,
            done,
            recurring_runs.load(Ordering::Relaxed),
            taken.load(Ordering::Relaxed)
        );
        samples.push((at, s));
    }

    // Stop feeding, let everything drain (a failing execution retries after 1 s).
    stop.store(true, Ordering::SeqCst);
    feeder
        .join()
        .map_err(|_| CliError::Bench("the feeder panicked".into()))??;
    let drain_until = Instant::now() + Duration::from_secs(120);
    while ledger.short() > 0 && Instant::now() < drain_until {
        std::thread::sleep(Duration::from_millis(200));
    }
    taker
        .join()
        .map_err(|_| CliError::Bench("the queue taker panicked".into()))?;
    for s in &schedulers {
        s.stop();
    }
    let lost = ledger.short();
    let duplicates = ledger.duplicates.load(Ordering::Relaxed);

    // Flat after the warm-up: no trend (see `trend`). A pool's connection count and the
    // table's backlog move within their bounds from sample to sample; a leak keeps rising.
    let steady: Vec<Sample> = samples
        .iter()
        .filter(|(at, _)| *at >= warm_up)
        .map(|(_, s)| *s)
        .collect();
    let mut verdicts = Vec::new();
    let mut flat = steady.len() >= 3;
    if !flat {
        verdicts.push("fewer than 3 samples after the warm-up".into());
    }
    let gauges: [Gauge; 4] = [
        ("rss_kib", |s| s.rss_kib, 1024),
        ("fds", |s| s.fds, 2),
        ("sockets", |s| s.sockets, 2),
        ("rows", |s| s.rows, 20),
    ];
    for (name, get, slack) in gauges.into_iter().filter(|_| steady.len() >= 3) {
        let values: Vec<u64> = steady.iter().map(get).collect();
        let (early, late, ok) = trend(&values, slack);
        flat &= ok;
        verdicts.push(format!(
            "{name} {}..{} (first third up to {early}, last third up to {late}){}",
            values.iter().min().unwrap_or(&0),
            values.iter().max().unwrap_or(&0),
            if ok { "" } else { " GROWING" }
        ));
    }
    let errors = queue_errors.load(Ordering::Relaxed);
    let pass = flat && lost == 0 && errors == 0;
    println!(
        "soak verdict: {} after {} s ({} samples after a {} s warm-up): {}; {} executions, {lost} \
         lost, {duplicates} duplicates; {} recurring runs; queue {} of {} items taken, {errors} \
         taker errors",
        if pass { "PASS" } else { "FAIL" },
        started.elapsed().as_secs(),
        steady.len(),
        warm_up.as_secs(),
        verdicts.join(", "),
        scheduled.load(Ordering::Relaxed),
        recurring_runs.load(Ordering::Relaxed),
        taken.load(Ordering::Relaxed),
        enqueued.load(Ordering::Relaxed)
    );
    if pass {
        Ok(())
    } else {
        Err(CliError::Bench(
            "the soak failed (see the verdict line)".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::trend;

    #[test]
    fn a_pool_moving_within_its_bounds_is_flat_and_a_leak_is_not() {
        // Open sockets of the 60-minute PostgreSQL soak of 2026-12-02 after its warm-up: the
        // pools close idle connections and open them again.
        let sockets = [
            13, 13, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 13, 14, 15, 15, 15, 14, 16,
            17, 17, 17,
        ];
        assert!(trend(&sockets, 2).2);
        let leak: Vec<u64> = (0..25).map(|i| 13 + i).collect();
        assert!(!trend(&leak, 2).2);
        // A spike early and quiet later is no growth.
        assert!(trend(&[16, 45, 20, 12, 30, 21, 16, 12, 20], 20).2);
    }
}
