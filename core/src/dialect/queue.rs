//! The work-queue statements, rendered once for any dialect. Items are rows of the docket table
//! (alias `i`); assignments live in `<table>_assignments` (alias `a`). Every value is bound.

use super::statements::{Level, Statements};
use super::{Rendered, SqlWriter, Value};
use crate::ordering::PrimaryOrder;
pub use crate::records::ForWorker;
use crate::records::{AssignmentStatus, ExecutionKey, Finish, Finishing, NewItem};
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

/// The assignment columns, in select-list order.
pub const ASSIGNMENT_COLUMNS: [&str; 5] =
    ["task_name", "task_instance", "worker", "status", "deadline"];

impl Statements<'_> {
    fn item_select(&self, limit: Option<i64>) -> SqlWriter<'_> {
        let mut w = SqlWriter::new(self.dialect());
        w.push("SELECT ");
        if let Some(n) = limit {
            self.dialect().top(&mut w, n);
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

    /// Inserts one item (a plain insert: an existing id fails the batch).
    pub fn item_insert(&self, item: &NewItem) -> Rendered {
        let mut cols = vec![
            ("task_name", Value::from(item.key.task_name.as_str())),
            (
                "task_instance",
                Value::from(item.key.task_instance.as_str()),
            ),
            ("task_data", Value::Bytes(item.data.clone())),
            ("execution_time", Value::from(item.available_at)),
            ("picked", Value::Bool(false)),
            ("consecutive_failures", Value::Int(0)),
            ("version", Value::BigInt(1)),
            ("record_date", Value::from(item.record.date)),
            ("record_order", Value::BigInt(item.record.order)),
            (
                "custom_attributes",
                Value::Text(item.custom_attributes.clone()),
            ),
            ("max_assignments", Value::Int(item.max_assignments)),
            ("assignments", Value::Int(0)),
            ("assignable", Value::Bool(true)),
        ];
        if self.policy().priority {
            cols.push(("priority", Value::SmallInt(item.priority)));
        }
        let names: Vec<_> = cols.iter().map(|(c, _)| *c).collect();
        let mut w = SqlWriter::new(self.dialect());
        w.push("INSERT INTO ")
            .table(self.table())
            .push(" (")
            .push(&names.join(", "))
            .push(") VALUES ")
            .bind_list(cols.into_iter().map(|(_, v)| v));
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
        let limit = self.eligible_limit(q, limit, lock);
        let mut w = self.item_select(limit);
        if lock {
            w.push(self.dialect().lock_hint());
        }
        w.push(" WHERE i.task_name = ")
            .bind(q.task_type)
            .push(" AND i.assignable = ")
            .bind(true)
            .push(" AND i.execution_time <= ")
            .bind(q.now);
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
        self.push_order(&mut w, Level::Any, q.order);
        if let Some(n) = limit {
            self.dialect().limit(&mut w, n);
        }
        if lock {
            w.push(self.dialect().skip_locked_clause());
        }
        w.finish()
    }

    /// The row limit of [`Statements::item_eligible`]. A dialect that cannot limit the query
    /// block it locks ([`Dialect::row_locator`](super::Dialect::row_locator): Oracle rejects a
    /// row limit beside `FOR UPDATE`) locks only by key, in the two-phase claim
    /// ([`Capabilities::claim_locks_examined_rows`](super::Capabilities)): the key pins at most
    /// one row, so no limit is written.
    fn eligible_limit(&self, q: &ForWorker<'_>, limit: Option<i64>, lock: bool) -> Option<i64> {
        let by_key_unlimited = lock && q.key.is_some() && self.dialect().row_locator().is_some();
        limit.filter(|_| !by_key_unlimited)
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

    /// One row if the assignments table has `column`, none otherwise.
    pub fn assignments_column_exists(&self, column: &str) -> Rendered {
        let mut w = SqlWriter::new(self.dialect());
        self.dialect()
            .column_exists(&mut w, &self.table().assignments(), column);
        w.finish()
    }

    /// Every work-queue statement, rendered with fixed sample arguments (as
    /// [`Statements::catalogue`]): FIFO and a two-key custom order.
    pub fn queue_catalogue(&self) -> Vec<(&'static str, Rendered)> {
        use crate::ordering::{CustomKey, Direction, KeyType};
        use crate::records::RecordKey;
        let now = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or_default();
        let later = now + chrono::Duration::minutes(30);
        let key = ExecutionKey::new("review", "batch-1/1");
        let custom = PrimaryOrder::Custom(
            [
                CustomKey::new("team", KeyType::Text, Direction::Asc),
                CustomKey::new("score", KeyType::Number, Direction::Desc),
            ]
            .into_iter()
            .filter_map(Result::ok)
            .collect(),
        );
        let fifo = ForWorker {
            worker: "w1",
            task_type: "review",
            order: &PrimaryOrder::Fifo,
            now,
            key: None,
        };
        let by_custom = ForWorker {
            order: &custom,
            ..fifo
        };
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
        vec![
            ("item_insert", self.item_insert(&item)),
            ("item_get", self.item_get(&key)),
            ("item_next_fifo", self.item_eligible(&fifo, Some(1), true)),
            (
                "item_next_custom",
                self.item_eligible(&by_custom, Some(1), true),
            ),
            ("item_list_fifo", self.item_eligible(&fifo, Some(10), false)),
            (
                "item_lock_one",
                self.item_eligible(
                    &ForWorker {
                        key: Some(&key),
                        ..by_custom
                    },
                    Some(1),
                    true,
                ),
            ),
            ("item_claim", self.item_claim(&key, "w1")),
            ("item_release", self.item_release(&key, "w1", true)),
            ("item_extend", self.item_extend(&key, 1)),
            ("assignment_delete", self.assignment_delete(&key, "w1")),
            (
                "assignment_insert",
                self.assignment_insert(&key, "w1", now, later),
            ),
            (
                "assignment_finish",
                self.assignment_finish(&Finishing {
                    key: &key,
                    worker: "w1",
                    how: Finish::Return,
                    now,
                    hidden_until: later,
                }),
            ),
            ("assignment_expired", self.assignment_expired(now)),
            ("assignment_list", self.assignment_list(&key)),
        ]
    }
}
