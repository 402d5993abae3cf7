//! SQLite: one database file per test in its own temporary directory, removed with the space.
//! No server is needed (SQLite is compiled in), so this backend always runs.

use crate::harness::{set_literal, table_sql, DbSchedulerTypes, Foreign, Harness, Space, REJECTED};
use docket_core::dialect::Rendered;
use docket_core::{ExecutionKey, Store, StoreConfig, TableName};
use docket_sqlite::SqliteOptions;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

/// The SQLite harness.
#[derive(Debug, Clone, Copy)]
pub struct Sqlite;

impl Harness for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn migrations(&self) -> &'static [docket_core::migrate::MigrationFile] {
        docket_sqlite::MIGRATIONS
    }

    fn space(&self) -> Box<dyn Space> {
        let dir = tempfile::Builder::new()
            .prefix("docket-sqlite-")
            .tempdir()
            .unwrap_or_else(|e| panic!("creating a temporary directory failed: {e}"));
        let file = dir.path().join("docket.db");
        Box::new(SqliteSpace { _dir: dir, file })
    }
}

struct SqliteSpace {
    /// Deleted (with the database, its WAL and shared-memory files) when the space drops.
    _dir: TempDir,
    file: PathBuf,
}

impl SqliteSpace {
    fn connect(&self, config: StoreConfig) -> docket_sqlite::SqliteStore {
        let options = SqliteOptions {
            // The concurrency cases run 8 claimer threads on one store.
            max_connections: 12,
            connection_timeout: Duration::from_secs(20),
            busy_timeout: Duration::from_secs(20),
            statement_cache: super::statement_cache(),
        };
        let url = self.url();
        docket_sqlite::connect_with(&url, config, &options)
            .unwrap_or_else(|e| panic!("opening {url} failed: {e}"))
    }
}

impl Space for SqliteSpace {
    /// `session_time_zone` has no meaning here: SQLite has no session time zone, and docket
    /// stores instants as integer microseconds since the epoch, which no zone can shift.
    fn store(&self, config: StoreConfig, _session_time_zone: Option<&str>) -> Arc<dyn Store> {
        Arc::new(self.connect(config))
    }

    fn migrate(&self, config: &StoreConfig, up_to: Option<&str>) {
        let store = self.connect(config.clone());
        docket_sqlite::migrate(&store, up_to).expect("migrations apply");
    }

    fn url(&self) -> String {
        format!("sqlite://{}", self.file.display())
    }

    fn foreign(&self) -> Box<dyn Foreign> {
        super::foreign_on(&self.connect(StoreConfig::default()))
    }

    /// `sqlite_tables.sql`.
    fn db_scheduler_types(&self) -> DbSchedulerTypes {
        DbSchedulerTypes {
            flag: "BIT",
            not_null: &[],
            ..DbSchedulerTypes::COMMON
        }
    }

    fn reject_updates(&self, table: &TableName, instance: &'static str) -> Vec<String> {
        let table = table_sql(&docket_sqlite::SqliteDialect, table);
        vec![format!(
            "CREATE TRIGGER reject_update BEFORE UPDATE ON {table} FOR EACH ROW \
             WHEN OLD.task_instance = '{instance}' BEGIN SELECT RAISE(ABORT, '{REJECTED}'); END"
        )]
    }

    /// An integer time (docket stores microseconds since the epoch) beyond the years chrono
    /// holds: SQLite stores any 64-bit integer.
    fn poison(&self, table: &TableName, key: &ExecutionKey) -> (Vec<Rendered>, &'static str) {
        let column = "execution_time";
        let far = "-9223372036854775807";
        (
            vec![set_literal(
                &docket_sqlite::SqliteDialect,
                table,
                key,
                column,
                far,
            )],
            column,
        )
    }
}
