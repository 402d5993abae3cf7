//! `GET /metrics`: the lag gauges and counts by state in the Prometheus text exposition format
//! (version 0.0.4), rendered from the same read as the overview's lag table ([`Web::lag`]).
//! A read like every `GET /api/...`: no token (see `docs/WEB.md`, "Lag and /metrics").
//!
//! [`Web::lag`]: crate::state::Web

use crate::error::ApiError;
use crate::model::{Capped, LagPage, LagView, LevelAge, LimitView};
use crate::state::{blocking_scrape, AppState};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use std::fmt::Write as _;

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`.
pub async fn metrics(State(web): State<AppState>) -> Result<Response, ApiError> {
    let page = blocking_scrape(&web, |w| w.lag_page()).await?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], render(&page)).into_response())
}

/// A label value with `\`, `"` and line feeds escaped, as the text format requires.
fn label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A priority level as a label value: the number, or `none`.
fn level(priority: Option<i16>) -> String {
    priority.map_or_else(|| "none".to_owned(), |p| p.to_string())
}

/// One metric family: its `HELP`, `TYPE gauge` and samples (`labels` already rendered).
struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn start<'o>(out: &'o mut String, name: &str, help: &str) -> Family<'o> {
        // `writeln!` into a String cannot fail.
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        Family { out }
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", label(v)))
            .collect();
        if labels.is_empty() {
            let _ = writeln!(self.out, "{name} {value}");
        } else {
            let _ = writeln!(self.out, "{name}{{{}}} {value}", labels.join(","));
        }
    }
}

fn capped_flag(c: Capped) -> u8 {
    u8::from(c.capped)
}

/// The exposition text for `page`.
pub fn render(page: &LagPage) -> String {
    let lag = &page.lag;
    let mut out = String::new();
    {
        let name = "docket_oldest_due_age_seconds";
        let mut f = Family::start(
            &mut out,
            name,
            "Seconds since the oldest due execution of the task (not picked, execution time passed) fell due; 0 when none is due.",
        );
        for t in &lag.tasks {
            f.sample(name, &[("task", t.task.as_str())], t.oldest_due_age_secs);
        }
    }
    {
        let name = "docket_oldest_due_age_seconds_by_priority";
        let mut f = Family::start(
            &mut out,
            name,
            "Seconds since the oldest due execution of the task at this priority level fell due (levels with due executions among the first counted; priority=none with priority off).",
        );
        for t in &lag.tasks {
            levels(&mut f, name, "task", &t.task, &t.levels);
        }
    }
    {
        let name = "docket_executions";
        let mut f = Family::start(
            &mut out,
            name,
            "Executions of the task by state (due, scheduled, running, dead), each counted up to docket_count_cap (see docket_executions_capped).",
        );
        for t in &lag.tasks {
            for (state, n) in [
                ("due", t.due.count),
                ("scheduled", t.scheduled.count),
                ("running", t.running.count),
                ("dead", t.dead),
            ] {
                f.sample(name, &[("task", t.task.as_str()), ("state", state)], n);
            }
        }
    }
    {
        let name = "docket_executions_capped";
        let mut f = Family::start(
            &mut out,
            name,
            "1 when counting the state stopped at docket_count_cap (there are more), else 0.",
        );
        for t in &lag.tasks {
            for (state, c) in [
                ("due", t.due),
                ("scheduled", t.scheduled),
                ("running", t.running),
            ] {
                f.sample(
                    name,
                    &[("task", t.task.as_str()), ("state", state)],
                    capped_flag(c),
                );
            }
        }
    }
    {
        let name = "docket_queue_oldest_open_age_seconds";
        let mut f = Family::start(
            &mut out,
            name,
            "Seconds since the oldest open item of the work-queue task type (assignable, arrived) arrived; 0 when none is open.",
        );
        for t in &lag.queue_types {
            f.sample(
                name,
                &[("task_type", t.task_type.as_str())],
                t.oldest_open_age_secs,
            );
        }
    }
    {
        let name = "docket_queue_oldest_open_age_seconds_by_priority";
        let mut f = Family::start(
            &mut out,
            name,
            "Seconds since the oldest open item of the task type at this priority level arrived.",
        );
        for t in &lag.queue_types {
            levels(&mut f, name, "task_type", &t.task_type, &t.levels);
        }
    }
    {
        let name = "docket_queue_items";
        let mut f = Family::start(
            &mut out,
            name,
            "Items of the task type: open (assignable, arrived) and not_arrived, each counted up to docket_count_cap.",
        );
        for t in &lag.queue_types {
            f.sample(
                name,
                &[("task_type", t.task_type.as_str()), ("state", "open")],
                t.open.count,
            );
            f.sample(
                name,
                &[
                    ("task_type", t.task_type.as_str()),
                    ("state", "not_arrived"),
                ],
                t.not_arrived.count,
            );
        }
    }
    {
        let name = "docket_queue_items_capped";
        let mut f = Family::start(
            &mut out,
            name,
            "1 when counting the items stopped at docket_count_cap, else 0.",
        );
        for t in &lag.queue_types {
            f.sample(
                name,
                &[("task_type", t.task_type.as_str()), ("state", "open")],
                capped_flag(t.open),
            );
            f.sample(
                name,
                &[
                    ("task_type", t.task_type.as_str()),
                    ("state", "not_arrived"),
                ],
                capped_flag(t.not_arrived),
            );
        }
    }
    {
        let name = "docket_task_paused";
        let mut f = Family::start(
            &mut out,
            name,
            "1 for each task paused cluster-wide (no scheduler claims it); paused tasks only, the first 200 by name.",
        );
        for p in &lag.paused {
            f.sample(name, &[("task", p.task.as_str())], 1);
        }
    }
    Family::start(
        &mut out,
        "docket_paused_tasks",
        "Tasks paused cluster-wide, in all.",
    )
    .sample("docket_paused_tasks", &[], lag.paused_total as i64);
    limit_families(&mut out, lag);
    {
        let name = "docket_lag_unreadable";
        let mut f = Family::start(
            &mut out,
            name,
            "1 for each task name (or part: \"paused tasks\") whose rows could not be read: a row holds a value docket cannot decode; its lag is missing.",
        );
        for u in &lag.unreadable {
            f.sample(name, &[("task", u.what.as_str())], 1);
        }
    }
    Family::start(
        &mut out,
        "docket_count_cap",
        "Each count stops at this many rows.",
    )
    .sample("docket_count_cap", &[], lag.cap);
    Family::start(
        &mut out,
        "docket_names_capped",
        "1 when the table holds more task names than the metrics read (the first by name are shown), else 0.",
    )
    .sample("docket_names_capped", &[], u8::from(lag.names_capped));
    Family::start(
        &mut out,
        "docket_lag_read_seconds",
        "Seconds the database reads behind this scrape took.",
    )
    .sample("docket_lag_read_seconds", &[], lag.read_secs);
    out
}

/// A limit gauge: its name, its help, and its value for a limit (`None`: no sample).
type LimitGauge = (&'static str, &'static str, fn(&LimitView) -> Option<f64>);

/// The limits' gauges: each bound a limited task has (no sample for a bound it has not), and
/// what it holds now.
fn limit_families(out: &mut String, lag: &LagView) {
    let gauges: [LimitGauge; 11] = [
        (
            "docket_limit_max_running",
            "At most this many executions of the task running at once across all schedulers (limited tasks with this limit only).",
            |l| l.max_running.map(f64::from),
        ),
        (
            "docket_limit_rate",
            "At most this many starts of the task in any window of docket_limit_rate_window_seconds.",
            |l| l.rate.as_ref().map(|r| f64::from(r.count)),
        ),
        (
            "docket_limit_rate_window_seconds",
            "The window of the task's rate limit, in seconds.",
            |l| l.rate.as_ref().map(|r| r.per_ms as f64 / 1000.0),
        ),
        (
            "docket_limit_max_running_per_key",
            "At most this many executions of one limit key running at once.",
            |l| l.max_running_per_key.map(f64::from),
        ),
        (
            "docket_limit_rate_per_key",
            "At most this many starts of one limit key in any window of docket_limit_rate_per_key_window_seconds.",
            |l| l.rate_per_key.as_ref().map(|r| f64::from(r.count)),
        ),
        (
            "docket_limit_rate_per_key_window_seconds",
            "The window of the task's per-key rate limit, in seconds.",
            |l| l.rate_per_key.as_ref().map(|r| r.per_ms as f64 / 1000.0),
        ),
        (
            "docket_limit_running",
            "Executions of the limited task picked now, across all schedulers.",
            |l| Some(l.running as f64),
        ),
        (
            "docket_limit_running_keys",
            "Limit keys of the task with at least one execution picked now.",
            |l| Some(l.running_keys as f64),
        ),
        (
            "docket_limit_started_in_window",
            "Starts of the task in the last window of its rate limit (of the per-key one when it has none); 0 without a rate limit.",
            |l| Some(l.started_in_window as f64),
        ),
        (
            "docket_limit_due_waiting",
            "Due executions of the limited task not picked: held back while a limit is full; counted up to docket_count_cap (see docket_limit_due_waiting_capped).",
            |l| Some(l.due_waiting.count as f64),
        ),
        (
            "docket_limit_due_waiting_capped",
            "1 when counting the due executions of the limited task stopped at docket_count_cap, else 0.",
            |l| Some(f64::from(u8::from(l.due_waiting.capped))),
        ),
    ];
    for (name, help, value) in gauges {
        let mut f = Family::start(out, name, help);
        for l in &lag.limits {
            if let Some(v) = value(l) {
                f.sample(name, &[("task", l.task.as_str())], v);
            }
        }
    }
    Family::start(
        out,
        "docket_limited_tasks",
        "Tasks with limits, in all (the docket_limit_* gauges cover the first 200 by name).",
    )
    .sample("docket_limited_tasks", &[], lag.limits_total as i64);
}

fn levels(f: &mut Family<'_>, name: &str, key: &str, value: &str, levels: &[LevelAge]) {
    for l in levels {
        f.sample(
            name,
            &[(key, value), ("priority", &level(l.priority))],
            l.age_secs,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(level(None), "none");
        assert_eq!(level(Some(-3)), "-3");
    }

    /// A task name with a quote, a backslash, a line feed and a bidi override stays one
    /// sample on one line, and the scrape still parses.
    #[test]
    fn hostile_task_names_stay_one_sample() {
        use crate::model::{Meta, TaskLag};
        let hostile = "we\"ird\\na\nme\u{202E}";
        let task = TaskLag {
            task: hostile.to_owned(),
            oldest_due: None,
            oldest_due_age_secs: 42,
            due: Capped::default(),
            scheduled: Capped::default(),
            running: Capped::default(),
            dead: 0,
            paused: false,
            levels: Vec::new(),
        };
        let page = LagPage {
            meta: Meta {
                now: chrono::Utc::now(),
                backend: "sqlite",
                table: "t".into(),
                priority: false,
                read_only: true,
                dead_after_secs: 1800,
            },
            lag: LagView {
                cap: 1000,
                names_read: 1,
                names_capped: false,
                tasks: vec![task],
                queue_types: Vec::new(),
                paused: Vec::new(),
                paused_total: 0,
                limits: Vec::new(),
                limits_total: 0,
                unreadable: Vec::new(),
                read_secs: 0.0,
            },
        };
        let text = render(&page);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("docket_oldest_due_age_seconds{"))
            .collect();
        assert_eq!(
            lines,
            ["docket_oldest_due_age_seconds{task=\"we\\\"ird\\\\na\\nme\u{202E}\"} 42"]
        );
        let scrape =
            prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
        let ages: Vec<_> = scrape
            .samples
            .iter()
            .filter(|s| s.metric == "docket_oldest_due_age_seconds")
            .map(|s| s.value.clone())
            .collect();
        assert_eq!(ages, [prometheus_parse::Value::Gauge(42.0)]);
    }
}
