//! A scheduler process for the reliability suite: runs the `reliab` task on one space until its
//! standard input closes, appending `<instance> <worker>` to a log file at the start of every
//! run (one `write` per line, so a `kill -9` loses nothing already recorded).
//!
//! `reliab_worker BACKEND URL POLLING THREADS NAME LOG HEARTBEAT_MS WORK_MS [FLUSH_MS]`
//! with POLLING `fetch` or `lock-and-fetch`; with FLUSH_MS, outcomes are written only once the
//! oldest has waited that long (the batch size being unbounded), to crash with them pending.

use docket_compat_tests::backends::connect;
use docket_core::{
    PollingStrategy, Scheduler, SchedulerConfig, StoreConfig, Task, TaskDescriptor, TaskError,
};
use std::fs::OpenOptions;
use std::io::{BufRead, Write};
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

    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("open {log_path}: {e}"))?;
    let store =
        connect(&backend, &url, StoreConfig::with_priority(true)).map_err(|e| e.to_string())?;
    let me = name.clone();
    let task = Task::one_time(RELIAB, move |e, _| {
        let line = format!("{} {me}\n", e.task_instance);
        (&log).write_all(line.as_bytes()).map_err(TaskError::from)?;
        std::thread::sleep(work);
        Ok(())
    });
    let scheduler = Scheduler::builder(store)
        .task(task)
        .config(SchedulerConfig {
            threads,
            polling,
            polling_interval: Duration::from_millis(100),
            heartbeat_interval: heartbeat,
            missed_heartbeats_limit: 4,
            scheduler_name: name,
            shutdown_max_wait: Duration::from_secs(60),
            completion_batch_size: batch,
            completion_flush_interval: flush,
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
