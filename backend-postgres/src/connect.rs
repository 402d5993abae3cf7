//! The connection pool: a [`DieselConnector`] of the PostgreSQL family.

use crate::dialect::PgDialect;
use crate::family::PgFamily;
use crate::PgStore;
use diesel::r2d2::{ConnectionManager, Pool};
use diesel::PgConnection;
use docket_core::store::sql::SqlStore;
use docket_core::{StoreConfig, StoreError};
use docket_diesel::DieselConnector;
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
pub type PgConnector = DieselConnector<PgFamily>;

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
    Ok(SqlStore::new(
        PgConnector::new(pool, &PgDialect, ()),
        config,
    ))
}
