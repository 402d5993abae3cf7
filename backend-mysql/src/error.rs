//! MySQL-specific error handling (the shared mapping is in `docket_diesel`).

use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// True for a duplicate-key error (ER_DUP_ENTRY 1062 and its variants, which diesel reports as
/// [`DatabaseErrorKind::UniqueViolation`]).
pub(crate) fn is_duplicate_key(e: &DieselError) -> bool {
    matches!(
        e,
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)
    )
}
