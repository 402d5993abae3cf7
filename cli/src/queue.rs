//! `docket queue`: the due, unpicked executions in the order they would be handed out.

use crate::error::CliError;
use crate::{backends, progress, store_config, Target};
use chrono::{SecondsFormat, Utc};
use docket_core::store::DueParams;
use docket_core::Execution;

/// Arguments of `docket queue`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: Target,
    /// Only this task.
    #[arg(long, value_name = "TASK")]
    task: Option<String>,
    /// Show at most this many.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(i64).range(1..))]
    limit: i64,
    /// Order by priority first, as a scheduler with priority on does (needs 0002_priority).
    #[arg(long)]
    priority: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `docket queue`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let backend = backends::for_url(&args.target.database_url)?;
    let config = store_config(&args.target.table, args.priority);
    let now = Utc::now();
    let due = progress::while_running("reading the queue", || -> Result<_, CliError> {
        let store = (backend.connect)(&args.target.database_url, config)?;
        store.check_schema()?;
        let names = match &args.task {
            Some(task) => vec![task.clone()],
            None => store
                .execution_summary()?
                .into_iter()
                .map(|s| s.task_name)
                .collect(),
        };
        let params = DueParams {
            now,
            task_names: &names,
            limit: args.limit,
        };
        Ok(store.execution_fetch_due(&params)?)
    })?;
    if args.json {
        say!("{}", serde_json::to_string_pretty(&to_json(&due))?);
    } else {
        print_table(&due, args.priority, now)?;
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
    let widths: Vec<usize> = (0..6)
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
    let order = if priority {
        "priority (highest first, NULL last), then due time"
    } else {
        "due time (earliest first)"
    };
    say!("{} due, in hand-out order: {order}", due.len());
    Ok(())
}
