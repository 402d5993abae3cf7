//! Connections: a tiberius client per connection, each on its own current-thread tokio
//! runtime (so the blocking [`SqlConnector`] API drives it with `block_on` from any thread),
//! in a small pool (a mutex-guarded list of idle connections, a size limit and a wait).

use crate::dialect::MssqlDialect;
use crate::error::MssqlError;
use crate::session::MssqlSession;
use crate::MssqlStore;
use docket_core::backend::SqlStore;
use docket_core::dialect::Dialect;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::{StoreConfig, StoreError, TableName};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tiberius::{Client, Config};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};

/// Pool settings.
#[derive(Debug, Clone)]
pub struct MssqlOptions {
    /// Most connections the pool opens (default 10).
    pub max_connections: usize,
    /// How long to wait for a free connection before failing (default 30 s).
    pub connection_timeout: Duration,
}

impl Default for MssqlOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            connection_timeout: Duration::from_secs(30),
        }
    }
}

/// Turns `mssql://<jdbc properties>` or `sqlserver://<jdbc properties>` into a tiberius
/// [`Config`], e.g. `mssql://localhost:1433;database=app;user=sa;password=...;
/// trustServerCertificate=true` (the JDBC connection-string syntax after the scheme).
pub fn parse_url(url: &str) -> Result<Config, MssqlError> {
    let rest = ["mssql://", "sqlserver://"]
        .iter()
        .find_map(|scheme| {
            url.get(..scheme.len())
                .filter(|head| head.eq_ignore_ascii_case(scheme))
                .map(|_| &url[scheme.len()..])
        })
        .ok_or_else(|| MssqlError::Url("expected mssql://host:port;property=value;...".into()))?;
    Config::from_jdbc_string(&format!("jdbc:sqlserver://{rest}"))
        .map_err(|e| MssqlError::Url(e.to_string()))
}

/// Sent on every new connection, before it is pooled.
///
/// - `XACT_ABORT OFF`: a failed statement ends only itself (a duplicate key in a batch
///   insert, a row the `ISJSON` check refuses), and docket's transactions roll back
///   explicitly on any error.
/// - The seven options SQL Server requires, with these values, to create an index on a
///   computed column (a custom order's index, see `MssqlDialect`), to insert, update or
///   delete rows of a table that has one (otherwise the statement fails, error 1934), and for
///   the optimizer to use it. tiberius logs in as an ODBC client, which gets `ANSI_NULLS`,
///   `ANSI_PADDING`, `ANSI_WARNINGS`, `CONCAT_NULL_YIELDS_NULL` and `QUOTED_IDENTIFIER` on,
///   but `ARITHABORT` off (implied by `ANSI_WARNINGS` only at compatibility level 90 and
///   up): all seven are stated here rather than relied on.
pub(crate) const SESSION_OPTIONS: &str = "SET XACT_ABORT OFF; \
    SET ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT, CONCAT_NULL_YIELDS_NULL, \
    QUOTED_IDENTIFIER ON; SET NUMERIC_ROUNDABORT OFF";

/// One open connection: its runtime and client.
pub(crate) struct Conn {
    pub(crate) rt: Runtime,
    pub(crate) client: Client<Compat<TcpStream>>,
    /// Set when the connection failed below the SQL level; it is dropped, not reused.
    pub(crate) broken: bool,
}

impl Conn {
    fn open(config: &Config) -> Result<Conn, MssqlError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = rt.block_on(async {
            let tcp = TcpStream::connect(config.get_addr()).await?;
            tcp.set_nodelay(true)?;
            let mut client = Client::connect(config.clone(), tcp.compat_write()).await?;
            client
                .simple_query(SESSION_OPTIONS)
                .await?
                .into_results()
                .await?;
            Ok::<_, MssqlError>(client)
        })?;
        Ok(Conn {
            rt,
            client,
            broken: false,
        })
    }
}

struct State {
    idle: Vec<Conn>,
    open: usize,
}

struct Pool {
    config: Config,
    max: usize,
    timeout: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self) -> Result<Lease<'_>, MssqlError> {
        let deadline = Instant::now() + self.timeout;
        let mut state = self.lock();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Lease {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match Conn::open(&self.config) {
                    Ok(conn) => Ok(Lease {
                        pool: self,
                        conn: Some(conn),
                    }),
                    Err(e) => {
                        self.lock().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(MssqlError::PoolTimeout(self.timeout));
            }
            state = self
                .freed
                .wait_timeout(state, deadline - now)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

/// A connection taken from the pool; returned (or dropped when broken) on drop.
pub(crate) struct Lease<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
}

impl Lease<'_> {
    pub(crate) fn conn(&mut self) -> Result<&mut Conn, StoreError> {
        self.conn
            .as_mut()
            .ok_or_else(|| StoreError::connection("connection already returned"))
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let mut state = self.pool.lock();
            if conn.broken {
                state.open -= 1;
            } else {
                state.idle.push(conn);
            }
        }
        self.pool.freed.notify_one();
    }
}

/// A pool of tiberius connections to one SQL Server database.
#[derive(Clone)]
pub struct MssqlConnector {
    pool: Arc<Pool>,
}

impl std::fmt::Debug for MssqlConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.pool.lock();
        f.debug_struct("MssqlConnector")
            .field("addr", &self.pool.config.get_addr())
            .field("open", &state.open)
            .field("idle", &state.idle.len())
            .finish()
    }
}

static DIALECT: MssqlDialect = MssqlDialect;

impl MssqlConnector {
    pub(crate) fn lease(&self) -> Result<Lease<'_>, StoreError> {
        self.pool.get().map_err(StoreError::from)
    }

    /// Runs one SQL batch without binds (migrations, tooling).
    pub fn batch_execute(&self, sql: &str) -> Result<(), StoreError> {
        let mut lease = self.lease()?;
        MssqlSession(lease.conn()?).batch(sql)
    }
}

/// Connects with default settings (see [`parse_url`] for the URL). Opens one connection at
/// once, so a wrong address or login fails here.
pub fn connect(url: &str, config: StoreConfig) -> Result<MssqlStore, StoreError> {
    connect_with(url, config, &MssqlOptions::default())
}

/// Connects with explicit settings.
pub fn connect_with(
    url: &str,
    config: StoreConfig,
    options: &MssqlOptions,
) -> Result<MssqlStore, StoreError> {
    let first = Conn::open(&parse_url(url)?)?;
    let pool = Pool {
        config: parse_url(url)?,
        max: options.max_connections.max(1),
        timeout: options.connection_timeout,
        state: Mutex::new(State {
            idle: vec![first],
            open: 1,
        }),
        freed: Condvar::new(),
    };
    Ok(SqlStore::new(
        MssqlConnector {
            pool: Arc::new(pool),
        },
        config,
    ))
}

/// tiberius keeps no statements prepared (every statement goes through `sp_executesql`), so
/// plans need no other connector.
impl docket_core::explain::PlanConnector for MssqlConnector {
    fn for_plans(&self) -> Self {
        self.clone()
    }
}

impl SqlConnector for MssqlConnector {
    fn dialect(&self) -> &'static dyn Dialect {
        &DIALECT
    }

    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut lease = self.lease()?;
        f(&mut MssqlSession(lease.conn()?))
    }

    /// READ COMMITTED (the default). The claim's `UPDLOCK` makes its read a locking read
    /// even where the database uses READ_COMMITTED_SNAPSHOT.
    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut lease = self.lease()?;
        let mut session = MssqlSession(lease.conn()?);
        session.batch("BEGIN TRANSACTION")?;
        match f(&mut session) {
            Ok(value) => {
                session.batch("COMMIT TRANSACTION")?;
                Ok(value)
            }
            Err(e) => {
                if session
                    .batch("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION")
                    .is_err()
                {
                    session.0.broken = true;
                }
                Err(e)
            }
        }
    }

    fn migrations(&self) -> &'static [MigrationFile] {
        crate::migrate::MIGRATIONS
    }

    fn apply(
        &self,
        _table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Result<Vec<String>, StoreError> {
        crate::migrate::run(self, steps)
    }

    fn recorded(&self) -> Result<Vec<String>, StoreError> {
        crate::migrate::recorded(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_jdbc_properties_after_the_scheme() {
        let config = parse_url("mssql://db.example:1444;database=app;user=sa;password=x")
            .expect("valid URL");
        assert_eq!(config.get_addr(), "db.example:1444");
        assert!(parse_url("SQLSERVER://localhost;user=sa;password=x").is_ok());
        for bad in ["postgres://h/db", "mssql:/h", ""] {
            assert!(matches!(parse_url(bad), Err(MssqlError::Url(_))), "{bad}");
        }
    }

    /// Every option an index on a computed column needs, with the value it needs.
    #[test]
    fn sessions_state_the_options_of_indexed_computed_columns() {
        let (on, off) = SESSION_OPTIONS.split(';').map(str::trim).fold(
            (Vec::new(), Vec::new()),
            |(mut on, mut off), stmt| {
                let stmt = stmt.strip_prefix("SET ").expect("a SET statement");
                let (names, value) = stmt.rsplit_once(' ').expect("SET names value");
                let names = names.split(',').map(|n| n.trim().to_owned());
                match value {
                    "ON" => on.extend(names),
                    "OFF" => off.extend(names),
                    other => panic!("unexpected value {other}"),
                }
                (on, off)
            },
        );
        for needed in [
            "ANSI_NULLS",
            "ANSI_PADDING",
            "ANSI_WARNINGS",
            "ARITHABORT",
            "CONCAT_NULL_YIELDS_NULL",
            "QUOTED_IDENTIFIER",
        ] {
            assert!(on.iter().any(|n| n == needed), "{needed} ON: {on:?}");
        }
        assert_eq!(off, ["XACT_ABORT", "NUMERIC_ROUNDABORT"]);
    }

    #[test]
    fn a_closed_port_is_a_connection_error_not_a_panic() {
        let err = connect(
            "mssql://127.0.0.1:1;user=sa;password=x",
            StoreConfig::default(),
        )
        .expect_err("nothing listens on port 1");
        assert!(matches!(err, StoreError::Connection { .. }), "{err}");
    }
}
