//! The connection pool: a [`DieselConnector`] of the MySQL family.

use crate::dialect::Flavor;
use crate::family::{MysqlFamily, MysqlMeta};
use crate::hosts::MysqlManager;
use crate::MysqlStore;
use diesel::connection::SimpleConnection;
use diesel::r2d2::{CustomizeConnection, Pool};
use diesel::sql_types::Text;
use diesel::{MysqlConnection, QueryableByName, RunQueryDsl};
use docket_core::backend::SqlStore;
use docket_core::{StoreConfig, StoreError};
use docket_diesel::{db, pool, DieselConnector, IDLE_IN_TRANSACTION_TIMEOUT};
use std::time::Duration;

/// Pool and session settings.
#[derive(Debug, Clone)]
pub struct MysqlOptions {
    /// Most connections the pool opens (default 10).
    pub max_connections: u32,
    /// How long to wait for a connection before failing (default 30 s).
    pub connection_timeout: Duration,
    /// Session `time_zone` of every pooled connection (e.g. `America/New_York`); `None` keeps
    /// diesel's `+00:00`. docket's times live in zone-less `DATETIME(6)` columns holding UTC,
    /// so this never shifts them; it is for whatever else the session does. Named zones need
    /// the server's time zone tables (`mariadb-tzinfo-to-sql` / `mysql_tzinfo_to_sql`).
    pub session_time_zone: Option<String>,
    /// Keep docket's statements prepared on each connection (diesel's statement cache; default
    /// true), so a repeated statement is prepared once instead of prepared and closed on every
    /// call. Turn it off behind a proxy that cannot keep prepared statements per client
    /// session, or when the server's `max_prepared_stmt_count` is nearly used up by other
    /// clients (each pooled connection holds a few dozen).
    pub statement_cache: bool,
    /// On MariaDB (10.1 and later) the server ends any statement of this store that runs
    /// longer (the session's `max_statement_time`, set on every pooled connection when it is
    /// opened); it then fails with [`StoreError::Database`] ("Query execution was
    /// interrupted (max_statement_time exceeded)"). MySQL has no such setting for every
    /// statement and ignores it. `None` (the default) keeps the server's setting. Meant for a
    /// store of its own serving requests that have a deadline (`docket web` sets it to its
    /// request timeout). Whole milliseconds; at least 1 ms.
    pub max_statement_time: Option<Duration>,
}

impl Default for MysqlOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            connection_timeout: Duration::from_secs(30),
            session_time_zone: None,
            statement_cache: true,
            max_statement_time: None,
        }
    }
}

/// The optimizer setting docket's MariaDB sessions run with: `exists_to_in=off`. The work
/// queue's claim reads items in index order and checks each against the assignments primary
/// key (`NOT EXISTS`, the only `EXISTS` docket sends). MariaDB may rewrite that into an
/// uncorrelated `IN` and materialize it, and a prepared statement keeps the strategy its first
/// run chose: a claim statement first run while the queue held only taken items went on
/// copying every assignment of the worker into a temporary table on every claim, 0.3 to 1.6 s
/// at 30,000 assignments against 2 ms for the same statement prepared again (the MariaDB soak's
/// queue taker fell behind; docs/RELIABILITY.md, "Found"). Off, the check stays a primary-key
/// probe per candidate whatever the statement's history.
pub const MARIADB_OPTIMIZER_SWITCH: &str = "exists_to_in=off";

/// Runs docket's session set-up on every new pooled connection: strict SQL mode (so an
/// over-long value fails instead of being truncated, whatever the server's default), on
/// MariaDB the [`IDLE_IN_TRANSACTION_TIMEOUT`] (`idle_transaction_timeout`) and
/// [`MARIADB_OPTIMIZER_SWITCH`], and the configured session time zone.
#[derive(Debug)]
struct SessionSetup {
    time_zone: Option<String>,
    max_statement_time: Option<Duration>,
}

#[derive(QueryableByName)]
struct Version {
    #[diesel(sql_type = Text)]
    version: String,
}

impl CustomizeConnection<MysqlConnection, diesel::r2d2::Error> for SessionSetup {
    fn on_acquire(&self, conn: &mut MysqlConnection) -> Result<(), diesel::r2d2::Error> {
        // `/*M!100300 ... */` runs on MariaDB 10.3 and later only (MySQL has neither setting).
        // Seconds with millisecond precision, a number docket formats (never user text).
        let statement_time = self.max_statement_time.map_or(String::new(), |t| {
            let ms = t.as_millis().max(1);
            format!(
                "/*M!100100 , SESSION max_statement_time = {}.{:03} */",
                ms / 1000,
                ms % 1000
            )
        });
        conn.batch_execute(&format!(
            "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'STRICT_ALL_TABLES') \
             /*M!100300 , SESSION idle_transaction_timeout = {}, \
             SESSION optimizer_switch = '{MARIADB_OPTIMIZER_SWITCH}' */ {statement_time}",
            IDLE_IN_TRANSACTION_TIMEOUT.as_secs()
        ))
        .map_err(diesel::r2d2::Error::QueryError)?;
        if let Some(tz) = &self.time_zone {
            diesel::sql_query("SET time_zone = ?")
                .bind::<Text, _>(tz)
                .execute(conn)
                .map_err(diesel::r2d2::Error::QueryError)?;
        }
        Ok(())
    }
}

/// A pool of `MysqlConnection`s; its [`meta`](DieselConnector::meta) holds the server's flavor
/// and version.
pub type MysqlConnector = DieselConnector<MysqlFamily>;

/// Connects with default settings. Fails if no connection can be made, or if the server is
/// older than the flavor's [`Flavor::min_version`].
pub fn connect(url: &str, config: StoreConfig) -> Result<MysqlStore, StoreError> {
    connect_with(url, config, &MysqlOptions::default())
}

/// Connects with explicit settings. The flavor (MySQL or MariaDB) is read from the server's
/// `VERSION()`. `url` may name several hosts, `mysql://user@h1:3306,h2:3306/db` (a Galera
/// cluster without a proxy): each new connection goes to the first host that answers a query
/// ([`MysqlManager`]).
pub fn connect_with(
    url: &str,
    config: StoreConfig,
    options: &MysqlOptions,
) -> Result<MysqlStore, StoreError> {
    let connections = docket_diesel::open_pool(
        Pool::builder()
            .max_size(options.max_connections.max(1))
            .connection_timeout(options.connection_timeout)
            // Keep r2d2's check on check-out: diesel cannot tell that a MySQL connection died
            // (its `is_broken` only looks at the transaction state), so without the check a pool
            // stays dead after a server restart. (PostgreSQL's connections report it; that backend
            // skips the check.)
            .test_on_check_out(true)
            .connection_customizer(Box::new(SessionSetup {
                time_zone: options.session_time_zone.clone(),
                max_statement_time: options.max_statement_time,
            })),
        MysqlManager::new(url),
    )?;
    store(connections, config, options.statement_cache)
}

/// A store on a pool the application already has (for example the one its own diesel code
/// uses: build it on a [`MysqlManager`], which derefs to `MysqlConnection` like diesel's
/// `ConnectionManager`, and `MysqlManager::from` one of those). The flavor (MySQL or MariaDB) is read from the server's `VERSION()`.
///
/// docket relies on strict SQL mode (an over-long value fails instead of being truncated);
/// [`connect`] adds `STRICT_ALL_TABLES` to every session. A pool of your own must run in a
/// strict mode too (`STRICT_TRANS_TABLES`, the servers' default, or `STRICT_ALL_TABLES`): a
/// pool whose connection is not is refused with [`StoreError::Unsupported`]. On MariaDB, give
/// its sessions an `idle_transaction_timeout` too (docket's pools use
/// [`IDLE_IN_TRANSACTION_TIMEOUT`]), or a client cut off mid-transaction holds its row locks
/// until the server notices the lost connection; and, where the work queue runs, the
/// [`MARIADB_OPTIMIZER_SWITCH`] (`SET SESSION optimizer_switch = 'exists_to_in=off'`), or a
/// long-lived claim statement may come to read the worker's whole assignment history on every
/// claim.
pub fn from_pool(
    connections: Pool<MysqlManager>,
    config: StoreConfig,
) -> Result<MysqlStore, StoreError> {
    let mode = {
        let mut conn = connections.get().map_err(pool)?;
        diesel::sql_query("SELECT @@SESSION.sql_mode AS mode")
            .get_result::<SqlMode>(&mut *conn)
            .map_err(db)?
            .mode
    };
    if !mode
        .split(',')
        .any(|m| matches!(m.trim(), "STRICT_ALL_TABLES" | "STRICT_TRANS_TABLES"))
    {
        return Err(StoreError::Unsupported {
            backend: "mysql",
            capability: "sessions without strict SQL mode (add STRICT_TRANS_TABLES or \
                         STRICT_ALL_TABLES to the pool's sql_mode)",
        });
    }
    store(connections, config, true)
}

#[derive(QueryableByName)]
struct SqlMode {
    #[diesel(sql_type = Text)]
    mode: String,
}

/// The store on `connections`, once the server's flavor and version are known to be
/// supported; `statement_cache` as [`MysqlOptions::statement_cache`].
fn store(
    connections: Pool<MysqlManager>,
    config: StoreConfig,
    statement_cache: bool,
) -> Result<MysqlStore, StoreError> {
    let text = {
        let mut conn = connections.get().map_err(pool)?;
        diesel::sql_query("SELECT VERSION() AS version")
            .get_result::<Version>(&mut *conn)
            .map_err(db)?
            .version
    };
    let (flavor, server_version) = Flavor::from_version(&text)
        .ok_or_else(|| StoreError::connection(format!("unrecognized server version {text:?}")))?;
    if server_version < flavor.min_version() {
        return Err(StoreError::Unsupported {
            backend: "mysql",
            capability: match flavor {
                Flavor::MariaDb => "FOR UPDATE SKIP LOCKED before MariaDB 10.6",
                Flavor::MySql => "utf8mb4_0900_bin and SKIP LOCKED before MySQL 8.0.17",
            },
        });
    }
    let meta = MysqlMeta {
        dialect: flavor.dialect(),
        server_version,
    };
    Ok(SqlStore::new(
        MysqlConnector::new(connections, meta.dialect, meta).with_statement_cache(statement_cache),
        config,
    ))
}
