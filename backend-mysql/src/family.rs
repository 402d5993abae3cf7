//! The MySQL/MariaDB [`Family`]: binds each [`Value`] with its SQL type and reads columns by the
//! type the server reports.
//!
//! Times are stored in `DATETIME(6)` columns, which carry no zone: docket writes and reads them
//! as UTC wall-clock values, so the session `time_zone` never shifts them (it only affects
//! `TIMESTAMP` columns and `NOW()`, which docket does not use).

use crate::dialect::{Flavor, MysqlDialect};
use crate::migrate::MIGRATIONS;
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::connection::SimpleConnection;
use diesel::deserialize::{self, FromSql};
use diesel::mysql::{Mysql, MysqlConnection, MysqlType, MysqlValue};
use diesel::query_builder::AstPass;
use diesel::sql_types::{BigInt, Datetime, Double, Nullable};
use diesel::{Connection, QueryResult, RunQueryDsl};
use docket_core::dialect::Value;
use docket_core::ident::TableName;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::Cell;
use docket_diesel::{push_scalar, Cells, Family, Statement, TxError};

/// MySQL 8 and MariaDB over diesel's `MysqlConnection` (libmysqlclient).
#[derive(Debug, Clone, Copy)]
pub struct MysqlFamily;

/// What a MySQL connector learned from its server.
#[derive(Debug, Clone, Copy)]
pub struct MysqlMeta {
    /// The dialect of the server's flavor.
    pub dialect: &'static MysqlDialect,
    /// `(major, minor, patch)` of the server.
    pub server_version: (u32, u32, u32),
}

impl MysqlMeta {
    /// MySQL or MariaDB.
    pub fn flavor(&self) -> Flavor {
        self.dialect.flavor()
    }
}

impl Family for MysqlFamily {
    type Backend = Mysql;
    type Connection = MysqlConnection;
    type Manager = crate::hosts::MysqlManager;
    type Meta = MysqlMeta;
    const MIGRATIONS: &'static [MigrationFile] = MIGRATIONS;
    /// A deadlock can end a locking read's result set after its column metadata; libmariadb
    /// then waits, at that cached statement's next execution, for rows never sent (a poller
    /// hung for good in the reliability suite's contention case).
    const FAILED_READ_BREAKS_CONNECTION: bool = true;

    /// DATETIME(6) has no zone: UTC wall-clock time.
    type Time = Option<NaiveDateTime>;

    fn time(t: Option<DateTime<Utc>>) -> Self::Time {
        t.as_ref().map(DateTime::naive_utc)
    }

    fn push_time<'b>(mut out: AstPass<'_, 'b, Mysql>, t: &'b Self::Time) -> QueryResult<()> {
        out.push_bind_param::<Nullable<Datetime>, _>(t)
    }

    fn push_value<'b>(out: AstPass<'_, 'b, Mysql>, value: &'b Value) -> QueryResult<()> {
        push_scalar(out, value)
    }

    fn cell(raw: MysqlValue<'_>) -> deserialize::Result<Cell> {
        use MysqlType as T;
        Ok(match raw.value_type() {
            T::Tiny
            | T::UnsignedTiny
            | T::Short
            | T::UnsignedShort
            | T::Long
            | T::UnsignedLong
            | T::LongLong
            | T::UnsignedLongLong => Cell::Int(<i64 as FromSql<BigInt, Mysql>>::from_sql(raw)?),
            // `SUM` comes back as DECIMAL: keep its text, the decoders read whole numbers.
            T::Numeric => Cell::Decimal(String::from_utf8(raw.as_bytes().to_vec())?),
            T::Float | T::Double => Cell::Float(<f64 as FromSql<Double, Mysql>>::from_sql(raw)?),
            T::DateTime | T::Timestamp => Cell::Timestamp(
                <NaiveDateTime as FromSql<Datetime, Mysql>>::from_sql(raw)?.and_utc(),
            ),
            T::String | T::Enum | T::Set => match String::from_utf8(raw.as_bytes().to_vec()) {
                Ok(text) => Cell::Text(text),
                Err(e) => Cell::Bytes(e.into_bytes()),
            },
            T::Blob | T::Bit => Cell::Bytes(raw.as_bytes().to_vec()),
            other => return Err(format!("unsupported MySQL column type {other:?}").into()),
        })
    }

    fn prepare_migrations(
        meta: &MysqlMeta,
        _table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Vec<TableMigration> {
        let collation = meta.flavor().key_collation();
        steps
            .into_iter()
            .map(|m| TableMigration {
                up: m.up.replace("{collation}", collation),
                down: m.down.replace("{collation}", collation),
                ..m
            })
            .collect()
    }

    fn load(conn: &mut MysqlConnection, q: Statement<'_, Self>) -> QueryResult<Vec<Cells<Self>>> {
        q.load(conn)
    }

    fn execute(conn: &mut MysqlConnection, q: Statement<'_, Self>) -> QueryResult<usize> {
        q.execute(conn)
    }

    /// READ COMMITTED: a claim's locking read then locks only the rows it returns' index
    /// records, not gaps, so concurrent claimers skip each other instead of waiting.
    fn transaction<T>(
        conn: &mut MysqlConnection,
        f: impl FnOnce(&mut MysqlConnection) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        // Applies to the next transaction only, which `transaction` begins right after.
        conn.batch_execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")?;
        conn.transaction(f)
    }

    /// Without MariaDB's `idle_transaction_timeout` (the sessions of docket's pools have
    /// `docket_diesel::IDLE_IN_TRANSACTION_TIMEOUT`, see `connect`) for the transaction: its
    /// caller may be slow to give the next statement (a stream). `/*M!100300 ... */` runs on
    /// MariaDB 10.3 and later only.
    fn caller_paced_transaction<T>(
        conn: &mut MysqlConnection,
        f: impl FnOnce(&mut MysqlConnection) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        conn.batch_execute(
            "SET @docket_idle = 0 /*M!100300 , @docket_idle = @@SESSION.idle_transaction_timeout, \
             SESSION idle_transaction_timeout = 0 */",
        )?;
        let out = Self::transaction(conn, f);
        // The session's own setting again. The transaction has ended either way; a failure
        // here (a lost connection, which the pool drops) must not turn a commit into an error.
        let _ = conn.batch_execute(
            "SET @docket_idle = @docket_idle \
             /*M!100300 , SESSION idle_transaction_timeout = @docket_idle */",
        );
        out
    }
}
