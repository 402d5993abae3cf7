//! The connection pool: a [`DieselConnector`] of the Oracle family.

use crate::dialect::OracleDialect;
use crate::family::OracleFamily;
use crate::OracleStore;
use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel_oci::OciConnection;
use docket_core::backend::SqlStore;
use docket_core::{StoreConfig, StoreError};
use docket_diesel::DieselConnector;
use std::time::Duration;

/// Pool settings.
#[derive(Debug, Clone)]
pub struct OracleOptions {
    /// Most connections the pool opens (default 10).
    pub max_connections: u32,
    /// How long to wait for a connection before failing (default 30 s).
    pub connection_timeout: Duration,
    /// Let the client library keep docket's statements prepared on each connection (its
    /// statement cache; default true). Turn it off to measure it, or where the server's
    /// `open_cursors` limit is tight.
    pub statement_cache: bool,
}

impl Default for OracleOptions {
    fn default() -> Self {
        Self {
            max_connections: 10,
            connection_timeout: Duration::from_secs(30),
            statement_cache: true,
        }
    }
}

/// Binary sorting and comparison on every new pooled connection, whatever `NLS_LANG` the
/// client library was given: custom text keys then sort by code point, as on the other backends.
#[derive(Debug)]
struct BinarySort;

impl CustomizeConnection<OciConnection, diesel::r2d2::Error> for BinarySort {
    fn on_acquire(&self, conn: &mut OciConnection) -> Result<(), diesel::r2d2::Error> {
        conn.batch_execute("ALTER SESSION SET NLS_SORT = BINARY NLS_COMP = BINARY")
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

/// A pool of `OciConnection`s to one Oracle database.
pub type OracleConnector = DieselConnector<OracleFamily>;

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
            .test_on_check_out(false)
            .connection_customizer(Box::new(BinarySort)),
        ConnectionManager::<OciConnection>::new(url),
    )?;
    Ok(SqlStore::new(
        OracleConnector::new(connections, &OracleDialect, ())
            .with_statement_cache(options.statement_cache),
        config,
    ))
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
            statement_cache: true,
        };
        let err = connect_with(
            "oracle://u:p@127.0.0.1:1/x",
            StoreConfig::default(),
            &options,
        )
        .expect_err("no server on port 1");
        assert!(matches!(err, StoreError::Connection { .. }), "{err}");
    }
}
