//! Maps diesel and r2d2 errors onto [`StoreError`].

use docket_core::StoreError;

pub(crate) fn db(e: diesel::result::Error) -> StoreError {
    StoreError::Database(e.to_string())
}

pub(crate) fn pool(e: r2d2::Error) -> StoreError {
    StoreError::Connection(e.to_string())
}

pub(crate) fn migration(e: Box<dyn std::error::Error + Send + Sync>) -> StoreError {
    StoreError::Database(format!("migration failed: {e}"))
}

/// A stored timestamp (microseconds since the epoch) that chrono cannot represent.
pub(crate) fn timestamp(column: &'static str, micros: i64) -> StoreError {
    StoreError::Decode {
        column,
        reason: format!("{micros} microseconds since the epoch is out of range"),
    }
}

/// Carries a store error through diesel's transaction closure.
pub(crate) enum TxError {
    Store(StoreError),
    Diesel(diesel::result::Error),
}

impl From<diesel::result::Error> for TxError {
    fn from(e: diesel::result::Error) -> Self {
        TxError::Diesel(e)
    }
}

impl From<TxError> for StoreError {
    fn from(e: TxError) -> Self {
        match e {
            TxError::Store(s) => s,
            TxError::Diesel(d) => db(d),
        }
    }
}
