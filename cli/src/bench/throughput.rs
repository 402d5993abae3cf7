//! `docket bench throughput`: the engine's own cost (SPEC section 11), against the ceiling of
//! the same driver, side by side in one run.
//!
//! Workload: a fresh table (dropped and migrated again before each run, never analyzed),
//! `--jobs` no-op one-time tasks due now, enqueued with the bulk API
//! ([`SchedulerClient::schedule_batch`]), then one process with `--workers` worker slots;
//! jobs/s = jobs / (workers start -> the table holds none of them). Runs, in this order:
//! 1. **raw claim1**: `--workers` threads, each looping one job per transaction over the
//!    store's own connector (the same driver and pool): `DELETE ... WHERE key = (SELECT ...
//!    ORDER BY execution_time LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING` where the backend
//!    claims in one statement, else `SELECT ... FOR UPDATE SKIP LOCKED` then `DELETE` by key in
//!    one transaction (MySQL/MariaDB: no `RETURNING`, no subquery on the deleted table);
//! 2. **raw claim100** (`--raw-batch`): the same loop claiming up to 100 jobs per transaction
//!    (`key IN (SELECT ... LIMIT 100 ...)`; MySQL/MariaDB delete the selected keys), the
//!    ceiling of a batching claimer on this driver (at-most-once: a job claimed by a thread
//!    that dies is gone); then **raw claim100 + complete**: the claim marks the rows picked
//!    and a second transaction deletes them, the two writes per job an at-least-once
//!    scheduler makes. docket's default run is reported against both (`ratio_batched` in the
//!    summary);
//! 3. raw claim1 again on a store whose statement cache is off (each statement prepared and
//!    closed again every time, as before issue 12), the ratio of the two printed after it;
//! 4. **docket** with its default [`SchedulerConfig`];
//! 5. the same with the statement cache off, and the ratio;
//! 6. each polling strategy with db-scheduler's limit fractions.
//!
//! With `--processes 1,2,4`, runs 3 to 6 give way to docket's default configuration in that
//! many worker processes at once (module `processes`).
//!
//! Each docket run goes through a [`Recording`] connector, which counts every statement the
//! store sends (transactions' `BEGIN`/`COMMIT` are not statements of the store and are not
//! counted). Client CPU is the process's user + system time (`/proc/self/stat`) over the run.
//! Every run checks that each job ran exactly once and that the table is empty at the end.
//! The last line is the summary (see [`summary`]).

use super::database_url;
use crate::args::{parse_table, store_config};
use crate::bench::latency::{server_cpu, server_processes};
use crate::bench::load::Recording;
use crate::error::CliError;
use crate::progress;
use chrono::{SubsecRound, Utc};
use docket_core::backend::SqlStore;
use docket_core::dialect::{LimitAt, LockAndFetch, LockAt, Rendered, SqlWriter};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::store::Row;
use docket_core::{
    ExecutionStore, PollingStrategy, Scheduler, SchedulerClient, SchedulerConfig, StoreConfig,
    StoreError, StoreInfo, TableName, Task, TaskDescriptor,
};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod limits;
mod processes;
pub use limits::{run as run_limits, LimitsArgs};
pub use processes::{worker, WorkerArgs};

/// The no-op task of every job.
const JOB: TaskDescriptor = TaskDescriptor::new("bench-throughput");

/// How long a run may go without a job finishing before it is declared stuck.
const STALL: Duration = Duration::from_secs(60);

/// Arguments of `docket bench throughput`.
#[derive(Debug, clap::Args)]
pub struct ThroughputArgs {
    /// postgres, mysql or sqlite.
    #[arg(long, value_name = "BACKEND")]
    backend: String,
    /// Database URL (its database is created when missing); default: DOCKET_POSTGRES_URL /
    /// DOCKET_MYSQL_URL, or a temporary SQLite file.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Jobs per run.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    jobs: u64,
    /// Worker slots (scheduler threads; raw claim1 threads).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    workers: u32,
    /// The benchmark's table (dropped and created again before each run, dropped at the end).
    #[arg(long, value_name = "TABLE", default_value = "docket_bench_tp", value_parser = parse_table)]
    table: TableName,
    /// Instead of the strategy runs: raw claim1, then docket's default configuration in this
    /// many worker processes at once, e.g. `1,2,4` (each process `--workers` threads).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=64))]
    processes: Vec<u32>,
    /// Jobs per transaction of the batched raw claim loop run after raw claim1 (the ceiling a
    /// batching claimer reaches on this driver).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(2..=10_000))]
    raw_batch: u32,
    /// docket's runs with the wake-up listener off (`SchedulerConfig::wake_listener`; polling
    /// only), to see what listening costs under load.
    #[arg(long)]
    no_wake_listener: bool,
}

/// Creates the database a URL names when missing.
type EnsureDatabase = fn(&str) -> Result<bool, StoreError>;

/// Opens a store.
type Connect<C> = fn(&str, StoreConfig) -> Result<SqlStore<C>, StoreError>;

/// What the benchmark needs from one backend crate.
struct Ops<C: SqlConnector> {
    connect: Connect<C>,
    /// Like `connect`, with the backend's `statement_cache` option off.
    connect_uncached: Connect<C>,
    ensure_database: Option<EnsureDatabase>,
    drop: fn(&SqlStore<C>) -> Result<(), StoreError>,
    /// Gathers the planner's statistics of the table (`docket bench limits --analyze`).
    analyze: fn(&SqlStore<C>) -> Result<(), StoreError>,
}

impl<C: SqlConnector> Ops<C> {
    /// Creates the database `url` names when missing, then opens a store on `table` there.
    fn open(&self, url: &str, table: &TableName) -> Result<Arc<SqlStore<C>>, CliError> {
        if let Some(ensure) = self.ensure_database {
            ensure(url)?;
        }
        Ok(Arc::new((self.connect)(url, store_config(table, false))?))
    }
}

/// Runs `docket bench throughput`.
pub fn run(args: &ThroughputArgs) -> Result<(), CliError> {
    let backend = crate::backends::by_name(&args.backend)?;
    let (url, _tmp) = database_url(backend, args.database_url.as_deref())?;
    match backend.name() {
        #[cfg(feature = "postgres")]
        "postgres" => run_all(args, &url, postgres_ops()),
        #[cfg(feature = "mysql")]
        "mysql" => run_all(args, &url, mysql_ops()),
        "sqlite" => run_all(args, &url, sqlite_ops()),
        other => Err(CliError::Bench(format!(
            "bench throughput runs on postgres, mysql or sqlite, not {other}"
        ))),
    }
}

/// The [`Ops`] of PostgreSQL.
#[cfg(feature = "postgres")]
fn postgres_ops() -> Ops<docket_postgres::PgConnector> {
    Ops {
        connect: docket_postgres::connect,
        connect_uncached: |url, config| {
            let options = docket_postgres::PgOptions {
                statement_cache: false,
                ..Default::default()
            };
            docket_postgres::connect_with(url, config, &options)
        },
        ensure_database: Some(crate::bench::load::postgres::ensure_database),
        drop: crate::bench::load::diesel::drop_scenario,
        analyze: |store| crate::bench::load::diesel::analyze_table(store, "ANALYZE "),
    }
}

/// The [`Ops`] of MySQL/MariaDB.
#[cfg(feature = "mysql")]
fn mysql_ops() -> Ops<docket_mysql::MysqlConnector> {
    Ops {
        connect: docket_mysql::connect,
        connect_uncached: |url, config| {
            let options = docket_mysql::MysqlOptions {
                statement_cache: false,
                ..Default::default()
            };
            docket_mysql::connect_with(url, config, &options)
        },
        ensure_database: Some(crate::bench::load::mysql::ensure_database),
        drop: crate::bench::load::diesel::drop_scenario,
        analyze: |store| crate::bench::load::diesel::analyze_table(store, "ANALYZE TABLE "),
    }
}

/// The [`Ops`] of SQLite.
fn sqlite_ops() -> Ops<docket_sqlite::SqliteConnector> {
    Ops {
        connect: docket_sqlite::connect,
        connect_uncached: |url, config| {
            let options = docket_sqlite::SqliteOptions {
                statement_cache: false,
                ..Default::default()
            };
            docket_sqlite::connect_with(url, config, &options)
        },
        ensure_database: None,
        drop: crate::bench::load::diesel::drop_scenario,
        analyze: |store| crate::bench::load::diesel::analyze_table(store, "ANALYZE "),
    }
}

/// The figures of one run.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    jobs_per_s: f64,
    enqueue_rows_per_s: f64,
    statements_per_job: f64,
    cpu_us_per_job: f64,
    /// The database server's CPU per job (its processes on this machine).
    server_us_per_job: Option<f64>,
}

/// The process's user + system CPU time so far (all threads, ended ones included), from
/// `/proc/self/stat` (fields 14 and 15, in clock ticks of 10 ms on Linux). `None` where that
/// file does not exist.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU readings at the start of a run: this process's and the database server's (its
/// processes on this machine; none for SQLite).
struct CpuStart {
    client: Option<Duration>,
    server: Option<Duration>,
    names: &'static [&'static str],
}

impl CpuStart {
    fn now(backend: &str) -> Self {
        let names = server_processes(backend);
        CpuStart {
            client: cpu_time(),
            server: server_cpu(names),
            names,
        }
    }

    /// Client and server CPU microseconds per job since the start (NaN / `None` where a
    /// reading is missing).
    fn per_job(&self, jobs: u64) -> (f64, Option<f64>) {
        let per_job = |d: Duration| d.as_secs_f64() * 1e6 / jobs as f64;
        let client = match (self.client, cpu_time()) {
            (Some(b), Some(a)) => per_job(a.saturating_sub(b)),
            _ => f64::NAN,
        };
        let server = self
            .server
            .zip(server_cpu(self.names))
            .map(|(b, a)| per_job(a.saturating_sub(b)));
        (client, server)
    }
}

/// Drops and re-creates the table (every migration, never analyzed); returns a client on it.
fn empty_table<C: SqlConnector>(
    ops: &Ops<C>,
    store: &Arc<SqlStore<C>>,
) -> Result<SchedulerClient, CliError> {
    // Migrating first creates the migration history that dropping cleans up.
    store.migrate(None)?;
    (ops.drop)(store)?;
    store.migrate(None)?;
    Ok(SchedulerClient::new(
        Arc::clone(store) as Arc<dyn ExecutionStore>
    )?)
}

/// Drops and re-creates the table (fresh, never analyzed), then enqueues the jobs in one
/// `schedule_batch`; returns rows/s.
fn fresh_table<C: SqlConnector>(
    ops: &Ops<C>,
    store: &Arc<SqlStore<C>>,
    jobs: u64,
) -> Result<f64, CliError> {
    let client = empty_table(ops, store)?;
    let instances: Vec<_> = (0..jobs).map(|i| JOB.instance(i.to_string())).collect();
    let started = Instant::now();
    let inserted = client.schedule_batch(instances)?;
    let elapsed = started.elapsed().as_secs_f64();
    if inserted != jobs {
        return Err(CliError::Bench(format!(
            "enqueued {inserted} of {jobs} jobs"
        )));
    }
    Ok(jobs as f64 / elapsed)
}

/// Rows left in the table.
fn rows_left<C: SqlConnector>(store: &SqlStore<C>) -> Result<i64, CliError> {
    Ok(store.execution_summary()?.iter().map(|s| s.total).sum())
}

/// Fails unless every job ran exactly once and the table is empty.
fn check_exactly_once<C: SqlConnector>(
    store: &SqlStore<C>,
    runs: &[AtomicU32],
    label: &str,
) -> Result<(), CliError> {
    let left = rows_left(store)?;
    let never = runs
        .iter()
        .filter(|r| r.load(Ordering::SeqCst) == 0)
        .count();
    let twice = runs.iter().filter(|r| r.load(Ordering::SeqCst) > 1).count();
    if left != 0 || never != 0 || twice != 0 {
        return Err(CliError::Bench(format!(
            "{label}: {never} jobs never ran, {twice} ran more than once, {left} rows left"
        )));
    }
    Ok(())
}

/// A store on the same connector and configuration as `store` that records every statement
/// it sends (see [`Recording`]).
fn recording<C: SqlConnector + Clone>(store: &SqlStore<C>) -> Arc<SqlStore<Recording<C>>> {
    Arc::new(SqlStore::new(
        Recording::new(store.connector().clone()),
        store.config().clone(),
    ))
}

/// The measured jobs of one scheduler run: how often each ran (by its job number) and how many
/// ran in all, as counted by the task [`Measured::task`] makes.
struct Measured {
    runs: Arc<Vec<AtomicU32>>,
    done: Arc<AtomicU64>,
    jobs: u64,
}

impl Measured {
    /// Counts for `jobs` jobs, none run yet.
    fn new(jobs: u64) -> Self {
        Self {
            runs: Arc::new((0..jobs).map(|_| AtomicU32::new(0)).collect()),
            done: Arc::new(AtomicU64::new(0)),
            jobs,
        }
    }

    /// The no-op task of every job ([`JOB`]), counting each run.
    fn task(&self) -> Task {
        let (r, d) = (Arc::clone(&self.runs), Arc::clone(&self.done));
        Task::one_time(JOB, move |e, _| {
            r[job_index(&e.task_instance, r.len())?].fetch_add(1, Ordering::SeqCst);
            d.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    }

    /// Waits until every job ran and `left` finds none of their rows (checking every
    /// millisecond then, every 5 before). When no job finished for [`STALL`] it stops
    /// `scheduler` and fails, the message starting with `context`.
    fn wait(
        &self,
        scheduler: &Scheduler,
        left: impl Fn() -> Result<i64, CliError>,
        context: &str,
    ) -> Result<(), CliError> {
        let mut last = (0, Instant::now());
        loop {
            let n = self.done.load(Ordering::SeqCst);
            if n >= self.jobs && left()? == 0 {
                return Ok(());
            }
            if n != last.0 {
                last = (n, Instant::now());
            } else if last.1.elapsed() > STALL {
                scheduler.stop();
                return Err(CliError::Bench(format!(
                    "{context}stuck: {n} of {} jobs ran, nothing more for {} s",
                    self.jobs,
                    STALL.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(if n >= self.jobs { 1 } else { 5 }));
        }
    }
}

/// The job number of an instance id written by [`fresh_table`].
fn job_index(instance: &str, jobs: usize) -> Result<usize, StoreError> {
    instance
        .parse::<usize>()
        .ok()
        .filter(|i| *i < jobs)
        .ok_or_else(|| StoreError::database(format!("unexpected instance {instance:?}")))
}

/// The statements of one raw claim: how the backend claims `batch` jobs in one transaction.
struct RawClaim {
    shape: ClaimShape,
    batch: u32,
    /// At-least-once, as a scheduler must: the claim marks the rows picked, and a second
    /// transaction deletes them (the job's completion); otherwise the claim deletes them.
    completes: bool,
}

enum ClaimShape {
    /// One autocommit `DELETE` (or, completing, `UPDATE ... SET picked`) `... WHERE key = (SELECT
    /// ... LIMIT 1 <skip locked>) RETURNING` (`key IN (...)` for more than one).
    Returning(Rendered),
    /// `SELECT ... LIMIT n <skip locked>`, then `DELETE` (or `UPDATE ... SET picked`) by keys,
    /// in one transaction.
    SelectThen(Rendered),
}

impl RawClaim {
    fn new<C: SqlConnector>(
        store: &SqlStore<C>,
        now: chrono::DateTime<Utc>,
        batch: u32,
        completes: bool,
    ) -> Self {
        let dialect = store.connector().dialect();
        let table = &store.config().table;
        let select = |w: &mut SqlWriter<'_>| {
            w.push("SELECT task_name, task_instance FROM ")
                .table(table)
                .push(" WHERE picked = ")
                .bind(false)
                .push(" AND execution_time <= ")
                .bind(now)
                .push(" ORDER BY execution_time");
            dialect.limit(w, batch.into(), LimitAt::Tail);
            dialect.skip_locked(w, LockAt::End);
        };
        let mut w = SqlWriter::new(dialect);
        let shape = match dialect.capabilities().lock_and_fetch {
            Some(LockAndFetch::UpdateReturning) => {
                Self::change(&mut w, table, completes);
                let matches = if batch == 1 { " = (" } else { " IN (" };
                w.push(" WHERE (task_name, task_instance)").push(matches);
                select(&mut w);
                w.push(") RETURNING task_instance");
                ClaimShape::Returning(w.finish())
            }
            _ => {
                select(&mut w);
                ClaimShape::SelectThen(w.finish())
            }
        };
        RawClaim {
            shape,
            batch,
            completes,
        }
    }

    /// `DELETE FROM table`, or `UPDATE table SET picked = true` when the claim only marks.
    fn change(w: &mut SqlWriter<'_>, table: &TableName, marks: bool) {
        if marks {
            w.push("UPDATE ")
                .table(table)
                .push(" SET picked = ")
                .bind(true);
        } else {
            w.push("DELETE FROM ").table(table);
        }
    }

    /// [`RawClaim::change`] of the claimed rows, by key.
    fn by_keys<C: SqlConnector>(store: &SqlStore<C>, claimed: &[String], marks: bool) -> Rendered {
        let mut w = SqlWriter::new(store.connector().dialect());
        Self::change(&mut w, &store.config().table, marks);
        w.push(" WHERE task_name = ")
            .bind(JOB.name())
            .push(" AND task_instance IN (");
        for (i, instance) in claimed.iter().enumerate() {
            if i > 0 {
                w.push(", ");
            }
            w.bind(instance.as_str());
        }
        w.push(")");
        w.finish()
    }

    /// Its name in the report: `raw claim1`, `raw claim100`, `raw claim100 + complete`.
    fn label(&self) -> String {
        let complete = if self.completes { " + complete" } else { "" };
        format!("raw claim{}{complete}", self.batch)
    }

    /// What it sends, for the report.
    fn describe(&self) -> String {
        let (change, complete) = match self.completes {
            true => ("UPDATE picked", "; DELETE by key; COMMIT"),
            false => ("DELETE", ""),
        };
        match &self.shape {
            ClaimShape::Returning(claim) => format!("{}{complete}", claim.sql),
            ClaimShape::SelectThen(select) => {
                format!("{}; {change} by key; COMMIT{complete}", select.sql)
            }
        }
    }

    /// Statements per job when every claim is full.
    fn statements_per_job(&self) -> f64 {
        let claim = match self.shape {
            ClaimShape::Returning(_) => 1.0,
            ClaimShape::SelectThen(_) => 2.0,
        };
        (claim + f64::from(u8::from(self.completes))) / f64::from(self.batch)
    }

    /// One claim in one transaction, then (completing) the deletion of what it claimed in
    /// another; the instances claimed (none: the table is empty).
    fn claim<C: SqlConnector>(&self, store: &SqlStore<C>) -> Result<Vec<String>, StoreError> {
        let instances = |rows: Vec<Row>| -> Result<Vec<String>, StoreError> {
            rows.into_iter()
                .map(|mut r| r.text("task_instance"))
                .collect()
        };
        let claimed = match &self.shape {
            ClaimShape::Returning(claim) => store
                .connector()
                .with_session(&mut |s: &mut dyn SqlSession| instances(s.query(claim)?))?,
            ClaimShape::SelectThen(select) => store.connector().in_transaction(&mut |s| {
                let claimed = instances(s.query(select)?)?;
                if !claimed.is_empty() {
                    s.execute(&Self::by_keys(store, &claimed, self.completes))?;
                }
                Ok(claimed)
            })?,
        };
        if self.completes && !claimed.is_empty() {
            let delete = Self::by_keys(store, &claimed, false);
            store
                .connector()
                .with_session(&mut |s: &mut dyn SqlSession| s.execute(&delete).map(|_| ()))?;
        }
        Ok(claimed)
    }
}

/// A raw claim loop: `workers` threads, `batch` jobs per transaction, until none is left.
fn raw_claims<C: SqlConnector>(
    ops: &Ops<C>,
    store: &Arc<SqlStore<C>>,
    args: &ThroughputArgs,
    batch: u32,
    completes: bool,
) -> Result<(Figures, String), CliError> {
    let enqueue = fresh_table(ops, store, args.jobs)?;
    let jobs = args.jobs as usize;
    let runs: Arc<Vec<AtomicU32>> = Arc::new((0..jobs).map(|_| AtomicU32::new(0)).collect());
    let now = Utc::now().trunc_subsecs(6);
    let claim = Arc::new(RawClaim::new(store, now, batch, completes));
    let label = claim.label();
    let cpu = CpuStart::now(&args.backend);
    let started = Instant::now();
    let threads: Vec<_> = (0..args.workers)
        .map(|_| {
            let (store, claim, runs) = (Arc::clone(store), Arc::clone(&claim), Arc::clone(&runs));
            std::thread::spawn(move || -> Result<(), StoreError> {
                loop {
                    // A claim the database ended to break a deadlock wrote nothing: claim again.
                    let claimed = match claim.claim(&store) {
                        Err(StoreError::Contention { .. }) => continue,
                        claimed => claimed?,
                    };
                    if claimed.is_empty() {
                        return Ok(());
                    }
                    for instance in claimed {
                        runs[job_index(&instance, runs.len())?].fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join()
            .map_err(|_| CliError::Bench(format!("a {label} thread panicked")))??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let (cpu_us_per_job, server_us_per_job) = cpu.per_job(args.jobs);
    check_exactly_once(store, &runs, &label)?;
    Ok((
        Figures {
            jobs_per_s: args.jobs as f64 / elapsed,
            enqueue_rows_per_s: enqueue,
            statements_per_job: claim.statements_per_job(),
            cpu_us_per_job,
            server_us_per_job,
        },
        claim.describe(),
    ))
}

/// One scheduler with `config` on a recording store, until the table is empty.
fn docket_run<C: SqlConnector + Clone>(
    ops: &Ops<C>,
    store: &Arc<SqlStore<C>>,
    args: &ThroughputArgs,
    config: SchedulerConfig,
) -> Result<Figures, CliError> {
    let enqueue = fresh_table(ops, store, args.jobs)?;
    let recording = recording(store);
    let measured = Measured::new(args.jobs);
    let scheduler = Scheduler::builder(Arc::clone(&recording) as Arc<dyn ExecutionStore>)
        .task(measured.task())
        .config(config)
        .build()?;
    recording.connector().take();
    let cpu = CpuStart::now(&args.backend);
    let started = Instant::now();
    scheduler.start()?;
    // Every job ran; then wait (checking every millisecond) until their rows are gone.
    measured.wait(&scheduler, || rows_left(store), "")?;
    let elapsed = started.elapsed().as_secs_f64();
    let (cpu_us_per_job, server_us_per_job) = cpu.per_job(args.jobs);
    let statements = recording.connector().take().len();
    scheduler.stop();
    check_exactly_once(store, &measured.runs, "docket")?;
    Ok(Figures {
        jobs_per_s: args.jobs as f64 / elapsed,
        enqueue_rows_per_s: enqueue,
        statements_per_job: statements as f64 / args.jobs as f64,
        cpu_us_per_job,
        server_us_per_job,
    })
}

fn run_all<C: SqlConnector + Clone>(
    args: &ThroughputArgs,
    url: &str,
    ops: Ops<C>,
) -> Result<(), CliError> {
    let store = ops.open(url, &args.table)?;
    let name = store.backend();
    say!(
        "docket bench throughput: backend={name} table={} jobs={} workers={} \
         (fresh table per run, never analyzed; enqueued with schedule_batch)",
        args.table,
        args.jobs,
        args.workers
    );
    let (raw, shape) =
        progress::while_running("raw claim1", || raw_claims(&ops, &store, args, 1, false))?;
    say!("raw claim1, one job per transaction: {shape}");
    say!("  {}", line(&raw, raw.jobs_per_s));
    let batch = args.raw_batch;
    let label = format!("raw claim{batch}");
    let (batched, shape) =
        progress::while_running(&label, || raw_claims(&ops, &store, args, batch, false))?;
    say!("{label}, up to {batch} jobs per transaction: {shape}");
    say!("  {}", line(&batched, raw.jobs_per_s));
    let label = format!("raw claim{batch} + complete");
    let (completing, shape) =
        progress::while_running(&label, || raw_claims(&ops, &store, args, batch, true))?;
    say!("{label}, marked picked, then deleted in a second transaction: {shape}");
    say!("  {}", line(&completing, raw.jobs_per_s));
    if !args.processes.is_empty() {
        return by_processes(&ops, &store, args, url, &raw);
    }
    // One statement per job: where keeping statements prepared shows most.
    let uncached = Arc::new((ops.connect_uncached)(
        url,
        store_config(&args.table, false),
    )?);
    let label = "raw claim1, statement cache off";
    let (raw_off, _) =
        progress::while_running(label, || raw_claims(&ops, &uncached, args, 1, false))?;
    say!("{label}:");
    say!("  {}", line(&raw_off, raw.jobs_per_s));
    say!("  {}", on_off(&raw, &raw_off));
    let base = SchedulerConfig {
        threads: args.workers as usize,
        scheduler_name: "bench-throughput".into(),
        wake_listener: !args.no_wake_listener,
        ..SchedulerConfig::default()
    };
    let mut default = None;
    for (label, cached, config) in [
        ("docket, default config", true, base.clone()),
        (
            "docket, default config, statement cache off",
            false,
            base.clone(),
        ),
        (
            "fetch-and-lock-on-execute, db-scheduler fractions 0.5 / 3.0",
            true,
            SchedulerConfig {
                polling: PollingStrategy::FetchAndLockOnExecute {
                    lower_limit_fraction: 0.5,
                    upper_limit_fraction: 3.0,
                },
                ..base.clone()
            },
        ),
        (
            "lock-and-fetch, db-scheduler fractions 0.5 / 1.0",
            true,
            SchedulerConfig {
                polling: PollingStrategy::LockAndFetch {
                    lower_limit_fraction: 0.5,
                    upper_limit_fraction: 1.0,
                },
                ..base.clone()
            },
        ),
    ] {
        let polling = format!("{:?}", config.polling);
        let on = if cached { &store } else { &uncached };
        let f = progress::while_running(label, || docket_run(&ops, on, args, config))?;
        say!("{label} ({polling}):");
        say!("  {}", line(&f, raw.jobs_per_s));
        match default {
            None => {
                say!(
                    "  {:.2} x raw claim{batch}, {:.2} x raw claim{batch} + complete",
                    f.jobs_per_s / batched.jobs_per_s,
                    f.jobs_per_s / completing.jobs_per_s
                );
                default = Some(f)
            }
            Some(d) if !cached => say!("  {}", on_off(&d, &f)),
            Some(_) => {}
        }
    }
    (ops.drop)(&store)?;
    say!(
        "{}",
        summary(
            name,
            args.jobs,
            &default.unwrap_or_default(),
            &raw,
            &batched
        )
    );
    Ok(())
}

/// A cached run against the same run with the statement cache off.
fn on_off(on: &Figures, off: &Figures) -> String {
    format!(
        "statement cache on / off: {:.2} x jobs/s, {:.2} x client CPU/job",
        on.jobs_per_s / off.jobs_per_s,
        on.cpu_us_per_job / off.cpu_us_per_job
    )
}

fn line(f: &Figures, raw: f64) -> String {
    let server = f
        .server_us_per_job
        .map(|us| format!("  {us:.1} us server CPU/job"))
        .unwrap_or_default();
    format!(
        "{:>8.0} jobs/s ({:.2} x raw claim1)  enqueue {:>8.0} rows/s  {:.3} statements/job  \
         {:.1} us client CPU/job{server}  every job ran exactly once, table empty",
        f.jobs_per_s,
        f.jobs_per_s / raw,
        f.enqueue_rows_per_s,
        f.statements_per_job,
        f.cpu_us_per_job
    )
}

/// The last line: docket's default run against raw claim1 (`ratio`) and the batched raw
/// claim loop (`ratio_batched`).
fn summary(backend: &str, jobs: u64, docket: &Figures, raw: &Figures, batched: &Figures) -> String {
    format!(
        "summary backend={backend} jobs={jobs} docket_jobs_per_s={:.0} raw_claim1_jobs_per_s={:.0} \
         ratio={:.2} raw_batched_jobs_per_s={:.0} ratio_batched={:.2} enqueue_rows_per_s={:.0} \
         statements_per_job={:.3}",
        docket.jobs_per_s,
        raw.jobs_per_s,
        docket.jobs_per_s / raw.jobs_per_s,
        batched.jobs_per_s,
        docket.jobs_per_s / batched.jobs_per_s,
        docket.enqueue_rows_per_s,
        docket.statements_per_job
    )
}

/// `--processes`: docket's default configuration in 1, 2, 4... processes, one table.
fn by_processes<C: SqlConnector>(
    ops: &Ops<C>,
    store: &Arc<SqlStore<C>>,
    args: &ThroughputArgs,
    url: &str,
    raw: &Figures,
) -> Result<(), CliError> {
    say!(
        "{:>9} {:>10} {:>8} {:>16} {:>14} {:>16} {:>14} {:>14}",
        "processes",
        "jobs/s",
        "x raw",
        "statements/job",
        "client µs/job",
        "server cores",
        "poller busy",
        "rows/claim"
    );
    for &n in &args.processes {
        let label = format!("{n} processes");
        let f =
            progress::while_running(label, || processes::run(ops, store, args, url, n as usize))?;
        say!(
            "{:>9} {:>10.0} {:>8.2} {:>16.3} {:>14.1} {:>16} {:>13.0}% {:>14.1}",
            f.processes,
            f.jobs_per_s,
            f.jobs_per_s / raw.jobs_per_s,
            f.statements_per_job,
            f.cpu_us_per_job,
            f.server_cores.map_or("-".to_owned(), |c| format!("{c:.2}")),
            f.poller_busy * 100.0,
            f.rows_per_claim
        );
    }
    (ops.drop)(store)?;
    Ok(())
}
