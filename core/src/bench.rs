//! Shapes shared by the backends' benchmark helpers (`docket bench priority`, `docket bench
//! queue`): what scenario to load and what one statement cost. The SQL that loads test data lives in each backend crate's
//! `bench` module; nothing here runs in a scheduler.

use crate::dialect::{Dialect, Rendered};
use crate::ident::TableName;
use crate::migrate::{MigrationFile, TableMigration};
use crate::store::sql::{SqlConnector, SqlSession};
use crate::store::Row;
use crate::StoreError;
use chrono::{DateTime, Utc};
use std::sync::{Arc, Mutex, PoisonError};

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

/// Which [`SqlSession`] method ran a recorded statement, so it can be replayed the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// [`SqlSession::execute`].
    Execute,
    /// [`SqlSession::query`].
    Query,
}

/// One statement a store sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// How it ran.
    pub call: Call,
    /// What ran.
    pub stmt: Rendered,
}

impl Recorded {
    /// Replays the statement on `session` the way it first ran; returns the rows or rows
    /// affected.
    pub fn replay(&self, session: &mut dyn SqlSession) -> Result<u64, StoreError> {
        match self.call {
            Call::Execute => session.execute(&self.stmt),
            Call::Query => Ok(session.query(&self.stmt)?.len() as u64),
        }
    }
}

/// A [`SqlConnector`] that passes everything to `inner` and records every statement, so a
/// benchmark can measure exactly what a store sends for one operation.
#[derive(Debug)]
pub struct Recording<C> {
    inner: C,
    log: Arc<Mutex<Vec<Recorded>>>,
    /// Every transaction is rolled back once its work is done ([`Recording::rolling_back`]).
    roll_back: bool,
}

impl<C: SqlConnector> Recording<C> {
    /// Records what goes through `inner`.
    pub fn new(inner: C) -> Self {
        Self {
            inner,
            log: Arc::default(),
            roll_back: false,
        }
    }

    /// Records what goes through `inner` and rolls every transaction back when its work is
    /// done, handing its result on as if it had committed: a claim can be recorded as a store
    /// really sends it, locks and all, without claiming anything.
    pub fn rolling_back(inner: C) -> Self {
        Self {
            roll_back: true,
            ..Self::new(inner)
        }
    }

    /// The wrapped connector.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// The statements recorded since the last call, oldest first.
    pub fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

struct RecordingSession<'a> {
    inner: &'a mut dyn SqlSession,
    log: &'a Mutex<Vec<Recorded>>,
}

impl RecordingSession<'_> {
    fn note(&self, call: Call, stmt: &Rendered) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Recorded {
                call,
                stmt: stmt.clone(),
            });
    }
}

impl SqlSession for RecordingSession<'_> {
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        self.note(Call::Execute, stmt);
        self.inner.execute(stmt)
    }
    fn query(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        self.note(Call::Query, stmt);
        self.inner.query(stmt)
    }
}

impl<C: SqlConnector> SqlConnector for Recording<C> {
    fn recorded(&self) -> Result<Vec<String>, StoreError> {
        self.inner.recorded()
    }

    fn dialect(&self) -> &'static dyn Dialect {
        self.inner.dialect()
    }

    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.inner.with_session(&mut |s| {
            f(&mut RecordingSession {
                inner: s,
                log: &self.log,
            })
        })
    }

    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut session = |s: &mut dyn SqlSession| {
            f(&mut RecordingSession {
                inner: s,
                log: &self.log,
            })
        };
        if !self.roll_back {
            return self.inner.in_transaction(&mut session);
        }
        let mut done = None;
        let rolled_back = self.inner.in_transaction(&mut |s| {
            done = Some(session(s)?);
            Err(StoreError::conflict(
                "rolled back by the recording connector",
            ))
        });
        match done {
            Some(value) => Ok(value),
            None => rolled_back,
        }
    }

    fn migrations(&self) -> &'static [MigrationFile] {
        self.inner.migrations()
    }

    fn apply(
        &self,
        table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.apply(table, steps)
    }
}

/// `[from, to)` ranges of at most `size` covering `0..n`: the chunks the loaders insert in
/// one statement each.
pub fn chunks(n: u64, size: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..n)
        .step_by(size.max(1) as usize)
        .map(move |from| (from, (from + size.max(1)).min(n)))
}
