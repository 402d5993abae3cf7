//! Embedded migrations: SQLite SQL, templated by table through [`docket_core::migrate::plan`],
//! run by diesel_migrations' harness. SQLite adds one placeholder: `{schema}` is the quoted
//! schema (attached database) followed by `.`, or nothing, because SQLite qualifies an index's
//! *name* with the schema and wants the table after `ON` unqualified
//! (`CREATE INDEX "main"."t_idx" ON "t" (...)`).

use crate::dialect::SqliteDialect;
use crate::SqliteStore;
use docket_core::dialect::Dialect;
use docket_core::migrate::{plan, MigrationFile, TableMigration};
use docket_core::{Store, StoreError};

/// The migrations this backend ships, in order.
pub const MIGRATIONS: &[MigrationFile] =
    docket_core::migration_files!("0001_base", "0002_priority");

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &SqliteStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    let table = &store.config().table;
    let schema = table
        .schema()
        .map(|s| format!("{}.", SqliteDialect.quote_ident(s)))
        .unwrap_or_default();
    let steps = plan(MIGRATIONS, &SqliteDialect, table, up_to)?
        .into_iter()
        .map(|m| TableMigration {
            up: m.up.replace("{schema}", &schema),
            down: m.down.replace("{schema}", &schema),
            ..m
        })
        .collect();
    docket_diesel::run_migrations(&mut *store.connector().connection()?, steps)
}
