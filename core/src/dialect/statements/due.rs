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
    /// the held-back keys and the paused tasks; returns the level their `ORDER BY` is written
    /// for.
    fn due_where(&self, w: &mut SqlWriter<'_>, due: &Due<'_>) -> Level {
        let filter = DueFilter {
            level: due.level,
            due_by: due.due_by,
            task_names: due.task_names,
            level_index: self.due_level_index.load(Ordering::Relaxed),
        };
        let order_level = self.dialect.due_filter(w, &filter);
        Self::push_exclusion(w, due.exclude);
        // Paused tasks in the same statement: a pause from any process holds from the next
        // poll on, at no extra round trip (a locking read does not lock a subquery's rows).
        if self.paused_table() {
            w.push(" AND task_name NOT IN (SELECT task_name FROM ")
                .table(&self.table.paused())
                .push(")");
        }
        order_level
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

    /// The due-query with the dialect's skip-locked clause, for
    /// [`super::LockAndFetch::SelectThenUpdate`]; run it in the
    /// transaction that then runs [`Statements::claim_keys`].
    ///
    /// Where the dialect has a [`Syntax::row_locator`](crate::dialect::Syntax::row_locator)
    /// (it cannot limit and lock in one query block), the limit goes into a subquery of
    /// locators and the outer block locks, repeating `picked = false` so a row claimed and
    /// committed by someone else in between is not returned as due.
    pub fn due_for_update(&self, due: &Due<'_>) -> Rendered {
        let mut w = match self.dialect.syntax().row_locator {
            None => {
                let mut w = self.select_from(Some(due.limit));
                self.dialect.skip_locked(&mut w, LockAt::Table);
                self.due_rows(&mut w, due);
                w
            }
            Some(locator) => {
                let mut w = self.select_from(None);
                self.dialect.skip_locked(&mut w, LockAt::Table);
                w.push(" WHERE ").push(locator).push(" IN (SELECT ");
                self.dialect.limit(&mut w, due.limit, LimitAt::Head);
                w.push(locator).push(" FROM ").table(&self.table);
                let order_level = self.due_rows(&mut w, due);
                w.push(") AND picked = ").bind(false);
                self.push_order(&mut w, order_level, &self.policy.primary);
                w
            }
        };
        self.dialect.skip_locked(&mut w, LockAt::End);
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
    /// hold: `UPDATE ... WHERE (key) IN (SELECT ... FOR UPDATE SKIP LOCKED) RETURNING ...`, or
    /// for [`LockAndFetch::UpdateExistsOutput`] `UPDATE t SET ... OUTPUT inserted... WHERE
    /// picked = false AND EXISTS (SELECT 1 FROM (SELECT TOP (n) ... <lock hint> ...) due WHERE
    /// <key matches>)`. The returned rows come back unordered; callers sort
    /// them with the policy.
    pub fn lock_and_fetch(&self, due: &Due<'_>, picked_by: &str) -> Rendered {
        if self.dialect.capabilities().lock_and_fetch == Some(LockAndFetch::UpdateExistsOutput) {
            return self.lock_and_fetch_exists(due, picked_by);
        }
        let claim = self.dialect.syntax().claim_match;
        let mut w = self.writer();
        self.push_claim_set(&mut w, picked_by, due.now);
        w.push(" WHERE ").push(claim.open).push("SELECT ");
        self.dialect.limit(&mut w, due.limit, LimitAt::Head);
        w.push(claim.columns).push(" FROM ").table(&self.table);
        self.dialect.skip_locked(&mut w, LockAt::Table);
        self.due_rows(&mut w, due);
        self.dialect.skip_locked(&mut w, LockAt::End);
        w.push(claim.close)
            .push(" RETURNING ")
            .push(&self.select_list());
        w.finish()
    }

    /// [`Statements::lock_and_fetch`] as one update of the rows an ordered, limited select of
    /// keys locked: `UPDATE t SET ... OUTPUT inserted... WHERE picked = false AND EXISTS
    /// (SELECT 1 FROM (SELECT TOP (n) task_name, task_instance FROM t <lock hint> WHERE ...
    /// ORDER BY ...) due WHERE due.task_name = t.task_name AND due.task_instance =
    /// t.task_instance)`. The outer `picked` check repeats the eligibility the locks guarantee,
    /// so a server that ignores the hint (Babelfish takes `UPDLOCK, READPAST` and waits
    /// instead) claims fewer rows, never a row twice. Standard T-SQL with the table itself as
    /// the target: an update through a CTE (the shape before) is not Babelfish's, and an update
    /// of an alias (`UPDATE x ... FROM t x JOIN ...`) now and then failed there with a garbled
    /// alias ("missing FROM-clause entry").
    fn lock_and_fetch_exists(&self, due: &Due<'_>, picked_by: &str) -> Rendered {
        let mut w = self.writer();
        self.push_claim_set(&mut w, picked_by, due.now);
        w.push(" OUTPUT ");
        let inserted: Vec<_> = self
            .columns()
            .iter()
            .map(|c| format!("inserted.{}", c.name()))
            .collect();
        w.push(&inserted.join(", "))
            .push(" WHERE picked = ")
            .bind(false)
            .push(" AND EXISTS (SELECT 1 FROM (SELECT ");
        self.dialect.limit(&mut w, due.limit, LimitAt::Head);
        w.push("task_name, task_instance FROM ").table(&self.table);
        self.dialect.skip_locked(&mut w, LockAt::Table);
        self.due_rows(&mut w, due);
        self.dialect.skip_locked(&mut w, LockAt::End);
        w.push(") due WHERE due.task_name = ")
            .table(&self.table)
            .push(".task_name AND due.task_instance = ")
            .table(&self.table)
            .push(".task_instance)");
        w.finish()
    }
}
