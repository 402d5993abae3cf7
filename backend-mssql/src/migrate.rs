//! Versioned migrations (T-SQL, templated by table through [`docket_core::migrate::plan`]),
//! recorded per table in [`VERSION_TABLE`]. Each migration runs in one transaction together
//! with its version row (SQL Server DDL is transactional), so a failed migration leaves
//! nothing behind and is retried whole.

use crate::dialect::MssqlDialect;
use crate::error::MssqlError;
use crate::MssqlStore;
use docket_core::dialect::{Rendered, SqlWriter};
use docket_core::migrate::{split_statements, MigrationFile, TableMigration};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::{StoreError, StoreInfo};

/// The migrations this backend ships, in order.
pub const MIGRATIONS: &[MigrationFile] = docket_core::migration_files!(through work_queue, "0007_lag_indexes", "0008_paused_tasks", "0009_limits");

/// Where applied versions (`0001_base@scheduled_tasks`) are recorded, in the login's default
/// schema.
pub const VERSION_TABLE: &str = "docket_schema_migrations";

fn create_version_table_if_missing(connector: &impl SqlConnector) -> Result<(), StoreError> {
    let sql = format!(
        "IF OBJECT_ID(N'{VERSION_TABLE}', N'U') IS NULL CREATE TABLE [{VERSION_TABLE}] \
         (version NVARCHAR(50) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY, \
         run_on DATETIME2(6) NOT NULL DEFAULT SYSUTCDATETIME())"
    );
    connector.with_session(&mut |s| s.execute_unprepared(&sql))
}

/// Applies pending migrations to the store's table, up to and including `up_to`
/// (a name such as `0001_base`; `None` = all). Returns the versions applied now.
pub fn migrate(store: &MssqlStore, up_to: Option<&str>) -> Result<Vec<String>, StoreError> {
    store.migrate(up_to)
}

/// What [`SqlConnector::recorded`] reads for this backend: every version in
/// [`VERSION_TABLE`] (created if missing, as [`run`] does).
pub(crate) fn recorded(connector: &impl SqlConnector) -> Result<Vec<String>, StoreError> {
    create_version_table_if_missing(connector)?;
    let rows = connector.with_session(&mut |s| {
        s.query(&Rendered::text(format!(
            "SELECT version AS name FROM [{VERSION_TABLE}]"
        )))
    })?;
    rows.into_iter().map(|mut r| r.text("name")).collect()
}

/// What [`SqlConnector::apply`] runs for this backend: the planned `steps`, each in a
/// transaction with its version row.
pub(crate) fn run(
    connector: &impl SqlConnector,
    steps: Vec<TableMigration>,
) -> Result<Vec<String>, StoreError> {
    create_version_table_if_missing(connector)?;
    let mut applied = Vec::new();
    for step in steps {
        // `... WHERE version = @P1` / `... VALUES (@P1)`, the version bound.
        let with_version = |head: String, tail: &str| {
            let mut w = SqlWriter::new(&MssqlDialect);
            w.push(&head).bind(step.version.as_str()).push(tail);
            w.finish()
        };
        let done = connector.in_transaction(&mut |s: &mut dyn SqlSession| {
            // Serializes concurrent migrators of the same table: the second waits, then sees
            // the version row.
            let existing = s.query(&with_version(
                format!(
                    "SELECT version AS name FROM [{VERSION_TABLE}] WITH (UPDLOCK, HOLDLOCK) \
                     WHERE version = "
                ),
                "",
            ))?;
            if !existing.is_empty() {
                return Ok(false);
            }
            for stmt in split_statements(&step.up) {
                s.execute(&Rendered::text(stmt)).map_err(|source| {
                    StoreError::from(MssqlError::Migration {
                        version: step.version.clone(),
                        source,
                    })
                })?;
            }
            s.execute(&with_version(
                format!("INSERT INTO [{VERSION_TABLE}] (version) VALUES ("),
                ")",
            ))?;
            Ok(true)
        })?;
        if done {
            applied.push(step.version);
        }
    }
    Ok(applied)
}
