//! Migrations (Oracle SQL, templated by table through [`docket_core::migrate::plan`]), run by
//! diesel_migrations' harness on diesel-oci, which records them in its
//! `__DIESEL_SCHEMA_MIGRATIONS` table. OCI runs one statement per call, so each migration is
//! split into its statements ([`OracleFamily`](crate::OracleFamily) says so to the shared
//! connector). Oracle DDL commits implicitly: a migration that fails halfway leaves its earlier
//! statements applied.

use crate::OracleStore;
use docket_core::migrate::MigrationFile;
use docket_core::{StoreError, StoreInfo};

/// The migrations this backend ships, in order.
pub const MIGRATIONS: &[MigrationFile] = docket_core::migration_files!(through work_queue, "0007_lag_indexes", "0008_paused_tasks", "0009_limits");

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &OracleStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    store.migrate(up_to)
}
