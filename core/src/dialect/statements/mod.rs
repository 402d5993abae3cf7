//! Every statement a store needs, rendered once for any [`Dialect`].
//!
//! The priority toggle is applied here and nowhere else: with priority off no statement names
//! the `priority` column, so a table without migration `0002_priority` keeps working. The
//! due-queries and claims are in `due.rs`, the catalogue and schema queries in `catalogue.rs`.

mod catalogue;
mod due;
mod lag;
mod limits;
mod paused;

pub use due::{ClaimParts, TaskOf};
pub use lag::LagRange;

use super::{common, Catalog, Dialect, Levels, LimitAt, LockAt, Rendered, SqlWriter, Value};
use crate::ident::TableName;
pub use crate::ordering::Level;
use crate::ordering::{Direction, OrderingPolicy, PrimaryOrder};
use crate::records::{
    Changes, DeadPage, Due, ExecutionKey, Guard, ListFilter, NewExecution, PickChange,
};
use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Rows of one insert that binds one array per column ([`Syntax::binds_arrays`](crate::dialect::Syntax::binds_arrays)): its text and
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

/// Renders the executions-table statements of one dialect, table and ordering policy.
#[derive(Debug, Clone)]
pub struct Statements<'d> {
    dialect: &'d dyn Dialect,
    table: TableName,
    policy: OrderingPolicy,
    /// Whether the table has [`Syntax::due_level_index`](crate::dialect::Syntax::due_level_index) (shared by clones).
    due_level_index: Arc<AtomicBool>,
    /// Whether the table of paused tasks exists (`0008_paused_tasks`; shared by clones).
    paused_table: Arc<AtomicBool>,
    /// Whether the table of limits exists (`0009_limits`; shared by clones).
    limits_table: Arc<AtomicBool>,
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
            paused_table: Arc::new(AtomicBool::new(true)),
            limits_table: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Says whether the table of paused tasks exists (`0008_paused_tasks`): the due-queries
    /// and claims leave paused tasks out, in the same statement, only then.
    pub fn set_paused_table(&self, present: bool) {
        self.paused_table.store(present, Ordering::Relaxed);
    }

    /// Whether the statements know the table of paused tasks (see
    /// [`Statements::set_paused_table`]).
    pub fn paused_table(&self) -> bool {
        self.paused_table.load(Ordering::Relaxed)
    }

    /// Says whether the table has the dialect's [`Syntax::due_level_index`](crate::dialect::Syntax::due_level_index): the per-level
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
    /// with, for dialects that write it up front ([`LimitAt::Head`]).
    fn select_from(&self, limit: Option<i64>) -> SqlWriter<'d> {
        let mut w = self.writer();
        w.push("SELECT ");
        if let Some(n) = limit {
            self.dialect.limit(&mut w, n, LimitAt::Head);
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
        self.push_order_from(w, level, primary, false);
    }

    /// [`Statements::push_order`], reading custom keys from the source
    /// [`Dialect::json_keys_source`] wrote when `keys_source` says it did.
    pub(crate) fn push_order_from(
        &self,
        w: &mut SqlWriter<'_>,
        level: Level,
        primary: &PrimaryOrder,
        keys_source: bool,
    ) {
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
            let value = |w: &mut SqlWriter<'_>| match keys_source {
                true => self.dialect.json_key_column(w, key, i),
                false => self.dialect.json_attribute(w, key),
            };
            w.push("CASE WHEN ");
            value(w);
            w.push(" IS NULL THEN 1 ELSE 0 END, ");
            value(w);
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
    /// columns, plus `priority` when on and `limit_key` when `with_key` (a row of the
    /// statement has one: a statement without keys stays the same text, and runs on a table
    /// without `0009_limits`).
    fn insert_row(&self, e: &NewExecution, with_key: bool) -> Vec<(&'static str, Value)> {
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
        let mut cols: Vec<_> = cols.into_iter().map(|(c, v)| (c.name(), v)).collect();
        if with_key {
            cols.push(("limit_key", Value::Text(e.limit_key.clone())));
        }
        cols
    }

    /// Binds one insert needs per row (see [`Statements::insert_many`]).
    pub fn insert_binds_per_row(&self) -> usize {
        // The seven columns of `insert_row`, `priority` when on, and room for `limit_key`.
        8 + usize::from(self.policy.priority)
    }

    /// How many rows one multi-row insert of `columns` columns may carry. With one bind per
    /// cell: as many as [`Syntax::max_binds`](crate::dialect::Syntax::max_binds) allows, at most `most`. With one array per
    /// column ([`Syntax::binds_arrays`](crate::dialect::Syntax::binds_arrays)): [`ARRAY_ROWS_PER_INSERT`]. Never more than
    /// [`Syntax::max_insert_rows`](crate::dialect::Syntax::max_insert_rows).
    pub fn rows_per_insert(&self, columns: usize, most: usize) -> usize {
        let rows = match self.dialect.syntax().binds_arrays {
            true => ARRAY_ROWS_PER_INSERT,
            false => (self.dialect.syntax().max_binds / columns.max(1)).min(most),
        };
        rows.min(self.dialect.syntax().max_insert_rows).max(1)
    }

    /// Inserts the rows in one multi-row `INSERT ... VALUES (...), (...)`. With the dialect's
    /// insert-if-absent clause ([`Syntax::insert_if_absent`](crate::dialect::Syntax::insert_if_absent)) existing keys are skipped
    /// and rows affected count the new ones; without it an existing key fails the whole
    /// statement (the store then inserts that chunk row by row). Callers pass at least one row
    /// and keep the binds within [`Syntax::max_binds`](crate::dialect::Syntax::max_binds).
    pub fn insert_many(&self, rows: &[NewExecution]) -> Rendered {
        self.insert_rows(rows, self.dialect.syntax().insert_if_absent)
    }

    /// [`Statements::insert_many`] without the insert-if-absent clause: an existing key fails
    /// the statement on every dialect. PostgreSQL's `ON CONFLICT` costs a speculative insertion
    /// per row (an index probe and a confirmation record), about a quarter of a bulk insert's
    /// time; the store tries this first and skips existing keys only when one repeats.
    pub fn insert_many_new(&self, rows: &[NewExecution]) -> Rendered {
        self.insert_rows(rows, "")
    }

    fn insert_rows(&self, rows: &[NewExecution], suffix: &str) -> Rendered {
        let with_key = rows.iter().any(|e| e.limit_key.is_some());
        let rows = rows.iter().map(|e| self.insert_row(e, with_key)).collect();
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

    /// Heartbeats the given picked executions, each only if it still has the given version
    /// (`version` stays: a heartbeat is no change of the execution): one statement. Rows
    /// affected tell how many were still held.
    pub fn heartbeat_versions(
        &self,
        rows: &[(&ExecutionKey, i64)],
        now: DateTime<Utc>,
    ) -> Rendered {
        let mut w = self.writer();
        w.push("UPDATE ")
            .table(&self.table)
            .push(" SET last_heartbeat = ")
            .bind(now);
        self.push_picked_at(&mut w, rows);
        w.finish()
    }

    /// The keys of `rows` that are picked at the given version, in one statement: which rows a
    /// [`Statements::heartbeat_versions`] that changed fewer rows than it named did reach.
    pub fn picked_at_versions(&self, rows: &[(&ExecutionKey, i64)]) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT task_name, task_instance FROM ")
            .table(&self.table);
        self.push_picked_at(&mut w, rows);
        w.finish()
    }

    /// ` WHERE picked = ? AND (<each key at its version>)`.
    fn push_picked_at(&self, w: &mut SqlWriter<'_>, rows: &[(&ExecutionKey, i64)]) {
        w.push(" WHERE picked = ").bind(true).push(" AND (");
        self.push_keys(w, rows.iter().map(|(k, v)| (*k, Some(*v))).collect());
        w.push(")");
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
                    let mut whens = 0;
                    for ((key, _, _), value) in rows.iter().zip(&values) {
                        if let Some(value) = value {
                            whens += 1;
                            if whens > 1 {
                                w.sized_by_input();
                            }
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

    /// Picked executions whose last heartbeat is at or before `older_than`, all of them (the
    /// db-scheduler form; the stores read [`Statements::dead_page`] and
    /// [`Statements::dead_counts`], bounded).
    pub fn dead(&self, older_than: DateTime<Utc>) -> Rendered {
        let mut w = self.select_from(None);
        w.push(" WHERE picked = ")
            .bind(true)
            .push(" AND last_heartbeat <= ")
            .bind(older_than)
            .push(" ORDER BY last_heartbeat ASC");
        w.finish()
    }

    /// One page of the dead executions ([`DeadPage`]): picked, heartbeat at or before
    /// `older_than`, of `task_name` when given, after the page's cursor, in `(last_heartbeat, task_name, task_instance)`
    /// order, at most `limit` rows.
    pub fn dead_page(&self, page: &DeadPage) -> Rendered {
        let mut w = self.select_from(Some(page.limit));
        w.push(" WHERE picked = ")
            .bind(true)
            .push(" AND last_heartbeat <= ")
            .bind(page.older_than);
        if let Some(task) = &page.task_name {
            w.push(" AND task_name = ").bind(task.as_str());
        }
        if let Some((at, key)) = &page.after {
            // Spelled out: SQL Server and Oracle have no row-value comparison.
            w.push(" AND (last_heartbeat > ")
                .bind(*at)
                .push(" OR (last_heartbeat = ")
                .bind(*at)
                .push(" AND (task_name > ")
                .bind(key.task_name.as_str())
                .push(" OR (task_name = ")
                .bind(key.task_name.as_str())
                .push(" AND task_instance > ")
                .bind(key.task_instance.as_str())
                .push("))))");
        }
        w.push(" ORDER BY last_heartbeat ASC, task_name ASC, task_instance ASC");
        self.dialect.limit(&mut w, page.limit, LimitAt::Tail);
        w.finish()
    }

    /// Dead executions counted per task (columns `task_name`, `dead`): one row per task name.
    pub fn dead_counts(&self, older_than: DateTime<Utc>) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT task_name, COUNT(*) AS dead FROM ")
            .table(&self.table)
            .push(" WHERE picked = ")
            .bind(true)
            .push(" AND last_heartbeat <= ")
            .bind(older_than)
            .push(" GROUP BY task_name ORDER BY task_name");
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
            self.dialect.limit(&mut w, limit, LimitAt::Tail);
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
}

#[cfg(test)]
mod tests;
