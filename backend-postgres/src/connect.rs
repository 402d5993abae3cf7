//! The connection pool and the [`SqlConnector`] on it.

use crate::dialect::PgDialect;
use crate::store::PgSession;
use crate::PgStore;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::{Connection, PgConnection};
use docket_core::dialect::Dialect;
use docket_core::store::sql::{SqlConnector, SqlSession, SqlStore};
use docket_core::{StoreConfig, StoreError};
use docket_diesel::{pool, TxError};
use std::time::Duration;

/// Pool settings.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Most connections the pool opens (default 10).
    pub max_connections: u32,
    /// How long to wait for a connection before failing (default 30 s).
    pub connection_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            connection_timeout: Duration::from_secs(30),
        }
    }
}

/// A pool of `PgConnection`s.
#[derive(Clone)]
pub struct PgConnector {
    pool: Pool<ConnectionManager<PgConnection>>,
}

impl std::fmt::Debug for PgConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConnector")
            .field("state", &self.pool.state())
            .finish()
    }
}

impl PgConnector {
    /// A raw pooled connection (for migrations and tooling).
    pub fn connection(
        &self,
    ) -> Result<diesel::r2d2::PooledConnection<ConnectionManager<PgConnection>>, StoreError> {
        self.pool.get().map_err(pool)
    }
}

/// Connects with default pool settings. Fails if no connection can be made.
pub fn connect(url: &str, config: StoreConfig) -> Result<PgStore, StoreError> {
    connect_with(url, config, &PgOptions::default())
}

/// Connects with explicit pool settings.
pub fn connect_with(
    url: &str,
    config: StoreConfig,
    options: &PgOptions,
) -> Result<PgStore, StoreError> {
    let pool = docket_diesel::open_pool(
        Pool::builder()
            .max_size(options.max_connections.max(1))
            .connection_timeout(options.connection_timeout)
            // No `SELECT 1` before every use: it doubled the round trips of each claim. A broken
            // connection fails its statement, diesel marks it broken, and r2d2 replaces it.
            .test_on_check_out(false),
        ConnectionManager::<PgConnection>::new(url),
    )?;
    Ok(SqlStore::new(PgConnector { pool }, config))
}

impl SqlConnector for PgConnector {
    fn dialect(&self) -> &'static dyn Dialect {
        &PgDialect
    }

    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        f(&mut PgSession(&mut conn))
    }

    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        conn.transaction::<T, TxError, _>(|c| f(&mut PgSession(c)).map_err(TxError::Store))
            .map_err(StoreError::from)
    }
}
