//! Embedded migrations: SQLite SQL, templated by table through [`docket_core::migrate::plan`],
//! run by diesel_migrations' harness. SQLite adds two placeholders, because it qualifies an
//! index's *name* with the schema and wants the table after `ON` unqualified
//! (`CREATE INDEX "main"."t_idx" ON "t" (...)`): `{schema}` is the quoted schema (attached
//! database) followed by `.`, or nothing; `{assignments_name}` the quoted, unqualified name of
//! the work-queue assignments table.

use crate::dialect::SqliteDialect;
use crate::SqliteStore;
use docket_core::dialect::Dialect;
use docket_core::migrate::{plan, MigrationFile, TableMigration};
use docket_core::{Store, StoreError};

/// The migrations this backend ships, in order.
pub const MIGRATIONS: &[MigrationFile] = docket_core::migration_files!(
    "0001_base",
    "0002_priority",
    "0003_ordering",
    "0004_work_queue"
);

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &SqliteStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    let table = &store.config().table;
    let schema = table
        .schema()
        .map(|s| format!("{}.", SqliteDialect.quote_ident(s)))
        .unwrap_or_default();
    let assignments = SqliteDialect.quote_ident(table.assignments().table());
    let fill = |sql: String| {
        sql.replace("{schema}", &schema)
            .replace("{assignments_name}", &assignments)
    };
    let steps = plan(MIGRATIONS, &SqliteDialect, table, up_to)?
        .into_iter()
        .map(|m| TableMigration {
            up: fill(m.up),
            down: fill(m.down),
            ..m
        })
        .collect();
    docket_diesel::run_migrations(&mut *store.connector().connection()?, steps)
}
