//! `docket limits list|set|clear`: the limits the whole cluster keeps per task (`0009_limits`),
//! read with what each holds now, set (replacing the task's old ones) or cleared. Every
//! scheduler on the table keeps a new limit from its next poll.

use crate::args::{store_config, Target};
use crate::error::CliError;
use crate::queue::print_rows;
use crate::{backends, progress};
use chrono::Utc;
use docket_core::{LimitUse, Rate, TaskLimit};
use std::time::Duration;

/// Most due executions counted per limited task by `list` (`N+` past it).
const DUE_CAP: i64 = 1000;

/// Arguments of `docket limits`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: LimitsCommand,
}

#[derive(Debug, clap::Subcommand)]
enum LimitsCommand {
    /// Each limit with what it holds now: running, keys running, starts in its window, due
    /// executions waiting.
    List(ListArgs),
    /// Set the limits of a task, replacing the ones it had (give at least one).
    Set(SetArgs),
    /// Remove the limits of a task.
    Clear(ClearArgs),
}

#[derive(Debug, clap::Args)]
struct ListArgs {
    #[command(flatten)]
    target: Target,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("limit").required(true).multiple(true)
    .args(["max_running", "rate", "max_running_per_key", "rate_per_key"])))]
struct SetArgs {
    #[command(flatten)]
    target: Target,
    /// The task.
    #[arg(value_name = "TASK")]
    task: String,
    /// At most N of the task's executions running at once, across all schedulers.
    #[arg(long, value_name = "N")]
    max_running: Option<u32>,
    /// At most N starts of the task in any window, e.g. `20/1s`, `100/1m`, `5/500ms`.
    #[arg(long, value_name = "N/WINDOW", value_parser = parse_rate)]
    rate: Option<Rate>,
    /// At most N running at once per limit key.
    #[arg(long, value_name = "N")]
    max_running_per_key: Option<u32>,
    /// At most N starts per limit key in any window, as --rate.
    #[arg(long, value_name = "N/WINDOW", value_parser = parse_rate)]
    rate_per_key: Option<Rate>,
}

#[derive(Debug, clap::Args)]
struct ClearArgs {
    #[command(flatten)]
    target: Target,
    /// The task.
    #[arg(value_name = "TASK")]
    task: String,
}

/// Runs `docket limits`.
pub fn run(args: &Args) -> Result<(), CliError> {
    match &args.command {
        LimitsCommand::List(a) => list(a),
        LimitsCommand::Set(a) => set(a),
        LimitsCommand::Clear(a) => clear(a),
    }
}

fn open(target: &Target) -> Result<std::sync::Arc<dyn docket_core::Store>, CliError> {
    let backend = backends::for_url(&target.database_url)?;
    let store = backend.connect(&target.database_url, store_config(&target.table, false))?;
    store.check_schema()?;
    Ok(store)
}

fn list(args: &ListArgs) -> Result<(), CliError> {
    let used = progress::while_running("reading the limits", || -> Result<_, CliError> {
        let store = open(&args.target)?;
        Ok(store.limit_usage(Utc::now(), DUE_CAP + 1)?)
    })?;
    if args.json {
        let rows: Vec<_> = used.iter().map(to_json).collect();
        say!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    if used.is_empty() {
        say!(
            "no limits on {} (setting one needs migration {}: `docket migrate` adds it)",
            args.target.table,
            docket_core::migrate::MIGRATION_LIMITS
        );
        return Ok(());
    }
    let header = [
        "TASK",
        "MAX RUNNING",
        "RATE",
        "PER KEY",
        "PER-KEY RATE",
        "RUNNING",
        "KEYS RUNNING",
        "STARTS IN WINDOW",
        "DUE WAITING",
    ]
    .map(str::to_owned);
    let mut rows = vec![header];
    rows.extend(used.iter().map(|u| {
        let l = &u.limit;
        [
            l.task_name.clone(),
            count_text(l.max_running),
            rate_text(l.rate),
            count_text(l.max_running_per_key),
            rate_text(l.rate_per_key),
            u.running.to_string(),
            u.running_keys.to_string(),
            u.started_in_window.to_string(),
            if u.due_waiting > DUE_CAP {
                format!("{DUE_CAP}+")
            } else {
                u.due_waiting.to_string()
            },
        ]
    }));
    print_rows(&rows)?;
    say!(
        "{} limited; due waiting: due executions not picked (held back while a limit is full)",
        used.len()
    );
    Ok(())
}

fn set(args: &SetArgs) -> Result<(), CliError> {
    let mut limit = TaskLimit::new(&args.task);
    limit.max_running = args.max_running;
    limit.rate = args.rate;
    limit.max_running_per_key = args.max_running_per_key;
    limit.rate_per_key = args.rate_per_key;
    limit.validate()?;
    progress::while_running(
        format!("setting the limits of {}", args.task),
        || -> Result<_, CliError> {
            let store = open(&args.target)?;
            Ok(store.limit_set(&limit, Utc::now())?)
        },
    )?;
    say!(
        "{} on {} is limited: {}",
        args.task,
        args.target.table,
        describe(&limit)
    );
    Ok(())
}

fn clear(args: &ClearArgs) -> Result<(), CliError> {
    let cleared = progress::while_running(
        format!("clearing the limits of {}", args.task),
        || -> Result<_, CliError> { Ok(open(&args.target)?.limit_clear(&args.task)?) },
    )?;
    if cleared {
        say!(
            "cleared the limits of {} on {}",
            args.task,
            args.target.table
        );
    } else {
        say!(
            "{} has no limits on {}: nothing to clear",
            args.task,
            args.target.table
        );
    }
    Ok(())
}

/// The limits in words, e.g. `max running 3, rate 20/1s`.
fn describe(limit: &TaskLimit) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limit.max_running {
        parts.push(format!("max running {n}"));
    }
    if let Some(r) = limit.rate {
        parts.push(format!("rate {}", rate_text(Some(r))));
    }
    if let Some(n) = limit.max_running_per_key {
        parts.push(format!("max running per key {n}"));
    }
    if let Some(r) = limit.rate_per_key {
        parts.push(format!("rate per key {}", rate_text(Some(r))));
    }
    parts.join(", ")
}

fn to_json(u: &LimitUse) -> serde_json::Value {
    let rate = |r: Option<Rate>| {
        r.map(|r| {
            serde_json::json!({
                "count": r.count,
                "per_ms": u64::try_from(r.per.as_millis()).unwrap_or(u64::MAX),
                "text": rate_text(Some(r)),
            })
        })
    };
    serde_json::json!({
        "task_name": u.limit.task_name,
        "max_running": u.limit.max_running,
        "rate": rate(u.limit.rate),
        "max_running_per_key": u.limit.max_running_per_key,
        "rate_per_key": rate(u.limit.rate_per_key),
        "running": u.running,
        "running_keys": u.running_keys,
        "started_in_window": u.started_in_window,
        "due_waiting": u.due_waiting.min(DUE_CAP),
        "due_waiting_capped": u.due_waiting > DUE_CAP,
    })
}

fn count_text(n: Option<u32>) -> String {
    n.map_or_else(|| "-".to_owned(), |n| n.to_string())
}

/// `20/1s`, or `-` without a rate.
fn rate_text(rate: Option<Rate>) -> String {
    rate.map_or_else(
        || "-".to_owned(),
        |r| format!("{}/{}", r.count, window_text(r.per)),
    )
}

/// A window in the largest unit that divides it: `1d`, `2h`, `1m`, `30s`, `500ms`.
fn window_text(per: Duration) -> String {
    let ms = per.as_millis();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// `N/WINDOW`: a count, a slash and a window of a whole number and a unit (`ms`, `s`, `m`, `h`,
/// `d`; the number may be left out for one: `20/s`).
fn parse_rate(value: &str) -> Result<Rate, String> {
    let Some((count, window)) = value.split_once('/') else {
        return Err(format!(
            "{value:?} has no window: give N/WINDOW, e.g. {value}/1s or {value}/1m"
        ));
    };
    let count: u32 = count
        .trim()
        .parse()
        .map_err(|_| format!("{count:?} is not a count (a whole number from 0)"))?;
    Ok(Rate {
        count,
        per: parse_window(window.trim())?,
    })
}

fn parse_window(window: &str) -> Result<Duration, String> {
    let split = window
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(window.len());
    let (number, unit) = window.split_at(split);
    let number: u64 = if number.is_empty() {
        1
    } else {
        number
            .parse()
            .map_err(|_| format!("window {window:?}: {number:?} is too large"))?
    };
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "window {window:?}: give a whole number and a unit (ms, s, m, h, d), e.g. 1s"
            ))
        }
    };
    number
        .checked_mul(unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("window {window:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_and_print_back() {
        for (given, count, ms, shown) in [
            ("20/1s", 20, 1_000, "20/1s"),
            ("20/s", 20, 1_000, "20/1s"),
            ("100/1m", 100, 60_000, "100/1m"),
            ("5/500ms", 5, 500, "5/500ms"),
            ("1/90s", 1, 90_000, "1/90s"),
            ("3/2h", 3, 7_200_000, "3/2h"),
            ("7/1d", 7, 86_400_000, "7/1d"),
        ] {
            let rate = parse_rate(given).unwrap();
            assert_eq!((rate.count, rate.per), (count, Duration::from_millis(ms)));
            assert_eq!(rate_text(Some(rate)), shown);
        }
    }

    #[test]
    fn bad_rates_say_what_is_wrong() {
        for (bad, why) in [
            ("20", "has no window"),
            ("x/1s", "is not a count"),
            ("-1/1s", "is not a count"),
            ("20/1", "give a whole number and a unit"),
            ("20/1y", "give a whole number and a unit"),
            ("20/1.5s", "give a whole number and a unit"),
            ("20/99999999999999999999s", "too large"),
            ("20/18446744073709551615d", "too long"),
        ] {
            let err = parse_rate(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }
}
