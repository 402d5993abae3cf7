//! Embedded migrations: PostgreSQL SQL, templated by table through
//! [`docket_core::migrate::plan`], run by diesel_migrations' harness.

use crate::PgStore;
use docket_core::migrate::MigrationFile;
use docket_core::{StoreError, StoreInfo};

/// The migrations this backend ships, in order.
pub const MIGRATIONS: &[MigrationFile] = docket_core::migration_files!(through due_index, "0006_partial_indexes", "0007_lag_indexes", "0008_paused_tasks", "0009_limits");

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &PgStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    store.migrate(up_to)
}
