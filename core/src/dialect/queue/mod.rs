//! The work-queue statements, rendered once for any dialect. Items are rows of the docket table
//! (alias `i`); assignments live in `<table>_assignments` (alias `a`). Every value is bound.

mod catalogue;

use super::statements::{Level, Statements};
use super::OrderIndex;
use super::{common, Catalog, FileLoad, LimitAt, LockAt, Rendered, SqlWriter, Value};
use crate::error::StoreError;
use crate::ordering::{CustomKey, Direction, KeyType, PrimaryOrder};
pub use crate::records::ForWorker;
use crate::records::{
    AssignmentStatus, ExecutionKey, Finish, Finishing, ItemsQuery, NewItem, RecordKey,
};
use chrono::{DateTime, Utc};

/// The item columns, in select-list order.
pub const ITEM_COLUMNS: [&str; 10] = [
    "task_name",
    "task_instance",
    "task_data",
    "execution_time",
    "record_date",
    "record_order",
    "custom_attributes",
    "max_assignments",
    "assignments",
    "held_by",
];

/// Columns an item insert writes without `priority`, in insert order (see
/// [`Statements::item_insert_rows`]).
const ITEM_INSERT_COLUMNS: [&str; 13] = [
    "task_name",
    "task_instance",
    "task_data",
    "execution_time",
    "picked",
    "consecutive_failures",
    "version",
    "record_date",
    "record_order",
    "custom_attributes",
    "max_assignments",
    "assignments",
    "assignable",
];

/// Most items one multi-row insert carries, whatever the bind limit: beyond a few thousand rows
/// a statement saves no more round-trip time, and its text and binds only grow.
pub const MAX_ROWS_PER_INSERT: usize = 4096;

/// The assignment columns, in select-list order.
pub const ASSIGNMENT_COLUMNS: [&str; 5] =
    ["task_name", "task_instance", "worker", "status", "deadline"];

impl Statements<'_> {
    fn item_select(&self, limit: Option<i64>) -> SqlWriter<'_> {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT ");
        if let Some(n) = limit {
            self.dialect().limit(&mut w, n, LimitAt::Head);
        }
        let cols: Vec<_> = ITEM_COLUMNS.iter().map(|c| format!("i.{c}")).collect();
        w.push(&cols.join(", ")).push(" FROM ").table(self.table());
        w.push(" i");
        w
    }

    fn where_item(w: &mut SqlWriter<'_>, key: &ExecutionKey, alias: &str) {
        w.push(" WHERE ")
            .push(alias)
            .push("task_name = ")
            .bind(key.task_name.as_str())
            .push(" AND ")
            .push(alias)
            .push("task_instance = ")
            .bind(key.task_instance.as_str());
    }

    /// The columns an item insert writes, with `item`'s values, in insert order.
    fn item_values(&self, item: &NewItem) -> Vec<(&'static str, Value)> {
        self.owned_item_values(item.clone())
    }

    /// [`Statements::item_values`] of an item the caller gives up (no copy of its texts).
    fn owned_item_values(&self, item: NewItem) -> Vec<(&'static str, Value)> {
        let ExecutionKey {
            task_name,
            task_instance,
        } = item.key;
        // In the order of `ITEM_INSERT_COLUMNS`, then `priority`.
        let values = [
            Value::Text(Some(task_name)),
            Value::Text(Some(task_instance)),
            Value::Bytes(item.data),
            Value::from(item.available_at),
            Value::Bool(false),
            Value::Int(0),
            Value::BigInt(1),
            Value::from(item.record.date),
            Value::BigInt(item.record.order),
            Value::Text(item.custom_attributes),
            Value::Int(item.max_assignments),
            Value::Int(0),
            Value::Bool(true),
            Value::SmallInt(item.priority),
        ];
        self.item_insert_columns().into_iter().zip(values).collect()
    }

    /// Inserts one item (a plain insert: an existing id fails the batch).
    pub fn item_insert(&self, item: &NewItem) -> Rendered {
        self.item_insert_rows(std::slice::from_ref(item))
    }

    /// Inserts `items` with one multi-row `INSERT ... VALUES (...), (...)` (plain: an existing
    /// id fails it). At most [`Statements::item_rows_per_insert`] items fit one statement.
    pub fn item_insert_rows(&self, items: &[NewItem]) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        if items.is_empty() {
            // Nothing to insert: a statement that inserts nothing.
            w.push("SELECT 1 FROM ")
                .table(self.table())
                .push(" WHERE 1 = 0");
        } else {
            w.push("INSERT INTO ")
                .table(self.table())
                .insert_rows(items.iter().map(|item| self.item_values(item)).collect());
        }
        w.finish()
    }

    /// How many items one [`Statements::item_insert_rows`] may carry
    /// ([`Statements::rows_per_insert`], at most [`MAX_ROWS_PER_INSERT`]).
    pub fn item_rows_per_insert(&self) -> usize {
        self.rows_per_insert(self.item_insert_columns().len(), MAX_ROWS_PER_INSERT)
    }

    /// The item columns an insert writes, in insert order (the names of
    /// [`Statements::item_insert_rows`]' values): `priority` last, where the policy has it.
    pub fn item_insert_columns(&self) -> Vec<&'static str> {
        let priority = self.policy().priority.then_some("priority");
        ITEM_INSERT_COLUMNS.into_iter().chain(priority).collect()
    }

    /// One row of a bulk intake file: the batch position `seq` (1-based), then `item`'s
    /// insert values ([`crate::dialect::file_load`]).
    pub fn item_file_values(&self, seq: i64, item: NewItem) -> Vec<Value> {
        let values = self.owned_item_values(item).into_iter().map(|(_, v)| v);
        std::iter::once(Value::BigInt(seq)).chain(values).collect()
    }

    /// Drops a bulk intake's staging table (`<table>_intake`) if this session has one.
    pub fn item_staging_drop(&self, load: &dyn FileLoad) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        load.drop_staging(&mut w, &self.table().intake());
        w.finish()
    }

    /// Creates the session's staging table with `seq` and the item insert columns.
    pub fn item_staging_create(&self, load: &dyn FileLoad) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        let columns = self.item_insert_columns();
        load.create_staging(&mut w, &self.table().intake(), self.table(), &columns);
        w.finish()
    }

    /// Loads the file at `path` (written by [`Statements::item_file_values`] rows) into the
    /// staging table; `None` when `path` cannot be written as a plain literal.
    pub fn item_staging_load(&self, load: &dyn FileLoad, path: &str) -> Option<Rendered> {
        let mut w = SqlWriter::new(self.dialect());
        let columns: Vec<&str> = std::iter::once("seq")
            .chain(self.item_insert_columns())
            .collect();
        load.load(&mut w, &self.table().intake(), &columns, path)
            .then(|| w.finish())
    }

    /// Publishes a bulk intake: inserts every row of the staging table into the table, in one
    /// statement (all or nothing).
    pub fn item_publish(&self) -> Rendered {
        let list = self.item_insert_columns().join(", ");
        let mut w = SqlWriter::new(self.dialect());
        w.push("INSERT INTO ")
            .table(self.table())
            .push(&format!(" ({list}) SELECT {list} FROM "))
            .table(&self.table().intake());
        w.finish()
    }

    /// How many rows the staging table holds, as column `n`.
    pub fn item_staged_count(&self) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT COUNT(*) AS n FROM ")
            .table(&self.table().intake());
        w.finish()
    }

    /// The first batch position missing from the staging table (a line the load skipped, its
    /// id repeating an earlier line's), as column `seq`: NULL when the missing ones come after
    /// every staged row.
    pub fn item_staged_first_skipped(&self) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push(
            "SELECT MIN(rn) AS seq FROM (SELECT seq, ROW_NUMBER() OVER (ORDER BY seq) AS rn FROM ",
        )
        .table(&self.table().intake())
        .push(") numbered WHERE seq <> rn");
        w.finish()
    }

    /// The first staged item (in batch order) whose id the table already has, as columns
    /// `task` and `name`.
    pub fn item_staged_existing(&self) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT ");
        self.dialect().limit(&mut w, 1, LimitAt::Head);
        w.push("s.task_name AS task, s.task_instance AS name FROM ")
            .table(&self.table().intake())
            .push(" s JOIN ")
            .table(self.table())
            .push(" i ON i.task_name = s.task_name AND i.task_instance = s.task_instance")
            .push(" ORDER BY s.seq");
        self.dialect().limit(&mut w, 1, LimitAt::Tail);
        w.finish()
    }

    /// The ids among `ids` that items of `task_type` already have, as column `name`.
    pub fn item_ids_present(&self, task_type: &str, ids: &[&str]) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT task_instance AS name FROM ")
            .table(self.table())
            .push(" WHERE task_name = ")
            .bind(task_type)
            .push(" AND task_instance IN ")
            .bind_input_list(ids);
        w.finish()
    }

    /// Work-queue items per task type: `task_name`, `items` (all) and `open_items` (assignable
    /// now). Not `open`: a reserved keyword in T-SQL, which SQL Server refuses as a bare alias.
    pub fn item_counts(&self) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT task_name, COUNT(*) AS items, SUM(CASE WHEN assignable = ")
            .bind(true)
            .push(" THEN 1 ELSE 0 END) AS open_items FROM ")
            .table(self.table())
            .push(" WHERE max_assignments IS NOT NULL GROUP BY task_name ORDER BY task_name");
        w.finish()
    }

    /// One item by key (a row without `max_assignments` is not an item).
    pub fn item_get(&self, key: &ExecutionKey) -> Rendered {
        let mut w = self.item_select(None);
        Self::where_item(&mut w, key, "i.");
        w.push(" AND i.max_assignments IS NOT NULL");
        w.finish()
    }

    /// The items `q.worker` may take, in policy order: arrived, assignable (nobody holds it and
    /// it is below `max_assignments`), and without an assignment of this worker that hides it.
    /// With `lock`, the first one is locked skipping rows other workers hold (the claim).
    ///
    /// Index-driven: `(task_name, assignable, [priority,] record_date, record_order)` is read
    /// in order and each candidate is checked against the assignments primary key; items that
    /// are held or full are not in the `assignable = true` range at all.
    pub fn item_eligible(&self, q: &ForWorker<'_>, limit: Option<i64>, lock: bool) -> Rendered {
        self.item_eligible_indexed(q, limit, lock, None)
    }

    /// [`Statements::item_eligible`], for a custom order whose [`OrderIndex`] (when given) has
    /// generated columns: the same rows in the same order, sorted by those columns, which the
    /// index holds in that order (see [`super::order_index`]).
    pub fn item_eligible_indexed(
        &self,
        q: &ForWorker<'_>,
        limit: Option<i64>,
        lock: bool,
        index: Option<&OrderIndex>,
    ) -> Rendered {
        let limit = self.eligible_limit(q, limit, lock);
        let mut w = self.item_select(limit);
        if lock {
            self.dialect().skip_locked(&mut w, LockAt::Table);
        }
        let index = index.filter(|ix| !ix.order_by.is_empty());
        let keys_source = index.is_none()
            && self
                .dialect()
                .json_keys_source(&mut w, q.order.custom_keys());
        self.push_eligible_where(&mut w, q);
        match index {
            Some(ix) => self.push_order_by_columns(&mut w, q.level, ix),
            None => self.push_order_from(&mut w, q.level, q.order, keys_source),
        }
        if let Some(n) = limit {
            self.dialect().limit(&mut w, n, LimitAt::Tail);
        }
        if lock {
            self.dialect().skip_locked(&mut w, LockAt::End);
        }
        w.finish()
    }

    /// `WHERE` of the items `q.worker` may take: arrived by `q.arrived_by`, assignable, at
    /// `q.level`, and without an assignment of this worker that hides it. Says that it reads
    /// items only (`max_assignments IS NOT NULL`, which `assignable` implies): PostgreSQL's
    /// queue indexes hold only items (its migration `0006_partial_indexes`), and a plan may use
    /// a partial index only where the query's `WHERE` implies the index's, bound values unseen.
    fn push_eligible_where(&self, w: &mut SqlWriter<'_>, q: &ForWorker<'_>) {
        w.push(" WHERE i.task_name = ")
            .bind(q.task_type)
            .push(" AND i.max_assignments IS NOT NULL AND i.assignable = ")
            .bind(true)
            .push(" AND i.execution_time <= ")
            .bind(q.arrived_by);
        common::level(w, q.level, "i.");
        if let Some(key) = q.key {
            w.push(" AND i.task_instance = ")
                .bind(key.task_instance.as_str());
        }
        w.push(" AND NOT EXISTS (SELECT 1 FROM ")
            .table(&self.table().assignments())
            .push(" a WHERE a.task_name = i.task_name AND a.task_instance = i.task_instance")
            .push(" AND a.worker = ")
            .bind(q.worker)
            .push(" AND (a.status IN ")
            .bind_list(AssignmentStatus::HIDING.iter().map(|s| s.as_str()))
            .push(" OR a.deadline > ")
            .bind(q.now)
            .push("))");
    }

    /// The priority levels that hold items `q.worker` may take, with the arrival time of each
    /// level's longest-waiting one (`priority`, `oldest`): what the weighted and aging modes
    /// choose a level from. Reads every eligible item once (a level's oldest arrival is not in
    /// the index order); strict mode never sends it.
    pub fn item_levels(&self, q: &ForWorker<'_>) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT i.priority, MIN(i.execution_time) AS oldest FROM ")
            .table(self.table())
            .push(" i");
        self.push_eligible_where(
            &mut w,
            &ForWorker {
                level: Level::Any,
                ..*q
            },
        );
        w.push(" GROUP BY i.priority");
        w.finish()
    }

    /// The row limit of [`Statements::item_eligible`]. A dialect that cannot limit the query
    /// block it locks ([`Capabilities::limit_with_lock`](super::Capabilities): Oracle rejects a
    /// row limit beside `FOR UPDATE`) locks only by key, in the two-phase claim
    /// ([`Capabilities::claim_locks_examined_rows`](super::Capabilities)): the key pins at most
    /// one row, so no limit is written.
    fn eligible_limit(&self, q: &ForWorker<'_>, limit: Option<i64>, lock: bool) -> Option<i64> {
        let by_key_unlimited =
            lock && q.key.is_some() && !self.dialect().capabilities().limit_with_lock;
        limit.filter(|_| !by_key_unlimited)
    }

    /// `ORDER BY` over an order index's generated columns: priority first when on, then each
    /// key's missing flag and value, then record date and order (the index's own order).
    fn push_order_by_columns(&self, w: &mut SqlWriter<'_>, level: Level, index: &OrderIndex) {
        w.push(" ORDER BY ");
        if self.policy().priority && level == Level::Any {
            w.push(&self.dialect().desc_nulls_last("priority"))
                .push(", ");
        }
        for (column, direction) in &index.order_by {
            w.push(&self.dialect().quote_ident(column))
                .push(match direction {
                    Direction::Asc => " ASC, ",
                    Direction::Desc => " DESC, ",
                });
        }
        w.push("record_date ASC, record_order ASC");
    }

    /// Marks a locked, assignable item held by `worker` and counts the assignment. Guarded by
    /// the assignable state itself, so a lost lock shows up as 0 rows, never as an item past
    /// `max_assignments` or held twice.
    pub fn item_claim(&self, key: &ExecutionKey, worker: &str) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("UPDATE ")
            .table(self.table())
            .push(" SET held_by = ")
            .bind(worker)
            .push(", assignments = assignments + 1, assignable = ")
            .bind(false)
            .push(", version = version + 1");
        Self::where_item(&mut w, key, "");
        w.push(" AND held_by IS NULL AND assignments < max_assignments");
        w.finish()
    }

    /// Releases an item `worker` holds; `uncount` when the assignment no longer counts (skip,
    /// return, abandon). `assignable` is set first: MySQL evaluates `SET` left to right with
    /// new values, the others with old ones, so it must read only columns not yet changed.
    pub fn item_release(&self, key: &ExecutionKey, worker: &str, uncount: bool) -> Rendered {
        let minus = i32::from(uncount);
        let mut w = SqlWriter::new(self.dialect());
        w.push("UPDATE ")
            .table(self.table())
            .push(" SET assignable = CASE WHEN assignments - ")
            .bind(minus)
            .push(" < max_assignments THEN ")
            .bind(true)
            .push(" ELSE ")
            .bind(false)
            .push(" END, assignments = assignments - ")
            .bind(minus)
            .push(", held_by = NULL, version = version + 1");
        Self::where_item(&mut w, key, "");
        w.push(" AND held_by = ").bind(worker);
        w.finish()
    }

    /// Raises `max_assignments` by `n` (`assignable` first, as in [`Statements::item_release`]).
    pub fn item_extend(&self, key: &ExecutionKey, n: i32) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("UPDATE ")
            .table(self.table())
            .push(
                " SET assignable = CASE WHEN held_by IS NULL AND assignments < max_assignments + ",
            )
            .bind(n)
            .push(" THEN ")
            .bind(true)
            .push(" ELSE ")
            .bind(false)
            .push(" END, max_assignments = max_assignments + ")
            .bind(n)
            .push(", version = version + 1");
        Self::where_item(&mut w, key, "");
        // No overflow past INTEGER (SQLite would store it and read it back truncated).
        w.push(" AND max_assignments <= ").bind(i32::MAX - n.max(0));
        w.finish()
    }

    /// Removes the (item, worker) assignment, so a new one can take its place.
    pub fn assignment_delete(&self, key: &ExecutionKey, worker: &str) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("DELETE FROM ").table(&self.table().assignments());
        Self::where_item(&mut w, key, "");
        w.push(" AND worker = ").bind(worker);
        w.finish()
    }

    /// Records an ACCEPTED assignment.
    pub fn assignment_insert(
        &self,
        key: &ExecutionKey,
        worker: &str,
        now: DateTime<Utc>,
        deadline: DateTime<Utc>,
    ) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("INSERT INTO ")
            .table(&self.table().assignments())
            .push(" (task_name, task_instance, worker, status, deadline, assigned_at, updated_at) VALUES ")
            .bind_list([
                Value::from(key.task_name.as_str()),
                Value::from(key.task_instance.as_str()),
                Value::from(worker),
                Value::from(AssignmentStatus::Accepted.as_str()),
                Value::from(deadline),
                Value::from(now),
                Value::from(now),
            ]);
        w.finish()
    }

    /// Ends an ACCEPTED assignment as `how` says; RETURNED and ABANDONED get the deadline
    /// `hidden_until`. Abandoning requires the deadline to have passed at `now`.
    pub fn assignment_finish(&self, f: &Finishing<'_>) -> Rendered {
        let Finishing {
            key,
            worker,
            how,
            now,
            hidden_until,
        } = *f;
        let mut w = SqlWriter::new(self.dialect());
        w.push("UPDATE ")
            .table(&self.table().assignments())
            .push(" SET status = ")
            .bind(how.status().as_str())
            .push(", updated_at = ")
            .bind(now);
        if matches!(how, Finish::Return | Finish::Abandon) {
            w.push(", deadline = ").bind(hidden_until);
        }
        Self::where_item(&mut w, key, "");
        w.push(" AND worker = ")
            .bind(worker)
            .push(" AND status = ")
            .bind(AssignmentStatus::Accepted.as_str());
        if how == Finish::Abandon {
            w.push(" AND deadline <= ").bind(now);
        }
        w.finish()
    }

    fn assignment_select(&self) -> SqlWriter<'_> {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT ")
            .push(&ASSIGNMENT_COLUMNS.join(", "))
            .push(", updated_at FROM ")
            .table(&self.table().assignments());
        w
    }

    /// ACCEPTED assignments whose deadline is at or before `now`.
    pub fn assignment_expired(&self, now: DateTime<Utc>) -> Rendered {
        let mut w = self.assignment_select();
        w.push(" WHERE status = ")
            .bind(AssignmentStatus::Accepted.as_str())
            .push(" AND deadline <= ")
            .bind(now)
            .push(" ORDER BY deadline ASC");
        w.finish()
    }

    /// The assignments of one item, by worker.
    pub fn assignment_list(&self, key: &ExecutionKey) -> Rendered {
        let mut w = self.assignment_select();
        Self::where_item(&mut w, key, "");
        w.push(" ORDER BY worker ASC");
        w.finish()
    }

    /// The items `q` selects with their versions and first assignments, in one statement: a
    /// CTE `l` of the first `q.limit` items of the type by arrival (`execution_time`, id),
    /// left-joined to their assignments numbered by worker (`rn`, at most `q.assignments`
    /// kept) and counted (`n_assignments`). One row per kept assignment, or one with NULL
    /// assignment columns for an item without any kept; by arrival, then worker.
    pub fn item_list_assigned(&self, q: &ItemsQuery<'_>) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        w.push("WITH l AS (SELECT ");
        self.dialect().limit(&mut w, q.limit, LimitAt::Head);
        let cols: Vec<_> = ITEM_COLUMNS.iter().map(|c| format!("i.{c}")).collect();
        w.push(&cols.join(", "))
            .push(", i.version FROM ")
            .table(self.table())
            .push(" i WHERE i.task_name = ")
            .bind(q.task_type)
            .push(" AND i.max_assignments IS NOT NULL");
        if let Some(item) = q.item {
            w.push(" AND i.task_instance = ").bind(item);
        }
        if let Some(worker) = q.held_by {
            w.push(" AND i.held_by = ").bind(worker);
        }
        w.push(" ORDER BY i.execution_time ASC, i.task_instance ASC");
        self.dialect().limit(&mut w, q.limit, LimitAt::Tail);
        w.push(") SELECT ");
        let cols: Vec<_> = ITEM_COLUMNS.iter().map(|c| format!("l.{c}")).collect();
        w.push(&cols.join(", ")).push(
            ", l.version, a.worker, a.status, a.deadline, a.updated_at, a.n_assignments \
             FROM l LEFT JOIN (SELECT x.task_instance, x.worker, x.status, x.deadline, \
             x.updated_at, ROW_NUMBER() OVER (PARTITION BY x.task_instance ORDER BY x.worker) \
             AS rn, COUNT(*) OVER (PARTITION BY x.task_instance) AS n_assignments FROM ",
        );
        w.table(&self.table().assignments()).push(
            " x JOIN l ON x.task_name = l.task_name AND x.task_instance = l.task_instance) a \
             ON a.task_instance = l.task_instance AND a.rn <= ",
        );
        w.bind(q.assignments.max(1))
            .push(" ORDER BY l.execution_time ASC, l.task_instance ASC, a.worker ASC");
        w.finish()
    }

    /// One row if the assignments table has `column`, none otherwise.
    pub fn assignments_column_exists(&self, column: &str) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        self.dialect().catalog(
            &mut w,
            &self.table().assignments(),
            Catalog::ColumnExists(column),
        );
        w.finish()
    }
}

/// The sample arguments of the catalogues: a fixed `now`, an item key and the item.
pub(crate) fn sample_item() -> (DateTime<Utc>, ExecutionKey, NewItem) {
    let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default();
    let key = ExecutionKey::new("review", "batch-1/1");
    let item = NewItem {
        key: key.clone(),
        data: None,
        available_at: now,
        record: RecordKey {
            date: now,
            order: 1,
        },
        custom_attributes: Some(r#"{"team":"a","score":3}"#.into()),
        max_assignments: 2,
        priority: Some(5),
    };
    (now, key, item)
}

/// The two-key custom order the catalogues render: `team` (text, ascending), then `score`
/// (number, descending).
pub fn sample_custom_keys() -> Vec<CustomKey> {
    [
        CustomKey::new("team", KeyType::Text, Direction::Asc),
        CustomKey::new("score", KeyType::Number, Direction::Desc),
    ]
    .into_iter()
    .filter_map(Result::ok)
    .collect()
}
