//! SQL Server: one database per test on the server at `DOCKET_MSSQL_URL` (there is no
//! throwaway SQL Server from local binaries; without the URL the live suite is not compiled,
//! see `tests/compat.rs`).

use super::unique_name;
use crate::harness::{
    literal, not_run, set_literal, table_sql, DbSchedulerTypes, Foreign, Harness, Space, REJECTED,
};
use docket_core::dialect::Rendered;
use docket_core::{ExecutionKey, Store, StoreConfig, TableName};
use docket_mssql::MssqlOptions;
use std::sync::Arc;
use std::time::Duration;

/// The SQL Server harness.
#[derive(Debug, Clone, Copy)]
pub struct Mssql;

const NAME: &str = "mssql";

/// The environment variable naming the server.
pub const URL_VAR: &str = "DOCKET_MSSQL_URL";

/// `url` (JDBC-style properties after the scheme) with its database property replaced.
pub fn with_database(url: &str, database: &str) -> String {
    let mut parts: Vec<&str> = url
        .split(';')
        .filter(|p| {
            let key = p
                .split('=')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            key != "database" && key != "databasename"
        })
        .collect();
    let db = format!("database={database}");
    parts.push(&db);
    parts.join(";")
}

fn admin_url() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| not_run(NAME, format!("{URL_VAR} is not set")))
}

fn admin() -> docket_mssql::MssqlStore {
    docket_mssql::connect(&admin_url(), StoreConfig::default())
        .unwrap_or_else(|e| not_run(NAME, format!("cannot connect to {URL_VAR}: {e}")))
}

impl Harness for Mssql {
    fn name(&self) -> &'static str {
        NAME
    }

    fn migrations(&self) -> &'static [docket_core::migrate::MigrationFile] {
        docket_mssql::MIGRATIONS
    }

    fn space(&self) -> Box<dyn Space> {
        let database = unique_name();
        create_database(&database);
        Box::new(MssqlSpace {
            url: with_database(&admin_url(), &database),
            database,
        })
    }
}

struct MssqlSpace {
    url: String,
    database: String,
}

impl MssqlSpace {
    fn connect(&self, config: StoreConfig) -> docket_mssql::MssqlStore {
        let options = MssqlOptions {
            max_connections: 12,
            connection_timeout: Duration::from_secs(20),
        };
        docket_mssql::connect_with(&self.url, config, &options)
            .unwrap_or_else(|e| not_run(NAME, format!("cannot open a pool: {e}")))
    }
}

impl Space for MssqlSpace {
    /// SQL Server has no session time zone: `DATETIME2` values are bound as UTC whatever the
    /// client's zone, so `_session_time_zone` changes nothing here.
    fn store(&self, config: StoreConfig, _session_time_zone: Option<&str>) -> Arc<dyn Store> {
        Arc::new(self.connect(config))
    }

    fn migrate(&self, config: &StoreConfig, up_to: Option<&str>) {
        let store = self.connect(config.clone());
        docket_mssql::migrate(&store, up_to).expect("migrations apply");
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    fn foreign(&self) -> Box<dyn Foreign> {
        Box::new(self.connect(StoreConfig::default()).connector().clone())
    }

    /// `mssql_tables.sql`.
    fn db_scheduler_types(&self) -> DbSchedulerTypes {
        DbSchedulerTypes {
            name: "VARCHAR(250)",
            instance: "VARCHAR(250)",
            data: "VARBINARY(MAX)",
            time: "DATETIMEOFFSET",
            flag: "BIT",
            not_null: &["task_name", "task_instance", "execution_time", "version"],
            primary_key: "task_instance, task_name",
            ..DbSchedulerTypes::COMMON
        }
    }

    fn reject_updates(&self, table: &TableName, instance: &'static str) -> Vec<String> {
        let table = table_sql(&docket_mssql::MssqlDialect, table);
        // AFTER (SQL Server has no BEFORE): the rollback undoes the update, THROW reports it.
        vec![format!(
            "CREATE TRIGGER reject_update ON {table} AFTER UPDATE AS \
             IF EXISTS (SELECT 1 FROM deleted WHERE task_instance = '{instance}') \
             BEGIN ROLLBACK; THROW 50000, '{REJECTED}', 1; END"
        )]
    }

    /// Every SQL Server value of docket's columns decodes, so the row gets a NULL version
    /// (after the column is made nullable, as in db-scheduler tables edited by hand).
    fn poison(&self, table: &TableName, key: &ExecutionKey) -> (Vec<Rendered>, &'static str) {
        // Babelfish refuses `NULL` here, and without it keeps the column NOT NULL: no form
        // makes the column nullable there (docs/SQLSERVER.md, named exception).
        let alter = format!(
            "ALTER TABLE {} ALTER COLUMN version BIGINT NULL",
            table_sql(&docket_mssql::MssqlDialect, table)
        );
        let update = set_literal(&docket_mssql::MssqlDialect, table, key, "version", "NULL");
        (vec![literal(&alter), update], "version")
    }
}

/// `CREATE DATABASE`, one at a time and tried again a few times: Babelfish fails concurrent
/// ones with "tuple concurrently updated" (its catalogue rows), which the suite's parallel
/// tests meet at once; SQL Server creates them side by side.
fn create_database(database: &str) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let admin = admin();
    let sql = format!("CREATE DATABASE [{database}]");
    let mut tries = 0;
    while let Err(e) = admin.connector().batch_execute(&sql) {
        tries += 1;
        assert!(tries < 5, "create database {database}: {e}");
        std::thread::sleep(Duration::from_millis(200 * tries));
    }
}

impl Drop for MssqlSpace {
    /// Ends the other sessions first where the server can (`SINGLE_USER WITH ROLLBACK
    /// IMMEDIATE`); Babelfish cannot, and drops the database alone once its sessions are gone.
    fn drop(&mut self) {
        if let Ok(store) = docket_mssql::connect(&admin_url(), StoreConfig::default()) {
            let db = &self.database;
            let single = format!("ALTER DATABASE [{db}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE");
            let _ = store.connector().batch_execute(&single);
            let _ = store
                .connector()
                .batch_execute(&format!("DROP DATABASE [{db}]"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_property_is_replaced() {
        assert_eq!(
            with_database("mssql://h:1433;databaseName=app;user=sa", "d"),
            "mssql://h:1433;user=sa;database=d"
        );
        assert_eq!(with_database("mssql://h", "d"), "mssql://h;database=d");
    }
}
