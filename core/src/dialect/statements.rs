//! Every statement a store needs, rendered once for any [`Dialect`].
//!
//! The priority toggle is applied here and nowhere else: with priority off no statement names
//! the `priority` column, so a table without migration `0002_priority` keeps working.

use super::{Array, Dialect, LockAndFetch, Rendered, SqlWriter, Value};
use crate::ident::TableName;
pub use crate::ordering::Level;
use crate::ordering::{Direction, OrderingPolicy, PrimaryOrder};
use crate::records::{Changes, ExecutionKey, Guard, ListFilter, NewExecution, PickChange};
use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Rows of one insert that binds one array per column ([`Dialect::binds_arrays`]): its text and
/// binds do not grow with the rows, so only memory bounds it. 20,000 executions into
/// PostgreSQL: 81k rows/s in chunks of 10,000 against 70k in chunks of 1,000.
pub const ARRAY_ROWS_PER_INSERT: usize = 10_000;

/// The columns of the executions table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Column {
    TaskName,
    TaskInstance,
    TaskData,
    ExecutionTime,
    Picked,
    PickedBy,
    LastSuccess,
    LastFailure,
    ConsecutiveFailures,
    LastHeartbeat,
    Version,
    Priority,
}

impl Column {
    /// Every column except `priority`, in select-list order.
    pub const BASE: [Column; 11] = [
        Column::TaskName,
        Column::TaskInstance,
        Column::TaskData,
        Column::ExecutionTime,
        Column::Picked,
        Column::PickedBy,
        Column::LastSuccess,
        Column::LastFailure,
        Column::ConsecutiveFailures,
        Column::LastHeartbeat,
        Column::Version,
    ];

    /// The column's SQL name (a fixed lowercase identifier, never user input).
    pub const fn name(self) -> &'static str {
        match self {
            Column::TaskName => "task_name",
            Column::TaskInstance => "task_instance",
            Column::TaskData => "task_data",
            Column::ExecutionTime => "execution_time",
            Column::Picked => "picked",
            Column::PickedBy => "picked_by",
            Column::LastSuccess => "last_success",
            Column::LastFailure => "last_failure",
            Column::ConsecutiveFailures => "consecutive_failures",
            Column::LastHeartbeat => "last_heartbeat",
            Column::Version => "version",
            Column::Priority => "priority",
        }
    }
}

/// What a due-query asks for: rows of `task_names` at `level`, due by `due_by`, at most `limit`,
/// leaving out the keys in `exclude` (rows a store holds back, such as poison rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due<'a> {
    /// Which priority level.
    pub level: Level,
    /// The clock's now (the claim time of a claiming due-query).
    pub now: DateTime<Utc>,
    /// Rows due at or before this (`now` unless an aging poll reads a band of older rows).
    pub due_by: DateTime<Utc>,
    /// Only these tasks.
    pub task_names: &'a [String],
    /// At most this many rows.
    pub limit: i64,
    /// Never these rows.
    pub exclude: &'a [ExecutionKey],
}

impl<'a> Due<'a> {
    /// A due-query excluding nothing.
    pub fn new(level: Level, now: DateTime<Utc>, task_names: &'a [String], limit: i64) -> Self {
        Self {
            level,
            now,
            due_by: now,
            task_names,
            limit,
            exclude: &[],
        }
    }
}

/// Renders the executions-table statements of one dialect, table and ordering policy.
#[derive(Debug, Clone)]
pub struct Statements<'d> {
    dialect: &'d dyn Dialect,
    table: TableName,
    policy: OrderingPolicy,
    /// Whether the table has [`Dialect::due_level_index`] (shared by clones).
    due_level_index: Arc<AtomicBool>,
}

impl<'d> Statements<'d> {
    /// Statements for `table` under `policy`, written for a table with every migration applied
    /// (see [`Statements::set_due_level_index`]).
    pub fn new(dialect: &'d dyn Dialect, table: TableName, policy: OrderingPolicy) -> Self {
        Self {
            dialect,
            table,
            policy,
            due_level_index: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Says whether the table has the dialect's [`Dialect::due_level_index`]: the per-level
    /// due-queries name it in a hint only then, so a table migrated partway (without it)
    /// still runs them.
    pub fn set_due_level_index(&self, present: bool) {
        self.due_level_index.store(present, Ordering::Relaxed);
    }

    /// The dialect.
    pub fn dialect(&self) -> &'d dyn Dialect {
        self.dialect
    }

    /// The ordering policy in force.
    pub fn policy(&self) -> &OrderingPolicy {
        &self.policy
    }

    /// The table.
    pub fn table(&self) -> &TableName {
        &self.table
    }

    /// The columns statements read and write: all base columns, plus `priority` when on.
    pub fn columns(&self) -> Vec<Column> {
        let mut cols = Column::BASE.to_vec();
        if self.policy.priority {
            cols.push(Column::Priority);
        }
        cols
    }

    fn select_list(&self) -> String {
        let names: Vec<_> = self.columns().iter().map(|c| c.name()).collect();
        names.join(", ")
    }

    fn writer(&self) -> SqlWriter<'d> {
        SqlWriter::new(self.dialect)
    }

    /// `SELECT [<top>]<columns> FROM <table>`; `limit` is the row limit the query will end
    /// with, for dialects that write it up front ([`Dialect::top`]).
    fn select_from(&self, limit: Option<i64>) -> SqlWriter<'d> {
        let mut w = self.writer();
        w.push("SELECT ");
        if let Some(n) = limit {
            self.dialect.top(&mut w, n);
        }
        w.push(&self.select_list())
            .push(" FROM ")
            .table(&self.table);
        w
    }

    /// Writes ` ORDER BY` for hand-out order at `level` under `primary`: priority (NULL last)
    /// when on and reading every level, then the primary order. Within one level only the
    /// primary order matters.
    pub(crate) fn push_order(&self, w: &mut SqlWriter<'_>, level: Level, primary: &PrimaryOrder) {
        w.push(" ORDER BY ");
        if self.policy.priority && level == Level::Any {
            w.push(&self.dialect.desc_nulls_last(Column::Priority.name()))
                .push(", ");
        }
        let keys = primary.custom_keys();
        if *primary == PrimaryOrder::ExecutionTime {
            w.push("execution_time ASC");
        } else if keys.is_empty() {
            // FIFO; a custom order without keys has nothing else to order by.
            w.push("record_date ASC, record_order ASC");
        }
        for (i, key) in keys.iter().enumerate() {
            if i > 0 {
                w.push(", ");
            }
            // Missing last in either direction, the same on every backend.
            w.push("CASE WHEN ");
            self.dialect.json_attribute(w, key);
            w.push(" IS NULL THEN 1 ELSE 0 END, ");
            self.dialect.json_attribute(w, key);
            w.push(match key.direction {
                Direction::Asc => " ASC",
                Direction::Desc => " DESC",
            });
        }
        if !keys.is_empty() {
            // Ties beyond the keys in record order, so a listing and the claim agree.
            w.push(", record_date ASC, record_order ASC");
        }
    }

    fn where_key(w: &mut SqlWriter<'_>, key: &ExecutionKey) {
        w.push(" WHERE ");
        Self::key_equals(w, key);
    }

    /// `task_name = ? AND task_instance = ?`.
    fn key_equals(w: &mut SqlWriter<'_>, key: &ExecutionKey) {
        w.push("task_name = ")
            .bind(key.task_name.as_str())
            .push(" AND task_instance = ")
            .bind(key.task_instance.as_str());
    }

    fn guard(w: &mut SqlWriter<'_>, guard: Guard) {
        match guard {
            Guard::Any => {}
            Guard::Version(v) => {
                w.push(" AND version = ").bind(v);
            }
            Guard::Unpicked => {
                w.push(" AND picked = ").bind(false);
            }
        }
    }

    /// Inserts one execution unless its `(task_name, task_instance)` exists (0 rows then).
    pub fn insert(&self, e: &NewExecution) -> Rendered {
        self.insert_many(std::slice::from_ref(e))
    }

    /// The columns an insert writes and, for one row, their values: all but the run-time
    /// columns, plus `priority` when on.
    fn insert_row(&self, e: &NewExecution) -> Vec<(&'static str, Value)> {
        let mut cols = vec![
            (Column::TaskName, Value::from(e.task_name.as_str())),
            (Column::TaskInstance, Value::from(e.task_instance.as_str())),
            (Column::TaskData, Value::Bytes(e.task_data.clone())),
            (Column::ExecutionTime, Value::from(e.execution_time)),
            (Column::Picked, Value::Bool(false)),
            (Column::ConsecutiveFailures, Value::Int(0)),
            (Column::Version, Value::BigInt(1)),
        ];
        if self.policy.priority {
            cols.push((Column::Priority, Value::SmallInt(e.priority)));
        }
        cols.into_iter().map(|(c, v)| (c.name(), v)).collect()
    }

    /// Binds one insert needs per row (see [`Statements::insert_many`]).
    pub fn insert_binds_per_row(&self) -> usize {
        // The seven columns of `insert_row`, and `priority` when on.
        7 + usize::from(self.policy.priority)
    }

    /// How many rows one multi-row insert of `columns` columns may carry. With one bind per
    /// cell: as many as [`Dialect::max_binds`] allows, at most `most`. With one array per
    /// column ([`Dialect::binds_arrays`]): [`ARRAY_ROWS_PER_INSERT`]. Never more than
    /// [`Dialect::max_insert_rows`].
    pub fn rows_per_insert(&self, columns: usize, most: usize) -> usize {
        let rows = match self.dialect.binds_arrays() {
            true => ARRAY_ROWS_PER_INSERT,
            false => (self.dialect.max_binds() / columns.max(1)).min(most),
        };
        rows.min(self.dialect.max_insert_rows()).max(1)
    }

    /// Inserts the rows in one multi-row `INSERT ... VALUES (...), (...)`. With the dialect's
    /// insert-if-absent clause ([`Dialect::insert_if_absent_suffix`]) existing keys are skipped
    /// and rows affected count the new ones; without it an existing key fails the whole
    /// statement (the store then inserts that chunk row by row). Callers pass at least one row
    /// and keep the binds within [`Dialect::max_binds`].
    pub fn insert_many(&self, rows: &[NewExecution]) -> Rendered {
        self.insert_rows(rows, self.dialect.insert_if_absent_suffix())
    }

    /// [`Statements::insert_many`] without the insert-if-absent clause: an existing key fails
    /// the statement on every dialect. PostgreSQL's `ON CONFLICT` costs a speculative insertion
    /// per row (an index probe and a confirmation record), about a quarter of a bulk insert's
    /// time; the store tries this first and skips existing keys only when one repeats.
    pub fn insert_many_new(&self, rows: &[NewExecution]) -> Rendered {
        self.insert_rows(rows, "")
    }

    fn insert_rows(&self, rows: &[NewExecution], suffix: &str) -> Rendered {
        let rows = rows.iter().map(|e| self.insert_row(e)).collect();
        let mut w = self.writer();
        w.push("INSERT INTO ")
            .table(&self.table)
            .insert_rows(rows)
            .push(suffix);
        w.finish()
    }

    /// One execution by key.
    pub fn get(&self, key: &ExecutionKey) -> Rendered {
        let mut w = self.select_from(None);
        Self::where_key(&mut w, key);
        w.finish()
    }

    /// `WHERE` of the due-queries plus their `ORDER BY` and limit.
    /// Returns the level the `ORDER BY` was written for (see [`Statements::due_where`]).
    fn due_rows(&self, w: &mut SqlWriter<'_>, due: &Due<'_>) -> Level {
        let order_level = self.due_where(w, due);
        self.push_order(w, order_level, &self.policy.primary);
        self.dialect.limit(w, due.limit);
        order_level
    }

    /// `WHERE` of the due-queries; returns the level their `ORDER BY` is written for:
    /// [`Level::Any`] (priority first) where the dialect selected one level its own way
    /// ([`Dialect::due_level_filter`]), else the due-query's level.
    fn due_where(&self, w: &mut SqlWriter<'_>, due: &Due<'_>) -> Level {
        let Due {
            level,
            due_by,
            task_names,
            ..
        } = *due;
        if self.due_level_index.load(Ordering::Relaxed) {
            self.dialect.due_index_hint(w, level);
        }
        w.push(" WHERE picked = ")
            .bind(false)
            .push(" AND execution_time <= ")
            .bind(due_by);
        match level {
            // Read in execution-time order from the due index, whatever the statistics say.
            Level::Any => self.dialect.due_task_filter(w, task_names),
            _ => {
                w.push(" AND task_name IN ")
                    .bind_list(task_names.iter().map(String::as_str));
            }
        }
        let order_level = match level {
            Level::Exactly(p) if self.dialect.due_level_filter(w, p) => Level::Any,
            _ => {
                Self::push_level(w, level, "");
                level
            }
        };
        Self::push_exclusion(w, due.exclude);
        order_level
    }

    /// ` AND <alias>priority = ?` or ` AND <alias>priority IS NULL`; nothing for [`Level::Any`].
    pub(crate) fn push_level(w: &mut SqlWriter<'_>, level: Level, alias: &str) {
        match level {
            Level::Any => {}
            Level::Exactly(p) => {
                w.push(" AND ")
                    .push(alias)
                    .push("priority = ")
                    .bind(Value::SmallInt(Some(p)));
            }
            Level::Null => {
                w.push(" AND ").push(alias).push("priority IS NULL");
            }
        }
    }

    /// ` AND NOT ((task_name = ? AND task_instance = ?) OR ...)`: nothing when `exclude` is
    /// empty, so the due-queries stay the same text unless a store holds rows back.
    fn push_exclusion(w: &mut SqlWriter<'_>, exclude: &[ExecutionKey]) {
        if exclude.is_empty() {
            return;
        }
        w.push(" AND NOT ");
        Self::push_any_key(w, exclude);
    }

    /// `((task_name = ? AND task_instance = ?) OR ...)`, one term per key.
    fn push_any_key(w: &mut SqlWriter<'_>, keys: &[ExecutionKey]) {
        w.push("(");
        Self::key_terms(w, keys.iter().map(|k| (k, None)));
        w.push(")");
    }

    /// [`Statements::due`] for a [`Due`] (which may exclude keys).
    pub fn due_excluding(&self, due: &Due<'_>) -> Rendered {
        let mut w = self.select_from(Some(due.limit));
        self.due_rows(&mut w, due);
        w.finish()
    }

    /// Due, unclaimed executions of the given tasks at `level`, in hand-out order
    /// (fetch-and-lock-on-execute reads these, then claims each with [`Statements::update`]).
    pub fn due(
        &self,
        level: Level,
        now: DateTime<Utc>,
        task_names: &[String],
        limit: i64,
    ) -> Rendered {
        self.due_excluding(&Due::new(level, now, task_names, limit))
    }

    /// The first execution of `level` due strictly after `now`, any task, picked or not: one
    /// index probe on `(priority, execution_time)`. A store that found `level` empty at `now`
    /// skips it until that time (see `SqlStore`'s level cache). Ignoring the task and `picked`
    /// filters can only make the answer earlier, so the skip stays conservative.
    pub fn next_at_level(&self, level: Level, now: DateTime<Utc>) -> Rendered {
        let mut w = self.select_from(Some(1));
        w.push(" WHERE execution_time > ").bind(now);
        Self::push_level(&mut w, level, "");
        self.push_order(&mut w, level, &PrimaryOrder::ExecutionTime);
        self.dialect.limit(&mut w, 1);
        w.finish()
    }

    /// The distinct non-NULL priorities in the table below `below` (all when `None`), highest
    /// first (see [`Level`]): all of them or only the highest, as the dialect lists them
    /// ([`Dialect::lists_all_levels`]).
    pub fn priority_levels(&self, below: Option<i16>) -> Rendered {
        let mut w = self.writer();
        self.dialect.priority_levels(&mut w, &self.table, below);
        w.finish()
    }

    /// The due-query with the dialect's skip-locked clause, for
    /// [`super::LockAndFetch::SelectThenUpdate`]; run it in the
    /// transaction that then runs [`Statements::claim_keys`].
    ///
    /// Where the dialect has a [`Dialect::row_locator`] (it cannot limit and lock in one query
    /// block), the limit goes into a subquery of locators and the outer block locks, repeating
    /// `picked = false` so a row claimed and committed by someone else in between is not
    /// returned as due.
    pub fn due_for_update(
        &self,
        level: Level,
        now: DateTime<Utc>,
        task_names: &[String],
        limit: i64,
    ) -> Rendered {
        self.due_for_update_excluding(&Due::new(level, now, task_names, limit))
    }

    /// [`Statements::due_for_update`] for a [`Due`] (which may exclude keys).
    pub fn due_for_update_excluding(&self, due: &Due<'_>) -> Rendered {
        let mut w = match self.dialect.row_locator() {
            None => {
                let mut w = self.select_from(Some(due.limit));
                w.push(self.dialect.lock_hint());
                self.due_rows(&mut w, due);
                w
            }
            Some(locator) => {
                let mut w = self.select_from(None);
                w.push(self.dialect.lock_hint())
                    .push(" WHERE ")
                    .push(locator)
                    .push(" IN (SELECT ");
                self.dialect.top(&mut w, due.limit);
                w.push(locator).push(" FROM ").table(&self.table);
                let order_level = self.due_rows(&mut w, due);
                w.push(") AND picked = ").bind(false);
                self.push_order(&mut w, order_level, &self.policy.primary);
                w
            }
        };
        w.push(self.dialect.skip_locked_clause());
        w.finish()
    }

    /// Marks the given (locked) executions picked by `picked_by`. Guarded by `picked = false`
    /// as well, so a missing lock shows up as a short count instead of a double claim.
    pub fn claim_keys(
        &self,
        keys: &[ExecutionKey],
        picked_by: &str,
        now: DateTime<Utc>,
    ) -> Rendered {
        let mut w = self.writer();
        self.push_claim_set(&mut w, picked_by, now);
        w.push(" WHERE picked = ").bind(false).push(" AND (");
        self.push_keys(&mut w, keys.iter().map(|k| (k, None)).collect());
        w.push(")");
        w.finish()
    }

    /// Writes the condition of a statement that writes the executions `keys` names (each with
    /// its version, when given): [`Statements::key_terms`], or where the dialect has a
    /// [`Dialect::key_probe`] and there are several keys, one primary-key probe per key over
    /// bound arrays, `<open>SELECT (SELECT x.<columns> FROM <table> x WHERE x.task_name = k.n
    /// AND x.task_instance = k.i [AND x.version = k.v]) FROM UNNEST(?, ? [, ?]) AS k(n, i
    /// [, v])<close>`. Callers give a version for every key or for none.
    fn push_keys(&self, w: &mut SqlWriter<'_>, keys: Vec<(&ExecutionKey, Option<i64>)>) {
        let probe = match self.dialect.key_probe() {
            Some(probe) if keys.len() > 1 => probe,
            _ => return Self::key_terms(w, keys),
        };
        let versions: Option<Vec<i64>> = keys.iter().map(|(_, v)| *v).collect();
        w.push(probe.open)
            .push("SELECT (SELECT x.")
            .push(probe.columns)
            .push(" FROM ")
            .table(&self.table)
            .push(" x WHERE x.task_name = k.n AND x.task_instance = k.i");
        if versions.is_some() {
            w.push(" AND x.version = k.v");
        }
        let text = |f: fn(&ExecutionKey) -> &String| {
            Value::Array(Array::Text(
                keys.iter().map(|(k, _)| Some(f(k).clone())).collect(),
            ))
        };
        w.push(") FROM UNNEST(")
            .bind(text(|k| &k.task_name))
            .push(", ")
            .bind(text(|k| &k.task_instance));
        match versions {
            Some(v) => {
                w.push(", ")
                    .bind(Value::Array(Array::BigInt(v)))
                    .push(") AS k(n, i, v)");
            }
            None => {
                w.push(") AS k(n, i)");
            }
        }
        w.push(probe.close);
    }

    /// Writes `(task_name = ? AND task_instance = ? [AND version = ?]) OR ...`, one term per
    /// key, with the version when given: a form every dialect accepts (SQL Server has no
    /// row-valued `IN`), each term an equality on the primary key.
    fn key_terms<'k>(
        w: &mut SqlWriter<'_>,
        keys: impl IntoIterator<Item = (&'k ExecutionKey, Option<i64>)>,
    ) {
        for (i, (key, version)) in keys.into_iter().enumerate() {
            if i > 0 {
                w.push(" OR ");
            }
            Self::key_term(w, key);
            if let Some(v) = version {
                w.push(" AND version = ").bind(v);
            }
            w.push(")");
        }
    }

    /// `(task_name = ? AND task_instance = ?`, left open for more conditions.
    fn key_term(w: &mut SqlWriter<'_>, key: &ExecutionKey) {
        w.push("(");
        Self::key_equals(w, key);
    }

    fn push_claim_set(&self, w: &mut SqlWriter<'_>, picked_by: &str, now: DateTime<Utc>) {
        w.push("UPDATE ")
            .table(&self.table)
            .push(" SET picked = ")
            .bind(true)
            .push(", picked_by = ")
            .bind(picked_by)
            .push(", last_heartbeat = ")
            .bind(now)
            .push(", version = version + 1");
    }

    /// Claims up to `limit` due executions in one statement, skipping rows other claimers
    /// hold: `UPDATE ... WHERE (key) IN (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING ...`, or
    /// for [`LockAndFetch::CteUpdateOutput`] `WITH due AS (SELECT ... <lock hint> ...) UPDATE
    /// due SET ... OUTPUT inserted...`. The returned rows come back unordered; callers sort
    /// them with the policy.
    pub fn lock_and_fetch(
        &self,
        level: Level,
        now: DateTime<Utc>,
        task_names: &[String],
        limit: i64,
        picked_by: &str,
    ) -> Rendered {
        self.lock_and_fetch_excluding(&Due::new(level, now, task_names, limit), picked_by)
    }

    /// [`Statements::lock_and_fetch`] for a [`Due`] (which may exclude keys).
    pub fn lock_and_fetch_excluding(&self, due: &Due<'_>, picked_by: &str) -> Rendered {
        if self.dialect.capabilities().lock_and_fetch == Some(LockAndFetch::CteUpdateOutput) {
            return self.lock_and_fetch_cte(due, picked_by);
        }
        let claim = self.dialect.claim_match();
        let mut w = self.writer();
        self.push_claim_set(&mut w, picked_by, due.now);
        w.push(" WHERE ").push(claim.open).push("SELECT ");
        self.dialect.top(&mut w, due.limit);
        w.push(claim.columns)
            .push(" FROM ")
            .table(&self.table)
            .push(self.dialect.lock_hint());
        self.due_rows(&mut w, due);
        w.push(self.dialect.skip_locked_clause())
            .push(claim.close)
            .push(" RETURNING ")
            .push(&self.select_list());
        w.finish()
    }

    /// [`Statements::lock_and_fetch`] as one update through an ordered, limited CTE.
    fn lock_and_fetch_cte(&self, due: &Due<'_>, picked_by: &str) -> Rendered {
        let mut w = self.writer();
        w.push("WITH due AS (SELECT ");
        self.dialect.top(&mut w, due.limit);
        w.push(&self.select_list())
            .push(" FROM ")
            .table(&self.table)
            .push(self.dialect.lock_hint());
        self.due_rows(&mut w, due);
        w.push(self.dialect.skip_locked_clause())
            .push(") UPDATE due SET picked = ")
            .bind(true)
            .push(", picked_by = ")
            .bind(picked_by)
            .push(", last_heartbeat = ")
            .bind(due.now)
            .push(", version = version + 1 OUTPUT ");
        let inserted: Vec<_> = self
            .columns()
            .iter()
            .map(|c| format!("inserted.{}", c.name()))
            .collect();
        w.push(&inserted.join(", "));
        w.finish()
    }

    /// Changes one execution, guarded, bumping `version` (the fencing token).
    pub fn update(&self, key: &ExecutionKey, guard: Guard, changes: &Changes) -> Rendered {
        let mut w = self.writer();
        w.push("UPDATE ").table(&self.table).push(" SET ");
        for (col, value) in self.sets(changes) {
            w.push(col.name()).push(" = ").bind(value).push(", ");
        }
        w.push("version = version + 1");
        Self::where_key(&mut w, key);
        Self::guard(&mut w, guard);
        w.finish()
    }

    /// Removes the given executions, each only if it still has the given version: one
    /// statement, `DELETE ... WHERE (key = ? AND version = ?) OR ...`. Rows affected tell how
    /// many were removed.
    pub fn delete_versions(&self, rows: &[(&ExecutionKey, i64)]) -> Rendered {
        let mut w = self.writer();
        w.push("DELETE FROM ").table(&self.table).push(" WHERE ");
        self.push_keys(&mut w, rows.iter().map(|(k, v)| (*k, Some(*v))).collect());
        w.finish()
    }

    /// Applies each row's changes to its execution, each only if it still has the given
    /// version, bumping `version`: one statement. A column every row sets to the same value is
    /// set plainly; one that differs reads its value per row with `CASE WHEN <key> THEN ? ...
    /// ELSE <column> END` (rows that leave it alone keep theirs). Rows affected tell how many
    /// were changed.
    pub fn update_versions(&self, rows: &[(&ExecutionKey, i64, &Changes)]) -> Rendered {
        let per_row: Vec<Vec<(Column, Value)>> =
            rows.iter().map(|(_, _, c)| self.sets(c)).collect();
        let mut columns: Vec<Column> = Vec::new();
        for sets in &per_row {
            for (c, _) in sets {
                if !columns.contains(c) {
                    columns.push(*c);
                }
            }
        }
        let mut w = self.writer();
        w.push("UPDATE ").table(&self.table).push(" SET ");
        for column in columns {
            let values: Vec<Option<&Value>> = per_row
                .iter()
                .map(|sets| sets.iter().find(|(c, _)| *c == column).map(|(_, v)| v))
                .collect();
            w.push(column.name()).push(" = ");
            match values.first() {
                Some(Some(first)) if values.iter().all(|v| *v == Some(*first)) => {
                    w.bind((*first).clone());
                }
                _ => {
                    w.push("CASE");
                    for ((key, _, _), value) in rows.iter().zip(&values) {
                        if let Some(value) = value {
                            w.push(" WHEN ");
                            Self::key_term(&mut w, key);
                            w.push(") THEN ").bind((*value).clone());
                        }
                    }
                    w.push(" ELSE ").push(column.name()).push(" END");
                }
            }
            w.push(", ");
        }
        w.push("version = version + 1 WHERE ");
        self.push_keys(
            &mut w,
            rows.iter().map(|(k, v, _)| (*k, Some(*v))).collect(),
        );
        w.finish()
    }

    /// The columns `changes` sets and their values, in a fixed order (`version` excepted).
    fn sets(&self, changes: &Changes) -> Vec<(Column, Value)> {
        let mut sets: Vec<(Column, Value)> = Vec::new();
        match &changes.pick {
            Some(PickChange::Claim { by, at }) => {
                sets.push((Column::Picked, Value::Bool(true)));
                sets.push((Column::PickedBy, Value::Text(Some(by.clone()))));
                sets.push((Column::LastHeartbeat, Value::Timestamp(Some(*at))));
            }
            Some(PickChange::Release) => {
                sets.push((Column::Picked, Value::Bool(false)));
                sets.push((Column::PickedBy, Value::Text(None)));
                sets.push((Column::LastHeartbeat, Value::Timestamp(None)));
            }
            None => {}
        }
        if let Some(t) = changes.execution_time {
            sets.push((Column::ExecutionTime, Value::from(t)));
        }
        if let Some(data) = &changes.data {
            sets.push((Column::TaskData, Value::Bytes(data.clone())));
        }
        if let Some(t) = changes.last_success {
            sets.push((Column::LastSuccess, Value::from(t)));
        }
        if let Some(t) = changes.last_failure {
            sets.push((Column::LastFailure, Value::from(t)));
        }
        if let Some(n) = changes.consecutive_failures {
            sets.push((Column::ConsecutiveFailures, Value::Int(n)));
        }
        if let (true, Some(p)) = (self.policy.priority, changes.priority) {
            sets.push((Column::Priority, Value::SmallInt(p)));
        }
        sets
    }

    /// Records a heartbeat of a picked execution; the version is the guard, not bumped.
    pub fn heartbeat(&self, key: &ExecutionKey, version: i64, now: DateTime<Utc>) -> Rendered {
        let mut w = self.writer();
        w.push("UPDATE ")
            .table(&self.table)
            .push(" SET last_heartbeat = ")
            .bind(now);
        Self::where_key(&mut w, key);
        w.push(" AND picked = ").bind(true);
        Self::guard(&mut w, Guard::Version(version));
        w.finish()
    }

    /// Removes one execution, guarded.
    pub fn delete(&self, key: &ExecutionKey, guard: Guard) -> Rendered {
        let mut w = self.writer();
        w.push("DELETE FROM ").table(&self.table);
        Self::where_key(&mut w, key);
        Self::guard(&mut w, guard);
        w.finish()
    }

    /// Picked executions whose last heartbeat is at or before `older_than`.
    pub fn dead(&self, older_than: DateTime<Utc>) -> Rendered {
        let mut w = self.select_from(None);
        w.push(" WHERE picked = ")
            .bind(true)
            .push(" AND last_heartbeat <= ")
            .bind(older_than)
            .push(" ORDER BY last_heartbeat ASC");
        w.finish()
    }

    /// Executions matching `filter`, in hand-out order.
    pub fn list(&self, filter: &ListFilter) -> Rendered {
        let mut w = self.select_from(filter.limit);
        w.push(" WHERE 1 = 1");
        if let Some(task) = &filter.task_name {
            w.push(" AND task_name = ").bind(task.as_str());
        }
        if let Some(picked) = filter.picked {
            w.push(" AND picked = ").bind(picked);
        }
        if filter.failing_only {
            w.push(" AND consecutive_failures > ").bind(0i32);
        }
        self.push_order(&mut w, Level::Any, &self.policy.primary);
        if let Some(limit) = filter.limit {
            self.dialect.limit(&mut w, limit);
        }
        w.finish()
    }

    /// Per task: total, picked, failing, earliest execution time.
    pub fn summary(&self) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT task_name, COUNT(*) AS total, SUM(CASE WHEN picked = ")
            .bind(true)
            .push(" THEN 1 ELSE 0 END) AS picked, SUM(CASE WHEN consecutive_failures > ")
            .bind(0i32)
            .push(
                " THEN 1 ELSE 0 END) AS failing, MIN(execution_time) AS next_execution_time FROM ",
            )
            .table(&self.table)
            .push(" GROUP BY task_name ORDER BY task_name");
        w.finish()
    }

    /// Rows of tasks not in `known`; with `items`, work-queue items (rows with
    /// `max_assignments`) are excluded: their task types are not scheduler tasks.
    fn where_unknown(w: &mut SqlWriter<'_>, known: &[String], items: bool) {
        w.push(" WHERE 1 = 1");
        if !known.is_empty() {
            w.push(" AND task_name NOT IN ")
                .bind_list(known.iter().map(String::as_str));
        }
        if items {
            w.push(" AND max_assignments IS NULL");
        }
    }

    /// Distinct task names present in the table that are not in `known` (see
    /// `where_unknown` for `items`: true when the table has the work-queue columns).
    pub fn unresolved_names(&self, known: &[String], items: bool) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT DISTINCT task_name AS name FROM ")
            .table(&self.table);
        Self::where_unknown(&mut w, known, items);
        w.push(" ORDER BY task_name");
        w.finish()
    }

    /// Deletes unpicked executions of unknown tasks that were due before `before` (never
    /// work-queue items when `items`).
    pub fn delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
        items: bool,
    ) -> Rendered {
        let mut w = self.writer();
        w.push("DELETE FROM ").table(&self.table);
        Self::where_unknown(&mut w, known, items);
        w.push(" AND picked = ")
            .bind(false)
            .push(" AND execution_time < ")
            .bind(before);
        w.finish()
    }

    /// One row if `column` exists on the table, none otherwise.
    pub fn column_exists(&self, column: &str) -> Rendered {
        let mut w = self.writer();
        self.dialect.column_exists(&mut w, &self.table, column);
        w.finish()
    }

    /// One row if the index `index` exists on the table, none otherwise.
    pub fn index_exists(&self, index: &str) -> Rendered {
        let mut w = self.writer();
        self.dialect.index_exists(&mut w, &self.table, index);
        w.finish()
    }

    /// Every statement this renderer can emit, each rendered once with fixed sample arguments
    /// (now = 2026-01-01T00:00:00Z, tasks `report` and `email`, limit 10, claimer `node-1`),
    /// under a stable name. For tooling (`docket explain --all`) and golden tests: the list and
    /// its order only grow, so a backend's golden file stays comparable across versions.
    pub fn catalogue(&self) -> Vec<(&'static str, Rendered)> {
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or_default();
        let later = now + chrono::Duration::minutes(5);
        let tasks = ["report".to_owned(), "email".to_owned()];
        let key = ExecutionKey::new("report", "1");
        let keys = [key.clone(), ExecutionKey::new("email", "7")];
        let new = NewExecution {
            task_name: "report".into(),
            task_instance: "1".into(),
            task_data: Some(b"{}".to_vec()),
            execution_time: now,
            priority: Some(90),
        };
        let claim = Changes {
            pick: Some(PickChange::Claim {
                by: "node-1".into(),
                at: now,
            }),
            ..Changes::default()
        };
        let reschedule = Changes {
            pick: Some(PickChange::Release),
            execution_time: Some(later),
            last_success: Some(now),
            consecutive_failures: Some(0),
            ..Changes::default()
        };
        let failure = Changes {
            pick: Some(PickChange::Release),
            execution_time: Some(later),
            last_failure: Some(now),
            consecutive_failures: Some(3),
            ..Changes::default()
        };
        let client = Changes {
            execution_time: Some(later),
            data: Some(Some(b"{}".to_vec())),
            priority: Some(Some(50)),
            ..Changes::default()
        };
        let filter = ListFilter {
            task_name: Some("report".into()),
            picked: Some(false),
            failing_only: true,
            limit: Some(10),
        };
        // With priority on, stores send the per-level forms (see `Level`); the single ordered
        // statement (`Level::Any`) is what they fall back to past `MAX_PROBED_LEVELS`.
        let forms: &[(Level, [&'static str; 3])] = if self.policy.priority {
            &[
                (Level::Any, ["due", "due_for_update", "lock_and_fetch"]),
                (
                    Level::Exactly(50),
                    [
                        "due_at_level",
                        "due_for_update_at_level",
                        "lock_and_fetch_at_level",
                    ],
                ),
                (
                    Level::Null,
                    [
                        "due_null_level",
                        "due_for_update_null_level",
                        "lock_and_fetch_null_level",
                    ],
                ),
            ]
        } else {
            &[(Level::Any, ["due", "due_for_update", "lock_and_fetch"])]
        };
        let second = NewExecution {
            task_name: "email".into(),
            task_instance: "7".into(),
            task_data: None,
            priority: None,
            ..new.clone()
        };
        let mut all = vec![
            ("insert", self.insert(&new)),
            (
                "insert_many",
                self.insert_many(&[new.clone(), second.clone()]),
            ),
            (
                "insert_many_new",
                self.insert_many_new(&[new.clone(), second]),
            ),
            ("get", self.get(&key)),
        ];
        if self.policy.priority {
            all.push(("priority_levels", self.priority_levels(None)));
            all.push(("priority_levels_below", self.priority_levels(Some(5))));
        }
        for (level, [due, for_update, lock]) in forms {
            all.push((*due, self.due(*level, now, &tasks, 10)));
            all.push((*for_update, self.due_for_update(*level, now, &tasks, 10)));
            all.push((
                *lock,
                self.lock_and_fetch(*level, now, &tasks, 10, "node-1"),
            ));
        }
        all.extend([
            ("claim_keys", self.claim_keys(&keys, "node-1", now)),
            ("update_claim", self.update(&key, Guard::Version(1), &claim)),
            (
                "update_reschedule",
                self.update(&key, Guard::Version(2), &reschedule),
            ),
            ("update_client", self.update(&key, Guard::Unpicked, &client)),
            ("heartbeat", self.heartbeat(&key, 2, now)),
            ("delete", self.delete(&key, Guard::Version(2))),
            (
                "delete_versions",
                self.delete_versions(&[(&keys[0], 2), (&keys[1], 5)]),
            ),
            (
                "update_versions",
                self.update_versions(&[(&keys[0], 2, &reschedule), (&keys[1], 5, &failure)]),
            ),
            ("dead", self.dead(now)),
            ("list", self.list(&filter)),
            ("summary", self.summary()),
            ("unresolved_names", self.unresolved_names(&tasks, false)),
            (
                "delete_unresolved",
                self.delete_unresolved(&tasks, now, false),
            ),
            ("column_exists", self.column_exists(Column::Priority.name())),
        ]);
        if self.policy.priority {
            all.push(("next_at_level", self.next_at_level(Level::Exactly(50), now)));
        }
        // Due-queries while the store holds poison rows back (their keys are excluded).
        let held_back = [ExecutionKey::new("report", "bad")];
        let due = Due {
            exclude: &held_back,
            ..Due::new(Level::Any, now, &tasks, 10)
        };
        all.extend([
            ("due_excluding", self.due_excluding(&due)),
            (
                "due_for_update_excluding",
                self.due_for_update_excluding(&due),
            ),
            (
                "lock_and_fetch_excluding",
                self.lock_and_fetch_excluding(&due, "node-1"),
            ),
            // Adopting an existing table (`docket migrate --adopt`): its columns and indexes.
            ("table_columns", self.table_columns()),
            ("index_columns", self.index_columns()),
        ]);
        all
    }

    /// The table's columns (`name`, `data_type`), none when it does not exist.
    pub fn table_columns(&self) -> Rendered {
        let mut w = self.writer();
        self.dialect.table_columns(&mut w, &self.table);
        w.finish()
    }

    /// The key columns of the table's indexes (`index_name`, `position`, `column_name`).
    pub fn index_columns(&self) -> Rendered {
        let mut w = self.writer();
        self.dialect.index_columns(&mut w, &self.table);
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Ansi;
    use std::collections::HashSet;

    #[test]
    fn catalogue_names_are_unique_and_binds_match_placeholders() {
        for policy in [
            OrderingPolicy::execution_time(),
            OrderingPolicy::priority_then_execution_time(),
        ] {
            let s = Statements::new(&Ansi, TableName::default(), policy);
            let catalogue = s.catalogue();
            let names: HashSet<_> = catalogue.iter().map(|(n, _)| *n).collect();
            assert_eq!(names.len(), catalogue.len());
            for (name, r) in &catalogue {
                assert_eq!(r.sql.matches('?').count(), r.binds.len(), "{name}");
            }
        }
    }

    #[test]
    fn batch_statements_bind_what_they_say() {
        for policy in [
            OrderingPolicy::execution_time(),
            OrderingPolicy::priority_then_execution_time(),
        ] {
            let s = Statements::new(&Ansi, TableName::default(), policy);
            let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0).unwrap();
            let rows: Vec<_> = (0..3)
                .map(|i| NewExecution {
                    task_name: "t".into(),
                    task_instance: i.to_string(),
                    task_data: None,
                    execution_time: now,
                    priority: Some(1),
                })
                .collect();
            let insert = s.insert_many(&rows);
            assert_eq!(insert.binds.len(), 3 * s.insert_binds_per_row());
            assert_eq!(insert.sql.matches("), (").count(), 2, "{}", insert.sql);
        }
    }

    #[test]
    fn update_versions_sets_shared_values_once_and_differing_ones_per_row() {
        let s = Statements::new(
            &Ansi,
            TableName::default(),
            OrderingPolicy::execution_time(),
        );
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0).unwrap();
        let (a, b) = (ExecutionKey::new("t", "1"), ExecutionKey::new("t", "2"));
        let release = |at, failures| Changes {
            pick: Some(PickChange::Release),
            execution_time: Some(at),
            consecutive_failures: Some(failures),
            ..Changes::default()
        };
        let (ca, cb) = (
            release(now, 0),
            release(now + chrono::Duration::minutes(1), 0),
        );
        let r = s.update_versions(&[(&a, 3, &ca), (&b, 4, &cb)]);
        assert_eq!(
            r.sql,
            "UPDATE \"scheduled_tasks\" SET picked = ?, picked_by = ?, last_heartbeat = ?, \
             execution_time = CASE WHEN (task_name = ? AND task_instance = ?) THEN ? \
             WHEN (task_name = ? AND task_instance = ?) THEN ? ELSE execution_time END, \
             consecutive_failures = ?, version = version + 1 WHERE \
             (task_name = ? AND task_instance = ? AND version = ?) OR \
             (task_name = ? AND task_instance = ? AND version = ?)"
        );
        assert_eq!(r.binds.len(), 16);
        assert_eq!(r.binds[12], Value::BigInt(3));
        let d = s.delete_versions(&[(&a, 3), (&b, 4)]);
        assert_eq!(
            d.sql,
            "DELETE FROM \"scheduled_tasks\" WHERE (task_name = ? AND task_instance = ? AND \
             version = ?) OR (task_name = ? AND task_instance = ? AND version = ?)"
        );
    }

    #[test]
    fn priority_off_catalogue_never_names_priority_outside_the_column_check() {
        let s = Statements::new(
            &Ansi,
            TableName::default(),
            OrderingPolicy::execution_time(),
        );
        for (name, r) in s.catalogue() {
            if name != "column_exists" {
                assert!(!r.sql.contains("priority"), "{name}: {}", r.sql);
            }
        }
    }
}
