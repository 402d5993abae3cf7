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
use docket_compat_tests::worker::{
    counted_events, main_of, polling_interval, run_until_stdin_closes, Stamp, WorkerArgs,
};
use docket_core::{Scheduler, SchedulerConfig, StoreConfig, Task, TaskDescriptor, TaskError};
use std::io::Write;
use std::time::Duration;

const RELIAB: TaskDescriptor = TaskDescriptor::new("reliab");

fn run() -> Result<(), String> {
    let args = WorkerArgs::from_env()?;
    let defaults = SchedulerConfig::default();
    let (batch, flush) = match args.more.first() {
        Some(ms) => (
            usize::MAX,
            Duration::from_millis(docket_compat_tests::worker::number(ms, "flush ms")?),
        ),
        None => (
            defaults.completion_batch_size,
            defaults.completion_flush_interval,
        ),
    };
    let (log, events) = args.open_logs(Stamp::SinceStart)?;
    // RELIAB_PRIORITY=off: a priority-off scheduler (due-queries without the priority order).
    let priority = std::env::var("RELIAB_PRIORITY").map_or(true, |v| v != "off");
    // RELIAB_CLOCK_CORRECTION=off: the node's clock as it is (the skew test without the fix).
    let clock_correction = std::env::var("RELIAB_CLOCK_CORRECTION").map_or(true, |v| v != "off");
    // RELIAB_POLLING_MS: the polling interval (default 100 ms); a long one leaves finding new
    // work after a failed poll to the wake-up listener (the failover case).
    let polling_interval = polling_interval(100)?;
    let store = connect(
        &args.backend,
        &args.url,
        StoreConfig::with_priority(priority),
    )
    .map_err(|e| e.to_string())?;
    let me = args.name.clone();
    let work = args.work;
    let task = Task::one_time(RELIAB, move |e, _| {
        let line = format!("{} {me}\n", e.task_instance);
        (&log).write_all(line.as_bytes()).map_err(TaskError::from)?;
        std::thread::sleep(work);
        if e.task_instance.starts_with("fail-") {
            return Err(TaskError::new("fails on purpose"));
        }
        Ok(())
    });
    let scheduler = Scheduler::builder(store)
        .task(task)
        .listener(counted_events(events))
        .config(SchedulerConfig {
            completion_batch_size: batch,
            completion_flush_interval: flush,
            clock_correction,
            ..args.config(polling_interval)
        })
        .build()
        .map_err(|e| e.to_string())?;
    run_until_stdin_closes(&scheduler)
}

fn main() {
    main_of("reliab_worker", run);
}
