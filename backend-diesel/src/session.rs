//! One session and one pooled connector for every diesel backend, generic over a small
//! [`Family`]: how the backend binds a [`Value`], how it reads a column into a [`Cell`], and how
//! it begins a transaction. Everything else (running statements, reading rows by column name,
//! normalizing errors, the pool) is written once here.

use crate::statement::{Prepare, Statement};
use crate::{db, pool, TxError};
use chrono::{DateTime, Utc};
use diesel::backend::Backend;
use diesel::deserialize::{self, QueryableByName};
use diesel::query_builder::AstPass;
use diesel::r2d2::{ConnectionManager, Pool, PooledConnection, R2D2Connection};
use diesel::row::{Field, NamedRow};
use diesel::QueryResult;
use diesel_migrations::MigrationHarness;
use docket_core::dialect::{Dialect, Rendered, Value};
use docket_core::ident::TableName;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::store::WakeSignals;
use docket_core::store::{Cell, Row};
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
    /// What the connector knows besides its pool (e.g. the server flavor and version).
    type Meta: Clone + std::fmt::Debug + Send + Sync + 'static;

    /// The migrations the backend ships.
    const MIGRATIONS: &'static [MigrationFile];
    /// The connection runs one statement per call (Oracle), so migrations run statement by
    /// statement ([`crate::run_migrations_by_statement`]).
    const ONE_STATEMENT_PER_CALL: bool = false;

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
    /// The database's wake-ups across processes for `table` on `connector` (see
    /// [`WakeSignals`]). Default: none (the database cannot signal; schedulers poll).
    fn wake_signals(
        connector: &DieselConnector<Self>,
        table: &TableName,
    ) -> Option<Arc<dyn WakeSignals>> {
        let _ = (connector, table);
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

/// One connection seen as a [`SqlSession`], sending statements as `.1` says.
pub struct DieselSession<'c, F: Family>(pub &'c mut F::Connection, pub Prepare);

impl<F: Family> SqlSession for DieselSession<'_, F> {
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        let q = self.1.statement::<F>(stmt)?;
        Ok(F::execute(self.0, q).map_err(F::error)? as u64)
    }

    fn query(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        let rows = F::load(self.0, self.1.statement::<F>(stmt)?).map_err(F::error)?;
        Ok(rows.into_iter().map(|c| c.0).collect())
    }

    fn execute_unprepared(&mut self, sql: &str) -> Result<(), StoreError> {
        diesel::connection::SimpleConnection::batch_execute(self.0, sql).map_err(F::error)
    }
}

/// A pool of one family's connections, as a [`SqlConnector`].
pub struct DieselConnector<F: Family> {
    pool: Pool<ConnectionManager<F::Connection>>,
    prepare: Prepare,
    meta: F::Meta,
}

impl<F: Family> Clone for DieselConnector<F> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            prepare: self.prepare,
            meta: self.meta.clone(),
        }
    }
}

impl<F: Family> std::fmt::Debug for DieselConnector<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DieselConnector")
            .field("backend", &self.prepare.dialect.name())
            .field("statement_cache", &self.prepare.statement_cache)
            .field("meta", &self.meta)
            .field("state", &self.pool.state())
            .finish()
    }
}

impl<F: Family> DieselConnector<F> {
    /// A connector on `pool` speaking `dialect`, with the statement cache on.
    pub fn new(
        pool: Pool<ConnectionManager<F::Connection>>,
        dialect: &'static dyn Dialect,
        meta: F::Meta,
    ) -> Self {
        Self {
            pool,
            prepare: Prepare {
                dialect,
                statement_cache: true,
            },
            meta,
        }
    }

    /// Turns diesel's per-connection statement cache on (the default) or off for docket's
    /// statements (see [`crate::statement`] for which ones it keeps). Off, every statement is
    /// prepared and closed again each time: what a connection that cannot keep named
    /// prepared statements needs (PgBouncer in transaction pooling mode).
    pub fn with_statement_cache(mut self, on: bool) -> Self {
        self.prepare.statement_cache = on;
        self
    }

    /// How the connector sends statements (its dialect, whether it caches them).
    pub fn prepare(&self) -> Prepare {
        self.prepare
    }

    /// `stmt` as a query that is never cached: for what tooling sends once (query plans).
    pub fn uncached<'a>(&self, stmt: &'a Rendered) -> Result<Statement<'a, F>, StoreError> {
        Ok(Statement::new(stmt, self.prepare.dialect, false)?)
    }

    /// `conn` as a [`SqlSession`] sending statements as this connector does.
    pub fn session<'c>(&self, conn: &'c mut F::Connection) -> DieselSession<'c, F> {
        DieselSession(conn, self.prepare)
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

/// Plans go out with the statement cache off (see [`DieselConnector::with_statement_cache`]).
impl<F: Family> docket_core::explain::PlanConnector for DieselConnector<F> {
    fn for_plans(&self) -> Self {
        self.clone().with_statement_cache(false)
    }
}

impl<F: Family> SqlConnector for DieselConnector<F> {
    fn dialect(&self) -> &'static dyn Dialect {
        self.prepare.dialect
    }

    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        f(&mut self.session(&mut conn))
    }

    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        F::transaction(&mut conn, |c| {
            f(&mut self.session(c)).map_err(TxError::Store)
        })
        .map_err(|e| match e {
            TxError::Store(s) => s,
            TxError::Diesel(d) => F::error(d),
        })
    }

    fn migrations(&self) -> &'static [MigrationFile] {
        F::MIGRATIONS
    }

    fn recorded(&self) -> Result<Vec<String>, StoreError> {
        crate::recorded(&mut *self.connection()?)
    }

    fn wake_signals(&self, table: &TableName) -> Option<Arc<dyn WakeSignals>> {
        F::wake_signals(self, table)
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
