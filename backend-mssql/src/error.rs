//! Driver errors of this backend, and their mapping onto [`StoreError`].

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
}

impl MssqlError {
    /// True when the server rejected a statement (the connection is still usable).
    pub(crate) fn is_server_error(&self) -> bool {
        matches!(self, MssqlError::Driver(tiberius::error::Error::Server(_)))
    }

    /// True for a duplicate-key error (2601, 2627).
    pub(crate) fn is_duplicate_key(&self) -> bool {
        match self {
            MssqlError::Driver(tiberius::error::Error::Server(e)) => {
                DUPLICATE_KEY.contains(&e.code())
            }
            _ => false,
        }
    }
}

impl From<MssqlError> for StoreError {
    fn from(e: MssqlError) -> Self {
        match e {
            MssqlError::Url(_) | MssqlError::Io(_) | MssqlError::PoolTimeout(_) => {
                StoreError::Connection(e.to_string())
            }
            MssqlError::Driver(ref d) => match d {
                tiberius::error::Error::Server(_) => StoreError::Database(e.to_string()),
                _ => StoreError::Connection(e.to_string()),
            },
        }
    }
}
