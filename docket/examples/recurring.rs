//! Recurring tasks: one execution per task (instance `recurring`), created when the scheduler
//! starts and rescheduled after every run, on a fixed delay or a cron expression.
//!
//! `cargo run -p docket --example recurring`

mod common;

use docket::{Schedule, Scheduler, StoreConfig, Task};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, url) = common::temp_database()?;
    let store = docket::sqlite::connect(&url, StoreConfig::default())?;
    docket::sqlite::migrate(&store, None)?;

    let ticks = Arc::new(AtomicUsize::new(0));
    let tick_count = Arc::clone(&ticks);
    let tick = Task::recurring(
        "tick",
        Schedule::fixed_delay(Duration::from_millis(200))?,
        move |_, ctx| {
            let n = tick_count.fetch_add(1, Ordering::SeqCst) + 1;
            println!("tick #{n} at {}", ctx.started_at.format("%H:%M:%S%.3f"));
            Ok(())
        },
    );
    let cron_runs = Arc::new(AtomicUsize::new(0));
    let cron_count = Arc::clone(&cron_runs);
    // Six fields: seconds first. Every second, on the second.
    let every_second = Task::recurring(
        "every-second",
        Schedule::cron("* * * * * *")?,
        move |_, ctx| {
            cron_count.fetch_add(1, Ordering::SeqCst);
            println!("cron run at {}", ctx.started_at.format("%H:%M:%S%.3f"));
            Ok(())
        },
    );

    let scheduler = Scheduler::builder(Arc::new(store))
        .tasks([tick, every_second])
        .config(common::quick_config("recurring-example", 2))
        .build()?;
    scheduler.start()?;
    common::wait_until("3 ticks and 2 cron runs", || {
        ticks.load(Ordering::SeqCst) >= 3 && cron_runs.load(Ordering::SeqCst) >= 2
    })?;
    let next = scheduler
        .client()
        .get(&docket::ExecutionKey::new("tick", "recurring"))?
        .ok_or("the recurring execution stays in the table")?;
    println!("tick's next run: {}", next.execution_time);
    scheduler.stop();
    Ok(())
}
