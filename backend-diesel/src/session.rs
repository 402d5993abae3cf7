//! One session and one pooled connector for every diesel backend, generic over a small
//! [`Family`] (see [`crate::family`]). Running statements, reading rows by column name,
//! normalizing errors and the pool are written once here.

use crate::family::{Cells, Family, Prepare, Statement};
use crate::{pool, TxError};
use diesel::r2d2::{Pool, PooledConnection};
use docket_core::dialect::{Dialect, Rendered};
use docket_core::ident::TableName;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::store::{Row, WakeSignals};
use docket_core::StoreError;
use std::sync::Arc;

/// One connection seen as a [`SqlSession`], sending statements as its [`Prepare`] says.
pub struct DieselSession<'c, F: Family> {
    conn: &'c mut F::Connection,
    prepare: Prepare,
    /// The connection is unfit for reuse: a statement found it closed, or a query failed
    /// while its rows were read where [`Family::FAILED_READ_BREAKS_CONNECTION`] says that
    /// breaks it.
    unfit: bool,
}

impl<'c, F: Family> DieselSession<'c, F> {
    /// `conn` as a session sending statements as `prepare` says.
    pub fn new(conn: &'c mut F::Connection, prepare: Prepare) -> Self {
        Self {
            conn,
            prepare,
            unfit: false,
        }
    }

    /// `e` as a [`StoreError`], noting whether it leaves the connection unfit for reuse.
    fn failed(&mut self, e: diesel::result::Error, reading: bool) -> StoreError {
        let database = matches!(e, diesel::result::Error::DatabaseError(..));
        let err = F::error(e);
        self.unfit |= matches!(err, StoreError::Connection { .. })
            || (reading && database && F::FAILED_READ_BREAKS_CONNECTION);
        err
    }
}

impl<F: Family> SqlSession for DieselSession<'_, F> {
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        let q = self.prepare.statement::<F>(stmt)?;
        match F::execute(self.conn, q) {
            Ok(n) => Ok(n as u64),
            Err(e) => Err(self.failed(e, false)),
        }
    }

    fn query(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        let q = self.prepare.statement::<F>(stmt)?;
        match F::load(self.conn, q) {
            Ok(rows) => Ok(rows.into_iter().map(Cells::into_row).collect()),
            Err(e) => Err(self.failed(e, true)),
        }
    }

    fn execute_unprepared(&mut self, sql: &str) -> Result<(), StoreError> {
        diesel::connection::SimpleConnection::batch_execute(self.conn, sql)
            .map_err(|e| self.failed(e, false))
    }
}

/// Marks `conn` broken when a session on it found it unfit, so the pool drops it instead of
/// handing it out again (a PostgreSQL connection closed by a server restart otherwise stays
/// in the pool, failing every statement).
fn discard_if_unfit<F: Family>(conn: &mut F::Connection, unfit: bool) {
    use diesel::connection::{Connection, TransactionManager};
    if unfit {
        <F::Connection as Connection>::TransactionManager::transaction_manager_status_mut(conn)
            .set_in_error();
    }
}

/// A pool of one family's connections, as a [`SqlConnector`].
pub struct DieselConnector<F: Family> {
    pool: Pool<F::Manager>,
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

/// Who paces a transaction's statements (see `SqlConnector::in_caller_paced_transaction`).
#[derive(Debug, Clone, Copy)]
enum Pace {
    /// docket sends them back to back: the family's idle timeout applies.
    Docket,
    /// The caller's stream between them: exempt from it.
    Caller,
}

impl<F: Family> DieselConnector<F> {
    /// A connector on `pool` speaking `dialect`, with the statement cache on.
    pub fn new(pool: Pool<F::Manager>, dialect: &'static dyn Dialect, meta: F::Meta) -> Self {
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
    /// statements (see [`crate::family`] for which ones it keeps). Off, every statement is
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
        DieselSession::new(conn, self.prepare)
    }

    /// A raw pooled connection (for migrations and tooling).
    pub fn connection(&self) -> Result<PooledConnection<F::Manager>, StoreError> {
        self.pool.get().map_err(pool)
    }

    /// What the connector knows besides its pool.
    pub fn meta(&self) -> &F::Meta {
        &self.meta
    }

    /// Runs `f` in one of the family's transactions, as `pace` says, on one pooled connection
    /// that is dropped afterwards if a statement found it unfit.
    fn transact<T>(
        &self,
        pace: Pace,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        let mut unfit = false;
        let run = |c: &mut F::Connection| {
            let mut session = self.session(c);
            let out = f(&mut session).map_err(TxError::Store);
            unfit = session.unfit;
            out
        };
        let out = match pace {
            Pace::Docket => F::transaction(&mut conn, run),
            Pace::Caller => F::caller_paced_transaction(&mut conn, run),
        };
        // After the rollback: the transaction ends cleanly, then the pool drops the connection.
        discard_if_unfit::<F>(&mut *conn, unfit);
        out.map_err(|e| match e {
            TxError::Store(s) => s,
            TxError::Diesel(d) => F::error(d),
        })
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
        let mut session = self.session(&mut conn);
        let out = f(&mut session);
        let unfit = session.unfit;
        discard_if_unfit::<F>(&mut *conn, unfit);
        out
    }

    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.transact(Pace::Docket, f)
    }

    fn in_caller_paced_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.transact(Pace::Caller, f)
    }

    fn migrations(&self) -> &'static [MigrationFile] {
        F::MIGRATIONS
    }

    fn recorded(&self) -> Result<Vec<String>, StoreError> {
        crate::recorded(&mut *self.connection()?)
    }

    fn wake_signals(&self, table: &TableName) -> Option<Arc<dyn WakeSignals>> {
        F::wake_signals(&self.pool, &self.meta, table)
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
