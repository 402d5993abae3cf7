//! Typed payloads: the handler gets the instance's data decoded as the descriptor's type. Data
//! that does not decode fails that execution only, as an ordinary failure with a message that
//! says why; the other executions run.
//!
//! `cargo run -p docket --example typed_payload`

mod common;

use docket::scheduler::{FailurePolicy, SchedulerEvent};
use docket::{Scheduler, StoreConfig, Task, TaskDescriptor};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Debug, Serialize, Deserialize)]
struct Email {
    to: String,
    subject: String,
}

const SEND: TaskDescriptor<Email> = TaskDescriptor::new("send-email");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_dir, url) = common::temp_database()?;
    let store = docket::sqlite::connect(&url, StoreConfig::default())?;
    docket::sqlite::migrate(&store, None)?;

    let sent = Arc::new(Mutex::new(Vec::<String>::new()));
    let outbox = Arc::clone(&sent);
    let send = Task::typed(SEND, move |email: Email, ctx| {
        println!(
            "{}: to {} ({:?})",
            ctx.key.task_instance, email.to, email.subject
        );
        outbox
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(email.to);
        Ok(())
    })
    // No retries, so the undecodable instance gives up (and is removed) at once.
    .on_failure(FailurePolicy::retry_later().max_retries(0));

    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let failed = Arc::clone(&failures);
    let scheduler = Scheduler::builder(Arc::new(store))
        .task(send)
        .config(common::quick_config("typed-example", 2))
        .listener(Arc::new(move |event: &SchedulerEvent| {
            if let SchedulerEvent::ExecutionFailed { error, .. } = event {
                failed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(error.clone());
            }
        }))
        .build()?;
    scheduler.start()?;

    let client = scheduler.client();
    for (id, to) in [
        ("welcome-ada", "ada@example.com"),
        ("welcome-bob", "bob@example.com"),
    ] {
        client.schedule(SEND.instance(id).data(Email {
            to: to.to_owned(),
            subject: "Welcome".to_owned(),
        }))?;
    }
    // Written by something else, in a shape the handler does not expect.
    client.schedule(
        SEND.instance("legacy")
            .raw_data(br#"{"recipient":"eve"}"#.to_vec()),
    )?;

    common::wait_until("two sent and one failure", || {
        sent.lock().unwrap_or_else(PoisonError::into_inner).len() == 2
            && failures
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
                == 1
    })?;
    scheduler.stop();

    let failures = failures.lock().unwrap_or_else(PoisonError::into_inner);
    println!("legacy failed: {}", failures[0]);
    assert!(
        failures[0].contains("does not decode") && failures[0].contains("missing field"),
        "{}",
        failures[0]
    );
    Ok(())
}
