//! Work-queue records: items, assignments and their statuses.

use super::{ExecutionKey, RecordKey};
use crate::error::{DocketError, StoreError};
use crate::ordering::{Level, PrimaryOrder, PriorityMode};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value as Json};

/// The status of one (item, worker) assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AssignmentStatus {
    /// Taken by [`WorkQueue::next_for`](crate::WorkQueue::next_for); the worker holds the item until the deadline.
    Accepted,
    /// Work handed in.
    Submitted,
    /// Submitted and approved by a reviewer.
    Approved,
    /// Submitted and rejected by a reviewer.
    Rejected,
    /// The worker declined the item; they never see it again.
    Skipped,
    /// Given back; hidden from this worker until the deadline.
    Returned,
    /// The deadline passed while accepted; hidden from this worker until the new deadline.
    Abandoned,
}

impl AssignmentStatus {
    /// Every status.
    pub const ALL: [AssignmentStatus; 7] = [
        Self::Accepted,
        Self::Submitted,
        Self::Approved,
        Self::Rejected,
        Self::Skipped,
        Self::Returned,
        Self::Abandoned,
    ];

    /// Statuses that hide an item from their worker for good (RETURNED and ABANDONED hide it
    /// only until their deadline).
    pub const HIDING: [AssignmentStatus; 5] = [
        Self::Skipped,
        Self::Accepted,
        Self::Submitted,
        Self::Approved,
        Self::Rejected,
    ];

    /// The stored form, e.g. `ACCEPTED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "ACCEPTED",
            Self::Submitted => "SUBMITTED",
            Self::Approved => "APPROVED",
            Self::Rejected => "REJECTED",
            Self::Skipped => "SKIPPED",
            Self::Returned => "RETURNED",
            Self::Abandoned => "ABANDONED",
        }
    }

    /// Parses the stored form.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }

    /// Parses the stored form read from column `status`, as a store error when unknown.
    pub fn decode(value: &str) -> std::result::Result<Self, StoreError> {
        Self::parse(value).ok_or_else(|| StoreError::Decode {
            column: "status",
            reason: format!("unknown assignment status {value:?}"),
        })
    }

    /// Whether an assignment in this status counts against `max_assignments`.
    pub const fn counts(self) -> bool {
        matches!(
            self,
            Self::Accepted | Self::Submitted | Self::Approved | Self::Rejected
        )
    }
}

impl std::fmt::Display for AssignmentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An item as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Task type and item id.
    pub key: ExecutionKey,
    /// Payload.
    pub data: Option<Vec<u8>>,
    /// When the item arrives (becomes assignable).
    pub available_at: DateTime<Utc>,
    /// FIFO keys (record order and date).
    pub record: RecordKey,
    /// Custom attributes as stored JSON text (see [`Item::attributes`]).
    pub custom_attributes: Option<String>,
    /// Most counted assignments ([`AssignmentStatus::counts`]) the item may have.
    pub max_assignments: i32,
    /// Counted assignments it has.
    pub assignments: i32,
    /// The worker holding it now.
    pub held_by: Option<String>,
}

impl Item {
    /// The custom attributes as a JSON object (empty when none).
    pub fn attributes(&self) -> Result<Map<String, Json>, DocketError> {
        match self.custom_attributes.as_deref() {
            None => Ok(Map::new()),
            Some(text) => serde_json::from_str(text).map_err(|e| DocketError::Data {
                task: self.key.task_name.clone(),
                instance: self.key.task_instance.clone(),
                reason: format!("custom_attributes: {e}"),
            }),
        }
    }
}

/// One (item, worker) assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The item.
    pub key: ExecutionKey,
    /// The worker.
    pub worker: String,
    /// Its status.
    pub status: AssignmentStatus,
    /// ACCEPTED: when it is abandoned; RETURNED/ABANDONED: until when the item is hidden from
    /// this worker.
    pub deadline: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// An item row to insert, fully resolved (what the store writes).
#[derive(Debug, Clone, PartialEq)]
pub struct NewItem {
    /// Task type and item id.
    pub key: ExecutionKey,
    /// Payload.
    pub data: Option<Vec<u8>>,
    /// When it arrives.
    pub available_at: DateTime<Utc>,
    /// FIFO keys.
    pub record: RecordKey,
    /// Normalized custom attributes (JSON object text), if any.
    pub custom_attributes: Option<String>,
    /// Most counted assignments.
    pub max_assignments: i32,
    /// Priority (written only when the priority toggle is on).
    pub priority: Option<i16>,
}

/// How a finished assignment ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// ACCEPTED -> SUBMITTED.
    Submit,
    /// ACCEPTED -> SKIPPED (frees the slot; never shown to this worker again).
    Skip,
    /// ACCEPTED -> RETURNED (frees the slot; hidden from this worker for `hide_for`).
    Return,
    /// ACCEPTED past its deadline -> ABANDONED (as Return).
    Abandon,
}

impl Finish {
    /// The status it sets.
    pub const fn status(self) -> AssignmentStatus {
        match self {
            Finish::Submit => AssignmentStatus::Submitted,
            Finish::Skip => AssignmentStatus::Skipped,
            Finish::Return => AssignmentStatus::Returned,
            Finish::Abandon => AssignmentStatus::Abandoned,
        }
    }
}

/// How many work-queue items one task type has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemCount {
    /// The task type.
    pub task_type: String,
    /// All its items.
    pub items: i64,
    /// Those assignable now (nobody holds them and they are below `max_assignments`).
    pub open: i64,
}

/// What creating or dropping a custom order's index did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexChange {
    /// The index name.
    pub index: String,
    /// Whether anything changed (false: it already existed, or was already gone).
    pub changed: bool,
    /// The statements run, in order.
    pub statements: Vec<String>,
}

/// Who asks for items, and when: the parameters of the work queue's item queries.
#[derive(Debug, Clone, Copy)]
pub struct ForWorker<'a> {
    /// The worker.
    pub worker: &'a str,
    /// The task type.
    pub task_type: &'a str,
    /// Primary order of the task type.
    pub order: &'a PrimaryOrder,
    /// The clock's now.
    pub now: DateTime<Utc>,
    /// Only items that arrived by this time: `now`, or earlier for an aging band
    /// ([`crate::ordering::PriorityMode::Aging`]).
    pub arrived_by: DateTime<Utc>,
    /// Only items of this priority level ([`Level::Any`]: every level, higher first).
    pub level: Level,
    /// Only this item (to lock one candidate by key).
    pub key: Option<&'a ExecutionKey>,
    /// How `next_for` shares the hand-out among priority levels (the task type's mode).
    pub mode: &'a PriorityMode,
}

/// The mode of a [`ForWorker`] made by [`ForWorker::new`].
static STRICT: PriorityMode = PriorityMode::Strict;

impl<'a> ForWorker<'a> {
    /// What `worker` may take of `task_type` at `now`: every level, every arrived item.
    pub fn new(
        worker: &'a str,
        task_type: &'a str,
        order: &'a PrimaryOrder,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            worker,
            task_type,
            order,
            now,
            arrived_by: now,
            level: Level::Any,
            key: None,
            mode: &STRICT,
        }
    }
}

/// How one worker's ACCEPTED assignment ends: the parameters of `assignment_finish`.
#[derive(Debug, Clone, Copy)]
pub struct Finishing<'a> {
    /// The item.
    pub key: &'a ExecutionKey,
    /// The worker holding it.
    pub worker: &'a str,
    /// How it ends.
    pub how: Finish,
    /// The clock's now.
    pub now: DateTime<Utc>,
    /// RETURNED/ABANDONED: until when the item stays hidden from this worker.
    pub hidden_until: DateTime<Utc>,
}

/// An assignment status as read for display: a status this version does not know (written by
/// hand, or by a newer version) is kept as text instead of failing the listing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StatusRead {
    /// A status this version knows.
    Known(AssignmentStatus),
    /// Any other stored text.
    Unknown(String),
}

impl StatusRead {
    /// Reads the stored form; never fails.
    pub fn from_stored(value: String) -> Self {
        match AssignmentStatus::parse(&value) {
            Some(s) => Self::Known(s),
            None => Self::Unknown(value),
        }
    }

    /// The known status, if it is one.
    pub fn known(&self) -> Option<AssignmentStatus> {
        match self {
            Self::Known(s) => Some(*s),
            Self::Unknown(_) => None,
        }
    }
}

impl std::fmt::Display for StatusRead {
    /// `ACCEPTED`, ..., or `unknown: <stored text>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Known(s) => f.write_str(s.as_str()),
            Self::Unknown(text) => write!(f, "unknown: {text}"),
        }
    }
}

/// One assignment of a [`ListedItem`], decoded leniently (see [`StatusRead`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedAssignment {
    /// The worker.
    pub worker: String,
    /// Its status.
    pub status: StatusRead,
    /// ACCEPTED: when it is abandoned; RETURNED/ABANDONED: until when the item is hidden.
    pub deadline: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// An item with its row version and the first of its assignments, as one read of
/// [`ItemsQuery`] returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedItem {
    /// The item.
    pub item: Item,
    /// Its row version (the fencing token of actions on it).
    pub version: i64,
    /// Its first assignments by worker, at most [`ItemsQuery::assignments`].
    pub assignments: Vec<ListedAssignment>,
    /// How many assignments it has in all.
    pub assignments_total: i64,
}

/// An item of an [`ItemsQuery`] read whose row holds a value docket cannot decode (a NULL
/// `record_date`, a time out of range: written by SQL or another program), listed in its
/// place instead of failing the whole read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableItem {
    /// The item's key.
    pub key: ExecutionKey,
    /// Its row version, when that column could be read.
    pub version: Option<i64>,
    /// The column that could not be decoded.
    pub column: &'static str,
    /// Why.
    pub reason: String,
}

impl UnreadableItem {
    /// The [`StoreError::Decode`] a strict read fails with.
    pub fn to_error(&self) -> StoreError {
        StoreError::Decode {
            column: self.column,
            reason: format!(
                "{} (item {}/{})",
                self.reason, self.key.task_name, self.key.task_instance
            ),
        }
    }
}

/// One item of an [`ItemsQuery`] read: listed, or named as unreadable in its place.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemRead {
    /// The item, decoded.
    Listed(ListedItem),
    /// A row that could not be decoded.
    Unreadable(UnreadableItem),
}

/// Which items of one task type to list with their assignments, in one statement: the first
/// `limit` by arrival (`execution_time`, then id), each with at most `assignments` of its
/// assignments (by worker) and their count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemsQuery<'a> {
    /// The task type.
    pub task_type: &'a str,
    /// Only this item id.
    pub item: Option<&'a str>,
    /// Only items this worker holds.
    pub held_by: Option<&'a str>,
    /// Most items.
    pub limit: i64,
    /// Most assignments listed per item (0: none listed, only counted).
    pub assignments: i64,
}

impl<'a> ItemsQuery<'a> {
    /// The first `limit` items of `task_type`, without assignments.
    pub fn new(task_type: &'a str, limit: i64) -> Self {
        Self {
            task_type,
            item: None,
            held_by: None,
            limit,
            assignments: 0,
        }
    }
}
