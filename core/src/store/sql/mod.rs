//! The thin store for every SQL backend, written once ([`SqlOps`]): render with
//! [`Statements`], run through the backend's [`SqlConnector`], decode the rows. With the
//! [`Planner`](crate::planner::Planner) above it, it is the backends' [`Store`]: [`SqlStore`].

mod adopt;
mod due;
mod intake;
mod poison;

pub use crate::planner::{
    LEVEL_CACHE_TTL_MS, MAX_HELD_BACK, MAX_PROBED_LEVELS, ORDER_INDEX_TTL_MS, POISON_HOLD_BACK_MS,
};
pub use adopt::AdoptPlan;
use intake::Staged;

use super::row::decode_all;
use super::*;
use crate::dialect::queue::ForWorker;
use crate::dialect::{Dialect, OrderIndex, OrderIndexStyle, Rendered, Statements};
use crate::migrate::{MigrationFile, TableMigration, MIGRATION_ORDERING, MIGRATION_WORK_QUEUE};
use crate::planner::{Decoded, ItemSource, Planned};
use std::collections::HashSet;

/// Candidates a two-phase `next_for` reads per round (see `Capabilities::claim_locks_examined_rows`).
const CANDIDATES: i64 = 8;

/// Rounds of candidates a two-phase `next_for` tries before it gives up (each failed round
/// means other workers claimed or locked every candidate meanwhile).
const MAX_CANDIDATE_ROUNDS: usize = 100;

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
        let stmt = Rendered {
            sql: sql.to_owned(),
            binds: Vec::new(),
        };
        self.execute(&stmt).map(drop)
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
}

/// The thin SQL store: every operation one statement or one transaction, nothing kept between
/// calls but what the table is (see [`Statements::set_due_level_index`]).
#[derive(Debug)]
pub struct SqlOps<C: SqlConnector> {
    connector: C,
    config: StoreConfig,
    statements: Statements<'static>,
}

/// The store every SQL backend hands out: [`SqlOps`] with the planner above it.
pub type SqlStore<C> = Planned<SqlOps<C>>;

impl<C: SqlConnector> SqlStore<C> {
    /// A store on `connector` for `config`. Call [`ExecutionStore::check_schema`] before use (the
    /// scheduler and client do).
    pub fn new(connector: C, config: StoreConfig) -> Self {
        Planned::over(SqlOps::new(connector, config))
    }

    /// The statements this store runs (for `explain`-style tooling).
    pub fn statements(&self) -> &Statements<'static> {
        &self.store().statements
    }

    /// The connector (pool).
    pub fn connector(&self) -> &C {
        &self.store().connector
    }
}

impl<C: SqlConnector> SqlOps<C> {
    /// The thin store on `connector` for `config`.
    pub fn new(connector: C, config: StoreConfig) -> Self {
        let statements = Statements::new(
            connector.dialect(),
            config.table.clone(),
            config.ordering.clone(),
        );
        // Until `check_schema` has looked: a hint on a missing index fails the statement.
        statements.set_due_level_index(false);
        Self {
            connector,
            config,
            statements,
        }
    }

    fn rows(&self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        self.connector.with_session(&mut |s| s.query(stmt))
    }

    fn executions(&self, stmt: Rendered) -> Result<Vec<Execution>, StoreError> {
        decode_all(self.rows(&stmt)?, Execution::from_row)
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

    /// One chunk of [`ExecutionStore::execution_complete_batch`]: removals in one statement,
    /// updates in another, in one transaction that must change every row it names. When it
    /// does not (some executions were changed by someone else: fenced out), it is rolled back
    /// and each completion is written on its own, so the answer for each is exact.
    fn complete_chunk(&self, chunk: &[Completion]) -> Result<Vec<bool>, StoreError> {
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
            stmts.push((self.statements.delete_versions(&removals), removals.len()));
        }
        if !updates.is_empty() {
            stmts.push((self.statements.update_versions(&updates), updates.len()));
        }
        let all = self.connector.in_transaction(&mut |s| {
            for (stmt, rows) in &stmts {
                let changed = s.execute(stmt)?;
                if changed != *rows as u64 {
                    return Err(StoreError::conflict(format!(
                        "a batched completion changed {changed} of {rows} rows"
                    )));
                }
            }
            Ok(())
        });
        let written = match all {
            Ok(()) => vec![true; chunk.len()],
            Err(StoreError::Conflict { .. }) => {
                return chunk
                    .iter()
                    .map(|c| {
                        let guard = Guard::Version(c.version);
                        match &c.update {
                            None => self.execution_remove(&c.key, guard),
                            Some(changes) => self.execution_update(&c.key, guard, changes),
                        }
                    })
                    .collect();
            }
            Err(e) => return Err(e),
        };
        Ok(written)
    }

    /// Looks whether the table has the dialect's per-level due index (migrations add it, a
    /// table migrated partway lacks it) and writes the due-queries accordingly.
    fn learn_indexes(&self) -> Result<(), StoreError> {
        let Some(index) = self.connector.dialect().due_level_index() else {
            return Ok(());
        };
        let present = self.exists(self.statements.index_exists(index))?;
        self.statements.set_due_level_index(present);
        Ok(())
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
            Self::one_row(s, &st.item_claim(&item.key, q.worker), "claiming the item")?;
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

impl<C: SqlConnector> StoreInfo for SqlOps<C> {
    fn backend(&self) -> &'static str {
        self.connector.dialect().name()
    }

    fn capabilities(&self) -> Capabilities {
        self.connector.dialect().capabilities()
    }

    fn config(&self) -> &StoreConfig {
        &self.config
    }

    fn migrate(&self, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
        self.refuse_unknown_table()?;
        let applied = self.run_migrations(up_to, &mut |steps| steps)?;
        self.learn_indexes()?;
        Ok(applied)
    }

    fn adopt(&self, up_to: Option<&str>) -> Result<Adopted, StoreError> {
        let adopted = self.adopt_table(up_to)?;
        self.learn_indexes()?;
        Ok(adopted)
    }
}

impl<C: SqlConnector> ExecutionOps for SqlOps<C> {
    fn check_schema(&self) -> Result<(), StoreError> {
        let missing = |name, feature| StoreError::MissingMigration {
            table: self.config.table.to_string(),
            name,
            feature,
        };
        if !self.has_column("task_name")? {
            return Err(missing(MIGRATION_BASE, "the scheduler"));
        }
        if self.config.ordering.priority && !self.has_column("priority")? {
            return Err(missing(MIGRATION_PRIORITY, "priority"));
        }
        self.learn_indexes()
    }

    // "Already exists" is decided here for every backend: an insert that adds no row (an
    // insert-if-absent clause) or that violates the key (backends without one) inserted nothing.
    fn execution_insert(&self, row: &NewExecution) -> Result<bool, StoreError> {
        Ok(absent_if_duplicate(self.execute(self.statements.insert(row)))? == 1)
    }

    // Multi-row inserts in chunks, all in one transaction. New keys are the common case, so the
    // first attempt inserts without skipping existing ones (`Statements::insert_many_new`: on
    // PostgreSQL a skip clause costs about a quarter of the insert). An existing key fails its
    // statement. Where the dialect can skip existing keys in the statement itself, the
    // transaction is rolled back and the batch inserted again with that clause; rows affected
    // count the new rows. Elsewhere the failed statement is the only thing rolled back (InnoDB,
    // SQL Server without XACT_ABORT, Oracle): its chunk is inserted row by row, each existing
    // key skipped as in `execution_insert`. (MySQL's `INSERT IGNORE` would skip duplicates
    // too, but it also turns other errors, such as an over-long value, into warnings.)
    fn execution_insert_batch(&self, rows: &[NewExecution]) -> Result<u64, StoreError> {
        let skips_existing = !self
            .connector
            .dialect()
            .insert_if_absent_suffix()
            .is_empty();
        let chunks = self.insert_chunks(rows);
        let insert = |render: &dyn Fn(&[NewExecution]) -> Rendered| {
            let stmts: Vec<_> = chunks.iter().map(|chunk| (render(chunk), chunk)).collect();
            self.connector.in_transaction(&mut |s| {
                stmts.iter().try_fold(0, |n, (stmt, chunk)| {
                    Ok(n + match s.execute(stmt) {
                        Err(StoreError::Duplicate { .. }) if !skips_existing => {
                            chunk.iter().try_fold(0, |n, row| {
                                let one = self.statements.insert(row);
                                Ok(n + absent_if_duplicate(s.execute(&one))?)
                            })?
                        }
                        other => other?,
                    })
                })
            })
        };
        match insert(&|chunk| self.statements.insert_many_new(chunk)) {
            Err(StoreError::Duplicate { .. }) if skips_existing => {
                insert(&|chunk| self.statements.insert_many(chunk))
            }
            other => other,
        }
    }

    fn execution_get(&self, key: &ExecutionKey) -> Result<Option<Execution>, StoreError> {
        Ok(self
            .executions(self.statements.get(key))?
            .into_iter()
            .next())
    }

    fn execution_list(&self, filter: &ListFilter) -> Result<Vec<Execution>, StoreError> {
        self.executions(self.statements.list(filter))
    }

    fn execution_update(
        &self,
        key: &ExecutionKey,
        guard: Guard,
        changes: &Changes,
    ) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.update(key, guard, changes))? == 1)
    }

    fn execution_complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError> {
        let dialect = self.connector.dialect();
        let most = (dialect.max_binds() / COMPLETION_BINDS_PER_ROW)
            .min(dialect.max_key_terms())
            .clamp(1, COMPLETION_CHUNK);
        let mut written = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(most) {
            written.extend(self.complete_chunk(chunk)?);
        }
        Ok(written)
    }

    fn execution_heartbeat(
        &self,
        key: &ExecutionKey,
        version: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.heartbeat(key, version, now))? == 1)
    }

    fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.delete(key, guard))? == 1)
    }

    fn execution_dead(&self, older_than: DateTime<Utc>) -> Result<Decoded, StoreError> {
        let (rows, bad) = poison::decode_executions(self.rows(&self.statements.dead(older_than))?);
        Ok(Decoded {
            rows,
            poison: bad.into_iter().map(|b| b.row).collect(),
        })
    }

    fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError> {
        decode_all(
            self.rows(&self.statements.summary())?,
            TaskSummary::from_row,
        )
    }

    fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError> {
        let items = self.has_column("max_assignments")?;
        self.names(self.statements.unresolved_names(known, items))
    }

    fn execution_delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        // Asked each time (this runs rarely): a table migrated to the work queue while a
        // scheduler runs must never lose items to the unknown-task clean-up.
        let items = self.has_column("max_assignments")?;
        self.execute(self.statements.delete_unresolved(known, before, items))
    }
}

impl<C: SqlConnector> QueueOps for SqlOps<C> {
    fn check_queue_schema(&self) -> Result<(), StoreError> {
        if !self.capabilities().work_queue {
            return Err(StoreError::Unsupported {
                backend: self.backend(),
                capability: "the work queue",
            });
        }
        self.check_schema()?;
        let missing = |name, feature| StoreError::MissingMigration {
            table: self.config.table.to_string(),
            name,
            feature,
        };
        if !self.has_column("record_order")? {
            return Err(missing(MIGRATION_ORDERING, "the work queue"));
        }
        if !self.has_column("assignable")?
            || !self.exists(self.statements.assignments_column_exists("worker"))?
        {
            return Err(missing(MIGRATION_WORK_QUEUE, "the work queue"));
        }
        Ok(())
    }

    fn item_insert_stream(
        &self,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
    ) -> Result<u64, StoreError> {
        let per = self.statements.item_rows_per_insert();
        let Some(load) = self.connector.dialect().file_load() else {
            return self.insert_in_chunks(rows, per);
        };
        // A batch that fits one multi-row insert gains nothing from a file.
        let head: Vec<_> = (&mut *rows).take(per + 1).collect();
        let large = head.len() > per;
        let mut rows = head.into_iter().chain(rows);
        if large {
            if let Staged::Inserted(n) = self.item_insert_staged(load, &mut rows)? {
                return Ok(n);
            }
        }
        self.insert_in_chunks(&mut rows, per)
    }

    fn item_counts(&self) -> Result<Vec<ItemCount>, StoreError> {
        if !self.has_column("max_assignments")? {
            return Ok(Vec::new());
        }
        decode_all(self.rows(&self.statements.item_counts())?, |r| {
            Ok(ItemCount {
                task_type: r.text("task_name")?,
                items: r.opt_i64("items")?.unwrap_or(0),
                open: r.opt_i64("open_items")?.unwrap_or(0),
            })
        })
    }

    fn order_index_create(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError> {
        let index = self.statements.order_index(keys)?;
        let steps = index.columns.iter().map(|c| (&c.exists, &c.add));
        let steps: Vec<_> = steps.chain([(&index.exists, &index.create)]).collect();
        self.converge(&index.name, &steps, true)
    }

    fn order_index_drop(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError> {
        let index = self.statements.order_index(keys)?;
        let columns = index.columns.iter().map(|c| (&c.exists, &c.drop));
        let steps: Vec<_> = [(&index.exists, &index.drop)]
            .into_iter()
            .chain(columns)
            .collect();
        self.converge(&index.name, &steps, false)
    }

    fn order_index_exists(&self, keys: &[CustomKey]) -> Result<(String, bool), StoreError> {
        let index = self.statements.order_index(keys)?;
        let exists = self.exists(index.exists.clone())?;
        Ok((index.name, exists))
    }

    fn item_get(&self, key: &ExecutionKey) -> Result<Option<Item>, StoreError> {
        Ok(self
            .items(self.statements.item_get(key))?
            .into_iter()
            .next())
    }

    fn item_extend(&self, key: &ExecutionKey, n: i32) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.item_extend(key, n))? == 1)
    }

    fn assignment_finish(&self, f: &Finishing<'_>) -> Result<bool, StoreError> {
        let finish = self.statements.assignment_finish(f);
        let release = self
            .statements
            .item_release(f.key, f.worker, !f.how.status().counts());
        self.connector.in_transaction(&mut |s| {
            if s.execute(&finish)? == 0 {
                return Ok(false);
            }
            Self::one_row(s, &release, "releasing the item")?;
            Ok(true)
        })
    }

    fn assignment_expired(&self, now: DateTime<Utc>) -> Result<Vec<Assignment>, StoreError> {
        self.assignments(self.statements.assignment_expired(now))
    }

    fn assignment_list(&self, key: &ExecutionKey) -> Result<Vec<Assignment>, StoreError> {
        self.assignments(self.statements.assignment_list(key))
    }
}

impl<C: SqlConnector> ItemSource for SqlOps<C> {
    fn item_levels(&self, q: &ForWorker<'_>) -> Result<Vec<(Level, DateTime<Utc>)>, StoreError> {
        let mut levels = decode_all(self.rows(&self.statements.item_levels(q))?, |r| {
            let level = r.opt_i16("priority")?.map_or(Level::Null, Level::Exactly);
            Ok((level, r.timestamp("oldest")?))
        })?;
        // Highest first, NULL last.
        levels.sort_by_key(|(l, _)| std::cmp::Reverse(l.priority().map_or(i32::MIN, i32::from)));
        Ok(levels)
    }

    fn item_claim(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
        index: Option<&OrderIndex>,
    ) -> Result<Option<Item>, StoreError> {
        self.next_for_sorted(q, deadline, index)
    }

    fn item_list(
        &self,
        q: &ForWorker<'_>,
        limit: i64,
        index: Option<&OrderIndex>,
    ) -> Result<Vec<Item>, StoreError> {
        self.items(
            self.statements
                .item_eligible_indexed(q, Some(limit), false, index),
        )
    }

    fn named_order_index(&self, keys: &[CustomKey]) -> Result<Option<OrderIndex>, StoreError> {
        if self.connector.dialect().order_index_style() != OrderIndexStyle::GeneratedColumns {
            return Ok(None);
        }
        self.statements.order_index(keys).map(Some)
    }

    fn order_index_present(&self, index: &OrderIndex) -> Result<bool, StoreError> {
        self.exists(index.exists.clone())
    }
}

/// The work queue's helpers: intake in chunks and indexed custom orders.
impl<C: SqlConnector> SqlOps<C> {
    /// [`QueueStore::item_next_for`] with the eligible items sorted as `index` says (see
    /// [`Statements::item_eligible_indexed`]).
    fn next_for_sorted(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
        index: Option<&OrderIndex>,
    ) -> Result<Option<Item>, StoreError> {
        if !self.capabilities().claim_locks_examined_rows {
            return self.claim_first(
                &self
                    .statements
                    .item_eligible_indexed(q, Some(1), true, index),
                q,
                deadline,
            );
        }
        // The database would lock every row its locking read examines (for a sort: every
        // eligible row), and concurrent claimers would skip them all. Read the candidates in
        // order without locks, then lock and claim the first that is still eligible, by key.
        let candidates = self
            .statements
            .item_eligible_indexed(q, Some(CANDIDATES), false, index);
        for _ in 0..MAX_CANDIDATE_ROUNDS {
            let found = self.items(candidates.clone())?;
            if found.is_empty() {
                return Ok(None);
            }
            for item in &found {
                let one = ForWorker {
                    key: Some(&item.key),
                    ..*q
                };
                let lock = self
                    .statements
                    .item_eligible_indexed(&one, Some(1), true, index);
                if let Some(claimed) = self.claim_first(&lock, q, deadline)? {
                    return Ok(Some(claimed));
                }
            }
        }
        tracing::warn!(
            worker = q.worker,
            task_type = q.task_type,
            "every candidate was taken by others; none claimed"
        );
        Ok(None)
    }

    /// Runs, in order, each step's statement whose object's existence (its query returns a
    /// row) is not `wanted` yet: an order index and its columns created or dropped, resumably
    /// (MySQL DDL is not transactional).
    fn converge(
        &self,
        index: &str,
        steps: &[(&Rendered, &Rendered)],
        wanted: bool,
    ) -> Result<IndexChange, StoreError> {
        let mut run = Vec::new();
        for (exists, statement) in steps {
            if self.exists((*exists).clone())? != wanted {
                self.execute((*statement).clone())?;
                run.push(statement.sql.clone());
            }
        }
        Ok(IndexChange {
            index: index.to_owned(),
            changed: !run.is_empty(),
            statements: run,
        })
    }

    /// Inserts the items of `rows` in one transaction, `per` at a time, each chunk one
    /// multi-row insert ([`QueueStore::item_insert_stream`]).
    fn insert_in_chunks(
        &self,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
        per: usize,
    ) -> Result<u64, StoreError> {
        let mut chunk = Vec::with_capacity(per);
        let mut read = 0u64;
        let result = self.connector.in_transaction(&mut |s| {
            let mut inserted = 0;
            loop {
                chunk.clear();
                for row in (&mut *rows).take(per) {
                    chunk.push(row.map_err(|e| StoreError::Input(Box::new(e)))?);
                    read += 1;
                }
                if chunk.is_empty() {
                    return Ok(inserted);
                }
                inserted += self.insert_item_chunk(s, &chunk)?;
            }
        });
        match result {
            // The database rejected a duplicate and ended the transaction (PostgreSQL), so
            // the id could not be asked there: ask now, rolled back, whether one of the
            // chunk's ids came from an earlier batch; if none did, it repeats an earlier chunk.
            Err(StoreError::Duplicate { .. }) if !chunk.is_empty() => {
                let existing = self
                    .connector
                    .with_session(&mut |s| self.existing_id(s, &chunk))?;
                Err(match existing {
                    Some(key) => duplicate_item(&key),
                    None => StoreError::RepeatedItem {
                        task: chunk[0].key.task_name.clone(),
                        from: read + 1 - chunk.len() as u64,
                        to: read,
                    },
                })
            }
            other => other,
        }
    }

    /// Inserts one chunk of a stream in the caller's transaction with one multi-row insert.
    /// An id repeated within the chunk is found in memory first. If the insert hits an id the
    /// table has (from an earlier batch, or an earlier chunk of this one), the transaction is
    /// asked which, where it is still usable (MySQL and SQLite undo only the failed
    /// statement); where it is not (PostgreSQL), the plain [`StoreError::Duplicate`] goes up
    /// and [`QueueStore::item_insert_stream`] asks after the rollback.
    fn insert_item_chunk(
        &self,
        s: &mut dyn SqlSession,
        chunk: &[NewItem],
    ) -> Result<u64, StoreError> {
        let mut seen = HashSet::with_capacity(chunk.len());
        if let Some(row) = chunk.iter().find(|r| !seen.insert(&r.key)) {
            return Err(duplicate_item(&row.key));
        }
        let inserted = match s.execute(&self.statements.item_insert_rows(chunk)) {
            Err(duplicate @ StoreError::Duplicate { .. }) => {
                return Err(match self.existing_id(s, chunk) {
                    Ok(Some(key)) => duplicate_item(&key),
                    _ => duplicate,
                })
            }
            Err(check @ StoreError::CheckViolation { .. }) => {
                return Err(rejected_item(s, &self.statements, chunk, check))
            }
            other => other?,
        };
        if inserted != chunk.len() as u64 {
            return Err(StoreError::conflict(format!(
                "inserted {inserted} of {} items",
                chunk.len()
            )));
        }
        Ok(inserted)
    }

    /// The first key of `chunk` (in its order) that the table has, one query per task type.
    fn existing_id(
        &self,
        s: &mut dyn SqlSession,
        chunk: &[NewItem],
    ) -> Result<Option<ExecutionKey>, StoreError> {
        // A chunk of one batch has one task type; `item_insert_batch` callers may mix them.
        let mut types: Vec<&str> = chunk.iter().map(|r| r.key.task_name.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        let mut present = HashSet::new();
        for task in types {
            let ids: Vec<&str> = chunk
                .iter()
                .filter(|r| r.key.task_name == task)
                .map(|r| r.key.task_instance.as_str())
                .collect();
            let stmt = self.statements.item_ids_present(task, &ids);
            for id in decode_all(s.query(&stmt)?, |r| r.text("name"))? {
                present.insert(ExecutionKey::new(task, id));
            }
        }
        Ok(chunk
            .iter()
            .find(|r| present.contains(&r.key))
            .map(|r| r.key.clone()))
    }
}

fn duplicate_item(key: &ExecutionKey) -> StoreError {
    StoreError::DuplicateItem {
        task: key.task_name.clone(),
        item: key.task_instance.clone(),
    }
}

/// The item of `chunk` whose row the database refused by a CHECK constraint (`violation`,
/// from the chunk's insert) as [`StoreError::RejectedItem`]: the chunk's one row, or else the
/// first row refused when the rows are inserted again one at a time in the same transaction
/// (which the caller rolls back: nothing stays inserted). The backends whose columns carry
/// such a check (SQL Server, Oracle) end only the failed statement, so the transaction can go
/// on; where it cannot (another error while trying), or no single row is refused, `violation`
/// is returned as it was.
fn rejected_item(
    s: &mut dyn SqlSession,
    statements: &Statements<'_>,
    chunk: &[NewItem],
    violation: StoreError,
) -> StoreError {
    let rejected = |row: &NewItem, reason: String| StoreError::RejectedItem {
        task: row.key.task_name.clone(),
        item: row.key.task_instance.clone(),
        reason,
    };
    let StoreError::CheckViolation { source } = &violation else {
        return violation;
    };
    if let [row] = chunk {
        return rejected(row, source.to_string());
    }
    for row in chunk {
        match s.execute(&statements.item_insert(row)) {
            Ok(_) => {}
            Err(StoreError::CheckViolation { source }) => return rejected(row, source.to_string()),
            Err(_) => return violation,
        }
    }
    violation
}

/// A duplicate-key error as "no row inserted".
fn absent_if_duplicate(result: Result<u64, StoreError>) -> Result<u64, StoreError> {
    match result {
        Err(StoreError::Duplicate { .. }) => Ok(0),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Ansi, Value};
    use crate::records::RecordKey;

    /// A session whose CHECK refuses rows with `"bad"` in their attributes, statement by
    /// statement (the transaction goes on, as on SQL Server and Oracle); `broken` fails every
    /// statement after the first refusal with another error instead.
    struct Checking {
        broken: bool,
        refused: bool,
        statements: Vec<usize>,
    }

    impl SqlSession for Checking {
        fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
            if self.broken && self.refused {
                return Err(StoreError::database("current transaction is aborted"));
            }
            let rows = stmt.sql.matches("), (").count() + 1;
            self.statements.push(rows);
            let bad = stmt
                .binds
                .iter()
                .any(|v| matches!(v, Value::Text(Some(t)) if t.contains("bad")));
            if bad {
                self.refused = true;
                return Err(StoreError::CheckViolation {
                    source: "The INSERT statement conflicted with the CHECK constraint".into(),
                });
            }
            Ok(rows as u64)
        }

        fn query(&mut self, _stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
            Ok(Vec::new())
        }
    }

    fn item(id: &str, attributes: &str) -> NewItem {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        NewItem {
            key: ExecutionKey::new("label", id),
            data: None,
            available_at: at,
            record: RecordKey { order: 1, date: at },
            custom_attributes: Some(attributes.to_owned()),
            max_assignments: 1,
            priority: None,
        }
    }

    fn statements() -> Statements<'static> {
        Statements::new(
            &Ansi,
            TableName::parse("jobs").unwrap(),
            crate::OrderingPolicy::default(),
        )
    }

    fn session(broken: bool, refused: bool) -> Checking {
        Checking {
            broken,
            refused,
            statements: Vec::new(),
        }
    }

    fn violation() -> StoreError {
        StoreError::CheckViolation {
            source: "check".into(),
        }
    }

    #[test]
    fn the_refused_row_of_a_chunk_is_named() {
        let statements = statements();
        let chunk = [
            item("a", "{}"),
            item("b", r#"{"x":"bad"}"#),
            item("c", "{}"),
        ];
        let mut s = session(false, false);
        let err = rejected_item(&mut s, &statements, &chunk, violation());
        assert!(
            matches!(&err, StoreError::RejectedItem { task, item, reason }
                if task == "label" && item == "b" && reason.contains("CHECK constraint")),
            "{err:?}"
        );
        assert_eq!(
            s.statements,
            vec![1, 1],
            "row by row, up to the refused one"
        );
        let one = rejected_item(&mut s, &statements, &chunk[2..], violation());
        assert!(
            matches!(&one, StoreError::RejectedItem { item, .. } if item == "c"),
            "a chunk of one row is that row: {one:?}"
        );
    }

    #[test]
    fn a_transaction_that_cannot_go_on_keeps_the_violation() {
        let statements = statements();
        let chunk = [item("a", r#"{"x":"bad"}"#), item("b", "{}")];
        let mut s = session(true, true);
        let err = rejected_item(&mut s, &statements, &chunk, violation());
        assert!(matches!(err, StoreError::CheckViolation { .. }), "{err:?}");
        let other = rejected_item(&mut s, &statements, &chunk, StoreError::conflict("x"));
        assert!(matches!(other, StoreError::Conflict { .. }), "{other:?}");
        let mut fine = session(false, false);
        let good = [item("a", "{}"), item("b", "{}")];
        let err = rejected_item(&mut fine, &statements, &good, violation());
        assert!(
            matches!(err, StoreError::CheckViolation { .. }),
            "no row refused alone: {err:?}"
        );
    }
}
