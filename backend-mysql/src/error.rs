//! Maps diesel and r2d2 errors onto [`StoreError`].

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use docket_core::StoreError;

pub(crate) fn db(e: DieselError) -> StoreError {
    StoreError::Database(e.to_string())
}

pub(crate) fn pool(e: r2d2::Error) -> StoreError {
    StoreError::Connection(e.to_string())
}

pub(crate) fn migration(e: Box<dyn std::error::Error + Send + Sync>) -> StoreError {
    StoreError::Database(format!("migration failed: {e}"))
}

/// True for a duplicate-key error (ER_DUP_ENTRY 1062 and its variants, which diesel reports as
/// [`DatabaseErrorKind::UniqueViolation`]).
pub(crate) fn is_duplicate_key(e: &DieselError) -> bool {
    matches!(
        e,
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)
    )
}

/// Carries a store error through diesel's transaction closure.
pub(crate) enum TxError {
    Store(StoreError),
    Diesel(DieselError),
}

impl From<DieselError> for TxError {
    fn from(e: DieselError) -> Self {
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
