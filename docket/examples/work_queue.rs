//! The work queue: items worked by people, handed out FIFO (record date, then record order),
//! each to one worker at a time, up to `max_assignments` workers in all. Three flows:
//!
//! - basic: one batch, two workers each get the next item nobody holds;
//! - gateway: records that arrive later become assignable only then;
//! - adjudication: every item is worked by two different workers.
//!
//! `cargo run -p docket --example work_queue`

mod common;

use docket::queue::{AssignmentStatus, Batch, Record};
use docket::scheduler::ManualClock;
use docket::{ExecutionKey, QueueConfig, StoreConfig, WorkQueue};
use std::sync::Arc;
use std::time::Duration;

fn ids(queue: &WorkQueue, worker: &str, task: &str) -> Result<Vec<String>, docket::DocketError> {
    Ok(queue
        .list_for(worker, task, 10)?
        .into_iter()
        .map(|item| item.key.task_instance)
        .collect())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, url) = common::temp_database()?;
    let store = docket::sqlite::connect(&url, StoreConfig::default())?;
    docket::sqlite::migrate(&store, None)?;
    // A manual clock, so the gateway flow can move time instead of waiting.
    let clock = ManualClock::new(chrono::Utc::now());
    let queue = WorkQueue::with_clock(
        Arc::new(store),
        Arc::new(clock.clone()),
        QueueConfig::default(),
    )?;

    // Basic: w1 takes the first item; w2 is offered the rest, in order.
    let records = ["r1", "r2", "r3"].map(Record::new).to_vec();
    queue.enqueue(&Batch {
        task_type: "review".into(),
        max_assignments: 1,
        records,
    })?;
    let first = queue.next_for("w1", "review")?.ok_or("an item for w1")?;
    println!(
        "basic: w1 got {}; w2 sees {:?}",
        first.key.task_instance,
        ids(&queue, "w2", "review")?
    );
    assert_eq!(ids(&queue, "w2", "review")?, ["r2", "r3"]);
    queue.submit("w1", &first.key)?;

    // Gateway: records arrive 10 s and 30 s after the batch.
    let arriving = |id: &str, secs| Record {
        arrives_after: Some(Duration::from_secs(secs)),
        ..Record::new(id)
    };
    queue.enqueue(&Batch {
        task_type: "gateway".into(),
        max_assignments: 1,
        records: vec![arriving("g1", 10), arriving("g2", 30)],
    })?;
    assert!(
        ids(&queue, "w1", "gateway")?.is_empty(),
        "nothing has arrived yet"
    );
    clock.advance(Duration::from_secs(15));
    println!(
        "gateway: after 15 s w1 sees {:?}",
        ids(&queue, "w1", "gateway")?
    );
    assert_eq!(ids(&queue, "w1", "gateway")?, ["g1"]);
    clock.advance(Duration::from_secs(15));
    assert_eq!(ids(&queue, "w1", "gateway")?, ["g1", "g2"]);

    // Adjudication: two independent reviews of every item, by two different workers.
    queue.enqueue(&Batch {
        task_type: "adjudicate".into(),
        max_assignments: 2,
        records: ["a1", "a2"].map(Record::new).to_vec(),
    })?;
    for worker in ["w1", "w2", "w1", "w2"] {
        let item = queue.next_for(worker, "adjudicate")?.ok_or("an item")?;
        println!("adjudication: {worker} reviews {}", item.key.task_instance);
        queue.submit(worker, &item.key)?;
    }
    for id in ["a1", "a2"] {
        let done: Vec<_> = queue
            .assignments(&ExecutionKey::new("adjudicate", id))?
            .into_iter()
            .map(|a| (a.worker, a.status))
            .collect();
        assert_eq!(
            done,
            [
                ("w1".to_owned(), AssignmentStatus::Submitted),
                ("w2".to_owned(), AssignmentStatus::Submitted)
            ],
            "item {id}"
        );
    }
    assert!(
        queue.next_for("w3", "adjudicate")?.is_none(),
        "every item has its two reviews"
    );
    println!("adjudication: a1 and a2 reviewed by w1 and w2");
    Ok(())
}
