//! The limits the cluster keeps (`0009_limits`): `<table>_limits`, one row per limited task,
//! and `<table>_starts`, the starts its rate limits count. A claim of a limited task runs
//! [`Statements::limit_lock`], [`Statements::limit_running`], [`Statements::limit_starts`], the
//! due rows of the task with its full keys left out ([`Due::limited`]), [`Statements::claim_keys`],
//! and [`Statements::limit_claimed`], in one transaction.

use super::*;
use crate::records::{Limited, LimitedClaim, TaskLimit};

/// The limit columns, in the order [`Statements::limit_list`] selects them.
const LIMIT_COLUMNS: &str = "task_name, max_running, rate_count, rate_per_ms, \
                             max_running_per_key, rate_per_key_count, rate_per_key_per_ms";

impl<'d> Statements<'d> {
    /// Says whether the table of limits exists (`0009_limits`): the due-queries and claims
    /// leave limited tasks out (they are claimed by their own claim) only then.
    pub fn set_limits_table(&self, present: bool) {
        self.limits_table.store(present, Ordering::Relaxed);
    }

    /// Whether the statements know the table of limits (see [`Statements::set_limits_table`]).
    pub fn limits_table(&self) -> bool {
        self.limits_table.load(Ordering::Relaxed)
    }

    /// One row if the table of limits exists (its `task_name` column), none otherwise.
    pub fn limits_table_exists(&self) -> Rendered {
        let mut w = self.writer();
        self.dialect.catalog(
            &mut w,
            &self.table.limits(),
            Catalog::ColumnExists("task_name"),
        );
        w.finish()
    }

    /// Every limit, by task name.
    pub fn limit_list(&self) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT ")
            .push(LIMIT_COLUMNS)
            .push(" FROM ")
            .table(&self.table.limits())
            .push(" ORDER BY task_name");
        w.finish()
    }

    /// The limit of `task_name`, its row locked for this transaction; no row when another
    /// claim holds it (skipped, not waited for: that claim is taking the task's room).
    pub fn limit_lock(&self, task_name: &str) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT ")
            .push(LIMIT_COLUMNS)
            .push(" FROM ")
            .table(&self.table.limits());
        self.dialect.skip_locked(&mut w, LockAt::Table);
        w.push(" WHERE task_name = ").bind(task_name);
        self.dialect.skip_locked(&mut w, LockAt::End);
        w.finish()
    }

    /// Changes the limit of `limit.task_name`; no row changed when it has none yet.
    pub fn limit_update(&self, limit: &TaskLimit, now: DateTime<Utc>) -> Rendered {
        let mut w = self.writer();
        w.push("UPDATE ").table(&self.table.limits()).push(" SET ");
        for (i, (column, value)) in limit_values(limit).into_iter().enumerate() {
            if i > 0 {
                w.push(", ");
            }
            w.push(column).push(" = ");
            push_optional(&mut w, value);
        }
        w.push(", updated_at = ")
            .bind(now)
            .push(" WHERE task_name = ")
            .bind(limit.task_name.as_str());
        w.finish()
    }

    /// Adds the limit of `limit.task_name` (a duplicate key when it has one).
    pub fn limit_insert(&self, limit: &TaskLimit, now: DateTime<Utc>) -> Rendered {
        let values = limit_values(limit);
        let mut w = self.writer();
        w.push("INSERT INTO ")
            .table(&self.table.limits())
            .push(" (task_name");
        for (column, _) in &values {
            w.push(", ").push(column);
        }
        w.push(", updated_at) VALUES (")
            .bind(limit.task_name.as_str());
        for (_, value) in values {
            w.push(", ");
            push_optional(&mut w, value);
        }
        w.push(", ").bind(now).push(")");
        w.finish()
    }

    /// Removes the limit of `task_name` (no row changed when it had none).
    pub fn limit_delete(&self, task_name: &str) -> Rendered {
        let mut w = self.writer();
        w.push("DELETE FROM ")
            .table(&self.table.limits())
            .push(" WHERE task_name = ")
            .bind(task_name);
        w.finish()
    }

    /// Removes the recorded starts of `task_name` at or before `before` (outside every window).
    pub fn limit_starts_prune(&self, task_name: &str, before: DateTime<Utc>) -> Rendered {
        let mut w = self.writer();
        w.push("DELETE FROM ")
            .table(&self.table.starts())
            .push(" WHERE task_name = ")
            .bind(task_name)
            .push(" AND started_at <= ")
            .bind(before);
        w.finish()
    }

    /// The executions of `task_name` picked now, per key (`limit_key`, `running`).
    pub fn limit_running(&self, task_name: &str) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT limit_key, COUNT(*) AS running FROM ")
            .table(&self.table)
            .push(" WHERE task_name = ")
            .bind(task_name)
            .push(" AND picked = ")
            .bind(true)
            .push(" GROUP BY limit_key");
        w.finish()
    }

    /// A limited task's task-wide use, read without locks: its picked executions (`running`)
    /// and, with `since`, its starts after it (`started`). Sent before the claim of a task its
    /// last claim left at its limit: while it stays there, the claim's transaction is not run.
    pub fn limit_use(&self, task_name: &str, since: Option<DateTime<Utc>>) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT COUNT(*) AS running");
        if let Some(since) = since {
            w.push(", (SELECT COUNT(*) FROM ")
                .table(&self.table.starts())
                .push(" WHERE task_name = ")
                .bind(task_name)
                .push(" AND started_at > ")
                .bind(since)
                .push(") AS started");
        }
        w.push(" FROM ")
            .table(&self.table)
            .push(" WHERE task_name = ")
            .bind(task_name)
            .push(" AND picked = ")
            .bind(true);
        w.finish()
    }

    /// The starts of `task_name` after `since` (`limit_key`, `started_at`).
    pub fn limit_starts(&self, task_name: &str, since: DateTime<Utc>) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT limit_key, started_at FROM ")
            .table(&self.table.starts())
            .push(" WHERE task_name = ")
            .bind(task_name)
            .push(" AND started_at > ")
            .bind(since);
        w.finish()
    }

    /// Records the starts of the claimed executions `rows` (key, limit key) at `at`.
    pub fn limit_starts_insert(
        &self,
        rows: &[(&ExecutionKey, Option<&str>)],
        at: DateTime<Utc>,
    ) -> Rendered {
        let rows = rows
            .iter()
            .map(|(key, limit_key)| {
                vec![
                    ("task_name", Value::from(key.task_name.as_str())),
                    ("started_at", Value::from(at)),
                    ("task_instance", Value::from(key.task_instance.as_str())),
                    ("limit_key", Value::Text(limit_key.map(str::to_owned))),
                ]
            })
            .collect();
        let mut w = self.writer();
        w.push("INSERT INTO ")
            .table(&self.table.starts())
            .insert_rows(rows);
        w.finish()
    }

    /// Counts `claimed` more claims on the limit of `task_name`: a write to the row the claim
    /// locked, so claims of one task on two nodes of a multi-primary cluster (Galera), whose
    /// row locks are local, conflict at certification instead of both taking the last slot.
    pub fn limit_claimed(&self, task_name: &str, claimed: i64) -> Rendered {
        let mut w = self.writer();
        w.push("UPDATE ")
            .table(&self.table.limits())
            .push(" SET claims = claims + ")
            .bind(claimed)
            .push(" WHERE task_name = ")
            .bind(task_name);
        w.finish()
    }

    /// Writes what a due-query says about limits: a limited task's own claim leaves out its
    /// full keys; every other due-query leaves limited tasks out (they are claimed by their
    /// own claim, in the same statement as paused tasks are left out).
    /// `task`: the rows of one task of a claim by task ([`TaskOf`]).
    pub(super) fn push_limits(
        &self,
        w: &mut SqlWriter<'_>,
        limited: Limited<'_>,
        task: Option<TaskOf<'_>>,
    ) {
        match limited {
            Limited::Claim(claim) => push_full_keys(w, claim),
            Limited::LeftOut if self.limits_table() => {
                super::due::push_not_listed(w, &self.table.limits(), task);
            }
            Limited::LeftOut | Limited::Included => {}
        }
    }
}

/// ` AND ...`: leaves out the executions of keys with no room left (those without a key when
/// `no_key_full`).
fn push_full_keys(w: &mut SqlWriter<'_>, claim: LimitedClaim<'_>) {
    let keys = claim.full_keys;
    match (keys.is_empty(), claim.no_key_full) {
        (true, false) => {}
        (true, true) => {
            w.push(" AND limit_key IS NOT NULL");
        }
        (false, no_key_full) => {
            w.push(if no_key_full {
                " AND limit_key IS NOT NULL AND limit_key NOT IN ("
            } else {
                " AND (limit_key IS NULL OR limit_key NOT IN ("
            });
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    w.push(", ").sized_by_input();
                }
                w.bind(key.as_str());
            }
            w.push(if no_key_full { ")" } else { "))" });
        }
    }
}

/// The limit's columns and values (`None`: no such limit, written `NULL`).
fn limit_values(limit: &TaskLimit) -> [(&'static str, Option<i64>); 6] {
    let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    [
        ("max_running", limit.max_running.map(i64::from)),
        ("rate_count", limit.rate.map(|r| i64::from(r.count))),
        ("rate_per_ms", limit.rate.map(|r| ms(r.per))),
        (
            "max_running_per_key",
            limit.max_running_per_key.map(i64::from),
        ),
        (
            "rate_per_key_count",
            limit.rate_per_key.map(|r| i64::from(r.count)),
        ),
        ("rate_per_key_per_ms", limit.rate_per_key.map(|r| ms(r.per))),
    ]
}

/// A bound value, or `NULL` (a constant of the statement's text, not a value from a user).
fn push_optional(w: &mut SqlWriter<'_>, value: Option<i64>) {
    match value {
        Some(v) => {
            w.bind(v);
        }
        None => {
            w.push("NULL");
        }
    }
}
