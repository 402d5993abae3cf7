//! The connection pool: a [`DieselConnector`] of the PostgreSQL family.

use crate::dialect::PgDialect;
use crate::family::{PgFamily, PgMeta};
use crate::PgStore;
use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::PgConnection;
use docket_core::backend::SqlStore;
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
    /// Keep docket's statements prepared on each connection (diesel's statement cache; default
    /// true), so a repeated statement is parsed once and runs in one round trip instead of two
    /// (parse, then bind and execute). Turn it off where a
    /// connection cannot keep named prepared statements between transactions: behind a pooler
    /// in transaction mode (PgBouncer `pool_mode = transaction`), which hands each
    /// transaction to any server connection.
    pub statement_cache: bool,
    /// The server ends any statement of this store that runs longer (the session's
    /// `statement_timeout`, set on every pooled connection when it is opened; lock waits
    /// count); it then fails with [`StoreError::Database`] ("canceling statement due to
    /// statement timeout"). `None` (the default) keeps the server's setting. Meant for a
    /// store of its own serving requests that have a deadline (`docket web` sets it to its
    /// request timeout): a scheduler's claims and heartbeats should not share it. Whole
    /// milliseconds; at least 1 ms.
    pub statement_timeout: Option<Duration>,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            connection_timeout: Duration::from_secs(30),
            statement_cache: true,
            statement_timeout: None,
        }
    }
}

/// Sets the session's `statement_timeout` on every connection the pool opens.
#[derive(Debug)]
struct StatementTimeout {
    millis: u128,
}

impl CustomizeConnection<PgConnection, diesel::r2d2::Error> for StatementTimeout {
    fn on_acquire(&self, conn: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        // A number docket formats (SET takes no bind parameter), never user text.
        conn.batch_execute(&format!("SET statement_timeout = {}", self.millis))
            .map_err(diesel::r2d2::Error::QueryError)
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
    let mut builder = Pool::builder()
        .max_size(options.max_connections.max(1))
        .connection_timeout(options.connection_timeout)
        // No `SELECT 1` before every use: it doubled the round trips of each claim. A broken
        // connection fails its statement, diesel marks it broken, and r2d2 replaces it.
        .test_on_check_out(false);
    if let Some(limit) = options.statement_timeout {
        builder = builder.connection_customizer(Box::new(StatementTimeout {
            millis: limit.as_millis().max(1),
        }));
    }
    let pool = docket_diesel::open_pool(builder, ConnectionManager::<PgConnection>::new(url))?;
    Ok(SqlStore::new(
        PgConnector::new(pool, &PgDialect, PgMeta::listen_at(url))
            .with_statement_cache(options.statement_cache),
        config,
    ))
}

/// A store on a pool the application already has (for example the one its own diesel code
/// uses), so docket shares its connections instead of opening a pool of its own. Fails if the
/// pool cannot hand out a connection.
///
/// docket needs nothing of the pool's connections beyond what [`connect`] sets up: size the
/// pool for the application's own use plus the scheduler's threads (its polling, completion,
/// heartbeat and housekeeping threads each hold a connection only for the length of a
/// statement or a short transaction).
///
/// docket's statements are kept prepared on the pool's connections
/// ([`PgOptions::statement_cache`] on). Where they cannot be (PgBouncer in transaction pooling
/// mode), build the store with the cache off instead:
/// `SqlStore::new(PgConnector::new(pool, &PgDialect, PgMeta::default()).with_statement_cache(false), config)`.
///
/// A scheduler on such a store listens for wake-ups on one of the pool's connections, held
/// while it runs (`SchedulerConfig::wake_listener`); a store from [`connect`] opens its own.
pub fn from_pool(
    pool: Pool<ConnectionManager<PgConnection>>,
    config: StoreConfig,
) -> Result<PgStore, StoreError> {
    drop(pool.get().map_err(docket_diesel::pool)?);
    Ok(SqlStore::new(
        PgConnector::new(pool, &PgDialect, PgMeta::default()),
        config,
    ))
}
