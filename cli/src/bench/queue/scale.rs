//! `docket bench queue --scenario intake|custom-order`: the work queue at scale.
//!
//! - **Intake.** A CSV of `--intake-rows` rows and three columns (`team`: 50 values, `score`:
//!   0..999, `note`) is written to a temporary file, then enqueued by the real `docket enqueue`
//!   in a child process (task type [`TASK`], order `team,score:number:desc`, so scores are
//!   normalized to numbers): first a copy whose row on line `--intake-rows - 1` has a score
//!   that is not a number, which must fail naming that line and leave nothing inserted, then
//!   the good file. Printed: wall time, rows/s, and the children's peak resident memory
//!   (`getrusage(RUSAGE_CHILDREN).ru_maxrss`: the largest child's).
//! - **Custom order** (after the intake): `next_for` + `submit` of fresh workers with that
//!   custom order on those items, without the index and with it (created by
//!   `WorkQueue::create_order_index`, timed, then the table analyzed): the claim statement's
//!   plan with its cost, and the median wall time of `next_for` (`--calls` calls with the
//!   index; at most [`UNINDEXED_CALLS`] without, each of which sorts every open item).
//!
//! The last lines are the summaries (see [`intake_summary`] and [`custom_summary`]).

use super::{measure, ms, print_figures, Figures, Ops, QueueArgs, Which};
use crate::args::store_config;
use crate::bench::load::Recording;
use crate::error::CliError;
use crate::progress;
use docket_core::backend::SqlStore;
use docket_core::store::sql::SqlConnector;
use docket_core::{PrimaryOrder, QueueConfig, QueueStore, Store, StoreInfo, WorkQueue};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

/// The task type of the enqueued items.
pub const TASK: &str = "bench-intake";

/// The custom order: team ascending, then score descending (numbers).
pub const ORDER: &str = "team,score:number:desc";

/// Most timed `next_for` calls without the index (each sorts every open item).
pub const UNINDEXED_CALLS: u64 = 5;

/// Runs the intake scenario, and the custom-order one after it when asked.
pub fn run<C: SqlConnector + Clone>(
    args: &QueueArgs,
    url: &str,
    ops: Ops<C>,
    plain: SqlStore<C>,
) -> Result<(), CliError> {
    let name = plain.backend();
    // A fresh table: a kept one of an earlier run goes first (migrating first makes sure
    // diesel's migration history exists for the drop to clean up).
    plain.migrate(None)?;
    (ops.drop)(&plain)?;
    plain.migrate(None)?;
    let rows = args.intake_rows;
    say!(
        "docket bench queue --scenario {}: backend={name} table={} rows={rows} (CSV columns \
         team,score,note; order {ORDER})",
        if args.scenario == Which::CustomOrder {
            "custom-order"
        } else {
            "intake"
        },
        args.table
    );
    let intake = progress::while_running(format!("enqueueing {rows} rows on {name}"), || {
        intake(args, url, &plain)
    })?;
    say!(
        "  bad row on line {}: failed in {:.1} s ({} rows read); error: {}",
        intake.bad_line,
        intake.bad_seconds,
        intake.bad_line.saturating_sub(1),
        intake.bad_error
    );
    say!(
        "  items after the failed run: {} (nothing inserted: {})",
        intake.after_bad,
        if intake.after_bad == 0 { "yes" } else { "NO" }
    );
    say!(
        "  good file: {rows} rows in {:.1} s = {:.0} rows/s; peak resident memory of the \
         enqueue processes {:.1} MB; {} items in the table",
        intake.seconds,
        rows as f64 / intake.seconds.max(1e-3),
        mb(intake.peak_rss),
        intake.after_good
    );
    let custom = if args.scenario == Which::CustomOrder {
        Some(custom_order(args, url, &ops, &plain)?)
    } else {
        None
    };
    if !args.keep {
        (ops.drop)(&plain)?;
    }
    say!("");
    say!("{}", intake_summary(name, rows, &intake));
    if let Some(c) = &custom {
        say!("{}", custom_summary(name, rows, c));
    }
    Ok(())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// What the intake runs measured.
struct Intake {
    /// Wall time of the good run, seconds.
    seconds: f64,
    /// Peak resident memory of the children, bytes.
    peak_rss: u64,
    /// The line of the bad row.
    bad_line: u64,
    /// Wall time of the failed run, seconds.
    bad_seconds: f64,
    /// Its error, as printed.
    bad_error: String,
    /// Items of [`TASK`] after the failed run (must be 0) and after the good one.
    after_bad: i64,
    after_good: i64,
}

/// Writes the CSV: header, then `rows` rows; the row on line `bad_line` (if any) gets a score
/// that is not a number.
fn write_csv(path: &Path, rows: u64, bad_line: Option<u64>) -> Result<(), CliError> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    writeln!(out, "team,score,note")?;
    for i in 1..=rows {
        // Data row i is on line i + 1.
        if bad_line == Some(i + 1) {
            writeln!(out, "t{},lots,row {i}", i % 50)?;
        } else {
            writeln!(out, "t{},{},row {i}", i % 50, (i * 7919) % 1000)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Runs `docket enqueue` on `csv` in a child process; its wall time and output.
fn enqueue(
    args: &QueueArgs,
    url: &str,
    csv: &Path,
    batch: &str,
) -> Result<(f64, std::process::Output), CliError> {
    let started = Instant::now();
    let out = Command::new(std::env::current_exe()?)
        .args(["enqueue", "--database-url", url, "--table"])
        .arg(args.table.to_string())
        .args(["--task", TASK, "--order", ORDER, "--batch", batch, "--csv"])
        .arg(csv)
        .output()?;
    Ok((started.elapsed().as_secs_f64(), out))
}

fn items(store: &dyn QueueStore) -> Result<i64, CliError> {
    Ok(store
        .item_counts()?
        .iter()
        .filter(|c| c.task_type == TASK)
        .map(|c| c.items)
        .sum())
}

fn intake<C: SqlConnector>(
    args: &QueueArgs,
    url: &str,
    store: &SqlStore<C>,
) -> Result<Intake, CliError> {
    let dir = tempfile::tempdir()?;
    let rows = args.intake_rows;
    let bad_line = rows - 1;
    let bad_csv = dir.path().join("bad.csv");
    write_csv(&bad_csv, rows, Some(bad_line))?;
    let (bad_seconds, out) = enqueue(args, url, &bad_csv, "bench-bad")?;
    std::fs::remove_file(&bad_csv)?;
    let bad_error = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let expected = format!("CSV line {bad_line}, column \"score\"");
    if out.status.success() || !bad_error.contains(&expected) {
        return Err(CliError::Bench(format!(
            "the bad file must fail with {expected:?}; got {:?}: {bad_error}",
            out.status
        )));
    }
    let after_bad = items(store)?;
    let good_csv = dir.path().join("good.csv");
    write_csv(&good_csv, rows, None)?;
    let (seconds, out) = enqueue(args, url, &good_csv, "bench")?;
    if !out.status.success() {
        return Err(CliError::Bench(format!(
            "docket enqueue failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(Intake {
        seconds,
        peak_rss: children_peak_rss(),
        bad_line,
        bad_seconds,
        bad_error,
        after_bad,
        after_good: items(store)?,
    })
}

/// The largest resident set of the waited-for children, in bytes (`ru_maxrss` is in KiB on
/// Linux). 0 when the call fails.
#[allow(unsafe_code)]
fn children_peak_rss() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` through the pointer, which points to memory we own
    // of that type (zeroed); RUSAGE_CHILDREN is a valid `who`. On success every field is set.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) != 0 {
            return 0;
        }
        usage.assume_init()
    };
    u64::try_from(usage.ru_maxrss)
        .unwrap_or(0)
        .saturating_mul(1024)
}

/// What the custom-order runs measured.
struct Custom {
    unindexed: Figures,
    indexed: Figures,
    /// The index name and how long creating it took, seconds.
    index: String,
    build_seconds: f64,
}

fn custom_order<C: SqlConnector + Clone>(
    args: &QueueArgs,
    url: &str,
    ops: &Ops<C>,
    plain: &SqlStore<C>,
) -> Result<Custom, CliError> {
    let config = store_config(&args.table, false);
    let mut queue_config = QueueConfig::default();
    queue_config.orders.insert(
        TASK.to_owned(),
        PrimaryOrder::parse_custom(ORDER).map_err(|e| CliError::Bench(e.to_string()))?,
    );
    (ops.analyze)(plain)?;
    let recording = Arc::new(SqlStore::new(
        Recording::new(plain.connector().clone()),
        config.clone(),
    ));
    let timed = WorkQueue::new(
        Arc::new((ops.connect)(url, config)?) as Arc<dyn Store>,
        queue_config,
    )?;
    let unindexed = progress::while_running("custom order, without the index", || {
        measure(
            ops,
            plain,
            &recording,
            &timed,
            args.calls.min(UNINDEXED_CALLS),
            TASK,
            |i| format!("unindexed-{i}"),
        )
    })?;
    let started = Instant::now();
    let change = progress::while_running("creating the index", || timed.create_order_index(TASK))?;
    let build_seconds = started.elapsed().as_secs_f64();
    (ops.analyze)(plain)?;
    let indexed = progress::while_running("custom order, with the index", || {
        measure(ops, plain, &recording, &timed, args.calls, TASK, |i| {
            format!("indexed-{i}")
        })
    })?;
    say!("");
    say!(
        "custom order {ORDER} on {} open items of {TASK}",
        args.intake_rows
    );
    say!("  next_for statement, as the store sends it without the index:");
    say!("    {}", unindexed.stmt.sql);
    print_figures(
        "without the index",
        &unindexed,
        ops.plan_label,
        args.calls.min(UNINDEXED_CALLS),
    )?;
    say!("  index {} created in {build_seconds:.1} s:", change.index);
    for stmt in &change.statements {
        say!("    {stmt}");
    }
    say!("  next_for statement, as the store sends it with the index:");
    say!("    {}", indexed.stmt.sql);
    print_figures("with the index", &indexed, ops.plan_label, args.calls)?;
    for (label, f) in [("without", &unindexed), ("with", &indexed)] {
        let shape = match &f.plan.whole_type {
            Some(node) if sorts(f) => format!("sorts the open items: the plan has {node}"),
            Some(node) => format!("reads the items in index order, no sort (the plan has {node})"),
            None => "reads the items in index order: no sort or scan of the type".to_owned(),
        };
        say!("  verdict, {label} the index: {shape}");
    }
    Ok(Custom {
        unindexed,
        indexed,
        index: change.index,
        build_seconds,
    })
}

/// Whether the claim's plan sorts (PostgreSQL `Sort`, MySQL/MariaDB `filesort`).
fn sorts(f: &Figures) -> bool {
    f.plan
        .whole_type
        .as_deref()
        .is_some_and(|node| node.contains("sort"))
}

/// `summary_intake backend=... rows=... rows_per_s=... peak_rss_mb=... bad_line=...
/// bad_left_items=...`: the good run's rate and the children's peak memory, and the items the
/// failed run left (0).
fn intake_summary(backend: &str, rows: u64, i: &Intake) -> String {
    format!(
        "summary_intake backend={backend} rows={rows} seconds={:.1} rows_per_s={:.0} \
         peak_rss_mb={:.1} bad_line={} bad_left_items={}",
        i.seconds,
        rows as f64 / i.seconds.max(1e-3),
        mb(i.peak_rss),
        i.bad_line,
        i.after_bad
    )
}

/// `summary_custom backend=... items=... next_for_ms_unindexed=... next_for_ms_indexed=...
/// reads_unindexed=... reads_indexed=... index_build_s=...`.
fn custom_summary(backend: &str, rows: u64, c: &Custom) -> String {
    format!(
        "summary_custom backend={backend} items={rows} next_for_ms_unindexed={:.3} \
         next_for_ms_indexed={:.3} reads_unindexed={} reads_indexed={} server_ms_unindexed={:.3} \
         server_ms_indexed={:.3} sort_with_index={} index={} index_build_s={:.1}",
        ms(c.unindexed.next_for),
        ms(c.indexed.next_for),
        c.unindexed.plan.cost.reads,
        c.indexed.plan.cost.reads,
        ms(c.unindexed.plan.cost.micros),
        ms(c.indexed.plan.cost.micros),
        if sorts(&c.indexed) { "yes" } else { "no" },
        c.index,
        c.build_seconds
    )
}
