//! The store of every SQL backend, written once ([`SqlStore`]): render with [`Statements`],
//! run through the backend's [`SqlConnector`], decode the rows. One layer: each operation of
//! [`ExecutionStore`] and [`QueueStore`] goes straight to its statement; only the hand-out
//! operations (a poll's due rows or claim, the work queue's `next_for` and listing) consult the
//! [`Planner`] it holds, which calls back the statements of [`DueSource`](crate::planner::DueSource)
//! and [`ItemSource`] (in `due.rs` and `queue.rs`).

mod adopt;
mod due;
mod executions;
mod intake;
mod limits;
mod poison;
mod queue;

pub use adopt::AdoptPlan;
use intake::Staged;

use super::row::decode_all;
use super::*;
use crate::dialect::queue::ForWorker;
use crate::dialect::{Dialect, LagRange, OrderIndex, OrderIndexStyle, Rendered, Statements};
use crate::migrate::{MigrationFile, TableMigration, MIGRATION_ORDERING, MIGRATION_WORK_QUEUE};
use crate::planner::{Decoded, ItemSource, Planner};
use crate::records::{ItemRead, ListedAssignment, ListedItem, StatusRead, UnreadableItem};
use std::collections::HashSet;

/// Most rows of one multi-row insert (fewer when the dialect's bind limit or
/// [`INSERT_CHUNK_BYTES`] says so): large enough that a round trip and a statement are paid
/// per thousand rows, small enough that a statement stays a few hundred kilobytes.
pub const INSERT_CHUNK_ROWS: usize = 1_000;

/// Most bytes of task data in one multi-row insert (a row larger than this goes alone), so a
/// statement stays within server packet limits (MySQL's `max_allowed_packet`).
pub const INSERT_CHUNK_BYTES: usize = 1 << 20;

/// Most completions written by one statement (fewer when the dialect's bind limit says so).
pub const COMPLETION_CHUNK: usize = 500;

/// Most binds one row of a batched completion can take: key and version in `WHERE`, key and
/// value per column that differs between rows.
const COMPLETION_BINDS_PER_ROW: usize = 32;

/// One database session (a pooled connection, possibly inside a transaction): runs a rendered
/// statement and returns what the database said, with errors normalized
/// ([`StoreError::Duplicate`] for a unique-key violation, [`StoreError::CheckViolation`] for a
/// CHECK constraint where the schema has one, [`StoreError::Connection`] for a lost
/// connection, [`StoreError::Database`] for the rest). Rows are decoded into records once, in
/// core ([`super::row`]).
pub trait SqlSession {
    /// Runs a statement; returns affected rows.
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError>;
    /// Runs a query; returns its rows, each column named as the statement names it.
    fn query(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError>;
    /// Runs a statement that takes no binds and cannot be prepared (MySQL's `LOAD DATA`), as
    /// plain text. Default: [`SqlSession::execute`] with no binds.
    fn execute_unprepared(&mut self, sql: &str) -> Result<(), StoreError> {
        self.execute(&Rendered::text(sql)).map(drop)
    }
}

/// Rewrites a migration plan before it runs (see [`AdoptPlan`]).
pub type Adapt<'a> = &'a mut dyn FnMut(Vec<TableMigration>) -> Vec<TableMigration>;

/// What a SQL backend supplies: its dialect, sessions from its pool, and its migrations.
pub trait SqlConnector: Send + Sync + std::fmt::Debug + 'static {
    /// The backend's dialect.
    fn dialect(&self) -> &'static dyn Dialect;
    /// Runs `f` on one pooled connection.
    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError>;
    /// Runs `f` in a transaction: committed if `f` returns `Ok`, rolled back otherwise.
    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError>;
    /// [`SqlConnector::in_transaction`] for a transaction that waits for its caller between
    /// statements (a stream of items read as they are inserted): exempt from the idle timeout
    /// a backend gives docket's other transactions (`docket_diesel::IDLE_IN_TRANSACTION_TIMEOUT`),
    /// which a slow producer would run into. Default: [`SqlConnector::in_transaction`].
    fn in_caller_paced_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.in_transaction(f)
    }
    /// The migrations the backend ships, in order. [`SqlStore`] plans them for its table
    /// ([`plan`](crate::migrate::plan), then the adaptation when adopting a table: see
    /// [`AdoptPlan`]) and hands the steps to [`SqlConnector::apply`].
    fn migrations(&self) -> &'static [MigrationFile];

    /// Runs the planned migration `steps` of `table` that have not run yet, each recorded as
    /// applied whatever its SQL became (a step whose SQL became empty runs nothing); returns
    /// the versions applied now.
    fn apply(
        &self,
        table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Result<Vec<String>, StoreError>;

    /// The versions recorded in the backend's migration history (`0001_base@scheduled_tasks`,
    /// every table's), creating the history table where it does not exist yet, as
    /// [`SqlConnector::apply`] would.
    fn recorded(&self) -> Result<Vec<String>, StoreError>;

    /// The database's wake-ups across processes for `table` (see [`super::WakeSignals`]), or
    /// `None` where it has none (the default).
    fn wake_signals(&self, table: &TableName) -> Option<std::sync::Arc<dyn super::WakeSignals>> {
        let _ = table;
        None
    }
}

/// The store every SQL backend hands out: every operation one statement or one transaction,
/// nothing kept between calls but what the table is (see
/// [`Statements::set_due_level_index`]) and what the planner remembers.
#[derive(Debug)]
pub struct SqlStore<C: SqlConnector> {
    connector: C,
    config: StoreConfig,
    statements: Statements<'static>,
    /// The hand-out policy and its caches, consulted by the hand-out operations only.
    planner: Planner,
    /// The connector's wake-ups for the table, asked for once.
    signals: Option<std::sync::Arc<dyn WakeSignals>>,
    /// The limits read last (`0009_limits`), reused for a second by the claims of limited tasks.
    limits: std::sync::Mutex<limits::LimitsCache>,
}

impl<C: SqlConnector> SqlStore<C> {
    /// A store on `connector` for `config`. Call [`ExecutionStore::check_schema`] before use
    /// (the scheduler and client do).
    pub fn new(connector: C, config: StoreConfig) -> Self {
        let statements = Statements::new(
            connector.dialect(),
            config.table.clone(),
            config.ordering.clone(),
        );
        // Until `check_schema` has looked: a hint on a missing index fails the statement.
        statements.set_due_level_index(false);
        // Until `check_schema` has looked whether the table of paused tasks exists: nothing
        // is paused.
        statements.set_paused_table(false);
        statements.set_limits_table(false);
        let signals = connector.wake_signals(&config.table);
        let planner = Planner::new(config.ordering.clone());
        Self {
            connector,
            config,
            statements,
            planner,
            signals,
            limits: Default::default(),
        }
    }

    /// The statements it runs.
    pub fn statements(&self) -> &Statements<'static> {
        &self.statements
    }

    /// The connector (pool).
    pub fn connector(&self) -> &C {
        &self.connector
    }

    /// The planner its hand-out operations consult.
    pub fn planner(&self) -> &Planner {
        &self.planner
    }

    fn rows(&self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        self.connector.with_session(&mut |s| s.query(stmt))
    }

    fn executions(&self, stmt: Rendered) -> Result<Vec<Execution>, StoreError> {
        decode_all(self.rows(&stmt)?, Execution::from_row)
    }

    /// The execution keys `stmt` returns (`task_name`, `task_instance`).
    fn keys_of(&self, stmt: &Rendered) -> Result<HashSet<ExecutionKey>, StoreError> {
        decode_all(self.rows(stmt)?, |r| {
            Ok(ExecutionKey {
                task_name: r.text("task_name")?,
                task_instance: r.text("task_instance")?,
            })
        })
        .map(|keys| keys.into_iter().collect())
    }

    fn execute(&self, stmt: Rendered) -> Result<u64, StoreError> {
        self.connector.with_session(&mut |s| s.execute(&stmt))
    }

    /// `rows` in chunks for multi-row inserts: as many rows as one statement may carry
    /// ([`Statements::rows_per_insert`], at most [`INSERT_CHUNK_ROWS`]) and at most
    /// [`INSERT_CHUNK_BYTES`] of task data.
    fn insert_chunks<'r>(&self, rows: &'r [NewExecution]) -> Vec<&'r [NewExecution]> {
        let most = self
            .statements
            .rows_per_insert(self.statements.insert_binds_per_row(), INSERT_CHUNK_ROWS);
        let mut chunks = Vec::new();
        let (mut start, mut bytes) = (0, 0);
        for (i, row) in rows.iter().enumerate() {
            let size = row.task_data.as_ref().map_or(0, Vec::len);
            if i > start && (i - start == most || bytes + size > INSERT_CHUNK_BYTES) {
                chunks.push(&rows[start..i]);
                (start, bytes) = (i, 0);
            }
            bytes += size;
        }
        if start < rows.len() {
            chunks.push(&rows[start..]);
        }
        chunks
    }

    /// The statements of one chunk of [`ExecutionStore::execution_complete_batch`]: removals
    /// in one statement, updates in another, each with how many rows it must change.
    fn completion_statements(&self, chunk: &[Completion]) -> Vec<(Rendered, u64)> {
        let removals: Vec<_> = chunk
            .iter()
            .filter(|c| c.update.is_none())
            .map(|c| (&c.key, c.version))
            .collect();
        let updates: Vec<_> = chunk
            .iter()
            .filter_map(|c| c.update.as_ref().map(|u| (&c.key, c.version, u)))
            .collect();
        let mut stmts = Vec::new();
        if !removals.is_empty() {
            stmts.push((
                self.statements.delete_versions(&removals),
                removals.len() as u64,
            ));
        }
        if !updates.is_empty() {
            stmts.push((
                self.statements.update_versions(&updates),
                updates.len() as u64,
            ));
        }
        stmts
    }

    /// Looks whether the table has the dialect's per-level due index (migrations add it, a
    /// table migrated partway lacks it) and writes the due-queries accordingly.
    fn learn_indexes(&self) -> Result<(), StoreError> {
        let Some(index) = self.connector.dialect().syntax().due_level_index else {
            return Ok(());
        };
        let present = self.exists(self.statements.index_exists(index))?;
        self.statements.set_due_level_index(present);
        Ok(())
    }

    /// Looks whether the table of paused tasks exists.
    fn learn_paused_table(&self) -> Result<(), StoreError> {
        let present = self.exists(self.statements.paused_table_exists())?;
        self.statements.set_paused_table(present);
        Ok(())
    }

    fn has_paused_table(&self) -> bool {
        self.statements.paused_table()
    }

    /// [`StoreError::MissingMigration`] unless the table of paused tasks exists (looked up
    /// again first: it may have been migrated since `check_schema`).
    fn need_paused_table(&self) -> Result<(), StoreError> {
        if !self.has_paused_table() {
            self.learn_paused_table()?;
        }
        if self.has_paused_table() {
            Ok(())
        } else {
            Err(StoreError::MissingMigration {
                table: self.config.table.to_string(),
                name: crate::migrate::MIGRATION_PAUSED,
                feature: "pausing tasks",
            })
        }
    }

    fn has_column(&self, column: &str) -> Result<bool, StoreError> {
        self.exists(self.statements.column_exists(column))
    }

    fn exists(&self, stmt: Rendered) -> Result<bool, StoreError> {
        Ok(!self.rows(&stmt)?.is_empty())
    }

    fn names(&self, stmt: Rendered) -> Result<Vec<String>, StoreError> {
        decode_all(self.rows(&stmt)?, |r| r.text("name"))
    }

    fn items(&self, stmt: Rendered) -> Result<Vec<Item>, StoreError> {
        decode_all(self.rows(&stmt)?, Item::from_row)
    }

    fn assignments(&self, stmt: Rendered) -> Result<Vec<Assignment>, StoreError> {
        decode_all(self.rows(&stmt)?, Assignment::from_row)
    }

    /// In one transaction: locks the first row `select` returns and claims it for `q.worker`,
    /// replacing the worker's old assignment on it by an ACCEPTED one until `deadline`.
    fn claim_first(
        &self,
        select: &Rendered,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError> {
        let st = &self.statements;
        self.connector.in_transaction(&mut |s| {
            let first = s.query(select)?.into_iter().next();
            let Some(mut item) = first.map(|mut r| Item::from_row(&mut r)).transpose()? else {
                return Ok(None);
            };
            // Guarded by the item's state: 0 rows when another worker claimed it first (a
            // server that ignores the lock hint, as Babelfish does): not this worker's.
            if s.execute(&st.item_claim(&item.key, q.worker))? == 0 {
                tracing::debug!(item = %item.key.task_instance, "taken by another worker first");
                return Ok(None);
            }
            s.execute(&st.assignment_delete(&item.key, q.worker))?;
            let insert = st.assignment_insert(&item.key, q.worker, q.now, deadline);
            Self::one_row(s, &insert, "recording the assignment")?;
            item.assignments += 1;
            item.held_by = Some(q.worker.to_owned());
            Ok(Some(item))
        })
    }

    /// Runs `stmt` in a transaction that must change exactly one row, or fails naming `what`.
    fn one_row(s: &mut dyn SqlSession, stmt: &Rendered, what: &str) -> Result<(), StoreError> {
        match s.execute(stmt)? {
            1 => Ok(()),
            n => Err(StoreError::conflict(format!(
                "{what} changed {n} rows instead of 1"
            ))),
        }
    }
}

impl<C: SqlConnector> StoreInfo for SqlStore<C> {
    fn backend(&self) -> &'static str {
        self.connector.dialect().name()
    }

    fn capabilities(&self) -> Capabilities {
        self.connector.dialect().capabilities()
    }

    fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn wake_signals(&self) -> Option<std::sync::Arc<dyn WakeSignals>> {
        self.signals.clone()
    }

    fn migrate(&self, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
        let migrated = (|| {
            self.refuse_unknown_table()?;
            let applied = self.run_migrations(up_to, &mut |steps| steps)?;
            self.learn_indexes()?;
            Ok(applied)
        })();
        self.reshaped();
        migrated
    }

    fn adopt(&self, up_to: Option<&str>) -> Result<Adopted, StoreError> {
        let adopted = self.adopt_table(up_to).and_then(|adopted| {
            self.learn_indexes()?;
            Ok(adopted)
        });
        self.reshaped();
        adopted
    }
}

impl<C: SqlConnector> SqlStore<C> {
    /// Schema changes may add levels (or the priority column), failed ones included: the level
    /// cache starts over.
    fn reshaped(&self) {
        self.planner.wrote(None, None);
    }
}

/// A duplicate-key error as "no row inserted".
fn absent_if_duplicate(result: Result<u64, StoreError>) -> Result<u64, StoreError> {
    match result {
        Err(StoreError::Duplicate { .. }) => Ok(0),
        other => other,
    }
}
