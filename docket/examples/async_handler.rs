//! Async handlers: a handler that returns a future, run on a tokio runtime (here one docket
//! owns; `AsyncRuntime::from_handle` / `AsyncRuntime::current` take the application's). The
//! worker thread that picked the execution waits for the future, so `threads` still bounds how
//! many run at once; the awaits of several handlers overlap.
//!
//! `cargo run -p docket --example async_handler`

mod common;

use docket::scheduler::AsyncRuntime;
use docket::{Scheduler, StoreConfig, Task, TaskDescriptor};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Serialize, Deserialize)]
struct Fetch {
    url: String,
    /// Simulated network time.
    latency_ms: u64,
}

const FETCH: TaskDescriptor<Fetch> = TaskDescriptor::new("fetch");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, url) = common::temp_database()?;
    let store = docket::sqlite::connect(&url, StoreConfig::default())?;
    docket::sqlite::migrate(&store, None)?;

    let fetched = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&fetched);
    let fetch = Task::typed_async(FETCH, AsyncRuntime::owned()?, move |job: Fetch, ctx| {
        let count = Arc::clone(&count);
        async move {
            // Any async code: an HTTP client, an async database driver, a timer.
            tokio::time::sleep(Duration::from_millis(job.latency_ms)).await;
            println!("{}: fetched {}", ctx.key.task_instance, job.url);
            count.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    });
    let scheduler = Scheduler::builder(Arc::new(store))
        .task(fetch)
        .config(common::quick_config("async-example", 4))
        .build()?;

    let client = scheduler.client();
    for i in 1..=4 {
        client.schedule(FETCH.instance(format!("page-{i}")).data(Fetch {
            url: format!("https://example.com/{i}"),
            latency_ms: 500,
        }))?;
    }
    let started = Instant::now();
    scheduler.start()?;
    common::wait_until("four fetches", || fetched.load(Ordering::SeqCst) == 4)?;
    let took = started.elapsed();
    scheduler.stop();
    println!("4 fetches of 500 ms each took {took:?} on 4 workers");
    assert!(
        took < Duration::from_millis(1900),
        "the awaits overlapped: {took:?}"
    );
    Ok(())
}
