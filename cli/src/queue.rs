//! `docket queue`: the due, unpicked executions in the order they would be handed out, or with
//! `--worker` the work-queue items a worker would get from `next_for` (nothing is claimed).

use crate::args::{store_config, Target};
use crate::error::CliError;
use crate::{backends, progress};
use chrono::{SecondsFormat, Utc};
use docket_core::queue::{Item, ItemCount, MAX_WORKER_LEN};
use docket_core::store::DueParams;
use docket_core::{Direction, DocketError, Execution, KeyType, PrimaryOrder, WorkQueue};

/// Arguments of `docket queue`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: Target,
    /// Only this task (with --worker: the task type, required).
    #[arg(long, value_name = "TASK")]
    task: Option<String>,
    /// List the work-queue items of --task this worker would get, in order, without claiming
    /// any (needs 0004_work_queue).
    #[arg(long, value_name = "WORKER", requires = "task", value_parser = parse_worker)]
    worker: Option<String>,
    /// Show at most this many.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(i64).range(1..))]
    limit: i64,
    /// Order by priority first, as a scheduler (or work queue) with priority on does (needs
    /// 0002_priority).
    #[arg(long)]
    priority: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    order: crate::args::OrderArg,
}

/// A worker name as the assignments table stores it ([`docket_core::validate_worker`]).
fn parse_worker(value: &str) -> Result<String, String> {
    match docket_core::validate_worker(value) {
        Ok(()) => Ok(value.to_owned()),
        Err(DocketError::InvalidName { reason, .. }) => Err(format!(
            "{reason} (at most {MAX_WORKER_LEN} characters, no control characters)"
        )),
        Err(other) => Err(other.to_string()),
    }
}

/// Runs `docket queue`.
pub fn run(args: &Args) -> Result<(), CliError> {
    if let (Some(worker), Some(task)) = (&args.worker, &args.task) {
        return run_worker(args, worker, task);
    }
    let backend = backends::for_url(&args.target.database_url)?;
    let config = store_config(&args.target.table, args.priority);
    let now = Utc::now();
    let (due, items) = progress::while_running("reading the queue", || -> Result<_, CliError> {
        let store = backend.connect(&args.target.database_url, config)?;
        store.check_schema()?;
        // The task names of executions: work-queue items' task types are not listed (the
        // statement leaves out rows with `max_assignments` when the table has that column).
        let names: Vec<String> = store
            .execution_unresolved_names(&[])?
            .into_iter()
            .filter(|name| args.task.as_ref().is_none_or(|task| task == name))
            .collect();
        let params = DueParams {
            now,
            task_names: &names,
            limit: args.limit,
            claim_for: None,
            clock: None,
            // A view: the limited tasks' due executions are listed too.
            include_limited: true,
        };
        let items = store
            .item_counts()?
            .into_iter()
            .filter(|c| args.task.as_ref().is_none_or(|task| *task == c.task_type))
            .collect::<Vec<_>>();
        Ok((store.execution_fetch_due(&params)?, items))
    })?;
    if args.json {
        say!("{}", serde_json::to_string_pretty(&to_json(&due))?);
    } else {
        print_table(&due, args.priority, now)?;
        print_item_counts(&items)?;
    }
    Ok(())
}

/// The footer of the executions listing: how many work-queue items the table holds (they are
/// not listed; `--worker` lists them).
fn print_item_counts(counts: &[ItemCount]) -> Result<(), CliError> {
    let items: i64 = counts.iter().map(|c| c.items).sum();
    if items == 0 {
        return Ok(());
    }
    let open: i64 = counts.iter().map(|c| c.open).sum();
    let types: Vec<&str> = counts.iter().map(|c| c.task_type.as_str()).collect();
    say!(
        "the table also holds {} ({open} open) of task type(s) {}, not listed here: \
         `docket queue --worker W --task T` lists what a worker would get",
        count(items.unsigned_abs() as usize, "work-queue item"),
        types.join(", ")
    );
    Ok(())
}

/// Prints rows as left-aligned columns (also `docket limits list`).
pub(crate) fn print_rows<const N: usize>(rows: &[[String; N]]) -> Result<(), CliError> {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        say!("{}", cells.join("  ").trim_end());
    }
    Ok(())
}

fn time(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn to_json(due: &[Execution]) -> serde_json::Value {
    due.iter()
        .enumerate()
        .map(|(i, e)| {
            serde_json::json!({
                "position": i + 1,
                "task_name": e.task_name,
                "task_instance": e.task_instance,
                "priority": e.priority,
                "execution_time": time(e.execution_time),
                "consecutive_failures": e.consecutive_failures,
                "last_failure": e.last_failure.map(time),
            })
        })
        .collect()
}

fn print_table(
    due: &[Execution],
    priority: bool,
    now: chrono::DateTime<Utc>,
) -> Result<(), CliError> {
    if due.is_empty() {
        say!("nothing is due at {}", time(now));
        return Ok(());
    }
    let mut rows = vec![[
        "#".to_owned(),
        "TASK".to_owned(),
        "INSTANCE".to_owned(),
        "PRIORITY".to_owned(),
        "DUE (UTC)".to_owned(),
        "FAILURES".to_owned(),
    ]];
    rows.extend(due.iter().enumerate().map(|(i, e)| {
        [
            (i + 1).to_string(),
            e.task_name.clone(),
            e.task_instance.clone(),
            match (priority, e.priority) {
                (false, _) => "-".to_owned(),
                (true, None) => "NULL".to_owned(),
                (true, Some(p)) => p.to_string(),
            },
            time(e.execution_time),
            e.consecutive_failures.to_string(),
        ]
    }));
    print_rows(&rows)?;
    let order = if priority {
        "priority (highest first, NULL last), then due time"
    } else {
        "due time (earliest first)"
    };
    say!("{} due, in hand-out order: {order}", due.len());
    Ok(())
}

/// `docket queue --worker W --task T`: what `next_for(W, T)` would hand out, in order.
fn run_worker(args: &Args, worker: &str, task: &str) -> Result<(), CliError> {
    let backend = backends::for_url(&args.target.database_url)?;
    let config = store_config(&args.target.table, args.priority);
    let now = Utc::now();
    let (items, index) =
        progress::while_running("reading the work queue", || -> Result<_, CliError> {
            let store = backend.connect(&args.target.database_url, config)?;
            let queue = WorkQueue::new(store, args.order.config(task))?;
            let index = match &args.order.order {
                Some(_) => Some(queue.order_index(task)?),
                None => None,
            };
            Ok((queue.list_for(worker, task, args.limit)?, index))
        })?;
    if args.json {
        say!("{}", serde_json::to_string_pretty(&items_json(&items)?)?);
    } else {
        let order = order_description(args.order.order.as_ref(), args.priority, index);
        print_items(&items, worker, task, now, &order)?;
    }
    Ok(())
}

/// The hand-out order in words, for the footer: priority when on, then the custom keys (and
/// whether an index serves them) or FIFO.
fn order_description(
    order: Option<&PrimaryOrder>,
    priority: bool,
    index: Option<(String, bool)>,
) -> String {
    let mut parts = Vec::new();
    if priority {
        parts.push("priority (highest first, NULL last)".to_owned());
    }
    let keys = order.map(PrimaryOrder::custom_keys).unwrap_or_default();
    for key in keys {
        let kind = match key.kind {
            KeyType::Text => "text",
            KeyType::Number => "number",
            KeyType::Timestamp => "timestamp",
        };
        let direction = match key.direction {
            Direction::Asc => "ascending",
            Direction::Desc => "descending",
        };
        parts.push(format!(
            "{} ({kind}, {direction}, missing last)",
            key.attribute
        ));
    }
    parts.push("record date".to_owned());
    parts.push("record order".to_owned());
    let mut text = parts.join(", then ");
    match index {
        Some((name, true)) => text.push_str(&format!(" (custom order served by index {name})")),
        Some((name, false)) => text.push_str(&format!(
            " (custom order not indexed: each call sorts the type's open items; \
             `docket index` creates {name})"
        )),
        None => {}
    }
    text
}

/// The record key's JSON form, `{"hitOrder":1,"hitOrderDate":"2020-03-11T10:15:55.935"}`.
fn record_json(item: &Item) -> String {
    format!(
        r#"{{"hitOrder":{},"hitOrderDate":"{}"}}"#,
        item.record.order,
        item.record.date.format("%Y-%m-%dT%H:%M:%S%.3f")
    )
}

fn items_json(items: &[Item]) -> Result<serde_json::Value, CliError> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            Ok(serde_json::json!({
                "position": i + 1,
                "task_name": item.key.task_name,
                "item": item.key.task_instance,
                "record": serde_json::to_value(item.record)?,
                "arrived": time(item.available_at),
                "assignments": item.assignments,
                "max_assignments": item.max_assignments,
                "attributes": item.attributes()?,
            }))
        })
        .collect()
}

fn print_items(
    items: &[Item],
    worker: &str,
    task: &str,
    now: chrono::DateTime<Utc>,
    order: &str,
) -> Result<(), CliError> {
    if items.is_empty() {
        say!("nothing of {task} for worker {worker} at {}", time(now));
        return Ok(());
    }
    let header = ["#", "ITEM", "RECORD", "ARRIVED (UTC)", "ASSIGNMENTS"].map(str::to_owned);
    let mut rows = vec![header];
    rows.extend(items.iter().enumerate().map(|(i, item)| {
        [
            (i + 1).to_string(),
            item.key.task_instance.clone(),
            record_json(item),
            time(item.available_at),
            format!("{}/{}", item.assignments, item.max_assignments),
        ]
    }));
    print_rows(&rows)?;
    say!(
        "{} for worker {worker}, in hand-out order: {order}",
        count(items.len(), "item")
    );
    Ok(())
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_names_follow_the_core_rule() {
        assert_eq!(parse_worker("w1").as_deref(), Ok("w1"));
        let longest = "w".repeat(MAX_WORKER_LEN);
        assert_eq!(parse_worker(&longest), Ok(longest.clone()));
        for (bad, why) in [
            ("", "must not be empty"),
            ("a\nb", "must not contain control characters"),
            (&format!("{longest}w")[..], "too long"),
        ] {
            let err = parse_worker(bad).unwrap_err();
            assert!(err.starts_with(why), "{bad:?}: {err}");
            assert!(err.contains("at most 128 characters"), "{err}");
        }
    }
}
