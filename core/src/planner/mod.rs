//! The planner: what is handed out next, decided once, in core, above a thin store.
//!
//! A store ([`crate::store::sql::SqlOps`] for every SQL backend) runs one statement per call
//! and keeps nothing between calls: the due rows of one priority level, a claim of one level,
//! the items of one level for a worker. The planner decides which calls to make, in which
//! order and with how much room, and remembers what it learned:
//!
//! - **priority levels** and the modes that share the hand-out among them (strict, weighted,
//!   aging: [`crate::ordering::PriorityMode`]), for the scheduler's polls ([`levels`]) and the
//!   work queue's `next_for` ([`queue`]) alike, with the band arithmetic written once
//!   ([`bands`]);
//! - the **level cache** that keeps a poll under load to about one statement;
//! - the **poison hold-back**: rows that do not decode are left out of later polls
//!   ([`poison`]);
//! - the **custom-order choice**: whether the work queue's queries name an order index.
//!
//! [`Planned`] joins a planner and a thin store into the [`Store`](crate::Store) the scheduler
//! and the work queue use. The policy is unit-tested against a store in memory; the compat
//! suite proves the backends.

mod bands;
mod levels;
mod planned;
mod poison;
mod queue;
#[cfg(test)]
mod tests;

pub use levels::{LEVEL_CACHE_TTL_MS, MAX_PROBED_LEVELS};
pub use planned::Planned;
pub use poison::{MAX_HELD_BACK, POISON_HOLD_BACK_MS};
pub use queue::ORDER_INDEX_TTL_MS;

use crate::dialect::{Due, OrderIndex};
use crate::error::StoreError;
use crate::ordering::{CustomKey, Level, OrderingPolicy, Stride};
use crate::records::{Execution, ForWorker, Item, PoisonRow};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Rows a due-query or claim returned: those that decode, and the poison rows that do not
/// (a claim never leaves those claimed).
#[derive(Debug, Default)]
pub struct Decoded {
    /// The executions that decoded.
    pub rows: Vec<Execution>,
    /// The rows that did not, each named by key and column.
    pub poison: Vec<PoisonRow>,
}

/// What one probe of a level found: the `execution_time` of its first row, read without
/// decoding the rest of the row (a poison row must not fail a poll).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// No row.
    Empty,
    /// The first row's time.
    At(DateTime<Utc>),
    /// A row whose time does not decode.
    Unreadable,
}

/// What the planner reads of a store's executions, each call one statement (the operations
/// of a thin store; [`crate::store::ExecutionOps`] has the rest).
pub trait DueSource {
    /// The highest priority level below `below` (every level when `None`), as one statement;
    /// where [`DueSource::lists_all_levels`], every level below it, highest first.
    fn levels_below(&self, below: Option<i16>) -> Result<Vec<i16>, StoreError>;
    /// Whether [`DueSource::levels_below`] lists every level at once.
    fn lists_all_levels(&self) -> bool;
    /// The due, unpicked rows `due` asks for, in its level's order, without claiming.
    fn due_rows(&self, due: &Due<'_>) -> Result<Decoded, StoreError>;
    /// Claims the rows `due` asks for (lock-and-fetch), skipping rows others hold; poison rows
    /// are returned apart and never left claimed.
    fn claim_rows(&self, due: &Due<'_>, picked_by: &str) -> Result<Decoded, StoreError>;
    /// The time of the oldest unpicked row of `level` due by `now`.
    fn first_due(
        &self,
        level: Level,
        now: DateTime<Utc>,
        task_names: &[String],
    ) -> Result<Probe, StoreError>;
    /// When the next unpicked row of `level` falls due after `now`.
    fn next_due(&self, level: Level, now: DateTime<Utc>) -> Result<Probe, StoreError>;
}

/// What the planner reads of a store's work-queue items, each call one statement or one claim
/// transaction.
pub trait ItemSource {
    /// The levels holding items `q.worker` may take (any level), each with the arrival time of
    /// its longest-waiting one.
    fn item_levels(&self, q: &ForWorker<'_>) -> Result<Vec<(Level, DateTime<Utc>)>, StoreError>;
    /// Claims the first item `q` selects (its level, its arrival bound), sorted by `index`'s
    /// columns where given, and records an ACCEPTED assignment until `deadline`.
    fn item_claim(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
        index: Option<&OrderIndex>,
    ) -> Result<Option<Item>, StoreError>;
    /// The items `q` selects, in order, without claiming.
    fn item_list(
        &self,
        q: &ForWorker<'_>,
        limit: i64,
        index: Option<&OrderIndex>,
    ) -> Result<Vec<Item>, StoreError>;
    /// The order index of `keys` when the queries must name it to use it (the dialect indexes
    /// with generated columns), else `None`.
    fn named_order_index(&self, keys: &[CustomKey]) -> Result<Option<OrderIndex>, StoreError>;
    /// Whether `index` exists.
    fn order_index_present(&self, index: &OrderIndex) -> Result<bool, StoreError>;
}

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
}

/// The guarded value: what the planner keeps are caches and fairness passes, which a panic
/// elsewhere can leave stale, never unsafe to use.
fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
