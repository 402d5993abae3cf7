//! The SQLite [`Family`]: binds each [`Value`] with its SQL type and reads columns by their
//! storage class.
//!
//! **Timestamps are stored as INTEGER microseconds since the Unix epoch (UTC).** SQLite has no
//! timestamp type; of its storage classes an integer is the one that both round-trips exactly
//! (every microsecond from 1970-01-01T00:00:00.000001Z to beyond year 2500 fits an `i64`, with
//! no text formatting or float rounding in between) and compares correctly in SQL, so
//! `execution_time <= ?`, `ORDER BY execution_time` and `MIN(execution_time)` work on the
//! stored values and the indexes serve them. ISO-8601 text would also sort, but only while
//! every writer formats identically; `REAL` julian days lose microseconds. Values are bound so
//! here; reading them back is core's row decoding, which takes an integer in a timestamp
//! column as these microseconds. An integer has no time zone, so there is no session time zone
//! to get wrong.

use crate::dialect::SqliteDialect;
use crate::migrate::MIGRATIONS;
use chrono::{DateTime, Utc};
use diesel::deserialize::{self, FromSql};
use diesel::query_builder::AstPass;
use diesel::sql_types::{BigInt, Binary, Double, Nullable, Text};
use diesel::sqlite::{Sqlite, SqliteConnection, SqliteType, SqliteValue};
use diesel::{QueryResult, RunQueryDsl};
use docket_core::dialect::{Dialect, Value};
use docket_core::ident::TableName;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::Cell;
use docket_diesel::{push_scalar, Cells, Family, Statement, TxError};

/// The bundled SQLite over diesel's `SqliteConnection`.
#[derive(Debug, Clone, Copy)]
pub struct SqliteFamily;

impl Family for SqliteFamily {
    type Backend = Sqlite;
    type Connection = SqliteConnection;
    type Manager = diesel::r2d2::ConnectionManager<SqliteConnection>;
    type Meta = ();
    const MIGRATIONS: &'static [MigrationFile] = MIGRATIONS;

    /// Integer microseconds since the epoch (see the module docs).
    type Time = Option<i64>;

    fn time(t: Option<DateTime<Utc>>) -> Self::Time {
        t.map(|t| t.timestamp_micros())
    }

    fn push_time<'b>(mut out: AstPass<'_, 'b, Sqlite>, t: &'b Self::Time) -> QueryResult<()> {
        out.push_bind_param::<Nullable<BigInt>, _>(t)
    }

    fn push_value<'b>(out: AstPass<'_, 'b, Sqlite>, value: &'b Value) -> QueryResult<()> {
        push_scalar(out, value)
    }

    fn cell(raw: SqliteValue<'_, '_, '_>) -> deserialize::Result<Cell> {
        Ok(match raw.value_type() {
            Some(SqliteType::Text) => Cell::Text(<String as FromSql<Text, Sqlite>>::from_sql(raw)?),
            Some(SqliteType::Binary) => {
                Cell::Bytes(<Vec<u8> as FromSql<Binary, Sqlite>>::from_sql(raw)?)
            }
            Some(SqliteType::Float | SqliteType::Double) => {
                Cell::Float(<f64 as FromSql<Double, Sqlite>>::from_sql(raw)?)
            }
            Some(_) => Cell::Int(<i64 as FromSql<BigInt, Sqlite>>::from_sql(raw)?),
            None => Cell::Null,
        })
    }

    /// SQLite qualifies an index's *name* with the schema and wants the table after `ON`
    /// unqualified (`CREATE INDEX "main"."t_idx" ON "t" (...)`): the migrations write
    /// `{schema}` (filled by [`docket_core::migrate::plan`]) before index names and
    /// `{assignments_name}`, filled here, for the quoted, unqualified name of the work-queue
    /// assignments table.
    fn prepare_migrations(
        _meta: &(),
        table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Vec<TableMigration> {
        let assignments = SqliteDialect.quote_ident(table.assignments().table());
        let fill = |sql: String| sql.replace("{assignments_name}", &assignments);
        steps
            .into_iter()
            .map(|m| TableMigration {
                up: fill(m.up),
                down: fill(m.down),
                ..m
            })
            .collect()
    }

    fn load(conn: &mut SqliteConnection, q: Statement<'_, Self>) -> QueryResult<Vec<Cells<Self>>> {
        q.load(conn)
    }

    fn execute(conn: &mut SqliteConnection, q: Statement<'_, Self>) -> QueryResult<usize> {
        q.execute(conn)
    }

    /// BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy timeout). A
    /// deferred transaction that reads first could not upgrade to a writer once another
    /// connection committed, and would fail with SQLITE_BUSY instead of waiting.
    fn transaction<T>(
        conn: &mut SqliteConnection,
        f: impl FnOnce(&mut SqliteConnection) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        conn.immediate_transaction(f)
    }
}
