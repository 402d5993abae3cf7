//! `docket enqueue`: one CSV file becomes one batch of work-queue items, all or nothing.

use crate::args::{store_config, TypeTarget};
use crate::error::CliError;
use crate::{backends, progress};
use chrono::Utc;
use docket_core::queue::csv::CsvItems;
use docket_core::WorkQueue;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `docket enqueue`.
///
/// Items carry no priority (there is no `--priority`): with the priority toggle on they rank
/// below every item that has one, as NULL priorities do.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    on: TypeTarget,
    /// The CSV file (`-`: standard input). Header row first; column `record_date`
    /// (YYYY-MM-DDThh:mm:ss[.sss], UTC; empty: the batch's start time) and `id` (default
    /// `<batch>/<row>`) are optional; every other column is a custom attribute.
    #[arg(long, value_name = "FILE")]
    csv: PathBuf,
    /// How many workers may work each item.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(i32).range(1..))]
    max_assignments: i32,
    /// Batch id, the prefix of generated item ids (default: the start time, e.g.
    /// 20261130T131727.123Z).
    #[arg(long, value_name = "NAME")]
    batch: Option<String>,
    #[command(flatten)]
    order: crate::args::OrderArg,
}

/// Rows between two progress updates.
const TICK: u64 = 4096;

/// Runs `docket enqueue`: reads, checks and inserts the file in chunks within one
/// transaction, so memory does not grow with the file and a bad row anywhere inserts nothing.
pub fn run(args: &Args) -> Result<(), CliError> {
    let backend = backends::for_url(&args.on.target.database_url)?;
    let config = store_config(&args.on.target.table, false);
    let queue = progress::while_running("connecting", || -> Result<_, CliError> {
        let store = backend.connect(&args.on.target.database_url, config)?;
        Ok(WorkQueue::new(store, args.order.config(&args.on.task))?)
    })?;
    let stdin = args.csv.as_os_str() == "-";
    let open_error = |e| CliError::File {
        path: args.csv.clone(),
        source: e,
    };
    let (input, len): (Box<dyn Read>, Option<u64>) = if stdin {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let file = std::fs::File::open(&args.csv).map_err(open_error)?;
        let len = file.metadata().map_err(open_error)?.len();
        (Box::new(file), Some(len))
    };
    let mut items = CsvItems::new(
        input,
        &args.on.task,
        args.max_assignments,
        args.batch.as_deref(),
        Utc::now(),
        queue.config(),
    )?;
    let name = if stdin {
        "standard input".to_owned()
    } else {
        args.csv.display().to_string()
    };
    let bar = progress::bytes(len, format!("enqueueing {name}"));
    let started = Instant::now();
    let shown = bar.clone();
    items.on_progress(TICK, move |rows, bytes| {
        let rate = rows as f64 / started.elapsed().as_secs_f64().max(1e-3);
        shown.set_position(bytes);
        // After the last row the database may still be at work for a while (MySQL/MariaDB
        // publish a large batch in one statement after reading it): say so.
        let message = if len == Some(bytes) {
            format!("{name}: all {rows} rows read; the database is storing them")
        } else {
            format!("enqueueing {name}: {rows} rows ({rate:.0} rows/s)")
        };
        shown.set_message(message);
    });
    let inserted = queue.enqueue_items(&mut items);
    bar.finish_and_clear();
    let inserted = inserted?;
    let took = started.elapsed().as_secs_f64();
    say!(
        "enqueued {inserted} items of task {} as batch {} (max assignments {}) in {took:.1} s \
         ({:.0} rows/s)",
        args.on.task,
        items.batch_id(),
        args.max_assignments,
        inserted as f64 / took.max(1e-3)
    );
    Ok(())
}
