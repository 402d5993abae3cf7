//! The connection pool: a [`DieselConnector`] of the SQLite family.
//!
//! Every pooled connection gets a busy timeout and WAL mode (see [`SqliteOptions`]), so several
//! threads and several processes on one file wait for the write lock instead of failing with
//! `database is locked`, and readers never block the writer.

use crate::dialect::SqliteDialect;
use crate::family::SqliteFamily;
use crate::SqliteStore;
use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::SqliteConnection;
use docket_core::backend::SqlStore;
use docket_core::{StoreConfig, StoreError};
use docket_diesel::DieselConnector;
use std::time::Duration;

/// Pool and connection settings.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// Most connections the pool opens (default 10). Readers run in parallel under WAL;
    /// writers take turns.
    pub max_connections: u32,
    /// How long to wait for a pooled connection before failing (default 30 s).
    pub connection_timeout: Duration,
    /// How long a statement waits for another connection's write lock before failing with
    /// `database is locked` (default 30 s). Applied with `PRAGMA busy_timeout`.
    pub busy_timeout: Duration,
    /// Keep docket's statements prepared on each connection (diesel's statement cache; default
    /// true), so SQLite does not compile a repeated statement again. There is little reason
    /// to turn it off (to measure it, or to save the memory of the compiled statements).
    pub statement_cache: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            connection_timeout: Duration::from_secs(30),
            busy_timeout: Duration::from_secs(30),
            statement_cache: true,
        }
    }
}

/// Sets docket's per-connection pragmas (busy timeout, WAL, `synchronous = NORMAL`) when a
/// pool opens a connection. [`connect`] installs it; add it to a pool of your own
/// (`Pool::builder().connection_customizer(Box::new(Pragmas::new(&options)))`) before handing
/// that pool to [`from_pool`], so that writers wait for each other instead of failing with
/// `database is locked`.
#[derive(Debug)]
pub struct Pragmas {
    busy_timeout_ms: u128,
}

impl Pragmas {
    /// The pragmas of `options` (its busy timeout).
    pub fn new(options: &SqliteOptions) -> Self {
        Self {
            busy_timeout_ms: options.busy_timeout.as_millis(),
        }
    }
}

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for Pragmas {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        // busy_timeout first: switching to WAL itself may have to wait for another connection.
        // WAL is persistent in the file; setting it again is a no-op. synchronous=NORMAL is
        // the documented safe pairing with WAL (durable against application crashes).
        conn.batch_execute(&format!(
            "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
            self.busy_timeout_ms
        ))
        .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// A pool of `SqliteConnection`s on one database file.
pub type SqliteConnector = DieselConnector<SqliteFamily>;

/// The database file named by `url`: `sqlite://PATH` or `sqlite:PATH` (so `sqlite:///tmp/a.db`
/// is the absolute path `/tmp/a.db` and `sqlite://a.db` is relative), or a plain path.
pub fn database_path(url: &str) -> &str {
    url.strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url)
}

/// Opens (creating if missing) the database file named by `url` (see [`database_path`]) with
/// default settings. Fails if the file cannot be opened.
pub fn connect(url: &str, config: StoreConfig) -> Result<SqliteStore, StoreError> {
    connect_with(url, config, &SqliteOptions::default())
}

/// Opens the database file named by `url` with explicit settings.
pub fn connect_with(
    url: &str,
    config: StoreConfig,
    options: &SqliteOptions,
) -> Result<SqliteStore, StoreError> {
    let path = database_path(url);
    if path.is_empty() || path == ":memory:" {
        // An in-memory database is private to one connection: a pool would see several.
        return Err(StoreError::connection(format!(
            "{url:?} names no database file; docket's SQLite backend needs a file \
             (sqlite://PATH) that every pooled connection and process can open"
        )));
    }
    let pool = docket_diesel::open_pool(
        Pool::builder()
            .max_size(options.max_connections.max(1))
            .connection_timeout(options.connection_timeout)
            .connection_customizer(Box::new(Pragmas::new(options))),
        ConnectionManager::<SqliteConnection>::new(path),
    )?;
    Ok(SqlStore::new(
        SqliteConnector::new(pool, &SqliteDialect, ())
            .with_statement_cache(options.statement_cache),
        config,
    ))
}

/// A store on a pool the application already has (for example the one its own diesel code
/// uses). Fails if the pool cannot hand out a connection.
///
/// The pool must open a database *file* (an in-memory database is private to one
/// connection), and its connections should wait for the write lock rather than fail: give its
/// builder docket's [`Pragmas`] (or set `PRAGMA busy_timeout` in a customizer of your own).
pub fn from_pool(
    pool: Pool<ConnectionManager<SqliteConnection>>,
    config: StoreConfig,
) -> Result<SqliteStore, StoreError> {
    drop(pool.get().map_err(docket_diesel::pool)?);
    Ok(SqlStore::new(
        SqliteConnector::new(pool, &SqliteDialect, ()),
        config,
    ))
}
