//! SQLite-specific error mapping (the shared mapping is in `docket_diesel`).

use docket_core::StoreError;

/// A stored timestamp (microseconds since the epoch) that chrono cannot represent.
pub(crate) fn timestamp(column: &'static str, micros: i64) -> StoreError {
    StoreError::Decode {
        column,
        reason: format!("{micros} microseconds since the epoch is out of range"),
    }
}
