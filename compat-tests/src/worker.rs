//! What the scheduler processes of the multi-process suites share (the `reliab_worker` and
//! `limits_worker` binaries, which the reliability suite's cluster
//! starts alike): their arguments
//! `BACKEND URL POLLING THREADS NAME LOG HEARTBEAT_MS WORK_MS [MORE...]`, the files they append
//! to (one `write` per line, so lines of concurrent threads and processes never interleave and
//! a `kill -9` loses nothing written), the events file `LOG.events` that gets the scheduler's
//! warnings, errors and counted events, and running until the parent closes their standard
//! input.

use docket_core::{PollingStrategy, Scheduler, SchedulerConfig, SchedulerEvent, SchedulerListener};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Argument `i` of `args`; `what` names it in the error when it is missing.
pub fn arg(args: &[String], i: usize, what: &str) -> Result<String, String> {
    args.get(i)
        .cloned()
        .ok_or_else(|| format!("missing argument {i}: {what}"))
}

/// `text` as a whole number; `what` names it in the error.
pub fn number(text: &str, what: &str) -> Result<u64, String> {
    text.parse().map_err(|e| format!("{what} {text:?}: {e}"))
}

/// The arguments every worker takes, in this order.
#[derive(Debug)]
pub struct WorkerArgs {
    /// The backend's name (see [`crate::backends::connect`]).
    pub backend: String,
    /// The database URL.
    pub url: String,
    /// `fetch` or `lock-and-fetch`.
    pub polling: PollingStrategy,
    /// Scheduler threads.
    pub threads: usize,
    /// The scheduler's name, written after the instance in LOG.
    pub name: String,
    /// The log file (`<instance> <worker>` at each start); its events file is beside it.
    pub log_path: String,
    /// The heartbeat interval.
    pub heartbeat: Duration,
    /// How long each handler works.
    pub work: Duration,
    /// The arguments after these, the worker's own.
    pub more: Vec<String>,
}

impl WorkerArgs {
    /// Reads the process's arguments.
    pub fn from_env() -> Result<Self, String> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let polling = match arg(&args, 2, "polling")?.as_str() {
            "fetch" => PollingStrategy::fetch(),
            "lock-and-fetch" => PollingStrategy::lock_and_fetch(),
            other => return Err(format!("unknown polling strategy {other:?}")),
        };
        let millis =
            |i, what| Ok::<_, String>(Duration::from_millis(number(&arg(&args, i, what)?, what)?));
        Ok(Self {
            backend: arg(&args, 0, "backend")?,
            url: arg(&args, 1, "url")?,
            polling,
            threads: number(&arg(&args, 3, "threads")?, "threads")? as usize,
            name: arg(&args, 4, "name")?,
            log_path: arg(&args, 5, "log")?,
            heartbeat: millis(6, "heartbeat ms")?,
            // `RELIAB_WORK_MS` sets one process's apart from the others' (a case whose victim
            // must still hold executions when its fault begins).
            work: match std::env::var("RELIAB_WORK_MS") {
                Ok(ms) => Duration::from_millis(number(&ms, "RELIAB_WORK_MS")?),
                Err(_) => millis(7, "work ms")?,
            },
            more: args.get(8..).unwrap_or_default().to_vec(),
        })
    }

    /// The configuration both workers run with, polling every `polling_interval`: these
    /// threads, strategy, heartbeat and name, dead after 4 missed heartbeats, and a shutdown
    /// wait longer than MariaDB's default lock wait (50 s): a stop that releases queued
    /// executions can wait behind another process's claim that long (two clean-clone CI runs
    /// saw a MariaDB worker outlast a 60 s wait; what was busy is now logged).
    pub fn config(&self, polling_interval: Duration) -> SchedulerConfig {
        SchedulerConfig {
            threads: self.threads,
            polling: self.polling,
            polling_interval,
            heartbeat_interval: self.heartbeat,
            missed_heartbeats_limit: 4,
            scheduler_name: self.name.clone(),
            shutdown_max_wait: Duration::from_secs(150),
            ..SchedulerConfig::default()
        }
    }

    /// Opens LOG and its events file (`LOG.events`) for appending, and sends the scheduler's
    /// warnings and errors to the events file, each line stamped as `stamp` says.
    pub fn open_logs(&self, stamp: Stamp) -> Result<(File, Arc<File>), String> {
        let log = open_append(&self.log_path)?;
        let events = Arc::new(open_append(&format!("{}.events", self.log_path))?);
        tracing::subscriber::set_global_default(Warnings {
            file: Arc::clone(&events),
            stamp,
            started: Instant::now(),
        })
        .map_err(|e| e.to_string())?;
        Ok((log, events))
    }
}

/// The polling interval `RELIAB_POLLING_MS` sets, `default_ms` without it.
pub fn polling_interval(default_ms: u64) -> Result<Duration, String> {
    Ok(Duration::from_millis(
        match std::env::var("RELIAB_POLLING_MS") {
            Ok(v) => number(&v, "RELIAB_POLLING_MS")?,
            Err(_) => default_ms,
        },
    ))
}

/// Opens `path` for appending, creating it when missing.
pub fn open_append(path: &str) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("open {path}: {e}"))
}

/// Appends one line with one `write` (lines of concurrent threads never interleave).
pub fn append(file: &File, line: &str) {
    let _ = (&*file).write_all(format!("{}\n", line.replace('\n', " ")).as_bytes());
}

/// Nanoseconds since the Unix epoch, on this machine's clock (every process of a case runs on
/// the same machine, so their records compare).
pub fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// A listener appending a line to `events` for each event the tests count (`lost INSTANCE`,
/// `dead INSTANCE`, `failed INSTANCE`, `poll-failed ERROR`).
pub fn counted_events(events: Arc<File>) -> Arc<dyn SchedulerListener> {
    Arc::new(move |event: &SchedulerEvent| match event {
        SchedulerEvent::LostExecution(e) => append(&events, &format!("lost {}", e.task_instance)),
        SchedulerEvent::DeadExecution(e) => append(&events, &format!("dead {}", e.task_instance)),
        SchedulerEvent::ExecutionFailed { execution, .. } => {
            append(&events, &format!("failed {}", execution.task_instance));
        }
        SchedulerEvent::PollFailed { error } => append(&events, &format!("poll-failed {error}")),
        _ => {}
    })
}

/// Starts `scheduler`, runs it until the parent closes our standard input, then stops it;
/// fails when running executions did not finish within the shutdown wait.
pub fn run_until_stdin_closes(scheduler: &Scheduler) -> Result<(), String> {
    scheduler.start().map_err(|e| e.to_string())?;
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

/// Runs a worker's `run`; on an error, prints it after the worker's `name` and exits with
/// status 2.
pub fn main_of(name: &str, run: fn() -> Result<(), String>) {
    if let Err(e) = run() {
        eprintln!("{name}: {e}");
        std::process::exit(2);
    }
}

/// How a line of the events file is stamped.
#[derive(Debug, Clone, Copy)]
pub enum Stamp {
    /// `+MSms`, the milliseconds since the worker started.
    SinceStart,
    /// The milliseconds since the Unix epoch (to compare with other processes' records).
    UnixMillis,
}

/// The scheduler's warnings and errors, one line each (`LEVEL STAMP message key=value ...`),
/// into the events file; with `RELIAB_DEBUG` (any value) also docket's debug lines (polls,
/// clock samples).
struct Warnings {
    file: Arc<File>,
    stamp: Stamp,
    started: Instant,
}

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
        let level = event.metadata().level();
        let mut fields = Fields(match self.stamp {
            Stamp::SinceStart => format!("{level} +{}ms", self.started.elapsed().as_millis()),
            Stamp::UnixMillis => format!("{level} {}", now_ns() / 1_000_000),
        });
        event.record(&mut fields);
        append(&self.file, &fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
