//! `docket bench`'s data and cost probes (tooling, not the scheduler): what scenario to load
//! and what one statement cost (here), the loaders written once for the diesel backends
//! ([`diesel`]), each backend's own SQL for generating rows and reading costs ([`postgres`],
//! [`mysql`], [`sqlite`]), and a connector that records what a store sends ([`recording`]).
//! None of it ships in a library crate.

// The work-queue loaders and the database creation serve only PostgreSQL and MySQL.
#![cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]

pub mod diesel;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod recording;
pub mod sqlite;

pub use recording::{Call, Recorded, Recording};

use chrono::{DateTime, Utc};

/// The priority benchmark's data: due rows spread over the hour before `now`, future rows over
/// the day after it, priorities uniform in `1..=levels`, and the due rows of the top `drain`
/// levels removed (as if workers had drained them). Instances are `d<n>` (due) and `f<n>`
/// (future), all of task `task_name`.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The one task name of every row.
    pub task_name: String,
    /// The reference time.
    pub now: DateTime<Utc>,
    /// Due rows generated (before draining).
    pub due: u64,
    /// Future rows.
    pub future: u64,
    /// Distinct priorities, `1..=levels`.
    pub levels: i16,
    /// Top levels whose due rows are removed.
    pub drain: i16,
}

impl Scenario {
    /// Rows per generating statement, so loaders can report progress.
    pub const CHUNK: u64 = 50_000;

    /// The highest priority that keeps its due rows.
    pub fn top_kept_level(&self) -> i16 {
        self.levels - self.drain
    }
}

/// One task type of the work-queue benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueType {
    /// The task type.
    pub name: String,
    /// `max_assignments` of every item.
    pub max_assignments: i32,
}

/// The work-queue benchmark's data (`docket bench queue`): for each of `types`, `items` items,
/// all arrived (available a day before `now`), in FIFO order by record date then record order
/// (batches of [`QueueScenario::BATCH`] records one second apart, record order 1..=BATCH in
/// each); item `n` (0-based, FIFO position) is `item-<n>`. `worker` has a SUBMITTED assignment
/// on each of the first `worked` items of every type: one counted assignment, so an item stays
/// assignable exactly when its type's `max_assignments` is above 1.
#[derive(Debug, Clone)]
pub struct QueueScenario {
    /// The reference time.
    pub now: DateTime<Utc>,
    /// Items per task type.
    pub items: u64,
    /// Items of each type, in FIFO order from the first, that `worker` has submitted.
    pub worked: u64,
    /// The worker with history.
    pub worker: String,
    /// The task types.
    pub types: Vec<QueueType>,
}

impl QueueScenario {
    /// Rows per generating statement, so loaders can report progress.
    pub const CHUNK: u64 = 50_000;
    /// Records per batch (items sharing one record date).
    pub const BATCH: u64 = 1_000;
    /// Days before `now` that the first batch is dated.
    pub const AGE_DAYS: i64 = 30;

    /// The record date of the first batch (later batches follow one second apart).
    pub fn first_record_date(&self) -> DateTime<Utc> {
        self.now - chrono::Duration::days(Self::AGE_DAYS)
    }

    /// When every item became available.
    pub fn available_at(&self) -> DateTime<Utc> {
        self.now - chrono::Duration::days(1)
    }

    /// Rows every loader writes (items of every type plus the assignments).
    pub fn rows(&self) -> u64 {
        (self.items + self.worked.min(self.items)) * self.types.len() as u64
    }
}

/// The plan of one work-queue statement as the backend ran it (values bound, rolled back).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueuePlan {
    /// The plan as the server printed it.
    pub lines: Vec<String>,
    /// What running it cost (see [`Cost`]).
    pub cost: Cost,
    /// Item rows read from the docket table (alias `i`), where the plan says.
    pub items_read: Option<u64>,
    /// Lookups into the assignments table (alias `a`), where the plan says.
    pub assignment_probes: Option<u64>,
    /// The first node that is not index-driven and bounded, described: a sort, a scan of the
    /// item table, or a read of more than one item's assignments per lookup (e.g. every
    /// assignment of the type).
    pub whole_type: Option<String>,
}

/// What running statements cost on a backend, summed over the statements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Page or row reads in the backend's own unit (PostgreSQL: shared buffers hit + read;
    /// MySQL/MariaDB: `Handler_read_*`; SQLite: none, 0).
    pub reads: u64,
    /// Server-side execution time where the backend reports it, else wall time, microseconds.
    pub micros: u64,
    /// Statements run.
    pub statements: u64,
}

impl std::ops::Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost {
            reads: self.reads + o.reads,
            micros: self.micros + o.micros,
            statements: self.statements + o.statements,
        }
    }
}

/// `[from, to)` ranges of at most `size` covering `0..n`: the chunks the loaders insert in
/// one statement each.
pub fn chunks(n: u64, size: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..n)
        .step_by(size.max(1) as usize)
        .map(move |from| (from, (from + size.max(1)).min(n)))
}
