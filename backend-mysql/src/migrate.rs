//! Embedded migrations (MySQL SQL, templated by table through
//! [`docket_core::migrate::plan`]; `{collation}` is filled with the server flavor's binary
//! no-pad collation), run by diesel_migrations' harness. Index names are per table in MySQL,
//! so the templates need no `{name}` prefix.

use crate::error::migration;
use crate::MysqlStore;
use diesel::connection::BoxableConnection;
use diesel::migration::{
    Migration, MigrationMetadata, MigrationName, MigrationSource, MigrationVersion,
};
use diesel::mysql::Mysql;
use diesel_migrations::MigrationHarness;
use docket_core::migrate::{plan, MigrationFile, TableMigration};
use docket_core::{Store, StoreError};
use std::fmt;

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

/// diesel's view of one [`TableMigration`].
struct Step(TableMigration);

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.version)
    }
}

impl MigrationName for Step {
    fn version(&self) -> MigrationVersion<'_> {
        MigrationVersion::from(self.0.version.as_str())
    }
}

impl MigrationMetadata for Step {}

impl Migration<Mysql> for Step {
    fn run(&self, conn: &mut dyn BoxableConnection<Mysql>) -> diesel::migration::Result<()> {
        Ok(conn.batch_execute(&self.0.up)?)
    }

    fn revert(&self, conn: &mut dyn BoxableConnection<Mysql>) -> diesel::migration::Result<()> {
        Ok(conn.batch_execute(&self.0.down)?)
    }

    fn metadata(&self) -> &dyn MigrationMetadata {
        self
    }

    fn name(&self) -> &dyn MigrationName {
        self
    }
}

struct Steps(Vec<TableMigration>);

impl MigrationSource<Mysql> for Steps {
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<Mysql>>>> {
        Ok(self
            .0
            .iter()
            .map(|m| Box::new(Step(m.clone())) as Box<dyn Migration<Mysql>>)
            .collect())
    }
}

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &MysqlStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    let dialect = store.connector().mysql_dialect();
    let collation = dialect.flavor().key_collation();
    let steps = plan(MIGRATIONS, dialect, &store.config().table, up_to)?
        .into_iter()
        .map(|m| TableMigration {
            up: m.up.replace("{collation}", collation),
            down: m.down.replace("{collation}", collation),
            ..m
        })
        .collect();
    let mut conn = store.connector().connection()?;
    let applied = conn
        .run_pending_migrations(Steps(steps))
        .map_err(migration)?;
    Ok(applied.iter().map(ToString::to_string).collect())
}
