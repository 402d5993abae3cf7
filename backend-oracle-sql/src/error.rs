//! Oracle-specific error handling (the shared mapping is in `docket_diesel`).

use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// True for ORA-00001 (unique constraint violated). diesel-oci reports it as
/// [`DatabaseErrorKind::UniqueViolation`]; the message check covers driver versions that
/// report it as an unknown database error.
pub(crate) fn is_duplicate_key(e: &DieselError) -> bool {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => true,
        DieselError::DatabaseError(_, info) => info.message().contains("ORA-00001"),
        _ => false,
    }
}
