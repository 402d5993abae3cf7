//! Runs rendered statements on a tiberius client: binds each [`Value`] with its SQL Server type
//! and decodes rows into the core model.
//!
//! Times are `DATETIME2(6)` columns, which carry no zone: docket writes and reads them as UTC
//! wall-clock values, so no session or server time zone shifts them.

use crate::connect::Conn;
use crate::error::MssqlError;
use chrono::{DateTime, NaiveDateTime, Utc};
use docket_core::dialect::{Rendered, Value};
use docket_core::store::sql::SqlSession;
use docket_core::store::{Execution, TaskSummary};
use docket_core::StoreError;
use tiberius::{FromSql, Row, ToSql};

/// One pooled connection seen as a [`SqlSession`].
pub(crate) struct MssqlSession<'c>(pub &'c mut Conn);

/// The values of a statement as tiberius parameters, each with its SQL type even when NULL.
pub(crate) fn params(stmt: &Rendered) -> Vec<Box<dyn ToSql>> {
    stmt.binds
        .iter()
        .map(|value| -> Box<dyn ToSql> {
            match value {
                Value::Text(v) => Box::new(v.clone()),
                Value::Bytes(v) => Box::new(v.clone()),
                Value::Timestamp(v) => Box::new(v.as_ref().map(DateTime::naive_utc)),
                Value::SmallInt(v) => Box::new(*v),
                Value::Int(v) => Box::new(*v),
                Value::BigInt(v) => Box::new(*v),
                Value::Bool(v) => Box::new(*v),
            }
        })
        .collect()
}

fn column<'a, T: FromSql<'a>>(row: &'a Row, column: &'static str) -> Result<Option<T>, StoreError> {
    row.try_get::<T, _>(column).map_err(|e| StoreError::Decode {
        column,
        reason: e.to_string(),
    })
}

fn required<'a, T: FromSql<'a>>(row: &'a Row, name: &'static str) -> Result<T, StoreError> {
    column(row, name)?.ok_or_else(|| StoreError::Decode {
        column: name,
        reason: "NULL in a NOT NULL column".into(),
    })
}

fn text(row: &Row, name: &'static str) -> Result<Option<String>, StoreError> {
    Ok(column::<&str>(row, name)?.map(str::to_owned))
}

fn time(row: &Row, name: &'static str) -> Result<Option<DateTime<Utc>>, StoreError> {
    Ok(column::<NaiveDateTime>(row, name)?.map(|t| t.and_utc()))
}

/// An integer column whose SQL type depends on the expression (`COUNT` is `INT`, a `SUM` of
/// `INT` is `INT`, `COUNT_BIG` would be `BIGINT`).
fn count(row: &Row, name: &'static str) -> Result<i64, StoreError> {
    match row.try_get::<i32, _>(name) {
        Ok(v) => Ok(i64::from(v.unwrap_or(0))),
        Err(_) => Ok(column::<i64>(row, name)?.unwrap_or(0)),
    }
}

fn execution(row: &Row, with_priority: bool) -> Result<Execution, StoreError> {
    Ok(Execution {
        task_name: text(row, "task_name")?.unwrap_or_default(),
        task_instance: text(row, "task_instance")?.unwrap_or_default(),
        task_data: column::<&[u8]>(row, "task_data")?.map(<[u8]>::to_vec),
        execution_time: required::<NaiveDateTime>(row, "execution_time")?.and_utc(),
        picked: required::<bool>(row, "picked")?,
        picked_by: text(row, "picked_by")?,
        last_success: time(row, "last_success")?,
        last_failure: time(row, "last_failure")?,
        consecutive_failures: required::<i32>(row, "consecutive_failures")?,
        last_heartbeat: time(row, "last_heartbeat")?,
        version: required::<i64>(row, "version")?,
        priority: if with_priority {
            column::<i16>(row, "priority")?
        } else {
            None
        },
    })
}

impl MssqlSession<'_> {
    /// Marks the connection broken when the failure was below SQL (I/O, protocol).
    fn fail(&mut self, e: tiberius::error::Error) -> MssqlError {
        let e = MssqlError::from(e);
        if !e.is_server_error() {
            self.0.broken = true;
        }
        e
    }

    /// Runs a batch of SQL without binds.
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        let conn = &mut *self.0;
        let result = conn
            .rt
            .block_on(async { conn.client.simple_query(sql).await?.into_results().await });
        result.map(|_| ()).map_err(|e| self.fail(e).into())
    }

    fn execute_raw(&mut self, stmt: &Rendered) -> Result<u64, MssqlError> {
        let owned = params(stmt);
        let refs: Vec<&dyn ToSql> = owned.iter().map(AsRef::as_ref).collect();
        let conn = &mut *self.0;
        let result = conn
            .rt
            .block_on(async { conn.client.execute(stmt.sql.as_str(), &refs).await });
        match result {
            Ok(done) => Ok(done.total()),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Runs a query and returns the rows of its first result set.
    pub(crate) fn rows(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        let owned = params(stmt);
        let refs: Vec<&dyn ToSql> = owned.iter().map(AsRef::as_ref).collect();
        let conn = &mut *self.0;
        let result = conn.rt.block_on(async {
            conn.client
                .query(stmt.sql.as_str(), &refs)
                .await?
                .into_first_result()
                .await
        });
        result.map_err(|e| self.fail(e).into())
    }
}

impl SqlSession for MssqlSession<'_> {
    /// Runs a statement. A duplicate key (2627, 2601) becomes `Ok(0)`: among docket's
    /// statements only an insert can raise it (no update changes a key column), and T-SQL has
    /// no `ON CONFLICT`, so this is how schedule-if-not-exists reports "already exists". With
    /// `XACT_ABORT OFF` the error ends only the statement, so a batch insert carries on past
    /// existing keys; every other error still fails the batch, which then rolls back.
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        match self.execute_raw(stmt) {
            Ok(n) => Ok(n),
            Err(e) if e.is_duplicate_key() => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    fn query_executions(
        &mut self,
        stmt: &Rendered,
        with_priority: bool,
    ) -> Result<Vec<Execution>, StoreError> {
        self.rows(stmt)?
            .iter()
            .map(|row| execution(row, with_priority))
            .collect()
    }

    fn query_levels(&mut self, stmt: &Rendered) -> Result<Vec<i16>, StoreError> {
        self.rows(stmt)?
            .iter()
            .map(|row| required::<i16>(row, "level"))
            .collect()
    }

    fn query_summaries(&mut self, stmt: &Rendered) -> Result<Vec<TaskSummary>, StoreError> {
        self.rows(stmt)?
            .iter()
            .map(|row| {
                Ok(TaskSummary {
                    task_name: text(row, "task_name")?.unwrap_or_default(),
                    total: count(row, "total")?,
                    picked: count(row, "picked")?,
                    failing: count(row, "failing")?,
                    next_execution_time: time(row, "next_execution_time")?,
                })
            })
            .collect()
    }

    fn query_strings(&mut self, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
        self.rows(stmt)?
            .iter()
            .map(|row| Ok(text(row, "name")?.unwrap_or_default()))
            .collect()
    }
}
