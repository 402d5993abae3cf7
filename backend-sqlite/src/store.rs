//! Runs rendered statements on a `SqliteConnection`: binds each [`Value`] with its SQL type and
//! decodes rows into the core model.
//!
//! **Timestamps are stored as INTEGER microseconds since the Unix epoch (UTC).** SQLite has no
//! timestamp type; of its storage classes an integer is the one that both round-trips exactly
//! (every microsecond from 1970-01-01T00:00:00.000001Z to beyond year 2500 fits an `i64`, with
//! no text formatting or float rounding in between) and compares correctly in SQL, so
//! `execution_time <= ?`, `ORDER BY execution_time` and `MIN(execution_time)` work on the
//! stored values and the indexes serve them. ISO-8601 text would also sort, but only while
//! every writer formats identically; `REAL` julian days lose microseconds. The conversion lives
//! here, in [`bound`] and in the row decoders, and nowhere else. An integer has no time zone,
//! so there is no session time zone to get wrong.

use crate::error::timestamp;
use chrono::{DateTime, Utc};
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{BigInt, Binary, Bool, Integer, Nullable, SmallInt, Text};
use diesel::sqlite::{Sqlite, SqliteConnection};
use diesel::{QueryableByName, RunQueryDsl};
use docket_core::dialect::{Rendered, Value};
use docket_core::queue::{Assignment, AssignmentStatus, Item, RecordKey};
use docket_core::store::sql::SqlSession;
use docket_core::store::{Execution, ExecutionKey, TaskSummary};
use docket_core::StoreError;
use docket_diesel::db;

/// One pooled connection seen as a [`SqlSession`].
pub(crate) struct SqliteSession<'c>(pub &'c mut SqliteConnection);

/// The stored form of an instant: microseconds since the epoch.
fn to_micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

fn from_micros(column: &'static str, micros: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(micros).ok_or_else(|| timestamp(column, micros))
}

fn from_micros_opt(
    column: &'static str,
    micros: Option<i64>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    micros.map(|m| from_micros(column, m)).transpose()
}

/// Binds every value of `stmt` with its SQL type (timestamps as integer microseconds).
pub(crate) fn bound(stmt: &Rendered) -> BoxedSqlQuery<'_, Sqlite, SqlQuery> {
    let mut q = diesel::sql_query(stmt.sql.as_str()).into_boxed::<Sqlite>();
    for value in &stmt.binds {
        q = match value {
            Value::Text(v) => q.bind::<Nullable<Text>, _>(v.as_deref()),
            Value::Bytes(v) => q.bind::<Nullable<Binary>, _>(v.as_deref()),
            Value::Timestamp(v) => q.bind::<Nullable<BigInt>, _>(v.map(to_micros)),
            Value::SmallInt(v) => q.bind::<Nullable<SmallInt>, _>(*v),
            Value::Int(v) => q.bind::<Integer, _>(*v),
            Value::BigInt(v) => q.bind::<BigInt, _>(*v),
            Value::Bool(v) => q.bind::<Bool, _>(*v),
        };
    }
    q
}

#[derive(QueryableByName)]
struct BaseRow {
    #[diesel(sql_type = Text)]
    task_name: String,
    #[diesel(sql_type = Text)]
    task_instance: String,
    #[diesel(sql_type = Nullable<Binary>)]
    task_data: Option<Vec<u8>>,
    #[diesel(sql_type = BigInt)]
    execution_time: i64,
    #[diesel(sql_type = Bool)]
    picked: bool,
    #[diesel(sql_type = Nullable<Text>)]
    picked_by: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    last_success: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    last_failure: Option<i64>,
    #[diesel(sql_type = Integer)]
    consecutive_failures: i32,
    #[diesel(sql_type = Nullable<BigInt>)]
    last_heartbeat: Option<i64>,
    #[diesel(sql_type = BigInt)]
    version: i64,
}

#[derive(QueryableByName)]
struct PriorityRow {
    #[diesel(embed)]
    base: BaseRow,
    // Stored as INTEGER; the column's CHECK keeps it within i16 (diesel would truncate).
    #[diesel(sql_type = Nullable<SmallInt>)]
    priority: Option<i16>,
}

impl BaseRow {
    fn into_execution(self, priority: Option<i16>) -> Result<Execution, StoreError> {
        Ok(Execution {
            task_name: self.task_name,
            task_instance: self.task_instance,
            task_data: self.task_data,
            execution_time: from_micros("execution_time", self.execution_time)?,
            picked: self.picked,
            picked_by: self.picked_by,
            last_success: from_micros_opt("last_success", self.last_success)?,
            last_failure: from_micros_opt("last_failure", self.last_failure)?,
            consecutive_failures: self.consecutive_failures,
            last_heartbeat: from_micros_opt("last_heartbeat", self.last_heartbeat)?,
            version: self.version,
            priority,
        })
    }
}

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
    #[diesel(sql_type = Nullable<BigInt>)]
    next_execution_time: Option<i64>,
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
    #[diesel(sql_type = BigInt)]
    execution_time: i64,
    #[diesel(sql_type = BigInt)]
    record_date: i64,
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

impl TryFrom<ItemRow> for Item {
    type Error = StoreError;
    fn try_from(r: ItemRow) -> Result<Self, StoreError> {
        Ok(Item {
            key: ExecutionKey::new(r.task_name, r.task_instance),
            data: r.task_data,
            available_at: from_micros("execution_time", r.execution_time)?,
            record: RecordKey {
                date: from_micros("record_date", r.record_date)?,
                order: r.record_order,
            },
            custom_attributes: r.custom_attributes,
            max_assignments: r.max_assignments,
            assignments: r.assignments,
            held_by: r.held_by,
        })
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
    #[diesel(sql_type = BigInt)]
    deadline: i64,
    #[diesel(sql_type = BigInt)]
    updated_at: i64,
}

impl TryFrom<AssignmentRow> for Assignment {
    type Error = StoreError;
    fn try_from(r: AssignmentRow) -> Result<Self, StoreError> {
        Ok(Assignment {
            key: ExecutionKey::new(r.task_name, r.task_instance),
            worker: r.worker,
            status: AssignmentStatus::decode(&r.status)?,
            deadline: from_micros("deadline", r.deadline)?,
            updated_at: from_micros("updated_at", r.updated_at)?,
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

impl SqlSession for SqliteSession<'_> {
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        let n = bound(stmt).execute(self.0).map_err(db)?;
        Ok(n as u64)
    }

    fn query_executions(
        &mut self,
        stmt: &Rendered,
        with_priority: bool,
    ) -> Result<Vec<Execution>, StoreError> {
        let q = bound(stmt);
        if with_priority {
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
        }
    }

    fn query_summaries(&mut self, stmt: &Rendered) -> Result<Vec<TaskSummary>, StoreError> {
        let rows = bound(stmt).load::<SummaryRow>(self.0).map_err(db)?;
        rows.into_iter()
            .map(|r| {
                Ok(TaskSummary {
                    task_name: r.task_name,
                    total: r.total,
                    picked: r.picked,
                    failing: r.failing,
                    next_execution_time: from_micros_opt(
                        "next_execution_time",
                        r.next_execution_time,
                    )?,
                })
            })
            .collect()
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
        rows.into_iter().map(Item::try_from).collect()
    }

    fn query_assignments(&mut self, stmt: &Rendered) -> Result<Vec<Assignment>, StoreError> {
        let rows = bound(stmt).load::<AssignmentRow>(self.0).map_err(db)?;
        rows.into_iter().map(Assignment::try_from).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_trip_at_the_edges() {
        for s in [
            "1970-01-01T00:00:00.000001Z",
            "2500-12-31T23:59:59.999999Z",
            "1969-12-31T23:59:59.999999Z",
        ] {
            let t = DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
            assert_eq!(from_micros("t", to_micros(t)).unwrap(), t, "{s}");
        }
        assert!(matches!(
            from_micros("execution_time", i64::MAX),
            Err(StoreError::Decode {
                column: "execution_time",
                ..
            })
        ));
    }
}
