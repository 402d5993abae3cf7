//! The PostgreSQL [`Family`]: binds each [`Value`] with its SQL type and reads columns by their
//! type OID. Times are `TIMESTAMPTZ`, read and written as UTC instants.

use crate::migrate::MIGRATIONS;
use crate::wake::{ListenFrom, PgSignals};
use chrono::{DateTime, NaiveDateTime, Utc};
use diesel::connection::SimpleConnection;
use diesel::deserialize::{self, FromSql};
use diesel::pg::{Pg, PgConnection, PgValue};
use diesel::query_builder::AstPass;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sql_types::{
    Array as PgArray, BigInt, Binary, Bool, Double, Float, Integer, Nullable, SmallInt, Text,
    Timestamp, Timestamptz,
};
use diesel::{Connection, QueryResult, RunQueryDsl};
use docket_core::dialect::{Array, Value};
use docket_core::ident::TableName;
use docket_core::migrate::MigrationFile;
use docket_core::store::sql::SqlSession;
use docket_core::store::Cell;
use docket_core::store::WakeSignals;
use docket_core::StoreError;
use docket_diesel::{
    push_scalar, Cells, DieselSession, Family, Prepare, Statement, TxError,
    IDLE_IN_TRANSACTION_TIMEOUT,
};
use std::sync::Arc;

/// One typed array parameter (`text[]`, `bytea[]`, `timestamptz[]`, ...): the columns of the
/// dialect's multi-row inserts (`Syntax::binds_arrays`).
fn push_array<'b>(mut out: AstPass<'_, 'b, Pg>, array: &'b Array) -> QueryResult<()> {
    match array {
        Array::Text(v) => out.push_bind_param::<PgArray<Nullable<Text>>, _>(v),
        Array::Bytes(v) => out.push_bind_param::<PgArray<Nullable<Binary>>, _>(v),
        Array::Timestamp(v) => out.push_bind_param::<PgArray<Nullable<Timestamptz>>, _>(v),
        Array::SmallInt(v) => out.push_bind_param::<PgArray<Nullable<SmallInt>>, _>(v),
        Array::Int(v) => out.push_bind_param::<PgArray<Integer>, _>(v),
        Array::BigInt(v) => out.push_bind_param::<PgArray<BigInt>, _>(v),
        Array::Bool(v) => out.push_bind_param::<PgArray<Bool>, _>(v),
    }
}

/// PostgreSQL over diesel's `PgConnection`.
#[derive(Debug, Clone, Copy)]
pub struct PgFamily;

impl Family for PgFamily {
    type Backend = Pg;
    type Connection = PgConnection;
    type Manager = ConnectionManager<PgConnection>;
    type Meta = PgMeta;
    const MIGRATIONS: &'static [MigrationFile] = MIGRATIONS;
    /// `TIMESTAMPTZ` takes the instant as it is.
    type Time = Option<DateTime<Utc>>;

    fn time(t: Option<DateTime<Utc>>) -> Self::Time {
        t
    }

    fn push_time<'b>(mut out: AstPass<'_, 'b, Pg>, t: &'b Self::Time) -> QueryResult<()> {
        out.push_bind_param::<Nullable<Timestamptz>, _>(t)
    }

    fn push_value<'b>(out: AstPass<'_, 'b, Pg>, value: &'b Value) -> QueryResult<()> {
        match value {
            Value::Array(a) => push_array(out, a),
            _ => push_scalar(out, value),
        }
    }

    fn cell(raw: PgValue<'_>) -> deserialize::Result<Cell> {
        Ok(match raw.get_oid().get() {
            16 => Cell::Bool(<bool as FromSql<Bool, Pg>>::from_sql(raw)?),
            20 => Cell::Int(<i64 as FromSql<BigInt, Pg>>::from_sql(raw)?),
            21 => Cell::Int(<i16 as FromSql<SmallInt, Pg>>::from_sql(raw)?.into()),
            23 => Cell::Int(<i32 as FromSql<Integer, Pg>>::from_sql(raw)?.into()),
            700 => Cell::Float(<f32 as FromSql<Float, Pg>>::from_sql(raw)?.into()),
            701 => Cell::Float(<f64 as FromSql<Double, Pg>>::from_sql(raw)?),
            17 => Cell::Bytes(<Vec<u8> as FromSql<Binary, Pg>>::from_sql(raw)?),
            1184 => Cell::Timestamp(<DateTime<Utc> as FromSql<Timestamptz, Pg>>::from_sql(raw)?),
            1114 => {
                Cell::Timestamp(<NaiveDateTime as FromSql<Timestamp, Pg>>::from_sql(raw)?.and_utc())
            }
            // text, varchar, bpchar, name, json, unknown: text in the binary protocol.
            25 | 1043 | 1042 | 19 | 114 | 705 => {
                Cell::Text(<String as FromSql<Text, Pg>>::from_sql(raw)?)
            }
            oid => return Err(format!("unsupported PostgreSQL column type (oid {oid})").into()),
        })
    }

    fn load(conn: &mut PgConnection, q: Statement<'_, Self>) -> QueryResult<Vec<Cells<Self>>> {
        q.load(conn)
    }

    fn execute(conn: &mut PgConnection, q: Statement<'_, Self>) -> QueryResult<usize> {
        q.execute(conn)
    }

    /// Every docket transaction tells the server to end it (and its session) once it has
    /// waited [`IDLE_IN_TRANSACTION_TIMEOUT`] for the client's next statement (see there why).
    /// The retry of what it wrote finds the connection closed and takes a new one.
    fn transaction<T>(
        conn: &mut PgConnection,
        f: impl FnOnce(&mut PgConnection) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        conn.transaction(|conn| {
            // For this transaction only: a connection shared with the application keeps its
            // own setting outside docket's transactions.
            conn.batch_execute(&format!(
                "SET LOCAL idle_in_transaction_session_timeout = {}",
                IDLE_IN_TRANSACTION_TIMEOUT.as_millis()
            ))?;
            f(conn)
        })
    }

    /// A plain transaction: its caller may be slow to give the next statement (a stream).
    fn caller_paced_transaction<T>(
        conn: &mut PgConnection,
        f: impl FnOnce(&mut PgConnection) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        conn.transaction(f)
    }

    fn wake_signals(
        pool: &Pool<ConnectionManager<PgConnection>>,
        meta: &PgMeta,
        table: &TableName,
    ) -> Option<Arc<dyn WakeSignals>> {
        let signals = PgSignals::new(pool.clone(), meta.listen_from.clone(), table);
        Some(Arc::new(crate::wake::Shared(Arc::new(signals))))
    }

    fn signal_in(conn: &mut PgConnection, channel: &str) -> Result<(), StoreError> {
        let stmt = crate::wake::notify_statement(channel);
        // Not kept prepared: the connection is the caller's.
        let prepare = Prepare {
            dialect: &crate::dialect::PgDialect,
            statement_cache: false,
        };
        DieselSession::<Self>::new(conn, prepare)
            .execute(&stmt)
            .map(drop)
    }
}

/// What a PostgreSQL connector knows besides its pool: where a scheduler's wake-up listener
/// gets its connection (see [`crate::wake`]).
#[derive(Debug, Clone, Default)]
pub struct PgMeta {
    pub(crate) listen_from: ListenFrom,
}

impl PgMeta {
    /// Listeners open a connection of their own to `url` (what [`crate::connect`] does).
    pub fn listen_at(url: &str) -> Self {
        Self {
            listen_from: ListenFrom::Url(Arc::from(url)),
        }
    }
}
