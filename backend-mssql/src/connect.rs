//! The connector: options, the URL, and the [`SqlConnector`] over the pool
//! ([`crate::pool`]).

use crate::dialect::MssqlDialect;
use crate::error::MssqlError;
use crate::pool::{Lease, Pool};
use crate::session::MssqlSession;
use crate::MssqlStore;
use docket_core::backend::SqlStore;
use docket_core::dialect::Dialect;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::{StoreConfig, StoreError, TableName};
use std::sync::Arc;
use std::time::Duration;
use tiberius::Config;

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

/// A pool of tiberius connections to one SQL Server database.
#[derive(Clone)]
pub struct MssqlConnector {
    pool: Arc<Pool>,
}

impl std::fmt::Debug for MssqlConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (open, idle) = self.pool.counts();
        f.debug_struct("MssqlConnector")
            .field("addr", &self.pool.addr())
            .field("open", &open)
            .field("idle", &idle)
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
    let pool = Pool::open(
        parse_url(url)?,
        options.max_connections.max(1),
        options.connection_timeout,
    )?;
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
