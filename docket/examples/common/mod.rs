//! What the examples share: a throwaway SQLite file, a scheduler configuration that polls
//! often (so each example finishes in a few seconds), and a bounded wait.
#![allow(dead_code)]

use docket::prelude::{PollingStrategy, SchedulerConfig};
use std::time::{Duration, Instant};

/// A fresh SQLite database file in a temporary directory (removed when the guard drops), and
/// its URL.
pub fn temp_database() -> Result<(tempfile::TempDir, String), std::io::Error> {
    let dir = tempfile::Builder::new()
        .prefix("docket-example-")
        .tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("example.db").display());
    Ok((dir, url))
}

/// A scheduler that polls every 50 ms (the default is 10 s) with `threads` workers.
pub fn quick_config(name: &str, threads: usize) -> SchedulerConfig {
    SchedulerConfig {
        threads,
        polling: PollingStrategy::lock_and_fetch(),
        polling_interval: Duration::from_millis(50),
        shutdown_max_wait: Duration::from_secs(5),
        scheduler_name: name.to_owned(),
        ..SchedulerConfig::default()
    }
}

/// Waits (checking every 20 ms) until `done` holds; an error naming `what` after 10 s.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
