//! `docket index`: creates (with `--drop`, drops) the index that serves a task type's custom
//! order in `next_for` and `list_for` (see `docket_core::dialect::order_index`). Without it the
//! order still works, by sorting the type's open items on every call.

use crate::args::{parse_order, store_config, TypeTarget};
use crate::error::CliError;
use crate::{backends, progress};
use docket_core::{PrimaryOrder, QueueConfig, WorkQueue};

/// Arguments of `docket index`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    on: TypeTarget,
    /// The custom order, as `docket queue --order` takes it, e.g. `team,score:number:desc`.
    #[arg(long, value_name = "KEYS", value_parser = parse_order)]
    order: PrimaryOrder,
    /// For a queue with the priority toggle on (the index then leads with priority).
    #[arg(long)]
    priority: bool,
    /// Drop the index (and its generated columns) instead.
    #[arg(long)]
    drop: bool,
}

/// Runs `docket index`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let backend = backends::for_url(&args.on.target.database_url)?;
    let config = store_config(&args.on.target.table, args.priority);
    let what = if args.drop { "dropping" } else { "creating" };
    let change = progress::while_running(
        format!("{what} the index of {}'s order", args.on.task),
        || -> Result<_, CliError> {
            let store = backend.connect(&args.on.target.database_url, config)?;
            let mut queue_config = QueueConfig::default();
            queue_config
                .orders
                .insert(args.on.task.clone(), args.order.clone());
            let queue = WorkQueue::new(store, queue_config)?;
            Ok(if args.drop {
                queue.drop_order_index(&args.on.task)?
            } else {
                queue.create_order_index(&args.on.task)?
            })
        },
    )?;
    for stmt in &change.statements {
        say!("{stmt};");
    }
    let table = &args.on.target.table;
    match (args.drop, change.changed) {
        (false, true) => say!(
            "created index {} on {table} for the order of task type {}",
            change.index,
            args.on.task
        ),
        (false, false) => say!(
            "index {} on {table} exists already: nothing to do",
            change.index
        ),
        (true, true) => say!("dropped index {} on {table}", change.index),
        (true, false) => say!("no index {} on {table}: nothing to drop", change.index),
    }
    Ok(())
}
