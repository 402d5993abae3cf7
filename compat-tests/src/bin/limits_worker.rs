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
//! `LOG.events` gets the scheduler's warnings and errors and its counted events (`lost`,
//! `dead`, `failed`, `poll-failed`), for a failed case to show; with `RELIAB_DEBUG` (any value) also
//! docket's debug lines (polls, clock samples).

use docket_compat_tests::backends::connect;
use docket_compat_tests::worker::{
    append, counted_events, main_of, now_ns, number, open_append, polling_interval,
    run_until_stdin_closes, Stamp, WorkerArgs,
};
use docket_core::{
    Scheduler, SchedulerConfig, ShortPoll, StoreConfig, Task, TaskDescriptor, TaskLimit,
};
use std::time::Duration;

const RELIAB: TaskDescriptor = TaskDescriptor::new("reliab");

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

fn run() -> Result<(), String> {
    let args = WorkerArgs::from_env()?;
    let limit = limit(&std::env::var("LIMITS_LIMIT").map_err(|_| "LIMITS_LIMIT not set")?)?;
    let records_path = std::env::var("LIMITS_RECORDS").map_err(|_| "LIMITS_RECORDS not set")?;
    let polling_interval = polling_interval(50)?;
    let (log, events) = args.open_logs(Stamp::UnixMillis)?;
    let records = open_append(&records_path)?;
    let store = connect(&args.backend, &args.url, StoreConfig::with_priority(true))
        .map_err(|e| e.to_string())?;
    let me = args.name.clone();
    let work = args.work;
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
    let scheduler = Scheduler::builder(store)
        .task(task)
        .limit(limit)
        .listener(counted_events(events))
        .config(SchedulerConfig {
            short_poll: Some(ShortPoll {
                min: Duration::from_millis(10).min(polling_interval),
                max: polling_interval,
            }),
            ..args.config(polling_interval)
        })
        .build()
        .map_err(|e| e.to_string())?;
    run_until_stdin_closes(&scheduler)
}

fn main() {
    main_of("limits_worker", run);
}
