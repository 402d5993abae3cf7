//! Runs rendered statements on a tiberius client: binds each [`Value`] with its SQL Server type
//! and reads each column into a [`Cell`] by the type the server sent. Decoding into records is
//! core's.
//!
//! Times are `DATETIME2(6)` columns, which carry no zone: docket writes and reads them as UTC
//! wall-clock values, so no session or server time zone shifts them.

use crate::error::MssqlError;
use crate::pool::Conn;
use chrono::{DateTime, NaiveDateTime, Utc};
use docket_core::dialect::{Rendered, Value};
use docket_core::store::sql::SqlSession;
use docket_core::store::{Cell, Row};
use docket_core::StoreError;
use tiberius::{ColumnData, FromSql, ToSql};

/// One pooled connection seen as a [`SqlSession`].
pub(crate) struct MssqlSession<'c>(pub &'c mut Conn);

/// The SQL Server type of a NULL that tiberius 0.13 cannot send typed: it writes a NULL
/// text, binary or `DATETIME2` parameter as TDS's untyped NULL (type `0x1F`), which real SQL
/// Server accepts and Babelfish refuses ("Data type 0x1F is unknown"). Only its integer, bit,
/// float and GUID NULLs keep their type on the wire, and tiberius offers no way to send
/// another encoding.
fn untyped_null(value: &Value) -> Option<&'static str> {
    match value {
        Value::Text(None) => Some("NVARCHAR(4000)"),
        Value::Bytes(None) => Some("VARBINARY(MAX)"),
        Value::Timestamp(None) => Some("DATETIME2(7)"),
        _ => None,
    }
}

/// A statement as tiberius sends it: its text and its parameters, every one typed on the
/// wire. A NULL that tiberius would send untyped ([`untyped_null`]) is written into the text
/// as the typed NULL of its SQL type, `CAST(NULL AS NVARCHAR(4000))`, at its placeholder
/// (the writer recorded where), and its parameter becomes a typed `INT` NULL that nothing
/// reads, so the numbering of the others stays. The text stays a constant of docket's:
/// nothing a caller passes is written into it.
fn typed(stmt: &Rendered) -> (std::borrow::Cow<'_, str>, Vec<Box<dyn ToSql>>) {
    let params = stmt.binds.iter().map(param).collect();
    let casts: Vec<_> = stmt
        .binds
        .iter()
        .zip(stmt.placeholders())
        .filter_map(|(value, at)| untyped_null(value).map(|ty| (at.clone(), ty)))
        .collect();
    if casts.is_empty() {
        return (stmt.sql.as_str().into(), params);
    }
    let mut sql = String::with_capacity(stmt.sql.len() + 32 * casts.len());
    let mut from = 0;
    for (at, ty) in casts {
        sql.push_str(&stmt.sql[from..at.start]);
        sql.push_str("CAST(NULL AS ");
        sql.push_str(ty);
        sql.push(')');
        from = at.end;
    }
    sql.push_str(&stmt.sql[from..]);
    (sql.into(), params)
}

/// One value as a tiberius parameter of its SQL Server type.
fn param(value: &Value) -> Box<dyn ToSql> {
    match value {
        _ if untyped_null(value).is_some() => Box::new(None::<i32>),
        Value::Text(v) => Box::new(v.clone()),
        Value::Bytes(v) => Box::new(v.clone()),
        Value::Timestamp(v) => Box::new(v.as_ref().map(DateTime::naive_utc)),
        Value::SmallInt(v) => Box::new(*v),
        Value::Int(v) => Box::new(*v),
        Value::BigInt(v) => Box::new(*v),
        Value::Bool(v) => Box::new(*v),
        // The SQL Server dialect binds no arrays: the server refuses a statement with one.
        Value::Array(_) => Box::new(None::<i32>),
    }
}

/// One column value by its TDS type. `SUM` of an `INT` is `INT`; a `DECIMAL` (e.g. a `SUM`
/// over `DECIMAL`) keeps its exact text.
fn cell(column: &str, data: &ColumnData<'static>) -> Result<Cell, StoreError> {
    let cell = match data {
        ColumnData::U8(v) => v.map(|v| Cell::Int(v.into())),
        ColumnData::I16(v) => v.map(|v| Cell::Int(v.into())),
        ColumnData::I32(v) => v.map(|v| Cell::Int(v.into())),
        ColumnData::I64(v) => v.map(Cell::Int),
        ColumnData::F32(v) => v.map(|v| Cell::Float(v.into())),
        ColumnData::F64(v) => v.map(Cell::Float),
        ColumnData::Bit(v) => v.map(Cell::Bool),
        ColumnData::String(v) => v.as_ref().map(|s| Cell::Text(s.to_string())),
        ColumnData::Binary(v) => v.as_ref().map(|b| Cell::Bytes(b.to_vec())),
        ColumnData::Numeric(v) => v.map(|n| Cell::Decimal(n.to_string())),
        ColumnData::Guid(v) => v.map(|g| Cell::Text(g.to_string())),
        ColumnData::DateTime2(_) | ColumnData::DateTime(_) | ColumnData::SmallDateTime(_) => {
            NaiveDateTime::from_sql(data)
                .map_err(|e| decode(column, e))?
                .map(|t| Cell::Timestamp(t.and_utc()))
        }
        ColumnData::DateTimeOffset(_) => DateTime::<Utc>::from_sql(data)
            .map_err(|e| decode(column, e))?
            .map(Cell::Timestamp),
        other => {
            return Err(decode(
                column,
                format!("unsupported SQL Server column type {other:?}"),
            ))
        }
    };
    Ok(cell.unwrap_or(Cell::Null))
}

/// A column the session cannot read (as the diesel families report theirs).
fn decode(column: &str, reason: impl std::fmt::Display) -> StoreError {
    StoreError::database(format!("column {column}: {reason}"))
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

    /// Runs a query and returns the driver's rows of its first result set.
    pub(crate) fn rows(&mut self, stmt: &Rendered) -> Result<Vec<tiberius::Row>, StoreError> {
        let (sql, owned) = typed(stmt);
        let refs: Vec<&dyn ToSql> = owned.iter().map(AsRef::as_ref).collect();
        let conn = &mut *self.0;
        let result = conn.rt.block_on(async {
            conn.client
                .query(sql.as_ref(), &refs)
                .await?
                .into_first_result()
                .await
        });
        result.map_err(|e| self.fail(e).into())
    }
}

impl SqlSession for MssqlSession<'_> {
    /// Runs a statement. A duplicate key (2627, 2601) is [`StoreError::Duplicate`]; with
    /// `XACT_ABORT OFF` it ends only the statement, so the transaction can carry on.
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        let (sql, owned) = typed(stmt);
        let refs: Vec<&dyn ToSql> = owned.iter().map(AsRef::as_ref).collect();
        let conn = &mut *self.0;
        let result = conn
            .rt
            .block_on(async { conn.client.execute(sql.as_ref(), &refs).await });
        match result {
            Ok(done) => Ok(done.total()),
            Err(e) => Err(self.fail(e).into()),
        }
    }

    fn query(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        // A value that cannot be read fails only its row, when a decoder reads it.
        let read = |column: &str, data| match cell(column, data) {
            Ok(value) => value,
            Err(StoreError::Decode { reason, .. }) => Cell::Invalid(reason),
            Err(e) => Cell::Invalid(e.to_string()),
        };
        Ok(self
            .rows(stmt)?
            .iter()
            .map(|row| {
                Row::new(
                    row.cells()
                        .map(|(col, data)| (col.name().to_owned(), read(col.name(), data)))
                        .collect(),
                )
            })
            .collect())
    }

    /// Sends `sql` as a batch of its own, as plain text (not through `sp_executesql`, whose
    /// scope would undo a `SET` at its end): e.g. `SET SHOWPLAN_TEXT ON`, which must be alone
    /// in its batch.
    fn execute_unprepared(&mut self, sql: &str) -> Result<(), StoreError> {
        self.batch(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn cells_by_tds_type() {
        let read = |d: ColumnData<'static>| cell("c", &d).unwrap();
        assert_eq!(read(ColumnData::I32(Some(7))), Cell::Int(7));
        assert_eq!(read(ColumnData::I16(None)), Cell::Null);
        assert_eq!(read(ColumnData::Bit(Some(true))), Cell::Bool(true));
        assert_eq!(
            read(ColumnData::String(Some(Cow::Borrowed("é")))),
            Cell::Text("é".into())
        );
        assert_eq!(
            read(ColumnData::Numeric(Some(
                tiberius::numeric::Numeric::new_with_scale(1200, 2)
            ))),
            Cell::Decimal("12.00".into())
        );
        let t = chrono::NaiveDate::from_ymd_opt(2500, 1, 2)
            .unwrap()
            .and_hms_micro_opt(3, 4, 5, 123_456)
            .unwrap();
        let data = tiberius::IntoSql::into_sql(t);
        assert_eq!(read(data), Cell::Timestamp(t.and_utc()));
    }

    /// Whether tiberius 0.13 writes `data` with its own TDS type when it is NULL: integers,
    /// bits, floats and GUIDs do (`INTN`, `BITN`, `FLTN`, `GUID` with length 0); a NULL of any
    /// other type goes out as the untyped NULL, `0x1F` (`column_data.rs`, the `(_, None)` arm
    /// of its RPC encoding).
    fn typed_on_the_wire(data: &ColumnData<'_>) -> bool {
        use ColumnData as D;
        match data {
            D::U8(_) | D::I16(_) | D::I32(_) | D::I64(_) | D::F32(_) | D::F64(_) | D::Bit(_) => {
                true
            }
            D::Guid(_) => true,
            D::String(v) => v.is_some(),
            D::Binary(v) => v.is_some(),
            D::DateTime2(v) => v.is_some(),
            _ => false,
        }
    }

    #[test]
    fn nulls_go_out_typed() {
        let dialect = crate::MssqlDialect;
        let mut w = docket_core::dialect::SqlWriter::new(&dialect);
        let now = chrono::DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap();
        w.push("UPDATE t SET a = ")
            .bind(Value::Text(None))
            .push(", b = ")
            .bind(Value::Bytes(None))
            .push(", c = ")
            .bind(Value::Timestamp(None))
            .push(", d = ")
            .bind(Value::SmallInt(None))
            .push(", e = ")
            .bind("x")
            .push(", f = ")
            .bind(now)
            .push(" WHERE g = ")
            .bind(Value::Text(None));
        let stmt = w.finish();
        let (sql, params) = typed(&stmt);
        assert_eq!(
            sql,
            "UPDATE t SET a = CAST(NULL AS NVARCHAR(4000)), b = CAST(NULL AS VARBINARY(MAX)), \
             c = CAST(NULL AS DATETIME2(7)), d = @P4, e = @P5, f = @P6 WHERE g = \
             CAST(NULL AS NVARCHAR(4000))"
        );
        assert_eq!(params.len(), stmt.binds.len(), "numbering kept");
        for (i, p) in params.iter().enumerate() {
            let data = p.to_sql();
            assert!(typed_on_the_wire(&data), "parameter {} is {data:?}", i + 1);
        }
        // Without the rewrite, these four would go out untyped.
        let untyped = stmt
            .binds
            .iter()
            .filter(|v| untyped_null(v).is_some())
            .count();
        assert_eq!(untyped, 4);
        // A statement without such NULLs is sent as written.
        let plain = docket_core::dialect::Rendered::text("SELECT 1");
        assert_eq!(typed(&plain).0, "SELECT 1");
    }
}
