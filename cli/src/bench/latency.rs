//! `docket bench latency`: how long a job waits from its commit to its handler's start when it
//! is enqueued by one process and run by another (the usual web-request-enqueues,
//! worker-runs deployment), with every setting at its default.
//!
//! The run, per backend:
//! 1. a fresh table; a **quiet window** (`--quiet-seconds`) with no worker, reading the CPU
//!    time of the database server's processes on this machine (`postgres`, `mariadbd`,
//!    `mysqld` in `/proc`): the baseline;
//! 2. a worker process (this binary, `docket bench latency-worker`, a [`Scheduler`] with
//!    [`SchedulerConfig::default`]) and a second quiet window: the worker's statements
//!    (counted by a [`Recording`] connector), its own CPU and the server's CPU above the
//!    baseline are the idle cost of the wake-up mechanism (PostgreSQL's `LISTEN`, elsewhere the short poll);
//! 3. **idle**: `--idle-jobs` jobs, one per transaction, `--spacing-ms` apart;
//! 4. **load**: `--load-rate` jobs/s, one per transaction, for `--load-seconds`.
//!
//! Latency is from the producer's call to `schedule` (the commit is its first round trip) to
//! the handler's start in the worker, both read from the wall clock of this machine.
//!
//! With `--peers` on PostgreSQL, graphile-worker (npm, installed into `~/.cache/docket-peers`
//! at the first run) does the same in the same run: its worker is a Node process with
//! concurrency 10 (docket's 10 threads) and its defaults otherwise (`LISTEN`/`NOTIFY`, a 2 s
//! poll); the producer calls `graphile_worker.add_job` from this process.

use super::child::{worker_command, Worker, WorkerTarget};
use super::database_url;
use crate::args::parse_table;
use crate::bench::load::Recording;
use crate::error::CliError;
use chrono::Utc;
use docket_core::backend::SqlStore;
use docket_core::store::sql::SqlConnector;
use docket_core::{
    ExecutionStore, Scheduler, SchedulerClient, SchedulerConfig, StoreConfig, StoreError,
    StoreInfo, TableName, Task, TaskDescriptor,
};
use std::collections::HashMap;
use std::io::Write;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The job of every run.
const JOB: TaskDescriptor = TaskDescriptor::new("bench-latency");

/// The graphile-worker release the peer run installs.
const GRAPHILE_WORKER: &str = "graphile-worker@0.16.6";

/// How long a worker may go without starting a job before the run is declared stuck.
const STALL: Duration = Duration::from_secs(60);

/// Arguments of `docket bench latency`.
#[derive(Debug, clap::Args)]
pub struct LatencyArgs {
    /// postgres, mysql or sqlite.
    #[arg(long, value_name = "BACKEND")]
    backend: String,
    /// Database URL (its database is created when missing); default: DOCKET_POSTGRES_URL /
    /// DOCKET_MYSQL_URL, or a temporary SQLite file.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Jobs of the idle phase.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    idle_jobs: u64,
    /// Milliseconds between the idle phase's jobs (long enough for a short poll to back off
    /// to its longest wait).
    #[arg(long, default_value_t = 1000)]
    spacing_ms: u64,
    /// Jobs per second of the load phase (0: no load phase).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    load_rate: u64,
    /// Seconds of the load phase.
    #[arg(long, default_value_t = 10)]
    load_seconds: u64,
    /// Seconds of each quiet window (without and with an idle worker).
    #[arg(long, default_value_t = 10)]
    quiet_seconds: u64,
    /// Also run graphile-worker (PostgreSQL only; needs node and npm).
    #[arg(long)]
    peers: bool,
    /// The benchmark's table (dropped and created again, dropped at the end).
    #[arg(long, value_name = "TABLE", default_value = "docket_bench_lat", value_parser = parse_table)]
    table: TableName,
}

/// Arguments of `docket bench latency-worker` (started by `bench latency`).
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    target: WorkerTarget,
    /// Jobs to wait for.
    #[arg(long)]
    jobs: u64,
}

/// Creates the database a URL names when missing.
type EnsureDatabase = fn(&str) -> Result<bool, StoreError>;

/// The jobs of each phase: id, when its enqueue call began (microseconds since the epoch),
/// and how long the call took (its commit included).
type Phases = Vec<(&'static str, Vec<(String, i64, Duration)>)>;

/// Opens a store.
type Connect<C> = fn(&str, StoreConfig) -> Result<SqlStore<C>, StoreError>;

/// What the benchmark needs from one backend crate.
struct Ops<C: SqlConnector> {
    connect: Connect<C>,
    ensure_database: Option<EnsureDatabase>,
    drop: fn(&SqlStore<C>) -> Result<(), StoreError>,
}

macro_rules! with_ops {
    ($backend:expr, $f:ident($($arg:expr),*)) => {
        match $backend {
            #[cfg(feature = "postgres")]
            "postgres" => $f($($arg,)* Ops {
                connect: docket_postgres::connect,
                ensure_database: Some(crate::bench::load::postgres::ensure_database),
                drop: crate::bench::load::diesel::drop_scenario,
            }),
            #[cfg(feature = "mysql")]
            "mysql" => $f($($arg,)* Ops {
                connect: docket_mysql::connect,
                ensure_database: Some(crate::bench::load::mysql::ensure_database),
                drop: crate::bench::load::diesel::drop_scenario,
            }),
            "sqlite" => $f($($arg,)* Ops {
                connect: docket_sqlite::connect,
                ensure_database: None,
                drop: crate::bench::load::diesel::drop_scenario,
            }),
            other => Err(CliError::Bench(format!(
                "bench latency runs on postgres, mysql or sqlite, not {other}"
            ))),
        }
    };
}

/// Runs `docket bench latency`.
pub fn run(args: &LatencyArgs) -> Result<(), CliError> {
    let backend = crate::backends::by_name(&args.backend)?;
    let (url, _tmp) = database_url(backend, args.database_url.as_deref())?;
    if args.peers && backend.name() != "postgres" {
        return Err(CliError::Bench(
            "--peers runs graphile-worker, which needs PostgreSQL".into(),
        ));
    }
    println!(
        "docket bench latency: {} ({} idle jobs {} ms apart; {} jobs/s for {} s; quiet windows of {} s), {}",
        backend.name(),
        args.idle_jobs,
        args.spacing_ms,
        args.load_rate,
        args.load_seconds,
        args.quiet_seconds,
        Utc::now().format("%Y-%m-%d %H:%M UTC"),
    );
    let mut rows = with_ops!(backend.name(), run_docket(args, &url))?;
    if args.peers {
        let (lines, quiet) = graphile::run(args, &url)?;
        rows.0.extend(lines);
        rows.1.extend(quiet);
    }
    print_table(&rows);
    Ok(())
}

/// One line of the result table.
struct Line {
    system: String,
    phase: &'static str,
    latencies: Vec<Duration>,
    /// How long each enqueue call took (the producer's side, commit included).
    calls: Vec<Duration>,
}

/// The idle cost line.
struct Quiet {
    system: String,
    statements_per_s: Option<f64>,
    server_cpu: Option<f64>,
    /// The idle worker process's own CPU.
    worker_cpu: Option<f64>,
}

type Rows = (Vec<Line>, Vec<Quiet>);

fn print_table(rows: &Rows) {
    println!();
    println!(
        "{:<22} {:<6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>14}",
        "system", "phase", "jobs", "p50 ms", "p95 ms", "p99 ms", "max ms", "enqueue p99"
    );
    for line in &rows.0 {
        let mut l = line.latencies.clone();
        l.sort();
        let mut calls = line.calls.clone();
        calls.sort();
        let ms = |l: &[Duration], q: f64| {
            percentile(l, q).map_or("-".to_owned(), |d| format!("{:.1}", d.as_secs_f64() * 1e3))
        };
        println!(
            "{:<22} {:<6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>14}",
            line.system,
            line.phase,
            l.len(),
            ms(&l, 0.50),
            ms(&l, 0.95),
            ms(&l, 0.99),
            ms(&l, 1.0),
            ms(&calls, 0.99)
        );
    }
    println!();
    println!(
        "{:<22} {:>16} {:>22} {:>12}",
        "idle worker", "statements/s", "server CPU above base", "worker CPU"
    );
    let percent = |c: Option<f64>| c.map_or("-".to_owned(), |c| format!("{:.2}%", c * 100.0));
    for q in &rows.1 {
        println!(
            "{:<22} {:>16} {:>22} {:>12}",
            q.system,
            q.statements_per_s
                .map_or("-".to_owned(), |s| format!("{s:.2}")),
            percent(q.server_cpu),
            percent(q.worker_cpu),
        );
    }
}

/// The nearest-rank percentile `q` of sorted `l`.
fn percentile(l: &[Duration], q: f64) -> Option<Duration> {
    if l.is_empty() {
        return None;
    }
    let rank = ((q * l.len() as f64).ceil() as usize).clamp(1, l.len());
    Some(l[rank - 1])
}

/// Microseconds since the epoch, now.
fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

/// The names of `backend`'s server processes (none for SQLite, which has no server).
pub(super) fn server_processes(backend: &str) -> &'static [&'static str] {
    match backend {
        "postgres" => &["postgres"],
        "mysql" => &["mariadbd", "mysqld"],
        _ => &[],
    }
}

/// CPU time of the processes called `names` on this machine (the database server's), or
/// `None` when there are none to read.
pub(super) fn server_cpu(names: &[&str]) -> Option<Duration> {
    let mut ticks = 0u64;
    let mut found = false;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, c)| c);
        if !names.contains(&comm) {
            continue;
        }
        let mut fields = rest.split_whitespace().skip(11);
        let (Some(u), Some(s)) = (fields.next(), fields.next()) else {
            continue;
        };
        ticks += u.parse::<u64>().unwrap_or(0) + s.parse::<u64>().unwrap_or(0);
        found = true;
    }
    found.then(|| Duration::from_millis(ticks * 10))
}

/// CPU time of process `pid` (user + system, all its threads).
fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU used over `window` by the processes called `names` and by process `worker`, each as a
/// fraction of one core.
fn quiet_window(
    names: &[&str],
    worker: Option<u32>,
    window: Duration,
) -> (Option<f64>, Option<f64>) {
    let cpu = || (server_cpu(names), worker.and_then(process_cpu));
    let before = cpu();
    let started = Instant::now();
    std::thread::sleep(window);
    let after = cpu();
    let elapsed = started.elapsed().as_secs_f64();
    let share = |a: Option<Duration>, b: Option<Duration>| {
        Some(a?.saturating_sub(b?).as_secs_f64() / elapsed)
    };
    (share(after.0, before.0), share(after.1, before.1))
}

/// Tells `worker` the quiet window ended (docket's worker answers with its count).
fn end_quiet(worker: &mut Worker) -> Result<(), CliError> {
    worker.say("quiet-end")
}

/// Reads every `start <id> <micros>` line until `worker` ends.
fn starts(worker: Worker) -> Result<HashMap<String, i64>, CliError> {
    let mut starts = HashMap::new();
    worker.finish(|line| {
        let mut parts = line.split_whitespace();
        if parts.next() != Some("start") {
            return;
        }
        if let (Some(id), Some(at)) = (parts.next(), parts.next().and_then(|a| a.parse().ok())) {
            starts.insert(id.to_owned(), at);
        }
    })?;
    Ok(starts)
}

/// The producer's side of the phases: `enqueue(id)` commits one job; returns when each was
/// enqueued (microseconds), by phase.
fn produce(
    args: &LatencyArgs,
    enqueue: &mut dyn FnMut(&str) -> Result<(), CliError>,
) -> Result<Phases, CliError> {
    let mut idle = Vec::new();
    for i in 0..args.idle_jobs {
        let id = format!("idle-{i}");
        let (at, call) = (now_micros(), Instant::now());
        enqueue(&id)?;
        idle.push((id, at, call.elapsed()));
        std::thread::sleep(Duration::from_millis(args.spacing_ms));
    }
    let mut load = Vec::new();
    let total = args.load_rate * args.load_seconds;
    let started = Instant::now();
    for k in 0..total {
        let due = started + Duration::from_secs_f64(k as f64 / args.load_rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let id = format!("load-{k}");
        let (at, call) = (now_micros(), Instant::now());
        enqueue(&id)?;
        load.push((id, at, call.elapsed()));
    }
    Ok(vec![("idle", idle), ("load", load)])
}

fn lines(
    system: &str,
    phases: Phases,
    starts: &HashMap<String, i64>,
) -> Result<Vec<Line>, CliError> {
    let mut out = Vec::new();
    for (phase, jobs) in phases {
        if jobs.is_empty() {
            continue;
        }
        let mut latencies = Vec::with_capacity(jobs.len());
        let calls = jobs.iter().map(|j| j.2).collect();
        for (id, at, _) in &jobs {
            let started = starts
                .get(id)
                .ok_or_else(|| CliError::Bench(format!("{system}: job {id} never started")))?;
            latencies.push(Duration::from_micros(
                started.saturating_sub(*at).max(0) as u64
            ));
        }
        out.push(Line {
            system: system.to_owned(),
            phase,
            latencies,
            calls,
        });
    }
    Ok(out)
}

fn total_jobs(args: &LatencyArgs) -> u64 {
    args.idle_jobs + args.load_rate * args.load_seconds
}

fn run_docket<C: SqlConnector>(
    args: &LatencyArgs,
    url: &str,
    ops: Ops<C>,
) -> Result<Rows, CliError> {
    if let Some(ensure) = ops.ensure_database {
        ensure(url)?;
    }
    let config = StoreConfig {
        table: args.table.clone(),
        ..StoreConfig::default()
    };
    let store = Arc::new((ops.connect)(url, config)?);
    // Migrated first so that the migration history exists, then afresh.
    store.migrate(None)?;
    (ops.drop)(&store)?;
    store.migrate(None)?;
    let window = Duration::from_secs(args.quiet_seconds);
    let names = server_processes(&args.backend);
    let (base, _) = quiet_window(names, None, window);
    let jobs = total_jobs(args).to_string();
    let more = ["--jobs", jobs.as_str()];
    let mut command = worker_command("latency-worker", &args.backend, url, &args.table, &more)?;
    let mut worker = Worker::spawn(&mut command)?;
    let (with, worker_cpu) = quiet_window(names, Some(worker.id()), window);
    end_quiet(&mut worker)?;
    let quiet = worker.until("quiet")?;
    let statements_per_s = quiet
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<f64>().ok());
    let client = SchedulerClient::new(Arc::clone(&store) as Arc<dyn ExecutionStore>)?;
    let phases = produce(args, &mut |id| {
        client.schedule(JOB.instance(id))?;
        Ok(())
    })?;
    let starts = starts(worker)?;
    (ops.drop)(&store)?;
    let system = format!("docket ({})", args.backend);
    Ok((
        lines(&system, phases, &starts)?,
        vec![Quiet {
            system,
            statements_per_s,
            server_cpu: with.zip(base).map(|(w, b)| w - b),
            worker_cpu,
        }],
    ))
}

/// Runs `docket bench latency-worker`: a scheduler with the default configuration that prints
/// `start <instance> <micros>` for each job, and after the quiet window (a line on stdin) the
/// statements per second it sent meanwhile.
pub fn worker(args: &WorkerArgs) -> Result<(), CliError> {
    with_ops!(args.target.backend.as_str(), run_worker(args))
}

fn run_worker<C: SqlConnector + Clone>(args: &WorkerArgs, ops: Ops<C>) -> Result<(), CliError> {
    let config = StoreConfig {
        table: args.target.table.clone(),
        ..StoreConfig::default()
    };
    let real = (ops.connect)(&args.target.database_url, config.clone())?;
    let store = Arc::new(SqlStore::new(
        Recording::new(real.connector().clone()),
        config,
    ));
    let starts: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let seen = Arc::new(AtomicU64::new(0));
    let (record, count) = (Arc::clone(&starts), Arc::clone(&seen));
    let task = Task::one_time(JOB, move |e, _| {
        let at = now_micros();
        record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((e.task_instance.clone(), at));
        count.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let scheduler = Scheduler::builder(Arc::clone(&store) as Arc<dyn ExecutionStore>)
        .task(task)
        .config(SchedulerConfig {
            scheduler_name: "latency-worker".into(),
            ..SchedulerConfig::default()
        })
        .build()?;
    scheduler.start()?;
    // Past the start-up statements (the first poll, recurring tasks): the quiet window
    // counts only what an idle worker sends.
    std::thread::sleep(Duration::from_millis(500));
    store.connector().take();
    let quiet_from = Instant::now();
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let statements = store.connector().take().len();
    writeln!(
        out,
        "quiet {:.3}",
        statements as f64 / quiet_from.elapsed().as_secs_f64()
    )?;
    out.flush()?;
    let mut last = (0, Instant::now());
    while seen.load(Ordering::SeqCst) < args.jobs {
        std::thread::sleep(Duration::from_millis(20));
        // The recorded statements are not needed any more: keep memory flat.
        store.connector().take();
        let n = seen.load(Ordering::SeqCst);
        if n != last.0 {
            last = (n, Instant::now());
        } else if last.1.elapsed() > STALL {
            break;
        }
    }
    scheduler.stop();
    for (id, at) in starts.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        writeln!(out, "start {id} {at}")?;
    }
    out.flush()?;
    Ok(())
}

/// graphile-worker, the peer on PostgreSQL.
#[cfg(feature = "postgres")]
mod graphile {
    use super::*;
    use diesel::sql_types::Text;
    use diesel::{Connection, PgConnection, RunQueryDsl};

    /// The worker: concurrency 10, defaults otherwise; prints `start <id> <micros>`.
    const WORKER_JS: &str = r#"
const { run } = require("graphile-worker");
const want = Number(process.env.DOCKET_JOBS);
const micros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
let seen = 0;
(async () => {
  const runner = await run({
    connectionString: process.env.DOCKET_DATABASE_URL,
    concurrency: 10,
    noHandleSignals: true,
    logger: new (require("graphile-worker").Logger)(() => () => {}),
    taskList: {
      docket_latency: async (payload) => {
        process.stdout.write(`start ${payload.id} ${micros()}\n`);
        seen += 1;
        if (seen >= want) setImmediate(() => runner.stop());
      },
    },
  });
  process.stdout.write("ready\n");
  await runner.promise;
})().catch((e) => { console.error(e); process.exit(1); });
"#;

    /// The cache directory holding graphile-worker; installed with npm when missing.
    fn install() -> Result<std::path::PathBuf, CliError> {
        let home = std::env::var_os("HOME")
            .ok_or_else(|| CliError::Bench("HOME is not set (graphile-worker's cache)".into()))?;
        let dir = std::path::Path::new(&home).join(".cache/docket-peers");
        std::fs::create_dir_all(&dir)?;
        if !dir.join("node_modules/graphile-worker").exists() {
            println!("installing {GRAPHILE_WORKER} into {}", dir.display());
            let status = Command::new("npm")
                .args([
                    "install",
                    "--no-save",
                    "--no-package-lock",
                    "--no-audit",
                    "--no-fund",
                    GRAPHILE_WORKER,
                ])
                .current_dir(&dir)
                .status()
                .map_err(|e| CliError::Bench(format!("cannot run npm: {e}")))?;
            if !status.success() {
                return Err(CliError::Bench(format!(
                    "npm install {GRAPHILE_WORKER}: {status}"
                )));
            }
        }
        std::fs::write(dir.join("docket-latency-worker.js"), WORKER_JS)?;
        Ok(dir)
    }

    pub(super) fn run(args: &LatencyArgs, url: &str) -> Result<Rows, CliError> {
        let dir = install()?;
        let mut conn = PgConnection::establish(url)
            .map_err(|e| CliError::Bench(format!("graphile-worker's producer: {e}")))?;
        let window = Duration::from_secs(args.quiet_seconds);
        let names = server_processes("postgres");
        let (base, _) = quiet_window(names, None, window);
        let mut command = Command::new("node");
        command
            .arg("docket-latency-worker.js")
            .current_dir(&dir)
            .env("DOCKET_DATABASE_URL", url)
            .env("DOCKET_JOBS", total_jobs(args).to_string());
        let mut worker = Worker::spawn(&mut command)?;
        let (with, worker_cpu) = quiet_window(names, Some(worker.id()), window);
        end_quiet(&mut worker)?;
        let phases = produce(args, &mut |id| {
            diesel::sql_query(
                "SELECT graphile_worker.add_job($1, json_build_object('id', $2::text))",
            )
            .bind::<Text, _>("docket_latency")
            .bind::<Text, _>(id)
            .execute(&mut conn)
            .map_err(|e| CliError::Bench(format!("graphile_worker.add_job: {e}")))?;
            Ok(())
        })?;
        let starts = starts(worker)?;
        let system = "graphile-worker 0.16.6".to_owned();
        Ok((
            lines(&system, phases, &starts)?,
            vec![Quiet {
                system,
                statements_per_s: None,
                server_cpu: with.zip(base).map(|(w, b)| w - b),
                worker_cpu,
            }],
        ))
    }
}

#[cfg(not(feature = "postgres"))]
mod graphile {
    use super::*;

    pub(super) fn run(_: &LatencyArgs, _: &str) -> Result<Rows, CliError> {
        Err(CliError::Bench("--peers needs the postgres feature".into()))
    }
}
