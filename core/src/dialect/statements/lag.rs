//! The lag read: what waits under each task name and since when, read from the lag indexes
//! (`0007_lag_indexes`: `(task_name, picked, execution_time, priority)` and, for work-queue
//! items, `(task_name, assignable, execution_time, priority)`). Every statement is one seek or
//! one index range read up to a limit, so its cost does not grow with the table.

use super::*;

/// Which of a task's ranges [`Statements::lag_count`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LagRange {
    /// Not picked, execution time after `now` (for a task type: items not arrived yet).
    Scheduled,
    /// Picked (running or dead).
    Picked,
    /// Not picked, due by `now` (what a limit holds back, counted).
    Due,
}

impl<'d> Statements<'d> {
    /// The first task name after `after` (the first of all when `None`), as column
    /// `task_name` (NULL past the last): one seek in the primary key, so listing `n` names
    /// costs `n` seeks whatever the number of rows.
    pub fn lag_next_name(&self, after: Option<&str>) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT MIN(task_name) AS task_name FROM ")
            .table(&self.table);
        if let Some(after) = after {
            w.push(" WHERE task_name > ").bind(after);
        }
        w.finish()
    }

    /// `max_assignments` of one row of `name` (one primary-key seek): non-NULL when the name's
    /// rows are work-queue items. Needs the work-queue columns (`0004_work_queue`). Ordered by
    /// the key's second column so the plan is the primary key's range: unordered, PostgreSQL
    /// chose a sequential scan that read 114k rows before the first of a name at 10M rows.
    pub fn lag_name_kind(&self, name: &str) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT ");
        self.dialect.limit(&mut w, 1, LimitAt::Head);
        w.push("max_assignments FROM ")
            .table(&self.table)
            .push(" WHERE task_name = ")
            .bind(name)
            .push(" ORDER BY task_instance");
        self.dialect.limit(&mut w, 1, LimitAt::Tail);
        w.finish()
    }

    /// The first `limit` waiting rows of `name` in execution-time order, columns
    /// `execution_time` (and `priority` with priority on): a task's due executions (not
    /// picked, due by `now`) or, with `items`, a task type's open items (assignable, arrived
    /// by `now`). One range of the lag index, read in order up to the limit.
    pub fn lag_head(&self, name: &str, items: bool, now: DateTime<Utc>, limit: i64) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT ");
        self.dialect.limit(&mut w, limit, LimitAt::Head);
        w.push("execution_time");
        if self.policy.priority {
            w.push(", priority");
        }
        w.push(" FROM ")
            .table(&self.table)
            .push(" WHERE task_name = ")
            .bind(name);
        if items {
            w.push(" AND max_assignments IS NOT NULL AND assignable = ")
                .bind(true);
        } else {
            w.push(" AND picked = ").bind(false);
        }
        w.push(" AND execution_time <= ")
            .bind(now)
            .push(" ORDER BY execution_time ASC");
        self.dialect.limit(&mut w, limit, LimitAt::Tail);
        w.finish()
    }

    /// Rows of `name` in `range` counted up to `limit` (column `n`): a count over a subquery
    /// limited to `limit` rows of one lag-index range.
    pub fn lag_count(
        &self,
        name: &str,
        range: LagRange,
        now: DateTime<Utc>,
        limit: i64,
    ) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT COUNT(*) AS n FROM (SELECT ");
        self.dialect.limit(&mut w, limit, LimitAt::Head);
        w.push("task_instance FROM ")
            .table(&self.table)
            .push(" WHERE task_name = ")
            .bind(name);
        match range {
            LagRange::Scheduled => {
                w.push(" AND picked = ")
                    .bind(false)
                    .push(" AND execution_time > ")
                    .bind(now);
            }
            LagRange::Picked => {
                w.push(" AND picked = ").bind(true);
            }
            LagRange::Due => {
                w.push(" AND picked = ")
                    .bind(false)
                    .push(" AND execution_time <= ")
                    .bind(now);
            }
        }
        self.dialect.limit(&mut w, limit, LimitAt::Tail);
        w.push(") capped");
        w.finish()
    }
}
