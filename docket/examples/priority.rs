//! Priority (opt-in, migration `0002_priority`): among due executions, higher priority is
//! handed out first; equal priorities go by execution time.
//!
//! `cargo run -p docket --example priority`

mod common;

use docket::scheduler::SchedulerEvent;
use docket::{Priority, Scheduler, StoreConfig, Task, TaskDescriptor};
use std::sync::{Arc, Mutex, PoisonError};

const JOB: TaskDescriptor = TaskDescriptor::new("job");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, url) = common::temp_database()?;
    let store = docket::sqlite::connect(&url, StoreConfig::with_priority(true))?;
    docket::sqlite::migrate(&store, None)?;

    // What the database handed out, in order (the listener sees every poll's batch).
    let handed = Arc::new(Mutex::new(Vec::<(String, Option<i16>)>::new()));
    let record = Arc::clone(&handed);
    let scheduler = Scheduler::builder(Arc::new(store))
        .task(Task::one_time(JOB, |_, _| Ok(())))
        .config(common::quick_config("priority-example", 1))
        .listener(Arc::new(move |event: &SchedulerEvent| {
            if let SchedulerEvent::Handed { executions, .. } = event {
                let mut record = record.lock().unwrap_or_else(PoisonError::into_inner);
                record.extend(
                    executions
                        .iter()
                        .map(|e| (e.task_instance.clone(), e.priority)),
                );
            }
        }))
        .build()?;

    // All due before the scheduler starts, scheduled lowest priority first.
    let client = scheduler.client();
    let an_hour_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    for (id, priority) in [
        ("cleanup", Priority::LOW),
        ("invoice", Priority::MEDIUM),
        ("password-reset", Priority::HIGH),
        ("newsletter", Priority(5)),
        ("fraud-alert", Priority(100)),
    ] {
        client.schedule(
            JOB.instance(id)
                .priority(priority)
                .scheduled_to(an_hour_ago),
        )?;
    }
    scheduler.start()?;
    common::wait_until("five hand-outs", || {
        handed.lock().unwrap_or_else(PoisonError::into_inner).len() == 5
    })?;
    scheduler.stop();

    let order = handed
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for (id, priority) in &order {
        println!("{:>4}  {id}", priority.unwrap_or_default());
    }
    let priorities: Vec<_> = order.iter().map(|(_, p)| p.unwrap_or_default()).collect();
    assert!(
        priorities.windows(2).all(|w| w[0] >= w[1]),
        "handed out by descending priority: {priorities:?}"
    );
    Ok(())
}
