//! `docket bench queue`: what `WorkQueue::next_for` costs a worker with a long history, next to
//! a fresh worker on the same table.
//!
//! One run loads two task types of `--items` items each into its own table (the SQL is each
//! backend's module of [`load`](super::load); each type is the other's "rest of the table"), with worker
//! [`WORKER`] holding a SUBMITTED assignment on the first `--worked` items of both, in FIFO order:
//! - scenario A, type [`TYPE_A`], `max_assignments = 1`: those items are full
//!   (`assignable = false`), the usual case;
//! - scenario B, type [`TYPE_B`], `max_assignments = 2`: they stay open for a second worker,
//!   so the worker's own history lies in front of the first item it may take.
//!
//! For each scenario and each of the worker and a fresh worker (no history), one real
//! `next_for` + `submit` runs through a recording store, and the `item_eligible` statement it
//! sent is explained with its bound values (PostgreSQL `EXPLAIN (ANALYZE, BUFFERS)`,
//! MySQL/MariaDB `ANALYZE FORMAT=JSON` and handler reads); then `--calls` more `next_for` +
//! `submit` pairs run through a plain store and the median `next_for` wall time is printed
//! (the claim transaction included). The last line is the summary (see [`summary`]).
//!
//! `--scenario intake` and `--scenario custom-order` measure the work queue at scale instead
//! (module [`scale`]): `docket enqueue` of a generated CSV (rows/s, peak memory, a bad row near
//! the end), and `next_for` with a two-key custom order with and without its index.

// Built without both of its backends (the CLI's `postgres` and `mysql` features), the command
// only reports that it cannot run: its machinery is then unused, not wrong.
#![cfg_attr(
    not(any(feature = "postgres", feature = "mysql")),
    allow(dead_code, unused_macros, unused_variables, unused_imports)
)]

use super::{database_url, ratio};
use crate::args::{parse_table, store_config};
use crate::bench::load::diesel::ScenarioSql;
use crate::bench::load::{Call, QueuePlan, QueueScenario, QueueType, Recording};
use crate::error::CliError;
use crate::progress;
use chrono::{SubsecRound, Utc};
use docket_core::backend::SqlStore;
use docket_core::dialect::Rendered;
use docket_core::store::sql::SqlConnector;
use docket_core::{QueueConfig, Store, StoreConfig, StoreError, StoreInfo, TableName, WorkQueue};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The worker with history.
pub const WORKER: &str = "bench-worker";
/// Scenario A's task type (`max_assignments = 1`).
pub const TYPE_A: &str = "bench-queue-a";
/// Scenario B's task type (`max_assignments = 2`).
pub const TYPE_B: &str = "bench-queue-b";

mod scale;

/// What `docket bench queue` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// `next_for` for a worker with a long history against a fresh worker (FIFO).
    History,
    /// `docket enqueue` of a generated CSV of `--intake-rows` rows, in a child process:
    /// rows/s and peak memory; first with a bad row on line `--intake-rows - 1`, which must
    /// leave nothing inserted, then the good file.
    Intake,
    /// The intake above, then `next_for` with the two-key custom order
    /// `team,score:number:desc` on those items, without and with its index.
    CustomOrder,
}

/// Arguments of `docket bench queue`.
#[derive(Debug, clap::Args)]
pub struct QueueArgs {
    /// What to measure.
    #[arg(long, value_enum, default_value = "history")]
    scenario: Which,
    /// Data rows of the generated CSV (scenarios intake and custom-order).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(3..))]
    intake_rows: u64,
    /// postgres or mysql.
    #[arg(long, value_name = "BACKEND")]
    backend: String,
    /// Database URL (its database is created when missing); default: DOCKET_POSTGRES_URL /
    /// DOCKET_MYSQL_URL.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Items per task type (two types are loaded).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    items: u64,
    /// Items of each type, first in FIFO order, that the worker has already submitted.
    #[arg(long, default_value_t = 100_000)]
    worked: u64,
    /// Timed `next_for` + `submit` calls per worker and scenario (the median is printed).
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u64).range(1..))]
    calls: u64,
    /// The benchmark's table (created, filled, and dropped with its assignments table at the
    /// end unless --keep).
    #[arg(long, value_name = "TABLE", default_value = "docket_bench_queue", value_parser = parse_table)]
    table: TableName,
    /// Keep the tables at the end.
    #[arg(long)]
    keep: bool,
}

/// Loads the scenario, reporting rows written.
type LoadFn<C> = fn(&SqlStore<C>, &QueueScenario, &mut dyn FnMut(u64)) -> Result<(), StoreError>;

/// What the benchmark needs from one backend crate.
struct Ops<C: SqlConnector> {
    connect: fn(&str, StoreConfig) -> Result<SqlStore<C>, StoreError>,
    ensure_database: fn(&str) -> Result<bool, StoreError>,
    load: LoadFn<C>,
    plan: fn(&SqlStore<C>, &Rendered) -> Result<QueuePlan, StoreError>,
    drop: fn(&SqlStore<C>) -> Result<(), StoreError>,
    /// Refreshes the planner's statistics of the table.
    analyze: fn(&SqlStore<C>) -> Result<(), StoreError>,
    /// How the plan is obtained.
    plan_label: &'static str,
    /// What `Cost::reads` counts.
    unit: &'static str,
}

macro_rules! ops {
    ($krate:ident, $load:ident, $scenario:expr, $label:literal, $unit:literal) => {
        Ops {
            connect: $krate::connect,
            ensure_database: crate::bench::load::$load::ensure_database,
            load: |st, s, p| crate::bench::load::diesel::load_queue(st, &$scenario(st), s, p),
            plan: crate::bench::load::$load::queue_plan,
            drop: crate::bench::load::diesel::drop_scenario,
            analyze: |st| {
                let table = &st.config().table;
                st.connector()
                    .with_session(&mut |s| $scenario(st).analyze(s, table))
            },
            plan_label: $label,
            unit: $unit,
        }
    };
}

/// Runs `docket bench queue`.
pub fn run(args: &QueueArgs) -> Result<(), CliError> {
    let backend = crate::backends::by_name(&args.backend)?;
    // Each measured worker takes one recorded item and `calls` timed ones, per scenario.
    let taken = 2 * (args.calls + 1);
    if args.scenario == Which::History && args.worked + taken > args.items {
        return Err(CliError::Bench(format!(
            "--items {} must exceed --worked {} by at least {taken} (2 x (--calls + 1))",
            args.items, args.worked
        )));
    }
    let (url, _tmp) = database_url(backend, args.database_url.as_deref())?;
    match backend.name() {
        #[cfg(feature = "postgres")]
        "postgres" => run_which(
            args,
            &url,
            ops!(
                docket_postgres,
                postgres,
                |_| crate::bench::load::postgres::PgScenario,
                "EXPLAIN (ANALYZE, BUFFERS)",
                "shared buffers hit+read of the top plan node, EXPLAIN (ANALYZE, BUFFERS)"
            ),
        ),
        #[cfg(feature = "mysql")]
        "mysql" => run_which(
            args,
            &url,
            ops!(
                docket_mysql,
                mysql,
                |st: &docket_mysql::MysqlStore| crate::bench::load::mysql::MysqlScenario(
                    st.connector().meta().flavor()
                ),
                "ANALYZE FORMAT=JSON",
                "Handler_read_* delta of the session (rows the engine handed over)"
            ),
        ),
        other => Err(CliError::Bench(format!(
            "bench queue runs on postgres or mysql (each a cargo feature of the CLI), not {other}"
        ))),
    }
}

fn run_which<C: SqlConnector + Clone>(
    args: &QueueArgs,
    url: &str,
    ops: Ops<C>,
) -> Result<(), CliError> {
    if (ops.ensure_database)(url)? {
        eprintln!("created the database of {url}");
    }
    let plain = (ops.connect)(url, store_config(&args.table, false))?;
    match args.scenario {
        Which::History => run_queue(args, url, ops, plain),
        Which::Intake | Which::CustomOrder => scale::run(args, url, ops, plain),
    }
}

/// One measured worker in one scenario.
struct Figures {
    /// The `item_eligible` statement of the recorded call, as the store sent it.
    stmt: Rendered,
    /// Its plan after that call (values bound, rolled back).
    plan: QueuePlan,
    /// Median wall time of `next_for`, microseconds.
    next_for: u64,
    /// Median wall time of `submit`, microseconds.
    submit: u64,
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// One `next_for` + `submit` of `worker`; the wall times of both. An empty queue is an error
/// (the scenario guarantees items).
fn take_one(
    queue: &WorkQueue,
    worker: &str,
    task_type: &str,
) -> Result<(Duration, Duration), CliError> {
    let started = Instant::now();
    let item = queue
        .next_for(worker, task_type)?
        .ok_or_else(|| CliError::Bench(format!("next_for({worker}, {task_type}) found no item")))?;
    let took = started.elapsed();
    let started = Instant::now();
    queue.submit(worker, &item.key)?;
    Ok((took, started.elapsed()))
}

/// Measures `workers[0]` (the recorded call and its plan) and then `calls` timed calls, one
/// per worker name `workers(i)`.
fn measure<C: SqlConnector>(
    ops: &Ops<C>,
    plain: &SqlStore<C>,
    recording: &Arc<SqlStore<Recording<C>>>,
    timed: &WorkQueue,
    calls: u64,
    task_type: &str,
    workers: impl Fn(u64) -> String,
) -> Result<Figures, CliError> {
    let recorded = WorkQueue::new(
        Arc::clone(recording) as Arc<dyn Store>,
        timed.config().clone(),
    )?;
    recording.connector().take();
    take_one(&recorded, &workers(0), task_type)?;
    let stmt = recording
        .connector()
        .take()
        .into_iter()
        // The first query that sorts reads the items (eligible, in order); MySQL/MariaDB may
        // ask first whether the order's index exists.
        .find(|r| r.call == Call::Query && r.stmt.sql.contains(" ORDER BY "))
        .map(|r| r.stmt)
        .ok_or_else(|| CliError::Bench("next_for sent no item query".to_owned()))?;
    // The plan as of now, three times: the figures of the last, the best execution time.
    let mut plan = (ops.plan)(plain, &stmt)?;
    for _ in 0..2 {
        let again = (ops.plan)(plain, &stmt)?;
        let best = plan.cost.micros.min(again.cost.micros);
        plan = again;
        plan.cost.micros = best;
    }
    let (mut next_for, mut submit) = (Vec::new(), Vec::new());
    for i in 1..=calls {
        let (n, s) = take_one(timed, &workers(i), task_type)?;
        next_for.push(micros(n));
        submit.push(micros(s));
    }
    Ok(Figures {
        stmt,
        plan,
        next_for: median(next_for),
        submit: median(submit),
    })
}

/// Most item rows a bounded call reads: the first open item, and a few more when some are
/// locked by concurrent claims (none are here).
const BOUNDED_ITEM_ROWS: u64 = 10;

/// How one measured call went: index-driven and bounded, or why not.
fn verdict(plan: &QueuePlan, worked: u64) -> (bool, String) {
    if let Some(node) = &plan.whole_type {
        return (
            false,
            format!("NOT index-driven, NOT bounded: the plan has {node}"),
        );
    }
    match plan.items_read {
        Some(n) if n <= BOUNDED_ITEM_ROWS => (
            true,
            format!(
                "index-driven and bounded: reads the FIFO index from the first open item ({n} \
                 item row(s)), one assignment lookup per item row"
            ),
        ),
        Some(n) => (
            false,
            format!(
                "index-driven (FIFO index order, no sort, no scan of the type) but NOT bounded: \
                 reads {n} item rows and looks up the assignments {} times per call, i.e. walks \
                 the worker's own {worked} items of history in front of the first item it may \
                 take, on every call",
                plan.assignment_probes
                    .map_or_else(|| "?".to_owned(), |p| p.to_string()),
            ),
        ),
        None => (
            true,
            "no sort or scan of the whole type in the plan; item rows read not available"
                .to_owned(),
        ),
    }
}

fn print_figures(label: &str, f: &Figures, ops_label: &str, calls: u64) -> Result<(), CliError> {
    say!("  {label}: {ops_label}:");
    for line in &f.plan.lines {
        say!("    {line}");
    }
    let mut reads = format!("{} reads", f.plan.cost.reads);
    if let Some(n) = f.plan.items_read {
        reads.push_str(&format!(", {n} item rows read"));
    }
    if let Some(n) = f.plan.assignment_probes {
        reads.push_str(&format!(", {n} assignment probes"));
    }
    say!(
        "  {label}: {reads}, {:.3} ms in the server; next_for median {:.3} ms, submit median \
         {:.3} ms ({calls} calls)",
        ms(f.plan.cost.micros),
        ms(f.next_for),
        ms(f.submit)
    );
    Ok(())
}

fn run_queue<C: SqlConnector + Clone>(
    args: &QueueArgs,
    url: &str,
    ops: Ops<C>,
    plain: SqlStore<C>,
) -> Result<(), CliError> {
    let config = store_config(&args.table, false);
    let name = plain.backend();
    let s = QueueScenario {
        now: Utc::now().trunc_subsecs(6),
        items: args.items,
        worked: args.worked,
        worker: WORKER.to_owned(),
        types: vec![
            QueueType {
                name: TYPE_A.to_owned(),
                max_assignments: 1,
            },
            QueueType {
                name: TYPE_B.to_owned(),
                max_assignments: 2,
            },
        ],
    };
    let bar = progress::bar(s.rows(), format!("loading {} on {name}", args.table));
    (ops.load)(&plain, &s, &mut |n| bar.inc(n))?;
    bar.finish_and_clear();
    let recording = Arc::new(SqlStore::new(
        Recording::new(plain.connector().clone()),
        config.clone(),
    ));
    let timed = WorkQueue::new(
        Arc::new((ops.connect)(url, config)?) as Arc<dyn Store>,
        QueueConfig::default(),
    )?;
    say!(
        "docket bench queue: backend={name} table={} items={} per type x 2 types ({TYPE_A}, \
         {TYPE_B}; each is the other's rest of the table) worked={} by {WORKER} (SUBMITTED, \
         first in FIFO order) calls={}",
        args.table,
        args.items,
        args.worked,
        args.calls
    );
    say!("cost unit: {}", ops.unit);
    let mut rows = Vec::new();
    for (key, task_type, what) in [
        (
            "a",
            TYPE_A,
            "max_assignments=1: the worker's submitted items are full (assignable = false); \
             the usual case",
        ),
        (
            "b",
            TYPE_B,
            "max_assignments=2: the worker's submitted items stay open for a second worker, so \
             its own history lies in front of the first item it may take; the adversarial case",
        ),
    ] {
        let run = |label: String, workers: &dyn Fn(u64) -> String| {
            progress::while_running(label, || {
                let calls = args.calls;
                measure(&ops, &plain, &recording, &timed, calls, task_type, workers)
            })
        };
        let own = run(format!("scenario {key}: {WORKER}"), &|_| WORKER.to_owned())?;
        let fresh = run(format!("scenario {key}: fresh workers"), &|i| {
            format!("fresh-{key}-{i}")
        })?;
        say!("");
        say!(
            "scenario {} ({task_type}), {what}",
            key.to_ascii_uppercase()
        );
        let binds: Vec<String> = own.stmt.binds.iter().map(|b| format!("{b:?}")).collect();
        say!("  next_for statement ({WORKER}), as the store sends it:");
        say!("    {}", own.stmt.sql);
        say!("    -- binds: {}", binds.join(", "));
        print_figures(
            &format!("{WORKER}, {} items worked", args.worked),
            &own,
            ops.plan_label,
            args.calls,
        )?;
        print_figures(
            "baseline, a fresh worker with no history",
            &fresh,
            ops.plan_label,
            args.calls,
        )?;
        let (bounded_own, own_verdict) = verdict(&own.plan, args.worked);
        let (bounded_fresh, fresh_verdict) = verdict(&fresh.plan, 0);
        say!("  verdict, {WORKER}: {own_verdict}");
        say!("  verdict, fresh worker: {fresh_verdict}");
        say!(
            "  {WORKER} against a fresh worker: reads ratio {:.2}, next_for time ratio {:.2}",
            ratio(own.plan.cost.reads as f64, fresh.plan.cost.reads as f64),
            ratio(own.next_for as f64, fresh.next_for as f64)
        );
        rows.push(SummaryRow {
            key,
            own,
            fresh,
            bounded: (bounded_own, bounded_fresh),
        });
    }
    if !args.keep {
        (ops.drop)(&plain)?;
    }
    say!("");
    say!("{}", summary(name, args, &rows));
    Ok(())
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// One scenario's figures for the summary.
struct SummaryRow {
    key: &'static str,
    own: Figures,
    fresh: Figures,
    /// Whether the worker's and the fresh worker's calls were bounded.
    bounded: (bool, bool),
}

/// The last line: per scenario (`_a`, `_b`), reads of the `next_for` statement for a fresh
/// worker and for the worker with history and their ratio, median `next_for` times and their
/// ratio, and whether each call stayed bounded (see [`verdict`]).
fn summary(backend: &str, args: &QueueArgs, rows: &[SummaryRow]) -> String {
    let mut line = format!(
        "summary backend={backend} items={} worked={}",
        args.items, args.worked
    );
    for r in rows {
        let k = r.key;
        line.push_str(&format!(
            " buffers_fresh_{k}={} buffers_{k}={} buffers_ratio_{k}={:.2} next_for_ms_fresh_{k}={:.3} \
             next_for_ms_{k}={:.3} time_ratio_{k}={:.2} bounded_fresh_{k}={} bounded_{k}={}",
            r.fresh.plan.cost.reads,
            r.own.plan.cost.reads,
            ratio(r.own.plan.cost.reads as f64, r.fresh.plan.cost.reads as f64),
            ms(r.fresh.next_for),
            ms(r.own.next_for),
            ratio(r.own.next_for as f64, r.fresh.next_for as f64),
            yes_no(r.bounded.1),
            yes_no(r.bounded.0)
        ));
    }
    line
}
