//! The due-queries and the claims: one priority level (or all), due by a time, leaving out
//! held-back keys; lock-and-fetch in each dialect's shape.

use super::*;

impl<'d> Statements<'d> {
    /// `WHERE` of the due-queries plus their `ORDER BY` and limit.
    /// Returns the level the `ORDER BY` was written for.
    fn due_rows(&self, w: &mut SqlWriter<'_>, due: &Due<'_>) -> Level {
        let order_level = self.due_where(w, due);
        self.push_order(w, order_level, &self.policy.primary);
        self.dialect.limit(w, due.limit, LimitAt::Tail);
        order_level
    }

    /// `WHERE` of the due-queries, as the dialect writes it ([`Dialect::due_filter`]), then
    /// what they leave out; returns the level their `ORDER BY` is written for.
    fn due_where(&self, w: &mut SqlWriter<'_>, due: &Due<'_>) -> Level {
        let filter = due.filter(self.due_level_index.load(Ordering::Relaxed));
        let order_level = self.dialect.due_filter(w, &filter);
        self.push_left_out(w, due, None);
        order_level
    }

    /// The due rows of one task of a claim by task ([`Due::by_task`]) from `WHERE` on: its
    /// range of the lag index (`picked = ? AND execution_time <= ? AND task_name = <task>`),
    /// what the claim leaves out, `ORDER BY` and the limit at the tail. Returns the level the
    /// `ORDER BY` is written for.
    fn task_rows(&self, w: &mut SqlWriter<'_>, due: &Due<'_>, task: TaskOf<'_>) -> Level {
        match task {
            TaskOf::Bound(_) => common::due_head(w, &due.filter(false)),
            TaskOf::Lateral { unpicked, .. } => {
                w.push(" WHERE picked = ")
                    .push(unpicked)
                    .push(" AND execution_time <= ")
                    .bind(due.due_by);
            }
        }
        w.push(" AND task_name = ");
        task.push(w);
        common::level(w, due.level, "");
        self.push_left_out(w, due, Some(task));
        self.push_order(w, due.level, &self.policy.primary);
        self.dialect.limit(w, due.limit, LimitAt::Tail);
        due.level
    }

    /// What every due-query leaves out: the held-back keys, the paused tasks and (but in
    /// their own claim) the limited tasks. The rows of one `task` of a claim by task leave a
    /// paused or limited task out by a test of its name alone, which the database makes once
    /// (`NOT EXISTS (SELECT 1 FROM <paused> WHERE task_name = <task>)`), so the task's range
    /// is not read at all.
    fn push_left_out(&self, w: &mut SqlWriter<'_>, due: &Due<'_>, task: Option<TaskOf<'_>>) {
        Self::push_exclusion(w, due.exclude);
        // Paused tasks in the same statement: a pause from any process holds from the next
        // poll on, at no extra round trip (a locking read does not lock a subquery's rows).
        if self.paused_table() {
            push_not_listed(w, &self.table.paused(), task);
        }
        self.push_limits(w, due.limited, task);
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
        common::key_terms(w, keys.iter().map(|k| (k, None)));
        w.push(")");
    }

    /// Due, unclaimed executions of `due`'s tasks at its level, in hand-out order, leaving out
    /// its held-back keys (fetch-and-lock-on-execute reads these, then claims each with
    /// [`Statements::update`]).
    pub fn due(&self, due: &Due<'_>) -> Rendered {
        let mut w = self.select_from(Some(due.limit));
        self.due_rows(&mut w, due);
        w.finish()
    }

    /// The first execution of `level` due strictly after `now`, any task, picked or not: one
    /// index probe on `(priority, execution_time)`. A store that found `level` empty at `now`
    /// skips it until that time (see `SqlStore`'s level cache). Ignoring the task and `picked`
    /// filters can only make the answer earlier, so the skip stays conservative.
    pub fn next_at_level(&self, level: Level, now: DateTime<Utc>) -> Rendered {
        let mut w = self.select_from(Some(1));
        w.push(" WHERE execution_time > ").bind(now);
        common::level(&mut w, level, "");
        self.push_order(&mut w, level, &PrimaryOrder::ExecutionTime);
        self.dialect.limit(&mut w, 1, LimitAt::Tail);
        w.finish()
    }

    /// The distinct non-NULL priorities in the table below `below` (all when `None`), highest
    /// first (see [`Level`]): all of them or only the highest, as the dialect lists them
    /// ([`Statements::levels_listed`]).
    pub fn priority_levels(&self, below: Option<i16>) -> Rendered {
        let mut w = self.writer();
        self.dialect.priority_levels(&mut w, &self.table, below);
        w.finish()
    }

    /// Which levels [`Statements::priority_levels`] lists, as the dialect says when it writes
    /// the query (rendered here and dropped: one short text, once per levels refresh).
    pub fn levels_listed(&self) -> Levels {
        self.dialect
            .priority_levels(&mut self.writer(), &self.table, None)
    }

    /// The due-query with the dialect's row lock, for
    /// [`LockAndFetch::SelectThenUpdate`](crate::dialect::LockAndFetch::SelectThenUpdate), in
    /// the dialect's shape ([`Dialect::claiming_select`]); run it in the transaction that then
    /// runs [`Statements::claim_keys`].
    pub fn due_for_update(&self, due: &Due<'_>) -> Rendered {
        let mut w = self.writer();
        self.dialect.claiming_select(&mut w, &self.claim(due, ""));
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
    /// its version, when given), as the dialect matches them ([`Dialect::keys_condition`]).
    /// Callers give a version for every key or for none.
    pub(super) fn push_keys(&self, w: &mut SqlWriter<'_>, keys: Vec<(&ExecutionKey, Option<i64>)>) {
        self.dialect.keys_condition(w, &self.table, &keys);
    }

    /// `(task_name = ? AND task_instance = ?`, left open for more conditions.
    pub(super) fn key_term(w: &mut SqlWriter<'_>, key: &ExecutionKey) {
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

    /// Claims up to `due.limit` due executions in one statement, skipping rows other claimers
    /// hold, in the dialect's shape ([`Dialect::lock_and_fetch`]; by default `UPDATE ... WHERE
    /// (key) IN (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING ...`). The returned rows come back
    /// unordered; callers sort them with the policy.
    pub fn lock_and_fetch(&self, due: &Due<'_>, picked_by: &str) -> Rendered {
        let mut w = self.writer();
        self.dialect
            .lock_and_fetch(&mut w, &self.claim(due, picked_by));
        w.finish()
    }

    fn claim<'c>(&'c self, due: &'c Due<'c>, picked_by: &'c str) -> ClaimParts<'c> {
        ClaimParts {
            statements: self,
            due,
            picked_by,
        }
    }
}

/// ` AND task_name NOT IN (SELECT task_name FROM <listed>)`: the tasks listed in `listed` (paused,
/// limited) left out; for the rows of one `task`, ` AND NOT EXISTS (SELECT 1 FROM <listed>
/// WHERE task_name = <task>)`.
pub(super) fn push_not_listed(w: &mut SqlWriter<'_>, listed: &TableName, task: Option<TaskOf<'_>>) {
    match task {
        None => {
            w.push(" AND task_name NOT IN (SELECT task_name FROM ")
                .table(listed)
                .push(")");
        }
        Some(task) => {
            w.push(" AND NOT EXISTS (SELECT 1 FROM ")
                .table(listed)
                .push(" WHERE task_name = ");
            task.push(w);
            w.push(")");
        }
    }
}

/// How one task's rows of a claim by task ([`ClaimParts::task_rows`]) name the task.
#[derive(Debug, Clone, Copy)]
pub enum TaskOf<'a> {
    /// A task name, bound.
    Bound(&'a str),
    /// Read from the row of a lateral join: `name`, the column that holds the name, and
    /// `unpicked`, an expression of that row that is false, which `picked` is compared with
    /// (a dialect whose planner must not see a constant there; see the PostgreSQL dialect's
    /// `lock_and_fetch`).
    Lateral {
        /// The column of the name, e.g. `n.name`.
        name: &'static str,
        /// False, as an expression of the outer row, e.g. `(n.name IS NULL)`.
        unpicked: &'static str,
    },
}

impl TaskOf<'_> {
    /// Writes the name: a placeholder, or the column.
    fn push(self, w: &mut SqlWriter<'_>) {
        match self {
            TaskOf::Bound(name) => w.bind(name),
            TaskOf::Lateral { name, .. } => w.push(name),
        };
    }
}

/// The building blocks of one claim of due rows, from which a dialect composes its claim
/// statements ([`Dialect::lock_and_fetch`], [`Dialect::claiming_select`]): the due rows in
/// hand-out order, the claim's `SET` list, the select list and the table. Each writes into the
/// dialect's writer; what they write is the same on every backend but for the dialect's pieces
/// (filter, order, limit).
#[derive(Debug, Clone, Copy)]
pub struct ClaimParts<'a> {
    statements: &'a Statements<'a>,
    due: &'a Due<'a>,
    picked_by: &'a str,
}

impl ClaimParts<'_> {
    /// The executions table.
    pub fn table(&self) -> &TableName {
        &self.statements.table
    }

    /// At most this many rows.
    pub fn limit(&self) -> i64 {
        self.due.limit
    }

    /// The columns the claim returns, in select-list order (`priority` only when on).
    pub fn columns(&self) -> Vec<Column> {
        self.statements.columns()
    }

    /// `SELECT [<head limit>]<select list> FROM <table>`, with the dialect's row limit where
    /// it goes up front ([`LimitAt::Head`]) when `limited`.
    pub fn select_from(&self, w: &mut SqlWriter<'_>, limited: bool) {
        w.push("SELECT ");
        if limited {
            w.dialect().limit(w, self.due.limit, LimitAt::Head);
        }
        w.push(&self.select_list())
            .push(" FROM ")
            .table(self.table());
    }

    /// `task_name, task_instance, ...`: [`ClaimParts::columns`] as a select list, and
    /// `limit_key` in a limited task's claim ([`Due::limited`]).
    pub fn select_list(&self) -> String {
        let list = self.statements.select_list();
        if matches!(self.due.limited, crate::records::Limited::Claim(_)) {
            list + ", limit_key"
        } else {
            list
        }
    }

    /// `UPDATE <table> SET picked = ?, picked_by = ?, last_heartbeat = ?, version = version +
    /// 1`: the claim's write, at the due-query's `now`.
    pub fn update_set(&self, w: &mut SqlWriter<'_>) {
        self.statements
            .push_claim_set(w, self.picked_by, self.due.now);
    }

    /// The due rows from `WHERE` on: the dialect's filter, the held-back keys and paused
    /// tasks left out, `ORDER BY` in hand-out order and the limit at the tail (the head's is
    /// the caller's, [`LimitAt::Head`]). Returns the level the `ORDER BY` was written for.
    pub fn due_rows(&self, w: &mut SqlWriter<'_>) -> Level {
        self.statements.due_rows(w, self.due)
    }

    /// Whether the claim reads task by task ([`Due::by_task`]): its statement is made of
    /// [`ClaimParts::task_rows`], one per name of [`ClaimParts::task_names`], merged.
    pub fn by_task(&self) -> bool {
        self.due.by_task
    }

    /// The tasks claimed.
    pub fn task_names(&self) -> &[String] {
        self.due.task_names
    }

    /// The due rows of one task from `WHERE` on, as [`ClaimParts::due_rows`] writes all of
    /// them, in the range of the lag index that starts with the task's name. Returns the
    /// level the `ORDER BY` was written for.
    pub fn task_rows(&self, w: &mut SqlWriter<'_>, task: TaskOf<'_>) -> Level {
        self.statements.task_rows(w, self.due, task)
    }

    /// ` ORDER BY` in hand-out order for `level` (what [`ClaimParts::due_rows`] returned), for a
    /// dialect that repeats the order outside a subquery.
    pub fn order_by(&self, w: &mut SqlWriter<'_>, level: Level) {
        self.statements
            .push_order(w, level, &self.statements.policy.primary);
    }
}
