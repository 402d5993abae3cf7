//! The planner: what is handed out next, decided once, in core, for the store that holds it.
//!
//! The store ([`crate::store::sql::SqlStore`] for every SQL backend) holds a planner and
//! consults it in its hand-out operations only (a poll's due rows or claim, the work queue's
//! `next_for` and listing). What the planner reads of the store ([`DueSource`],
//! [`ItemSource`]) runs one statement per call and keeps nothing between calls: the due rows of
//! one priority level, a claim of one level, the items of one level for a worker. The planner
//! decides which calls to make, in which order and with how much room, and remembers what it
//! learned:
//!
//! - **priority levels** and the modes that share the hand-out among them (strict, weighted,
//!   aging: [`crate::ordering::PriorityMode`]), for the scheduler's polls (`levels.rs`) and the
//!   work queue's `next_for` (`queue.rs`) alike, with the band arithmetic written once
//!   (`bands.rs`);
//! - the **level cache** that keeps a poll under load to about one statement;
//! - the **poison hold-back**: rows that do not decode are left out of later polls
//!   (`poison.rs`);
//! - the **custom-order choice**: whether the work queue's queries name an order index.
//!
//! The store tells the planner of the writes that can make work due ([`Planner::wrote`],
//! [`Planner::updated`]) and of index changes. The policy is unit-tested against a store in
//! memory; the compat suite proves the backends.

mod bands;
mod levels;
mod poison;
mod queue;
mod source;
#[cfg(test)]
mod tests;

pub use levels::{
    COMPLETION_CONTENTION_RETRIES, CONTENTION_RETRIES, LEVEL_CACHE_TTL_MS, MAX_PROBED_LEVELS,
};
pub use poison::{MAX_HELD_BACK, POISON_HOLD_BACK_MS};
pub use queue::ORDER_INDEX_TTL_MS;
pub use queue::QUEUE_CONTENTION_RETRIES;

pub(crate) use levels::retried_up_to;
pub use source::{Decoded, DueSource, ItemSource, Probe};

use crate::ordering::{OrderingPolicy, Stride};
use crate::records::{Changes, PickChange};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The decisions and what they remember, for one table and ordering policy.
#[derive(Debug)]
pub struct Planner {
    policy: OrderingPolicy,
    levels: Mutex<levels::LevelState>,
    quarantine: Mutex<poison::Quarantine>,
    order_indexes: Mutex<Vec<queue::KnownIndex>>,
    /// The work queue's weighted passes, per task type.
    strides: Mutex<HashMap<String, Stride>>,
}

impl Planner {
    /// A planner for `policy`, knowing nothing yet.
    pub fn new(policy: OrderingPolicy) -> Self {
        Self {
            policy,
            levels: Mutex::default(),
            quarantine: Mutex::default(),
            order_indexes: Mutex::default(),
            strides: Mutex::default(),
        }
    }

    /// The ordering policy it plans for.
    pub fn policy(&self) -> &OrderingPolicy {
        &self.policy
    }

    /// A local update changed a row: a new time, a release or a new priority can make it due
    /// in a level seen empty.
    pub fn updated(&self, changes: &Changes) {
        let releases = matches!(changes.pick, Some(PickChange::Release));
        if changes.execution_time.is_some() || releases || changes.priority.is_some() {
            self.wrote(changes.priority, changes.execution_time);
        }
    }
}

/// The guarded value: what the planner keeps are caches and fairness passes, which a panic
/// elsewhere can leave stale, never unsafe to use.
fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
