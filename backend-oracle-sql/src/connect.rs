//! The connection pool and the [`SqlConnector`] on it.

use crate::dialect::OracleDialect;
use crate::store::OracleSession;
use crate::OracleStore;
use diesel::r2d2::{ConnectionManager, Pool, PooledConnection};
use diesel::Connection;
use diesel_oci::OciConnection;
use docket_core::dialect::Dialect;
use docket_core::store::sql::{SqlConnector, SqlSession, SqlStore};
use docket_core::{StoreConfig, StoreError};
use docket_diesel::{pool, TxError};
use std::time::Duration;

/// Pool settings.
#[derive(Debug, Clone)]
pub struct OracleOptions {
    /// Most connections the pool opens (default 10).
    pub max_connections: u32,
    /// How long to wait for a connection before failing (default 30 s).
    pub connection_timeout: Duration,
}

impl Default for OracleOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            connection_timeout: Duration::from_secs(30),
        }
    }
}

/// A pool of `OciConnection`s to one Oracle database.
#[derive(Clone)]
pub struct OracleConnector {
    pool: Pool<ConnectionManager<OciConnection>>,
}

impl std::fmt::Debug for OracleConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OracleConnector")
            .field("state", &self.pool.state())
            .finish()
    }
}

impl OracleConnector {
    /// A raw pooled connection (for migrations and tooling).
    pub fn connection(
        &self,
    ) -> Result<PooledConnection<ConnectionManager<OciConnection>>, StoreError> {
        self.pool.get().map_err(pool)
    }
}

static DIALECT: OracleDialect = OracleDialect;

/// Connects with default settings: `oracle://user:password@host:port/service_name`. Fails if
/// no connection can be made (including when the Oracle client library cannot be loaded).
pub fn connect(url: &str, config: StoreConfig) -> Result<OracleStore, StoreError> {
    connect_with(url, config, &OracleOptions::default())
}

/// Connects with explicit settings.
pub fn connect_with(
    url: &str,
    config: StoreConfig,
    options: &OracleOptions,
) -> Result<OracleStore, StoreError> {
    let connections = docket_diesel::open_pool(
        Pool::builder()
            .max_size(options.max_connections.max(1))
            .connection_timeout(options.connection_timeout)
            .test_on_check_out(false),
        ConnectionManager::<OciConnection>::new(url),
    )?;
    Ok(SqlStore::new(OracleConnector { pool: connections }, config))
}

impl SqlConnector for OracleConnector {
    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }

    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        f(&mut OracleSession(&mut conn))
    }

    /// Oracle's default READ COMMITTED: `SELECT ... FOR UPDATE SKIP LOCKED` locks the rows it
    /// returns and skips the ones others hold.
    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection()?;
        conn.transaction::<T, TxError, _>(|c| f(&mut OracleSession(c)).map_err(TxError::Store))
            .map_err(StoreError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the Oracle client library (as on the build machines) connecting fails with a
    /// typed connection error naming the missing library; it never panics. With a client
    /// library present, port 1 refuses the connection: also a connection error.
    #[test]
    fn connecting_without_a_server_is_a_connection_error() {
        let options = OracleOptions {
            max_connections: 1,
            connection_timeout: Duration::from_secs(2),
        };
        let err = connect_with(
            "oracle://u:p@127.0.0.1:1/x",
            StoreConfig::default(),
            &options,
        )
        .expect_err("no server on port 1");
        assert!(matches!(err, StoreError::Connection(_)), "{err}");
    }
}
