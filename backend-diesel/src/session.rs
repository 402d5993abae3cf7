//! One session and one pooled connector for every diesel backend, generic over a small
//! [`Family`]: how the backend binds a [`Value`], how it reads a column into a [`Cell`], and how
//! it begins a transaction. Everything else (running statements, reading rows by column name,
//! normalizing errors, the pool) is written once here.

use crate::{db, pool, TxError};
use chrono::{DateTime, Utc};
use diesel::backend::Backend;
use diesel::deserialize::{self, QueryableByName};
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::r2d2::{ConnectionManager, Pool, PooledConnection, R2D2Connection};
use diesel::row::{Field, NamedRow};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, Binary, Bool, HasSqlType, Integer, Nullable, SmallInt, Text};
use diesel::QueryResult;
use diesel_migrations::MigrationHarness;
use docket_core::dialect::{Dialect, Rendered, Value};
use docket_core::ident::TableName;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::store::{Cell, Row};
use docket_core::StoreError;
use std::marker::PhantomData;

/// The query type every family binds and runs.
pub type Query<'a, F> = BoxedSqlQuery<'a, <F as Family>::Backend, SqlQuery>;

/// What one diesel backend (PostgreSQL, MySQL/MariaDB, SQLite) does its own way.
pub trait Family: Sized + Send + Sync + 'static {
    /// diesel's backend type.
    type Backend: Backend;
    /// The connection type.
    type Connection: R2D2Connection<Backend = Self::Backend>
        + MigrationHarness<Self::Backend>
        + Send
        + 'static;
    /// What the connector knows besides its pool (e.g. the server flavor and version).
    type Meta: Clone + std::fmt::Debug + Send + Sync + 'static;

    /// The migrations the backend ships.
    const MIGRATIONS: &'static [MigrationFile];
    /// The connection runs one statement per call (Oracle), so migrations run statement by
    /// statement ([`crate::run_migrations_by_statement`]).
    const ONE_STATEMENT_PER_CALL: bool = false;

    /// Binds one value with its SQL type (and the backend's timestamp encoding).
    fn bind<'a>(q: Query<'a, Self>, value: &'a Value) -> Query<'a, Self>;
    /// Reads one non-NULL column by the type the driver reports.
    fn cell(raw: <Self::Backend as Backend>::RawValue<'_>) -> deserialize::Result<Cell>;
    /// Runs a query returning rows.
    fn load(conn: &mut Self::Connection, q: Query<'_, Self>) -> QueryResult<Vec<Cells<Self>>>;
    /// Runs a statement; returns affected rows.
    fn execute(conn: &mut Self::Connection, q: Query<'_, Self>) -> QueryResult<usize>;
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
}

/// One result row as diesel hands it over.
pub struct Cells<F>(Row, PhantomData<F>);

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

/// Binds one value with its SQL type, the same way on every diesel backend except for
/// timestamps, which `timestamp` binds in the backend's encoding.
pub fn bind_value<'a, DB>(
    q: BoxedSqlQuery<'a, DB, SqlQuery>,
    value: &'a Value,
    timestamp: impl FnOnce(
        BoxedSqlQuery<'a, DB, SqlQuery>,
        Option<DateTime<Utc>>,
    ) -> BoxedSqlQuery<'a, DB, SqlQuery>,
) -> BoxedSqlQuery<'a, DB, SqlQuery>
where
    DB: Backend
        + HasSqlType<Text>
        + HasSqlType<Binary>
        + HasSqlType<SmallInt>
        + HasSqlType<Integer>
        + HasSqlType<BigInt>
        + HasSqlType<Bool>,
    Option<&'a str>: ToSql<Nullable<Text>, DB>,
    Option<&'a [u8]>: ToSql<Nullable<Binary>, DB>,
    Option<i16>: ToSql<Nullable<SmallInt>, DB>,
    i32: ToSql<Integer, DB>,
    i64: ToSql<BigInt, DB>,
    bool: ToSql<Bool, DB>,
{
    match value {
        Value::Text(v) => q.bind::<Nullable<Text>, _>(v.as_deref()),
        Value::Bytes(v) => q.bind::<Nullable<Binary>, _>(v.as_deref()),
        Value::Timestamp(v) => timestamp(q, *v),
        Value::SmallInt(v) => q.bind::<Nullable<SmallInt>, _>(*v),
        Value::Int(v) => q.bind::<Integer, _>(*v),
        Value::BigInt(v) => q.bind::<BigInt, _>(*v),
        Value::Bool(v) => q.bind::<Bool, _>(*v),
        // Only a dialect that binds arrays writes them (PostgreSQL, whose family binds them
        // itself); anywhere else the database refuses the statement for this NULL.
        Value::Array(_) => q.bind::<Nullable<Text>, _>(None::<&str>),
    }
}

/// A rendered statement with every value bound.
pub fn bound<F: Family>(stmt: &Rendered) -> Query<'_, F> {
    let q = diesel::sql_query(stmt.sql.as_str()).into_boxed::<F::Backend>();
    stmt.binds.iter().fold(q, F::bind)
}

/// One connection seen as a [`SqlSession`].
pub struct DieselSession<'c, F: Family>(pub &'c mut F::Connection);

impl<F: Family> SqlSession for DieselSession<'_, F> {
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        Ok(F::execute(self.0, bound::<F>(stmt)).map_err(F::error)? as u64)
    }

    fn query(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        let rows = F::load(self.0, bound::<F>(stmt)).map_err(F::error)?;
        Ok(rows.into_iter().map(|c| c.0).collect())
    }

    fn execute_unprepared(&mut self, sql: &str) -> Result<(), StoreError> {
        diesel::connection::SimpleConnection::batch_execute(self.0, sql).map_err(F::error)
    }
}

/// A pool of one family's connections, as a [`SqlConnector`].
pub struct DieselConnector<F: Family> {
    pool: Pool<ConnectionManager<F::Connection>>,
    dialect: &'static dyn Dialect,
    meta: F::Meta,
}

impl<F: Family> Clone for DieselConnector<F> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            dialect: self.dialect,
            meta: self.meta.clone(),
        }
    }
}

impl<F: Family> std::fmt::Debug for DieselConnector<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DieselConnector")
            .field("backend", &self.dialect.name())
            .field("meta", &self.meta)
            .field("state", &self.pool.state())
            .finish()
    }
}

impl<F: Family> DieselConnector<F> {
    /// A connector on `pool` speaking `dialect`.
    pub fn new(
        pool: Pool<ConnectionManager<F::Connection>>,
        dialect: &'static dyn Dialect,
        meta: F::Meta,
    ) -> Self {
        Self {
            pool,
            dialect,
            meta,
        }
    }

    /// A raw pooled connection (for migrations and tooling).
    pub fn connection(
        &self,
    ) -> Result<PooledConnection<ConnectionManager<F::Connection>>, StoreError> {
        self.pool.get().map_err(pool)
    }

    /// What the connector knows besides its pool.
    pub fn meta(&self) -> &F::Meta {
        &self.meta
    }
}

impl<F: Family> SqlConnector for DieselConnector<F> {
    fn dialect(&self) -> &'static dyn Dialect {
        self.dialect
    }

    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        f(&mut DieselSession::<F>(&mut conn))
    }

    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        F::transaction(&mut conn, |c| {
            f(&mut DieselSession::<F>(c)).map_err(TxError::Store)
        })
        .map_err(|e| match e {
            TxError::Store(s) => s,
            TxError::Diesel(d) => F::error(d),
        })
    }

    fn migrations(&self) -> &'static [MigrationFile] {
        F::MIGRATIONS
    }

    fn apply(
        &self,
        table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Result<Vec<String>, StoreError> {
        let steps = F::prepare_migrations(&self.meta, table, steps);
        crate::run(&mut *self.connection()?, steps, F::ONE_STATEMENT_PER_CALL)
    }
}
