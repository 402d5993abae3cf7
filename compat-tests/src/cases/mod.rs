//! The cases, each `fn(&dyn Harness, Toggle)`. Expected results that depend on the toggle are
//! stated as data next to each other; no case branches on a backend.

mod claims;
mod crud;
pub mod db_scheduler;
mod end_to_end;
mod fairness;
mod lifecycle;
mod limits;
mod ordering;
mod queue;
mod queue_scale;
mod schema;

pub use claims::*;
pub use crud::*;
pub use db_scheduler::{
    adopting_an_incompatible_table_names_the_column, db_scheduler_table_is_adopted,
    migrating_a_foreign_table_names_adopt, mixed_fleet_with_db_scheduler_nodes,
    poison_rows_never_block_a_poll, poll_failures_are_listener_events,
};
pub use end_to_end::*;
pub use fairness::*;
pub use lifecycle::*;
pub use limits::*;
pub use ordering::*;
pub use queue::*;
pub use queue_scale::*;
pub use schema::*;

use docket_core::store::{DueParams, Execution};
use docket_core::{Store, Task, TaskDescriptor};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Data of the `email` task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Email {
    /// Recipient.
    pub to: String,
}

/// A task with typed data.
pub const EMAIL: TaskDescriptor<Email> = TaskDescriptor::new("email");
/// A task without data.
pub const WORK: TaskDescriptor = TaskDescriptor::new("work");

/// Instance ids of executions, in order.
pub fn ids(executions: &[Execution]) -> Vec<String> {
    executions.iter().map(|e| e.task_instance.clone()).collect()
}

/// The due-query result (fetch strategy, no claim) for `names` at `now`.
pub fn due(
    store: &dyn Store,
    now: chrono::DateTime<chrono::Utc>,
    names: &[&str],
) -> Vec<Execution> {
    let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    store
        .execution_fetch_due(&DueParams::new(now, &names, 1000))
        .expect("due-query runs")
}

/// A one-time task that counts its runs.
pub fn counting_task<T>(descriptor: TaskDescriptor<T>) -> (Task, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let task = Task::one_time(descriptor, move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    (task, runs)
}

/// Strings from literals.
pub fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}
