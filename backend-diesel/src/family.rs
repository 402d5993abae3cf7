//! What one diesel backend does its own way ([`Family`]: how it binds a [`Value`], how it
//! reads a column into a [`Cell`], how it begins a transaction), and the statement it is sent:
//! a [`Rendered`] statement that diesel may keep prepared ([`Statement`]). One module, since
//! each names the other.
//!
//! diesel's `sql_query` marks every query it builds as unsafe to cache, so each statement was
//! prepared, executed and thrown away (two round trips on PostgreSQL, three on MySQL), and the
//! server parsed and planned it every time. A [`Statement`] lets diesel's per-connection
//! statement cache (keyed by the SQL text and the bind types) keep it instead.
//!
//! diesel's only public way to bind a value, `AstPass::push_bind_param`, writes the
//! placeholder itself (`$n` on PostgreSQL, `?` on MySQL and SQLite, `:inN` on Oracle). So the
//! rendered text is sent as its pieces between the placeholders, with each value pushed
//! between them: diesel rebuilds the same text (Oracle's `:n` becomes `:in{n-1}`, the names
//! diesel-oci binds by). Where the placeholders stand was recorded by the writer as it wrote
//! them ([`Rendered::placeholders`]): the text is rendered once and never searched again.

use crate::{db, TxError};
use chrono::{DateTime, Utc};
use diesel::backend::Backend;
use diesel::deserialize::{self, QueryableByName};
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::query_dsl::RunQueryDsl;
use diesel::r2d2::{ManageConnection, Pool, R2D2Connection};
use diesel::row::{Field, NamedRow};
use diesel::serialize::ToSql;
use diesel::sql_types::{
    BigInt, Binary, Bool, HasSqlType, Integer, Nullable, SmallInt, Text, Untyped,
};
use diesel::QueryResult;
use diesel_migrations::MigrationHarness;
use docket_core::dialect::{Dialect, Rendered, Value};
use docket_core::ident::TableName;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::{Cell, Row, WakeSignals};
use docket_core::StoreError;
use std::marker::PhantomData;
use std::sync::Arc;

/// What one diesel backend (PostgreSQL, MySQL/MariaDB, SQLite) does its own way.
pub trait Family: Sized + Send + Sync + 'static {
    /// diesel's backend type.
    type Backend: Backend;
    /// The connection type.
    type Connection: R2D2Connection<Backend = Self::Backend>
        + MigrationHarness<Self::Backend>
        + Send
        + 'static;
    /// What opens the pool's connections: diesel's [`ConnectionManager`](diesel::r2d2::ConnectionManager) for one server,
    /// or a family's own (MySQL's tries several hosts in turn).
    type Manager: ManageConnection<Connection = Self::Connection>;
    /// What the connector knows besides its pool (e.g. the server flavor and version).
    type Meta: Clone + std::fmt::Debug + Send + Sync + 'static;

    /// The migrations the backend ships.
    const MIGRATIONS: &'static [MigrationFile];
    /// The connection runs one statement per call (Oracle), so migrations run statement by
    /// statement ([`crate::run_migrations_by_statement`]).
    const ONE_STATEMENT_PER_CALL: bool = false;
    /// A query that failed on the server while its rows were read (a deadlock, a lock wait
    /// timeout, a killed query) leaves the connection unfit for reuse, so the pool drops it
    /// once the session ends (after its transaction's rollback), as it drops one that a
    /// statement found closed (every family). MySQL/MariaDB: libmariadb
    /// keeps such a prepared statement marked as having unread rows, and the next execution
    /// of that cached statement waits forever for rows the server never sends.
    const FAILED_READ_BREAKS_CONNECTION: bool = false;

    /// A timestamp in the backend's encoding, converted once when a [`Statement`] is built
    /// (the statement owns it and lends it to diesel).
    type Time: std::fmt::Debug + Send + Sync;

    /// Converts a timestamp into the backend's encoding.
    fn time(t: Option<DateTime<Utc>>) -> Self::Time;
    /// Pushes one converted timestamp with its SQL type (its placeholder and its value).
    fn push_time<'b>(out: AstPass<'_, 'b, Self::Backend>, t: &'b Self::Time) -> QueryResult<()>;
    /// Pushes any other value with its SQL type: usually [`crate::push_scalar`], plus arrays
    /// where the backend binds them.
    fn push_value<'b>(out: AstPass<'_, 'b, Self::Backend>, value: &'b Value) -> QueryResult<()>;
    /// Reads one non-NULL column by the type the driver reports.
    fn cell(raw: <Self::Backend as Backend>::RawValue<'_>) -> deserialize::Result<Cell>;
    /// Runs a query returning rows.
    fn load(conn: &mut Self::Connection, q: Statement<'_, Self>) -> QueryResult<Vec<Cells<Self>>>;
    /// Runs a statement; returns affected rows.
    fn execute(conn: &mut Self::Connection, q: Statement<'_, Self>) -> QueryResult<usize>;
    /// Fills what the migration templates leave to the server (e.g. MySQL's collation).
    fn prepare_migrations(
        _meta: &Self::Meta,
        _table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Vec<TableMigration> {
        steps
    }
    /// Normalizes a driver error onto [`StoreError`] (default [`crate::db`]); a family whose
    /// driver reports duplicate keys or lost connections its own way maps them here.
    fn error(e: diesel::result::Error) -> StoreError {
        db(e)
    }
    /// Runs `f` in a transaction (the backend's kind: isolation level, immediate locking).
    /// Default: diesel's transaction at the connection's default isolation level.
    fn transaction<T>(
        conn: &mut Self::Connection,
        f: impl FnOnce(&mut Self::Connection) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        diesel::Connection::transaction(conn, f)
    }
    /// [`Family::transaction`] for a transaction paced by its caller (see
    /// `SqlConnector::in_caller_paced_transaction`): without the idle timeout a family gives
    /// docket's other transactions. Default: [`Family::transaction`].
    fn caller_paced_transaction<T>(
        conn: &mut Self::Connection,
        f: impl FnOnce(&mut Self::Connection) -> Result<T, TxError>,
    ) -> Result<T, TxError> {
        Self::transaction(conn, f)
    }
    /// The database's wake-ups across processes for `table`, for a connector on `pool` (see
    /// [`WakeSignals`]). Default: none (the database cannot signal; schedulers poll).
    fn wake_signals(
        pool: &Pool<Self::Manager>,
        meta: &Self::Meta,
        table: &TableName,
    ) -> Option<Arc<dyn WakeSignals>> {
        let _ = (pool, meta, table);
        None
    }
    /// Signals `channel` from inside the caller's open transaction on `conn`, so that the
    /// signal is delivered if, and when, that transaction commits
    /// ([`crate::ScheduleInTransaction`]). Default: nothing (no signals).
    fn signal_in(conn: &mut Self::Connection, channel: &str) -> Result<(), StoreError> {
        let _ = (conn, channel);
        Ok(())
    }
}

/// One result row as diesel hands it over.
pub struct Cells<F>(Row, PhantomData<F>);

impl<F> Cells<F> {
    /// The row.
    pub fn into_row(self) -> Row {
        self.0
    }
}

impl<F: Family> QueryableByName<F::Backend> for Cells<F> {
    fn build<'a>(row: &impl NamedRow<'a, F::Backend>) -> deserialize::Result<Self> {
        let mut cells = Vec::with_capacity(row.field_count());
        for i in 0..row.field_count() {
            let field =
                diesel::row::Row::get(row, i).ok_or("a column the row said it had is missing")?;
            let name = field.field_name().unwrap_or_default().to_owned();
            // A value the family cannot read fails only its row, when a decoder reads it
            // (a poison row), never the whole result.
            let cell = match field.value() {
                None => Cell::Null,
                Some(raw) => F::cell(raw).unwrap_or_else(|e| Cell::Invalid(e.to_string())),
            };
            cells.push((name, cell));
        }
        Ok(Cells(Row::new(cells), PhantomData))
    }
}

/// Why a statement could not be built or bound.
#[derive(Debug, thiserror::Error)]
pub enum StatementError {
    /// The statement does not say where its placeholders are, one per value, in the
    /// dialect's spelling (it was not made by a [`docket_core::dialect::SqlWriter`] of this
    /// dialect).
    #[error("statement of {binds} binds without its placeholders in this dialect: {sql}")]
    Placeholders {
        /// How many values the statement binds.
        binds: usize,
        /// The statement's text.
        sql: String,
    },
    /// The backend cannot bind this kind of value (e.g. an array, outside PostgreSQL).
    #[error("this backend cannot bind {0}")]
    Unbindable(&'static str),
}

impl From<StatementError> for StoreError {
    fn from(e: StatementError) -> Self {
        StoreError::database(e)
    }
}

/// How a connector sends statements: the dialect whose placeholders cut the text, and whether
/// diesel may keep them prepared.
#[derive(Clone, Copy)]
pub struct Prepare {
    /// The dialect the statements are rendered in.
    pub dialect: &'static dyn Dialect,
    /// Whether statements whose text repeats (not [`Rendered::sized_by_input`]) are cached.
    pub statement_cache: bool,
}

impl std::fmt::Debug for Prepare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepare")
            .field("dialect", &self.dialect.name())
            .field("statement_cache", &self.statement_cache)
            .finish()
    }
}

impl Prepare {
    /// Whether `stmt` is cached: the one rule, in one place. Statements of a fixed shape
    /// (claims, updates, single-row inserts, PostgreSQL's array-bound batches) repeat
    /// endlessly, so caching them saves a prepare on every call. A statement whose text
    /// follows its input's length (key lists as `OR` terms, multi-row `VALUES`) would be one
    /// more entry per length in the connection's cache, which diesel never evicts, and one
    /// more statement held by the server (MySQL refuses statements beyond
    /// `max_prepared_stmt_count`, shared by all sessions): it is prepared and closed each
    /// time instead. On a MariaDB soak new lengths kept turning up, the server's prepared
    /// statements climbing from 197 to 625 in 8 minutes and the client's memory with them
    /// (docs/RELIABILITY.md, "Found").
    pub fn caches(&self, stmt: &Rendered) -> bool {
        self.statement_cache && !stmt.sized_by_input()
    }

    /// `stmt` as a diesel query, cached by [`Prepare::caches`].
    pub fn statement<'a, F: Family>(
        &self,
        stmt: &'a Rendered,
    ) -> Result<Statement<'a, F>, StatementError> {
        Statement::new(stmt, self.dialect, self.caches(stmt))
    }
}

/// One value as it is pushed: borrowed from the [`Rendered`] statement, or a timestamp
/// converted into the backend's encoding (owned, so it can be lent for as long as the query).
enum Bind<'a, F: Family> {
    Value(&'a Value),
    Time(F::Time),
}

/// A [`Rendered`] statement as a diesel query: its text cut at the placeholders, its values
/// in between. Run it with diesel's `load` and `execute`.
pub struct Statement<'a, F: Family> {
    /// The text before each placeholder.
    pieces: Vec<&'a str>,
    /// The text after the last placeholder.
    tail: &'a str,
    binds: Vec<Bind<'a, F>>,
    cache: bool,
}

impl<'a, F: Family> Statement<'a, F> {
    /// `stmt`, whose placeholders are `dialect`'s, kept prepared by diesel when `cache`. Fails
    /// unless the statement records one placeholder per value, each the dialect's spelling.
    pub fn new(
        stmt: &'a Rendered,
        dialect: &dyn Dialect,
        cache: bool,
    ) -> Result<Self, StatementError> {
        let (pieces, tail) = cut(stmt, dialect)?;
        let binds = stmt
            .binds
            .iter()
            .map(|v| match v {
                Value::Timestamp(t) => Bind::Time(F::time(*t)),
                other => Bind::Value(other),
            })
            .collect();
        Ok(Self {
            pieces,
            tail,
            binds,
            cache,
        })
    }

    /// Whether diesel may keep this statement prepared.
    pub fn cached(&self) -> bool {
        self.cache
    }
}

/// `stmt`'s text cut around its recorded placeholders: the text before each one, and the text
/// after the last. Each recorded range must hold the dialect's placeholder for its value.
fn cut<'a>(
    stmt: &'a Rendered,
    dialect: &dyn Dialect,
) -> Result<(Vec<&'a str>, &'a str), StatementError> {
    let ranges = stmt.placeholders();
    let sql = stmt.sql.as_str();
    let wrong = || StatementError::Placeholders {
        binds: stmt.binds.len(),
        sql: sql.to_owned(),
    };
    if ranges.len() != stmt.binds.len() {
        return Err(wrong());
    }
    let mut pieces = Vec::with_capacity(ranges.len());
    let mut from = 0;
    for (n, range) in ranges.iter().enumerate() {
        let placeholder = sql.get(range.clone()).ok_or_else(wrong)?;
        if range.start < from || placeholder != dialect.placeholder(n + 1) {
            return Err(wrong());
        }
        pieces.push(&sql[from..range.start]);
        from = range.end;
    }
    Ok((pieces, &sql[from..]))
}

impl<F: Family> QueryFragment<F::Backend> for Statement<'_, F> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, F::Backend>) -> QueryResult<()> {
        if !self.cache {
            out.unsafe_to_cache_prepared();
        }
        for (piece, bind) in self.pieces.iter().zip(&self.binds) {
            out.push_sql(piece);
            match bind {
                Bind::Value(v) => F::push_value(out.reborrow(), v)?,
                Bind::Time(t) => F::push_time(out.reborrow(), t)?,
            }
        }
        out.push_sql(self.tail);
        Ok(())
    }
}

/// No static id: diesel keys the cache by the SQL text and the bind types.
impl<F: Family> QueryId for Statement<'_, F> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<F: Family> Query for Statement<'_, F> {
    type SqlType = Untyped;
}

impl<F: Family, Conn> RunQueryDsl<Conn> for Statement<'_, F> {}

/// Pushes one scalar value with its SQL type, the same way on every diesel backend: the
/// usual [`Family::push_value`]. Timestamps go through [`Family::push_time`] instead, and
/// arrays only where the family binds them: both are an error here.
pub fn push_scalar<'b, DB>(mut out: AstPass<'_, 'b, DB>, value: &'b Value) -> QueryResult<()>
where
    DB: Backend
        + HasSqlType<Text>
        + HasSqlType<Binary>
        + HasSqlType<SmallInt>
        + HasSqlType<Integer>
        + HasSqlType<BigInt>
        + HasSqlType<Bool>,
    Option<String>: ToSql<Nullable<Text>, DB>,
    Option<Vec<u8>>: ToSql<Nullable<Binary>, DB>,
    Option<i16>: ToSql<Nullable<SmallInt>, DB>,
    i32: ToSql<Integer, DB>,
    i64: ToSql<BigInt, DB>,
    bool: ToSql<Bool, DB>,
{
    match value {
        Value::Text(v) => out.push_bind_param::<Nullable<Text>, _>(v),
        Value::Bytes(v) => out.push_bind_param::<Nullable<Binary>, _>(v),
        Value::SmallInt(v) => out.push_bind_param::<Nullable<SmallInt>, _>(v),
        Value::Int(v) => out.push_bind_param::<Integer, _>(v),
        Value::BigInt(v) => out.push_bind_param::<BigInt, _>(v),
        Value::Bool(v) => out.push_bind_param::<Bool, _>(v),
        Value::Timestamp(_) => Err(unbindable("a timestamp not converted by its family")),
        Value::Array(_) => Err(unbindable("an array")),
    }
}

/// diesel's error for a value the backend cannot bind.
pub fn unbindable(what: &'static str) -> diesel::result::Error {
    diesel::result::Error::QueryBuilderError(Box::new(StatementError::Unbindable(what)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::dialect::SqlWriter;

    #[derive(Debug)]
    struct Dollar;
    impl Dialect for Dollar {
        fn name(&self) -> &'static str {
            "dollar"
        }
        fn placeholder(&self, n: usize) -> String {
            format!("${n}")
        }
    }

    #[derive(Debug)]
    struct Question;
    impl Dialect for Question {
        fn name(&self) -> &'static str {
            "question"
        }
    }

    #[test]
    fn the_text_is_cut_where_the_writer_wrote_each_placeholder() {
        let mut w = docket_core::dialect::SqlWriter::new(&Dollar);
        w.push("SELECT a FROM t WHERE b = ")
            .bind(1i64)
            .push(" AND c IN ")
            .bind_list([2i64, 3]);
        let stmt = w.finish();
        let (pieces, tail) = cut(&stmt, &Dollar).expect("three placeholders");
        assert_eq!(pieces, ["SELECT a FROM t WHERE b = ", " AND c IN (", ", "]);
        assert_eq!(tail, ")");
        let mut w = docket_core::dialect::SqlWriter::new(&Question);
        w.push("x = ").bind(1i64).push(" OR y = ").bind(2i64);
        let stmt = w.finish();
        let (pieces, tail) = cut(&stmt, &Question).expect("two placeholders");
        assert_eq!((pieces, tail), (vec!["x = ", " OR y = "], ""));
    }

    #[test]
    fn a_statement_without_its_placeholders_or_of_another_dialect_is_an_error() {
        let mut by_hand = Rendered::text("a = $1");
        by_hand.binds.push(Value::BigInt(1));
        assert!(matches!(
            cut(&by_hand, &Dollar),
            Err(StatementError::Placeholders { .. })
        ));
        let mut w = docket_core::dialect::SqlWriter::new(&Question);
        w.push("a = ").bind(1i64);
        assert!(matches!(
            cut(&w.finish(), &Dollar),
            Err(StatementError::Placeholders { .. })
        ));
    }

    #[test]
    fn only_statements_whose_text_repeats_are_cached_and_only_when_the_switch_is_on() {
        let on = Prepare {
            dialect: &Question,
            statement_cache: true,
        };
        let one = |n: usize| {
            let mut w = SqlWriter::new(&Question);
            w.push("SELECT 1 WHERE x IN ").bind_list(0..n as i64);
            w
        };
        assert!(on.caches(&one(100).finish()), "a fixed list of any length");
        let mut listed = one(2);
        listed.sized_by_input();
        assert!(!on.caches(&listed.finish()));
        let off = Prepare {
            statement_cache: false,
            ..on
        };
        assert!(!off.caches(&one(1).finish()));
    }
}
