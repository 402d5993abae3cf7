//! Driver errors of this backend, and their normalization onto [`StoreError`].

use docket_core::StoreError;
use thiserror::Error;

/// SQL Server duplicate key in a unique index (2601) or constraint (2627).
const DUPLICATE_KEY: [u32; 2] = [2601, 2627];

/// SQL Server error 547: a statement conflicted with a CHECK (or FOREIGN KEY) constraint. In
/// docket's schema only the `ISJSON` check on `custom_attributes` can raise it.
const CONSTRAINT_CONFLICT: u32 = 547;

/// What a server error's number means to the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerErrorKind {
    /// [`StoreError::Duplicate`].
    Duplicate,
    /// [`StoreError::CheckViolation`].
    Check,
    /// [`StoreError::Database`].
    Other,
}

/// The kind of the server error numbered `code`.
fn server_error_kind(code: u32) -> ServerErrorKind {
    match code {
        c if DUPLICATE_KEY.contains(&c) => ServerErrorKind::Duplicate,
        CONSTRAINT_CONFLICT => ServerErrorKind::Check,
        _ => ServerErrorKind::Other,
    }
}

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

    /// The kind of a server error; `None` below SQL.
    fn server_error_kind(&self) -> Option<ServerErrorKind> {
        match self {
            MssqlError::Driver(tiberius::error::Error::Server(e)) => {
                Some(server_error_kind(e.code()))
            }
            _ => None,
        }
    }
}

/// A duplicate key (2601, 2627) is [`StoreError::Duplicate`], a CHECK conflict (547)
/// [`StoreError::CheckViolation`], another server error [`StoreError::Database`], anything
/// below SQL (I/O, protocol, TLS, login, the pool) [`StoreError::Connection`].
impl From<MssqlError> for StoreError {
    fn from(e: MssqlError) -> Self {
        match (e.server_error_kind(), &e) {
            (Some(ServerErrorKind::Duplicate), _) => StoreError::Duplicate {
                source: Box::new(e),
            },
            (Some(ServerErrorKind::Check), _) => StoreError::CheckViolation {
                source: Box::new(e),
            },
            (Some(ServerErrorKind::Other), _) => StoreError::database(e),
            (None, MssqlError::Migration { .. }) => StoreError::Migration {
                source: Box::new(e),
            },
            (None, _) => StoreError::connection(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // tiberius has no public constructor for a server error: the numbers are classified
    // here, and the wrapping of a real server error only against a server.
    #[test]
    fn server_error_numbers_by_kind() {
        assert_eq!(server_error_kind(2627), ServerErrorKind::Duplicate);
        assert_eq!(server_error_kind(2601), ServerErrorKind::Duplicate);
        assert_eq!(server_error_kind(547), ServerErrorKind::Check);
        for other in [208, 1934, 2628, 8152, 50000] {
            assert_eq!(server_error_kind(other), ServerErrorKind::Other, "{other}");
        }
    }

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
