//! Driver errors of this backend, and their normalization onto [`StoreError`].

use docket_core::StoreError;
use thiserror::Error;

/// SQL Server duplicate key in a unique index (2601) or constraint (2627).
const DUPLICATE_KEY: [u32; 2] = [2601, 2627];

/// What can go wrong below the store.
#[derive(Debug, Error)]
pub enum MssqlError {
    /// The connection URL could not be understood.
    #[error("invalid SQL Server URL: {0}")]
    Url(String),
    /// tiberius (protocol, TLS, login, or a server error).
    #[error(transparent)]
    Driver(#[from] tiberius::error::Error),
    /// Opening the socket or the runtime failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// No pooled connection became free in time.
    #[error("no connection became free within {0:?}")]
    PoolTimeout(std::time::Duration),
    /// A statement of a migration failed (the migration was rolled back).
    #[error("{version}: {source}")]
    Migration {
        /// The migration's recorded version, e.g. `0001_base@scheduled_tasks`.
        version: String,
        /// What the statement raised.
        #[source]
        source: StoreError,
    },
}

impl MssqlError {
    /// True when the server rejected a statement (the connection is still usable).
    pub(crate) fn is_server_error(&self) -> bool {
        matches!(self, MssqlError::Driver(tiberius::error::Error::Server(_)))
    }

    /// True for a duplicate-key error (2601, 2627).
    fn is_duplicate_key(&self) -> bool {
        match self {
            MssqlError::Driver(tiberius::error::Error::Server(e)) => {
                DUPLICATE_KEY.contains(&e.code())
            }
            _ => false,
        }
    }
}

/// A duplicate key is [`StoreError::Duplicate`], another server error
/// [`StoreError::Database`], anything below SQL (I/O, protocol, TLS, login, the pool)
/// [`StoreError::Connection`].
impl From<MssqlError> for StoreError {
    fn from(e: MssqlError) -> Self {
        if e.is_duplicate_key() {
            return StoreError::Duplicate {
                source: Box::new(e),
            };
        }
        match e {
            MssqlError::Migration { .. } => StoreError::Migration {
                source: Box::new(e),
            },
            MssqlError::Driver(tiberius::error::Error::Server(_)) => StoreError::database(e),
            _ => StoreError::connection(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // tiberius has no public constructor for a server error, so 2627/2601 are exercised only
    // against a server; below SQL everything is a connection error.
    #[test]
    fn failures_below_sql_are_connection_errors() {
        let io = MssqlError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(matches!(
            StoreError::from(io),
            StoreError::Connection { .. }
        ));
        let url = MssqlError::Url("no scheme".into());
        assert!(matches!(
            StoreError::from(url),
            StoreError::Connection { .. }
        ));
    }
}
