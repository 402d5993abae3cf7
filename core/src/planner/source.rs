//! What the planner reads of a store: the statements a hand-out is made of, one call each,
//! and what they return. The SQL store ([`crate::store::sql::SqlStore`]) implements them once
//! for every SQL backend; the planner's tests implement them over a table in memory.

use crate::dialect::OrderIndex;
use crate::error::StoreError;
use crate::ordering::{CustomKey, Level};
use crate::records::{Due, Execution, ForWorker, Item, PoisonRow};
use chrono::{DateTime, Utc};

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

/// What the planner reads of a store's executions, each call one statement.
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
    /// The time of the oldest unpicked row `probe` asks for (its level, due by its `due_by`,
    /// its tasks; one row).
    fn first_due(&self, probe: &Due<'_>) -> Result<Probe, StoreError>;
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
