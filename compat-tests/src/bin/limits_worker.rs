//! A scheduler process for the limits suite (`tests/limits.rs`): runs the `reliab` task with a
//! limit until its standard input closes, recording every handler's start and end.
//!
//! Takes the arguments of `reliab_worker` (so that the reliability suite's cluster starts it):
//! `limits_worker BACKEND URL POLLING THREADS NAME LOG HEARTBEAT_MS WORK_MS`, and from the
//! environment `LIMITS_LIMIT` (`max_running=N`, `max_running_per_key=N` or `rate=N/MS`),
//! `LIMITS_RECORDS` (the records file) and `RELIAB_POLLING_MS` (the polling interval, default
//! 50 ms; the short poll of backends without wake-up signals backs off up to it).
//!
//! LOG gets `<instance> <worker>` at each start (as `reliab_worker` writes it); the records
//! file gets `S <instance> <worker> <unix ns> <claimed ns>` when a handler starts (with the time
//! its claim stamped on it) and `E <instance> <worker> <unix ns>` when it ends, each line one `write` to a file opened for appending, so lines of
//! concurrent threads and processes never interleave and a `kill -9` loses nothing written.
//! `LOG.events` gets the scheduler's warnings and errors and its counted events (`dead`,
//! `failed`, `poll-failed`), for a failed case to show; with `RELIAB_DEBUG` (any value) also
//! docket's debug lines (polls, clock samples).

use docket_compat_tests::backends::connect;
use docket_core::{
    PollingStrategy, Scheduler, SchedulerConfig, SchedulerEvent, ShortPoll, StoreConfig, Task,
    TaskDescriptor, TaskLimit,
};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const RELIAB: TaskDescriptor = TaskDescriptor::new("reliab");

fn arg(args: &[String], i: usize, what: &str) -> Result<String, String> {
    args.get(i)
        .cloned()
        .ok_or_else(|| format!("missing argument {i}: {what}"))
}

fn number(text: &str, what: &str) -> Result<u64, String> {
    text.parse().map_err(|e| format!("{what} {text:?}: {e}"))
}

/// Appends one line with one `write`.
fn append(file: &File, line: &str) {
    let _ = (&*file).write_all(format!("{}\n", line.replace('\n', " ")).as_bytes());
}

/// Nanoseconds since the Unix epoch, on this machine's clock (every process of a case runs on
/// the same machine, so their records compare).
fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The limit `LIMITS_LIMIT` describes, on the `reliab` task.
fn limit(spec: &str) -> Result<TaskLimit, String> {
    let (kind, value) = spec
        .split_once('=')
        .ok_or_else(|| format!("LIMITS_LIMIT {spec:?}: expected KIND=VALUE"))?;
    let limit = TaskLimit::new(RELIAB.name());
    Ok(match kind {
        "max_running" => limit.max_running(number(value, "max_running")? as u32),
        "max_running_per_key" => {
            limit.max_running_per_key(number(value, "max_running_per_key")? as u32)
        }
        "rate" => {
            let (n, ms) = value
                .split_once('/')
                .ok_or_else(|| format!("rate {value:?}: expected N/MS"))?;
            limit.rate_limit(
                number(n, "rate count")? as u32,
                Duration::from_millis(number(ms, "rate window ms")?),
            )
        }
        other => return Err(format!("unknown limit {other:?}")),
    })
}

/// The scheduler's warnings and errors, one line each, into the events file.
struct Warnings(Arc<File>);

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
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={v:?}", f.name()));
            }
        }
        let now = now_ns() / 1_000_000;
        let mut fields = Fields(format!("{} {now}", event.metadata().level()));
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
    let threads = number(&arg(&args, 3, "threads")?, "threads")? as usize;
    let name = arg(&args, 4, "name")?;
    let log_path = arg(&args, 5, "log")?;
    let heartbeat = Duration::from_millis(number(&arg(&args, 6, "heartbeat ms")?, "heartbeat")?);
    let work = Duration::from_millis(number(&arg(&args, 7, "work ms")?, "work ms")?);
    let limit = limit(&std::env::var("LIMITS_LIMIT").map_err(|_| "LIMITS_LIMIT not set")?)?;
    let records_path = std::env::var("LIMITS_RECORDS").map_err(|_| "LIMITS_RECORDS not set")?;
    let polling_interval = Duration::from_millis(match std::env::var("RELIAB_POLLING_MS") {
        Ok(v) => number(&v, "RELIAB_POLLING_MS")?,
        Err(_) => 50,
    });

    let open = |path: &str| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("open {path}: {e}"))
    };
    let log = open(&log_path)?;
    let records = open(&records_path)?;
    let events = Arc::new(open(&format!("{log_path}.events"))?);
    tracing::subscriber::set_global_default(Warnings(Arc::clone(&events)))
        .map_err(|e| e.to_string())?;
    let store =
        connect(&backend, &url, StoreConfig::with_priority(true)).map_err(|e| e.to_string())?;
    let me = name.clone();
    let task = Task::one_time(RELIAB, move |e, _| {
        let instance = &e.task_instance;
        let start = now_ns();
        // The claim's time (its heartbeat stamp): how long the execution waited to start.
        let claimed = e
            .last_heartbeat
            .and_then(|t| t.timestamp_nanos_opt())
            .unwrap_or(0);
        append(&records, &format!("S {instance} {me} {start} {claimed}"));
        append(&log, &format!("{instance} {me}"));
        std::thread::sleep(work);
        append(&records, &format!("E {instance} {me} {}", now_ns()));
        Ok(())
    });
    let listener = move |event: &SchedulerEvent| match event {
        SchedulerEvent::DeadExecution(e) => append(&events, &format!("dead {}", e.task_instance)),
        SchedulerEvent::ExecutionFailed { execution, .. } => {
            append(&events, &format!("failed {}", execution.task_instance));
        }
        SchedulerEvent::PollFailed { error } => append(&events, &format!("poll-failed {error}")),
        _ => {}
    };
    let scheduler = Scheduler::builder(store)
        .task(task)
        .limit(limit)
        .listener(Arc::new(listener))
        .config(SchedulerConfig {
            threads,
            polling,
            polling_interval,
            short_poll: Some(ShortPoll {
                min: Duration::from_millis(10).min(polling_interval),
                max: polling_interval,
            }),
            heartbeat_interval: heartbeat,
            missed_heartbeats_limit: 4,
            scheduler_name: name,
            shutdown_max_wait: Duration::from_secs(150),
            ..SchedulerConfig::default()
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
        eprintln!("limits_worker: {e}");
        std::process::exit(2);
    }
}
