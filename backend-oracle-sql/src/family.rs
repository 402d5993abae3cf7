//! The Oracle [`Family`]: binds each [`Value`] with its SQL type, reads columns by the type
//! diesel-oci reports, and recognizes Oracle's error codes.
//!
//! Times are `TIMESTAMP(6)` columns, which carry no zone: docket writes and reads them as UTC
//! wall-clock values, so the session time zone never shifts them. Booleans are `NUMBER(1)`,
//! read as integers (core's decoding takes 0/1). Oracle reports unquoted column names in upper
//! case; core reads columns by name case-insensitively.

use crate::migrate::MIGRATIONS;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::deserialize::{self, FromSql};
use diesel::query_builder::AstPass;
use diesel::result::Error as DieselError;
use diesel::sql_types::{
    BigInt, Binary, Bool, Double, Float, Integer, Nullable, SmallInt, Text, Timestamp,
};
use diesel::{QueryResult, RunQueryDsl};
use diesel_oci::{OciConnection, OciDataType, Oracle, OracleValue};
use docket_core::dialect::Value;
use docket_core::migrate::MigrationFile;
use docket_core::store::Cell;
use docket_core::StoreError;
use docket_diesel::{db, push_scalar, Cells, Family, Statement};

/// ORA-00001: unique constraint violated.
const UNIQUE_VIOLATION: i32 = 1;

/// ORA-02290: check constraint violated (in docket's schema, only the `IS JSON` check on
/// `custom_attributes`).
const CHECK_VIOLATION: i32 = 2290;

/// Oracle errors that mean the session is gone: ORA-00028 (session killed), ORA-01012 (not
/// logged on), ORA-02396 (idle time exceeded), ORA-03113 (end-of-file on communication
/// channel), ORA-03114 (not connected), ORA-03135 (connection lost contact), ORA-12537 and
/// ORA-12547 (TNS: connection closed, lost contact).
const SESSION_LOST: [i32; 8] = [28, 1012, 2396, 3113, 3114, 3135, 12537, 12547];

/// ODPI-C's "not connected" and "connection was closed" errors.
const DPI_CLOSED: [&str; 2] = ["DPI-1010", "DPI-1080"];

/// Oracle over diesel-oci's `OciConnection`. Transactions are the family default, Oracle's
/// READ COMMITTED: `SELECT ... FOR UPDATE SKIP LOCKED` locks the rows it returns and skips
/// those others hold, and a failed statement rolls back only itself.
#[derive(Debug, Clone, Copy)]
pub struct OracleFamily;

impl Family for OracleFamily {
    type Backend = Oracle;
    type Connection = OciConnection;
    type Manager = diesel::r2d2::ConnectionManager<OciConnection>;
    type Meta = ();
    const MIGRATIONS: &'static [MigrationFile] = MIGRATIONS;
    /// OCI runs one statement per call.
    const ONE_STATEMENT_PER_CALL: bool = true;

    /// TIMESTAMP(6) has no zone: UTC wall-clock time.
    type Time = Option<NaiveDateTime>;

    fn time(t: Option<DateTime<Utc>>) -> Self::Time {
        t.as_ref().map(DateTime::naive_utc)
    }

    fn push_time<'b>(mut out: AstPass<'_, 'b, Oracle>, t: &'b Self::Time) -> QueryResult<()> {
        out.push_bind_param::<Nullable<Timestamp>, _>(t)
    }

    /// The Oracle dialect binds no arrays: [`push_scalar`] refuses them.
    fn push_value<'b>(out: AstPass<'_, 'b, Oracle>, value: &'b Value) -> QueryResult<()> {
        push_scalar(out, value)
    }

    /// `NUMBER(p)` arrives as the integer type its precision fits (`COUNT` and `SUM`, with no
    /// precision, as `BigInt`), `VARCHAR2` and `CLOB` as text, `BLOB` as bytes.
    fn cell(raw: OracleValue<'_>) -> deserialize::Result<Cell> {
        use OciDataType as T;
        Ok(match raw.value_type() {
            T::Bool => Cell::Bool(<bool as FromSql<Bool, Oracle>>::from_sql(raw)?),
            T::SmallInt => Cell::Int(<i16 as FromSql<SmallInt, Oracle>>::from_sql(raw)?.into()),
            T::Integer => Cell::Int(<i32 as FromSql<Integer, Oracle>>::from_sql(raw)?.into()),
            T::BigInt => Cell::Int(<i64 as FromSql<BigInt, Oracle>>::from_sql(raw)?),
            T::Float => Cell::Float(<f32 as FromSql<Float, Oracle>>::from_sql(raw)?.into()),
            T::Double => Cell::Float(<f64 as FromSql<Double, Oracle>>::from_sql(raw)?),
            T::Text => Cell::Text(<String as FromSql<Text, Oracle>>::from_sql(raw)?),
            T::Binary => Cell::Bytes(<Vec<u8> as FromSql<Binary, Oracle>>::from_sql(raw)?),
            T::Timestamp => Cell::Timestamp(
                <NaiveDateTime as FromSql<Timestamp, Oracle>>::from_sql(raw)?.and_utc(),
            ),
            other => return Err(format!("unsupported Oracle column type {other:?}").into()),
        })
    }

    /// diesel-oci reports every ORA- error as a query-builder error carrying the `oracle`
    /// crate's error: its code decides.
    fn error(e: DieselError) -> StoreError {
        let (code, dpi_closed) = match &e {
            DieselError::QueryBuilderError(source) => source
                .downcast_ref::<oracle::Error>()
                .and_then(oracle::Error::db_error)
                .map_or((None, false), |d| {
                    let closed = DPI_CLOSED.iter().any(|p| d.message().starts_with(p));
                    (Some(d.code()), closed)
                }),
            _ => (None, false),
        };
        match code {
            Some(UNIQUE_VIOLATION) => StoreError::Duplicate {
                source: Box::new(e),
            },
            Some(CHECK_VIOLATION) => StoreError::CheckViolation {
                source: Box::new(e),
            },
            Some(c) if dpi_closed || SESSION_LOST.contains(&c) => StoreError::connection(e),
            _ => db(e),
        }
    }

    fn load(conn: &mut OciConnection, q: Statement<'_, Self>) -> QueryResult<Vec<Cells<Self>>> {
        q.load(conn)
    }

    fn execute(conn: &mut OciConnection, q: Statement<'_, Self>) -> QueryResult<usize> {
        q.execute(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_without_an_oracle_code_stay_database_errors() {
        let e = OracleFamily::error(DieselError::QueryBuilderError("bad bind".into()));
        assert!(matches!(e, StoreError::Database { .. }), "{e}");
        let e = OracleFamily::error(DieselError::NotFound);
        assert!(matches!(e, StoreError::NotFound { .. }), "{e}");
    }

    /// diesel-oci's conversion of an `oracle::Error` with this code and message.
    #[allow(deprecated)]
    fn ora(code: i32, message: &str) -> DieselError {
        let e = oracle::Error::OciError(oracle::DbError::new(code, 0, message, "", ""));
        DieselError::QueryBuilderError(e.into())
    }

    #[test]
    fn ora_00001_is_a_duplicate_ora_02290_a_check_and_a_lost_session_a_connection_error() {
        let e = OracleFamily::error(ora(
            1,
            "ORA-00001: unique constraint (DOCKET.jobs_pk) violated",
        ));
        assert!(matches!(e, StoreError::Duplicate { .. }), "{e}");
        let e = OracleFamily::error(ora(3113, "ORA-03113: end-of-file on communication channel"));
        assert!(matches!(e, StoreError::Connection { .. }), "{e}");
        let e = OracleFamily::error(ora(
            2290,
            "ORA-02290: check constraint (DOCKET.jobs_custom_attributes_json) violated",
        ));
        assert!(matches!(e, StoreError::CheckViolation { .. }), "{e}");
        let e = OracleFamily::error(ora(942, "ORA-00942: table or view does not exist"));
        assert!(matches!(e, StoreError::Database { .. }), "{e}");
    }
}
