//! Migrations (Oracle SQL, templated by table through [`docket_core::migrate::plan`]), run by
//! diesel_migrations' harness on diesel-oci, which records them in its
//! `__DIESEL_SCHEMA_MIGRATIONS` table. OCI runs one statement per call, so each migration is
//! split into its statements ([`docket_core::migrate::split_statements`]). Oracle DDL commits
//! implicitly: a migration that fails halfway leaves its earlier statements applied.

use crate::OracleStore;
use docket_core::migrate::{plan, MigrationFile};
use docket_core::store::sql::SqlConnector;
use docket_core::{Store, StoreError};

/// The migrations this backend ships, in order.
pub const MIGRATIONS: &[MigrationFile] = &[
    MigrationFile {
        name: "0001_base",
        up: include_str!("../migrations/0001_base/up.sql"),
        down: include_str!("../migrations/0001_base/down.sql"),
    },
    MigrationFile {
        name: "0002_priority",
        up: include_str!("../migrations/0002_priority/up.sql"),
        down: include_str!("../migrations/0002_priority/down.sql"),
    },
];

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &OracleStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    let dialect = store.connector().dialect();
    let steps = plan(MIGRATIONS, dialect, &store.config().table, up_to)?;
    docket_diesel::run_migrations_by_statement(&mut *store.connector().connection()?, steps)
}
