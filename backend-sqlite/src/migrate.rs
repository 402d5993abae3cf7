//! Embedded migrations, run through diesel_migrations' harness. The SQL files are templates:
//! `{table}` becomes the validated, quoted table name and `{name}` its unqualified name, so any
//! configured table can be migrated. SQLite adds one: `{schema}` is the quoted schema (attached
//! database) followed by `.`, or nothing, because SQLite qualifies an index's *name* with the
//! schema and requires the table after `ON` to be unqualified
//! (`CREATE INDEX "main"."t_idx" ON "t" (...)`). Versions are recorded per table
//! (`0001_base@jobs`), so several docket tables can share one database file.

use crate::dialect::SqliteDialect;
use crate::error::migration;
use crate::SqliteStore;
use diesel::connection::BoxableConnection;
use diesel::migration::{
    Migration, MigrationMetadata, MigrationName, MigrationSource, MigrationVersion,
};
use diesel::sqlite::Sqlite;
use diesel_migrations::MigrationHarness;
use docket_core::dialect::Dialect;
use docket_core::{Store, StoreError, TableName};
use std::fmt;

/// `(name, up, down)` of every migration, in order.
const FILES: &[(&str, &str, &str)] = &[
    (
        "0001_base",
        include_str!("../migrations/0001_base/up.sql"),
        include_str!("../migrations/0001_base/down.sql"),
    ),
    (
        "0002_priority",
        include_str!("../migrations/0002_priority/up.sql"),
        include_str!("../migrations/0002_priority/down.sql"),
    ),
];

/// Names of the migrations this backend ships, in order.
pub fn migration_names() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(name, _, _)| *name)
}

struct TableMigration {
    version: String,
    up: String,
    down: String,
}

impl fmt::Display for TableMigration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.version)
    }
}

impl MigrationName for TableMigration {
    fn version(&self) -> MigrationVersion<'_> {
        MigrationVersion::from(self.version.as_str())
    }
}

impl MigrationMetadata for TableMigration {}

impl Migration<Sqlite> for TableMigration {
    fn run(&self, conn: &mut dyn BoxableConnection<Sqlite>) -> diesel::migration::Result<()> {
        Ok(conn.batch_execute(&self.up)?)
    }

    fn revert(&self, conn: &mut dyn BoxableConnection<Sqlite>) -> diesel::migration::Result<()> {
        Ok(conn.batch_execute(&self.down)?)
    }

    fn metadata(&self) -> &dyn MigrationMetadata {
        self
    }

    fn name(&self) -> &dyn MigrationName {
        self
    }
}

struct TableMigrations {
    migrations: Vec<(String, String, String)>,
}

impl TableMigrations {
    fn new(table: &TableName, up_to: Option<&str>) -> Self {
        let d = SqliteDialect;
        let quoted = match table.schema() {
            Some(s) => format!("{}.{}", d.quote_ident(s), d.quote_ident(table.table())),
            None => d.quote_ident(table.table()),
        };
        let schema = table
            .schema()
            .map(|s| format!("{}.", d.quote_ident(s)))
            .unwrap_or_default();
        let fill = |sql: &str| {
            sql.replace("{table}", &quoted)
                .replace("{schema}", &schema)
                .replace("{name}", table.table())
        };
        let count = up_to
            .and_then(|last| FILES.iter().position(|(n, _, _)| *n == last))
            .map_or(FILES.len(), |i| i + 1);
        let migrations = FILES[..count]
            .iter()
            .map(|(name, up, down)| (format!("{name}@{table}"), fill(up), fill(down)))
            .collect();
        Self { migrations }
    }
}

impl MigrationSource<Sqlite> for TableMigrations {
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<Sqlite>>>> {
        Ok(self
            .migrations
            .iter()
            .map(|(version, up, down)| {
                Box::new(TableMigration {
                    version: version.clone(),
                    up: up.clone(),
                    down: down.clone(),
                }) as Box<dyn Migration<Sqlite>>
            })
            .collect())
    }
}

/// diesel records versions in a `VARCHAR(50)`.
const MAX_VERSION_LEN: usize = 50;

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &SqliteStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    if let Some(name) = up_to {
        if !migration_names().any(|n| n == name) {
            return Err(StoreError::Database(format!(
                "unknown migration {name:?}; known: {}",
                migration_names().collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let table = &store.config().table;
    let longest_name = migration_names().map(str::len).max().unwrap_or(0);
    if longest_name + 1 + table.to_string().len() > MAX_VERSION_LEN {
        return Err(StoreError::Database(format!(
            "table name {table} is too long for migration bookkeeping (at most {} characters)",
            MAX_VERSION_LEN - longest_name - 1
        )));
    }
    let mut conn = store.connector().connection()?;
    let applied = conn
        .run_pending_migrations(TableMigrations::new(table, up_to))
        .map_err(migration)?;
    Ok(applied.iter().map(ToString::to_string).collect())
}
