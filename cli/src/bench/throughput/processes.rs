//! `docket bench throughput --processes 1,2,4`: the same jobs drained by 1, 2, 4 worker
//! processes (this binary, `docket bench throughput-worker`, each one scheduler with
//! `--workers` threads and the default configuration otherwise), started together on the same
//! freshly enqueued table. Per process count: jobs/s (until the table holds none), statements
//! per job (every process's, counted by its [`Recording`] connector), the client CPU per job
//! (all processes), the database server's CPU over the run (its processes on this machine, in
//! cores), and each poller's busy share (time in the store's claim / run time) with the rows
//! per claim: where the time goes when the figure flattens.

use super::*;
use crate::bench::child::{worker_command, Worker, WorkerTarget};
use crate::bench::latency::{server_cpu, server_processes};
use docket_core::SchedulerEvent;
use std::io::Write;

/// Arguments of `docket bench throughput-worker` (started by `bench throughput --processes`).
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    target: WorkerTarget,
    /// Worker threads.
    #[arg(long)]
    workers: u32,
}

/// What one worker process reported.
#[derive(Debug, Default)]
struct Report {
    ran: Vec<String>,
    statements: u64,
    cpu: Duration,
    poll_busy: Duration,
    polls: u64,
    found: u64,
    elapsed: Duration,
}

/// The figures of one process count.
#[derive(Debug)]
pub(super) struct ProcessFigures {
    pub processes: usize,
    pub jobs_per_s: f64,
    pub statements_per_job: f64,
    pub cpu_us_per_job: f64,
    pub server_cores: Option<f64>,
    pub poller_busy: f64,
    pub rows_per_claim: f64,
}

/// What a throughput worker process reports when it ends: `ran <instance>` lines and one
/// `stats` line.
fn report(worker: Worker) -> Result<Report, CliError> {
    let mut report = Report::default();
    worker.finish(|line| {
        let mut parts = line.split_whitespace();
        match parts.next() {
            Some("ran") => report.ran.extend(parts.next().map(str::to_owned)),
            Some("stats") => {
                let mut n = || {
                    parts
                        .next()
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                report.statements = n();
                report.cpu = Duration::from_micros(n());
                report.poll_busy = Duration::from_micros(n());
                report.polls = n();
                report.found = n();
                report.elapsed = Duration::from_micros(n());
            }
            _ => {}
        }
    })?;
    Ok(report)
}

fn spawn(args: &ThroughputArgs, url: &str) -> Result<Worker, CliError> {
    let workers = args.workers.to_string();
    let more = ["--workers", workers.as_str()];
    Worker::spawn(&mut worker_command(
        "throughput-worker",
        &args.backend,
        url,
        &args.table,
        &more,
    )?)
}

/// One run with `processes` worker processes on a freshly enqueued table.
pub(super) fn run<C: SqlConnector>(
    ops: &Ops<C>,
    store: &Arc<SqlStore<C>>,
    args: &ThroughputArgs,
    url: &str,
    processes: usize,
) -> Result<ProcessFigures, CliError> {
    fresh_table(ops, store, args.jobs)?;
    let mut procs = (0..processes)
        .map(|_| spawn(args, url))
        .collect::<Result<Vec<_>, _>>()?;
    let names = server_processes(&args.backend);
    let server_before = server_cpu(names);
    let started = Instant::now();
    for p in &mut procs {
        p.say("go")?;
    }
    let mut last = (rows_left(store)?, Instant::now());
    while last.0 > 0 {
        std::thread::sleep(Duration::from_millis(20));
        let left = rows_left(store)?;
        if left != last.0 {
            last = (left, Instant::now());
        } else if last.1.elapsed() > STALL {
            return Err(CliError::Bench(format!(
                "{processes} processes: {left} rows left and none finished for {STALL:?}"
            )));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let server = server_cpu(names)
        .zip(server_before)
        .map(|(a, b)| a.saturating_sub(b).as_secs_f64() / elapsed);
    for p in &mut procs {
        p.say("stop")?;
    }
    let reports = procs
        .into_iter()
        .map(report)
        .collect::<Result<Vec<_>, _>>()?;
    let jobs = args.jobs as usize;
    let runs: Vec<AtomicU32> = (0..jobs).map(|_| AtomicU32::new(0)).collect();
    for r in &reports {
        for id in &r.ran {
            runs[job_index(id, jobs)?].fetch_add(1, Ordering::SeqCst);
        }
    }
    check_exactly_once(store, &runs, &format!("{processes} processes"))?;
    let sum = |f: fn(&Report) -> f64| reports.iter().map(f).sum::<f64>();
    let polls = sum(|r| r.polls as f64);
    Ok(ProcessFigures {
        processes,
        jobs_per_s: args.jobs as f64 / elapsed,
        statements_per_job: sum(|r| r.statements as f64) / args.jobs as f64,
        cpu_us_per_job: sum(|r| r.cpu.as_secs_f64()) * 1e6 / args.jobs as f64,
        server_cores: server,
        poller_busy: sum(|r| r.poll_busy.as_secs_f64() / r.elapsed.as_secs_f64().max(1e-9))
            / processes as f64,
        rows_per_claim: if polls > 0.0 {
            sum(|r| r.found as f64) / polls
        } else {
            0.0
        },
    })
}

/// Runs `docket bench throughput-worker`: waits for `go`, runs the default scheduler until
/// `stop`, then prints each instance it ran (`ran <id>`) and
/// `stats <statements> <cpu µs> <poll µs> <polls> <found> <elapsed µs>`.
pub fn worker(args: &WorkerArgs) -> Result<(), CliError> {
    match args.target.backend.as_str() {
        #[cfg(feature = "postgres")]
        "postgres" => run_worker(args, docket_postgres::connect),
        #[cfg(feature = "mysql")]
        "mysql" => run_worker(args, docket_mysql::connect),
        "sqlite" => run_worker(args, docket_sqlite::connect),
        other => Err(CliError::Bench(format!(
            "bench throughput runs on postgres, mysql or sqlite, not {other}"
        ))),
    }
}

fn run_worker<C: SqlConnector + Clone>(
    args: &WorkerArgs,
    connect: Connect<C>,
) -> Result<(), CliError> {
    let config = store_config(&args.target.table, false);
    let real = connect(&args.target.database_url, config.clone())?;
    let store = Arc::new(SqlStore::new(
        Recording::new(real.connector().clone()),
        config,
    ));
    let ran: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&ran);
    let task = Task::one_time(JOB, move |e, _| {
        record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(e.task_instance.clone());
        Ok(())
    });
    let polls = Arc::new(AtomicU64::new(0));
    let found = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(AtomicU64::new(0));
    let (p, f, b) = (Arc::clone(&polls), Arc::clone(&found), Arc::clone(&busy));
    let scheduler = Scheduler::builder(Arc::clone(&store) as Arc<dyn ExecutionStore>)
        .task(task)
        .config(SchedulerConfig {
            threads: args.workers as usize,
            scheduler_name: format!("bench-throughput-{}", std::process::id()),
            ..SchedulerConfig::default()
        })
        .listener(Arc::new(move |e: &docket_core::SchedulerEvent| {
            if let SchedulerEvent::PollCompleted { found, duration } = e {
                p.fetch_add(1, Ordering::Relaxed);
                f.fetch_add(*found as u64, Ordering::Relaxed);
                b.fetch_add(duration.as_micros() as u64, Ordering::Relaxed);
            }
        }))
        .build()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    store.connector().take();
    let cpu = cpu_time();
    let started = Instant::now();
    scheduler.start()?;
    let mut statements = 0u64;
    // Until `stop` (or the parent's end); the recorded statements are counted as they come.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        let _ = tx.send(());
    });
    while rx.recv_timeout(Duration::from_millis(50)).is_err() {
        statements += store.connector().take().len() as u64;
    }
    let elapsed = started.elapsed();
    scheduler.stop();
    statements += store.connector().take().len() as u64;
    let cpu = cpu_time()
        .zip(cpu)
        .map_or(Duration::ZERO, |(a, b)| a.saturating_sub(b));
    for id in ran
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        writeln!(out, "ran {id}")?;
    }
    writeln!(
        out,
        "stats {statements} {} {} {} {} {}",
        cpu.as_micros(),
        busy.load(Ordering::Relaxed),
        polls.load(Ordering::Relaxed),
        found.load(Ordering::Relaxed),
        elapsed.as_micros()
    )?;
    out.flush()?;
    Ok(())
}
