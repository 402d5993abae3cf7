//! One-time tasks: each instance runs once, then its row is removed. Instances are
//! schedule-if-not-exists (scheduling an existing one is a no-op), and an instance can be
//! scheduled for later.
//!
//! `cargo run -p docket --example one_time`

mod common;

use docket::scheduler::ListFilter;
use docket::{ScheduleOutcome, Scheduler, StoreConfig, Task, TaskDescriptor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const REPORT: TaskDescriptor = TaskDescriptor::new("report");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, url) = common::temp_database()?;
    let store = docket::sqlite::connect(&url, StoreConfig::default())?;
    docket::sqlite::migrate(&store, None)?;

    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let report = Task::one_time(REPORT, move |execution, ctx| {
        println!(
            "ran {}/{} on {}",
            execution.task_name, execution.task_instance, ctx.scheduler_name
        );
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let scheduler = Scheduler::builder(Arc::new(store))
        .task(report)
        .config(common::quick_config("one-time-example", 2))
        .build()?;
    scheduler.start()?;
    let client = scheduler.client();

    for id in ["monday", "tuesday"] {
        assert_eq!(
            client.schedule(REPORT.instance(id))?,
            ScheduleOutcome::Scheduled
        );
    }
    let later = chrono::Utc::now() + chrono::Duration::milliseconds(700);
    client.schedule(REPORT.instance("in-700-ms").scheduled_to(later))?;
    // Scheduling an instance that exists (not run yet) changes nothing.
    assert_eq!(
        client.schedule(REPORT.instance("in-700-ms"))?,
        ScheduleOutcome::AlreadyExists
    );
    println!("scheduled: monday, tuesday now; in-700-ms at {later}");

    common::wait_until("three runs", || runs.load(Ordering::SeqCst) == 3)?;
    let left = client.list_scheduled(&ListFilter::default())?;
    assert!(left.is_empty(), "one-time executions are removed: {left:?}");
    scheduler.stop();
    println!("done: 3 runs, table empty");
    Ok(())
}
