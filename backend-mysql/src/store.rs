//! Runs rendered statements on a `MysqlConnection`: binds each [`Value`] with its SQL type and
//! decodes rows into the core model.
//!
//! Times are stored in `DATETIME(6)` columns, which carry no zone: docket writes and reads them
//! as UTC wall-clock values, so the session `time_zone` never shifts them (it only affects
//! `TIMESTAMP` columns and `NOW()`, which docket does not use).

use crate::error::is_duplicate_key;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::mysql::{Mysql, MysqlConnection};
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{BigInt, Binary, Bool, Datetime, Integer, Nullable, SmallInt, Text};
use diesel::{QueryableByName, RunQueryDsl};
use docket_core::dialect::{Rendered, Value};
use docket_core::queue::{Assignment, AssignmentStatus, Item, RecordKey};
use docket_core::store::sql::SqlSession;
use docket_core::store::{Execution, ExecutionKey, TaskSummary};
use docket_core::StoreError;
use docket_diesel::db;

/// One pooled connection seen as a [`SqlSession`].
pub(crate) struct MysqlSession<'c>(pub &'c mut MysqlConnection);

pub(crate) fn bound(stmt: &Rendered) -> BoxedSqlQuery<'_, Mysql, SqlQuery> {
    let mut q = diesel::sql_query(stmt.sql.as_str()).into_boxed::<Mysql>();
    for value in &stmt.binds {
        q = match value {
            Value::Text(v) => q.bind::<Nullable<Text>, _>(v.as_deref()),
            Value::Bytes(v) => q.bind::<Nullable<Binary>, _>(v.as_deref()),
            Value::Timestamp(v) => {
                q.bind::<Nullable<Datetime>, _>(v.as_ref().map(DateTime::naive_utc))
            }
            Value::SmallInt(v) => q.bind::<Nullable<SmallInt>, _>(*v),
            Value::Int(v) => q.bind::<Integer, _>(*v),
            Value::BigInt(v) => q.bind::<BigInt, _>(*v),
            Value::Bool(v) => q.bind::<Bool, _>(*v),
        };
    }
    q
}

fn utc(t: NaiveDateTime) -> DateTime<Utc> {
    t.and_utc()
}

#[derive(QueryableByName)]
struct BaseRow {
    #[diesel(sql_type = Text)]
    task_name: String,
    #[diesel(sql_type = Text)]
    task_instance: String,
    #[diesel(sql_type = Nullable<Binary>)]
    task_data: Option<Vec<u8>>,
    #[diesel(sql_type = Datetime)]
    execution_time: NaiveDateTime,
    #[diesel(sql_type = Bool)]
    picked: bool,
    #[diesel(sql_type = Nullable<Text>)]
    picked_by: Option<String>,
    #[diesel(sql_type = Nullable<Datetime>)]
    last_success: Option<NaiveDateTime>,
    #[diesel(sql_type = Nullable<Datetime>)]
    last_failure: Option<NaiveDateTime>,
    #[diesel(sql_type = Integer)]
    consecutive_failures: i32,
    #[diesel(sql_type = Nullable<Datetime>)]
    last_heartbeat: Option<NaiveDateTime>,
    #[diesel(sql_type = BigInt)]
    version: i64,
}

#[derive(QueryableByName)]
struct PriorityRow {
    #[diesel(embed)]
    base: BaseRow,
    #[diesel(sql_type = Nullable<SmallInt>)]
    priority: Option<i16>,
}

impl BaseRow {
    fn into_execution(self, priority: Option<i16>) -> Execution {
        Execution {
            task_name: self.task_name,
            task_instance: self.task_instance,
            task_data: self.task_data,
            execution_time: utc(self.execution_time),
            picked: self.picked,
            picked_by: self.picked_by,
            last_success: self.last_success.map(utc),
            last_failure: self.last_failure.map(utc),
            consecutive_failures: self.consecutive_failures,
            last_heartbeat: self.last_heartbeat.map(utc),
            version: self.version,
            priority,
        }
    }
}

/// `SUM(...)` comes back as `DECIMAL` on MySQL; diesel's `BigInt` decoding accepts it.
#[derive(QueryableByName)]
struct SummaryRow {
    #[diesel(sql_type = Text)]
    task_name: String,
    #[diesel(sql_type = BigInt)]
    total: i64,
    #[diesel(sql_type = BigInt)]
    picked: i64,
    #[diesel(sql_type = BigInt)]
    failing: i64,
    #[diesel(sql_type = Nullable<Datetime>)]
    next_execution_time: Option<NaiveDateTime>,
}

/// A work-queue item ([`docket_core::dialect::queue::ITEM_COLUMNS`]). The statements that
/// read items select only rows with `max_assignments` and the record keys set.
#[derive(QueryableByName)]
struct ItemRow {
    #[diesel(sql_type = Text)]
    task_name: String,
    #[diesel(sql_type = Text)]
    task_instance: String,
    #[diesel(sql_type = Nullable<Binary>)]
    task_data: Option<Vec<u8>>,
    #[diesel(sql_type = Datetime)]
    execution_time: NaiveDateTime,
    #[diesel(sql_type = Datetime)]
    record_date: NaiveDateTime,
    #[diesel(sql_type = BigInt)]
    record_order: i64,
    #[diesel(sql_type = Nullable<Text>)]
    custom_attributes: Option<String>,
    #[diesel(sql_type = Integer)]
    max_assignments: i32,
    #[diesel(sql_type = Integer)]
    assignments: i32,
    #[diesel(sql_type = Nullable<Text>)]
    held_by: Option<String>,
}

impl From<ItemRow> for Item {
    fn from(r: ItemRow) -> Self {
        Item {
            key: ExecutionKey::new(r.task_name, r.task_instance),
            data: r.task_data,
            available_at: utc(r.execution_time),
            record: RecordKey {
                date: utc(r.record_date),
                order: r.record_order,
            },
            custom_attributes: r.custom_attributes,
            max_assignments: r.max_assignments,
            assignments: r.assignments,
            held_by: r.held_by,
        }
    }
}

/// An assignment ([`docket_core::dialect::queue::ASSIGNMENT_COLUMNS`] and `updated_at`).
#[derive(QueryableByName)]
struct AssignmentRow {
    #[diesel(sql_type = Text)]
    task_name: String,
    #[diesel(sql_type = Text)]
    task_instance: String,
    #[diesel(sql_type = Text)]
    worker: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Datetime)]
    deadline: NaiveDateTime,
    #[diesel(sql_type = Datetime)]
    updated_at: NaiveDateTime,
}

impl TryFrom<AssignmentRow> for Assignment {
    type Error = StoreError;
    fn try_from(r: AssignmentRow) -> Result<Self, StoreError> {
        Ok(Assignment {
            key: ExecutionKey::new(r.task_name, r.task_instance),
            worker: r.worker,
            status: AssignmentStatus::decode(&r.status)?,
            deadline: utc(r.deadline),
            updated_at: utc(r.updated_at),
        })
    }
}

#[derive(QueryableByName)]
struct LevelRow {
    #[diesel(sql_type = SmallInt)]
    level: i16,
}

#[derive(QueryableByName)]
struct NameRow {
    #[diesel(sql_type = Text)]
    name: String,
}

impl SqlSession for MysqlSession<'_> {
    /// Runs a statement. A duplicate-key error becomes `Ok(0)`: among docket's statements only
    /// an insert can raise it (no update changes a key column), and MySQL has no `ON CONFLICT`,
    /// so this is how schedule-if-not-exists reports "already exists". MySQL rolls back only the
    /// failed statement, not the transaction, so a batch insert carries on past existing keys;
    /// every other error (data too long, ...) still fails the batch, which then rolls back.
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        match bound(stmt).execute(self.0) {
            Ok(n) => Ok(n as u64),
            Err(e) if is_duplicate_key(&e) => Ok(0),
            Err(e) => Err(db(e)),
        }
    }

    fn query_executions(
        &mut self,
        stmt: &Rendered,
        with_priority: bool,
    ) -> Result<Vec<Execution>, StoreError> {
        let q = bound(stmt);
        Ok(if with_priority {
            q.load::<PriorityRow>(self.0)
                .map_err(db)?
                .into_iter()
                .map(|r| r.base.into_execution(r.priority))
                .collect()
        } else {
            q.load::<BaseRow>(self.0)
                .map_err(db)?
                .into_iter()
                .map(|r| r.into_execution(None))
                .collect()
        })
    }

    fn query_summaries(&mut self, stmt: &Rendered) -> Result<Vec<TaskSummary>, StoreError> {
        let rows = bound(stmt).load::<SummaryRow>(self.0).map_err(db)?;
        Ok(rows
            .into_iter()
            .map(|r| TaskSummary {
                task_name: r.task_name,
                total: r.total,
                picked: r.picked,
                failing: r.failing,
                next_execution_time: r.next_execution_time.map(utc),
            })
            .collect())
    }

    fn query_levels(&mut self, stmt: &Rendered) -> Result<Vec<i16>, StoreError> {
        let rows = bound(stmt).load::<LevelRow>(self.0).map_err(db)?;
        Ok(rows.into_iter().map(|r| r.level).collect())
    }

    fn query_strings(&mut self, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
        let rows = bound(stmt).load::<NameRow>(self.0).map_err(db)?;
        Ok(rows.into_iter().map(|r| r.name).collect())
    }

    fn query_items(&mut self, stmt: &Rendered) -> Result<Vec<Item>, StoreError> {
        let rows = bound(stmt).load::<ItemRow>(self.0).map_err(db)?;
        Ok(rows.into_iter().map(Item::from).collect())
    }

    fn query_assignments(&mut self, stmt: &Rendered) -> Result<Vec<Assignment>, StoreError> {
        let rows = bound(stmt).load::<AssignmentRow>(self.0).map_err(db)?;
        rows.into_iter().map(Assignment::try_from).collect()
    }
}
