//! A scheduler process for the reliability suite: runs the `reliab` task on one space until its
//! standard input closes, appending `<instance> <worker>` to a log file at the start of every
//! run (one `write` per line, so a `kill -9` loses nothing already recorded).
//!
//! `reliab_worker BACKEND URL POLLING THREADS NAME LOG HEARTBEAT_MS WORK_MS [FLUSH_MS]`
//! with POLLING `fetch` or `lock-and-fetch`; with FLUSH_MS, outcomes are written only once the
//! oldest has waited that long (the batch size being unbounded), to crash with them pending.
//!
//! Beside LOG, `LOG.events` gets one line per scheduler event the tests count
//! (`lost INSTANCE`, `dead INSTANCE`, `failed INSTANCE`, `poll-failed ERROR`) and one per
//! warning or error the scheduler logs (`WARN +MSms message key=value...`, `ERROR ...`, MS
//! counted from the worker's start): a fenced
//! heartbeat is only a warning. Instances whose id starts with `fail-` fail every time (the
//! task's default policy retries them 5 minutes later), so the tests see failures and
//! reschedules written too. `RELIAB_PRIORITY=off` makes it a priority-off scheduler;
//! `RELIAB_CLOCK_CORRECTION=off` one on its own clock, uncorrected by the server's;
//! `RELIAB_DEBUG` (any value) adds docket's debug lines (polls, clock samples) to the events;
//! `RELIAB_POLLING_MS` sets the polling interval (default 100).

use docket_compat_tests::backends::connect;
use docket_core::{
    PollingStrategy, Scheduler, SchedulerConfig, SchedulerEvent, StoreConfig, Task, TaskDescriptor,
    TaskError,
};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

const RELIAB: TaskDescriptor = TaskDescriptor::new("reliab");

fn arg(args: &[String], i: usize, what: &str) -> Result<String, String> {
    args.get(i)
        .cloned()
        .ok_or_else(|| format!("missing argument {i}: {what}"))
}

fn number(args: &[String], i: usize, what: &str) -> Result<u64, String> {
    arg(args, i, what)?
        .parse()
        .map_err(|e| format!("{what}: {e}"))
}

/// Appends one line with one `write` (lines of concurrent threads never interleave).
fn append(file: &File, line: &str) {
    let _ = (&*file).write_all(format!("{}\n", line.replace('\n', " ")).as_bytes());
}

/// The scheduler's warnings and errors, one line each, into the events file, with the
/// milliseconds since the worker started (`WARN +1234ms message key=value ...`).
struct Warnings(Arc<File>, std::time::Instant);

/// Formats an event's fields as `message key=value ...`.
struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, " {value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

impl tracing::Subscriber for Warnings {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
            || (std::env::var("RELIAB_DEBUG").is_ok() && metadata.target().starts_with("docket"))
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(format!(
            "{} +{}ms",
            event.metadata().level(),
            self.1.elapsed().as_millis()
        ));
        event.record(&mut fields);
        append(&self.0, &fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let backend = arg(&args, 0, "backend")?;
    let url = arg(&args, 1, "url")?;
    let polling = match arg(&args, 2, "polling")?.as_str() {
        "fetch" => PollingStrategy::fetch(),
        "lock-and-fetch" => PollingStrategy::lock_and_fetch(),
        other => return Err(format!("unknown polling strategy {other:?}")),
    };
    let threads = number(&args, 3, "threads")? as usize;
    let name = arg(&args, 4, "name")?;
    let log_path = arg(&args, 5, "log")?;
    let heartbeat = Duration::from_millis(number(&args, 6, "heartbeat ms")?);
    let work = Duration::from_millis(number(&args, 7, "work ms")?);
    let defaults = SchedulerConfig::default();
    let (batch, flush) = match args.get(8) {
        Some(_) => (
            usize::MAX,
            Duration::from_millis(number(&args, 8, "flush ms")?),
        ),
        None => (
            defaults.completion_batch_size,
            defaults.completion_flush_interval,
        ),
    };

    let open = |path: &str| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("open {path}: {e}"))
    };
    let log = open(&log_path)?;
    let events = Arc::new(open(&format!("{log_path}.events"))?);
    tracing::subscriber::set_global_default(Warnings(
        Arc::clone(&events),
        std::time::Instant::now(),
    ))
    .map_err(|e| e.to_string())?;
    // RELIAB_PRIORITY=off: a priority-off scheduler (due-queries without the priority order).
    let priority = std::env::var("RELIAB_PRIORITY").map_or(true, |v| v != "off");
    // RELIAB_CLOCK_CORRECTION=off: the node's clock as it is (the skew test without the fix).
    let clock_correction = std::env::var("RELIAB_CLOCK_CORRECTION").map_or(true, |v| v != "off");
    // RELIAB_POLLING_MS: the polling interval (default 100 ms); a long one leaves finding new
    // work after a failed poll to the wake-up listener (the failover case).
    let polling_interval = Duration::from_millis(match std::env::var("RELIAB_POLLING_MS") {
        Ok(v) => v.parse().map_err(|e| format!("RELIAB_POLLING_MS: {e}"))?,
        Err(_) => 100,
    });
    let store =
        connect(&backend, &url, StoreConfig::with_priority(priority)).map_err(|e| e.to_string())?;
    let me = name.clone();
    let task = Task::one_time(RELIAB, move |e, _| {
        let line = format!("{} {me}\n", e.task_instance);
        (&log).write_all(line.as_bytes()).map_err(TaskError::from)?;
        std::thread::sleep(work);
        if e.task_instance.starts_with("fail-") {
            return Err(TaskError::new("fails on purpose"));
        }
        Ok(())
    });
    let listener = move |event: &SchedulerEvent| match event {
        SchedulerEvent::LostExecution(e) => append(&events, &format!("lost {}", e.task_instance)),
        SchedulerEvent::DeadExecution(e) => append(&events, &format!("dead {}", e.task_instance)),
        SchedulerEvent::ExecutionFailed { execution, .. } => {
            append(&events, &format!("failed {}", execution.task_instance));
        }
        SchedulerEvent::PollFailed { error } => append(&events, &format!("poll-failed {error}")),
        _ => {}
    };
    let scheduler = Scheduler::builder(store)
        .task(task)
        .listener(Arc::new(listener))
        .config(SchedulerConfig {
            threads,
            polling,
            polling_interval,
            heartbeat_interval: heartbeat,
            missed_heartbeats_limit: 4,
            scheduler_name: name,
            // Longer than MariaDB's default lock wait (50 s): a stop that releases queued
            // executions can wait behind another process's claim that long (two clean-clone
            // CI runs saw a MariaDB worker outlast a 60 s wait; what was busy is now logged).
            shutdown_max_wait: Duration::from_secs(150),
            completion_batch_size: batch,
            completion_flush_interval: flush,
            clock_correction,
            ..defaults
        })
        .build()
        .map_err(|e| e.to_string())?;
    scheduler.start().map_err(|e| e.to_string())?;
    // Run until the parent closes our standard input.
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    if scheduler.stop() {
        Ok(())
    } else {
        Err("running executions did not finish within the shutdown wait".into())
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("reliab_worker: {e}");
        std::process::exit(2);
    }
}
