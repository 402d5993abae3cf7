//! Runs rendered statements on an `OciConnection`: binds each [`Value`] with its SQL type and
//! decodes rows into the core model.
//!
//! Times are stored in `TIMESTAMP(6)` columns, which carry no zone: docket writes and reads
//! them as UTC wall-clock values, so the session time zone never shifts them. Oracle reports
//! unquoted column names in upper case, so the row types name them that way.

use crate::error::is_duplicate_key;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{BigInt, Binary, Bool, Integer, Nullable, SmallInt, Text, Timestamp};
use diesel::{QueryableByName, RunQueryDsl};
use diesel_oci::{OciConnection, Oracle};
use docket_core::dialect::{Rendered, Value};
use docket_core::store::sql::SqlSession;
use docket_core::store::{Execution, TaskSummary};
use docket_core::StoreError;
use docket_diesel::db;

/// One pooled connection seen as a [`SqlSession`].
pub(crate) struct OracleSession<'c>(pub &'c mut OciConnection);

pub(crate) fn bound(stmt: &Rendered) -> BoxedSqlQuery<'_, Oracle, SqlQuery> {
    let mut q = diesel::sql_query(stmt.sql.as_str()).into_boxed::<Oracle>();
    for value in &stmt.binds {
        q = match value {
            Value::Text(v) => q.bind::<Nullable<Text>, _>(v.as_deref()),
            Value::Bytes(v) => q.bind::<Nullable<Binary>, _>(v.as_deref()),
            Value::Timestamp(v) => {
                q.bind::<Nullable<Timestamp>, _>(v.as_ref().map(DateTime::naive_utc))
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
    #[diesel(column_name = "TASK_NAME")]
    task_name: String,
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "TASK_INSTANCE")]
    task_instance: String,
    #[diesel(sql_type = Nullable<Binary>)]
    #[diesel(column_name = "TASK_DATA")]
    task_data: Option<Vec<u8>>,
    #[diesel(sql_type = Timestamp)]
    #[diesel(column_name = "EXECUTION_TIME")]
    execution_time: NaiveDateTime,
    #[diesel(sql_type = Bool)]
    #[diesel(column_name = "PICKED")]
    picked: bool,
    #[diesel(sql_type = Nullable<Text>)]
    #[diesel(column_name = "PICKED_BY")]
    picked_by: Option<String>,
    #[diesel(sql_type = Nullable<Timestamp>)]
    #[diesel(column_name = "LAST_SUCCESS")]
    last_success: Option<NaiveDateTime>,
    #[diesel(sql_type = Nullable<Timestamp>)]
    #[diesel(column_name = "LAST_FAILURE")]
    last_failure: Option<NaiveDateTime>,
    #[diesel(sql_type = Integer)]
    #[diesel(column_name = "CONSECUTIVE_FAILURES")]
    consecutive_failures: i32,
    #[diesel(sql_type = Nullable<Timestamp>)]
    #[diesel(column_name = "LAST_HEARTBEAT")]
    last_heartbeat: Option<NaiveDateTime>,
    #[diesel(sql_type = BigInt)]
    #[diesel(column_name = "VERSION")]
    version: i64,
}

#[derive(QueryableByName)]
struct PriorityRow {
    #[diesel(embed)]
    base: BaseRow,
    #[diesel(sql_type = Nullable<SmallInt>)]
    #[diesel(column_name = "PRIORITY")]
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

/// `COUNT` and `SUM` come back as `NUMBER`; diesel-oci's `BigInt` decoding accepts it.
#[derive(QueryableByName)]
struct SummaryRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "TASK_NAME")]
    task_name: String,
    #[diesel(sql_type = BigInt)]
    #[diesel(column_name = "TOTAL")]
    total: i64,
    #[diesel(sql_type = BigInt)]
    #[diesel(column_name = "PICKED")]
    picked: i64,
    #[diesel(sql_type = BigInt)]
    #[diesel(column_name = "FAILING")]
    failing: i64,
    #[diesel(sql_type = Nullable<Timestamp>)]
    #[diesel(column_name = "NEXT_EXECUTION_TIME")]
    next_execution_time: Option<NaiveDateTime>,
}

/// The levels query names its column `"level"` (quoted: `LEVEL` is reserved in Oracle).
#[derive(QueryableByName)]
struct LevelRow {
    #[diesel(sql_type = SmallInt)]
    #[diesel(column_name = "level")]
    level: i16,
}

#[derive(QueryableByName)]
struct NameRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "NAME")]
    name: String,
}

impl SqlSession for OracleSession<'_> {
    /// Runs a statement. ORA-00001 becomes `Ok(0)`: among docket's statements only an insert
    /// can raise it (no update changes a key column), so this is how schedule-if-not-exists
    /// reports "already exists". Oracle rolls back only the failed statement, not the
    /// transaction, so a batch insert carries on past existing keys; every other error still
    /// fails the batch, which then rolls back.
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
}
