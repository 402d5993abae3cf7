//! Oracle: one user (schema) per test on the server at `DOCKET_ORACLE_URL`, whose user must
//! be allowed to create and drop users (there is no throwaway Oracle from local binaries;
//! without the URL the live suite is not compiled, see `tests/compat.rs`).

use super::unique_name;
use crate::harness::{
    not_run, set_literal, table_sql, DbSchedulerTypes, Foreign, Harness, Space, REJECTED,
};
use diesel::connection::SimpleConnection;
use diesel::Connection;
use diesel_oci::OciConnection;
use docket_core::dialect::Rendered;
use docket_core::{ExecutionKey, Store, StoreConfig, TableName};
use docket_oracle::OracleOptions;
use std::sync::Arc;
use std::time::Duration;

/// The Oracle harness.
#[derive(Debug, Clone, Copy)]
pub struct Oracle;

const NAME: &str = "oracle";

/// The environment variable naming the server.
pub const URL_VAR: &str = "DOCKET_ORACLE_URL";

/// `oracle://user:password@rest` with user and password replaced.
pub fn with_user(url: &str, user: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("oracle", url));
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{user}:{password}@{host}")
}

fn admin_url() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| not_run(NAME, format!("{URL_VAR} is not set")))
}

fn admin() -> OciConnection {
    OciConnection::establish(&admin_url())
        .unwrap_or_else(|e| not_run(NAME, format!("cannot connect to {URL_VAR}: {e}")))
}

impl Harness for Oracle {
    fn name(&self) -> &'static str {
        NAME
    }

    fn migrations(&self) -> &'static [docket_core::migrate::MigrationFile] {
        docket_oracle::MIGRATIONS
    }

    fn space(&self) -> Box<dyn Space> {
        // Unquoted, so stored upper case: the URL's user name matches it case-insensitively.
        let user = unique_name().to_ascii_uppercase();
        let password = "Docket_test_1";
        let mut conn = admin();
        for sql in [
            format!("CREATE USER {user} IDENTIFIED BY \"{password}\" QUOTA UNLIMITED ON USERS"),
            format!("GRANT CREATE SESSION, CREATE TABLE TO {user}"),
        ] {
            conn.batch_execute(&sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        Box::new(OracleSpace {
            url: with_user(&admin_url(), &user, password),
            user,
        })
    }
}

struct OracleSpace {
    url: String,
    user: String,
}

impl OracleSpace {
    fn connect(&self, config: StoreConfig) -> docket_oracle::OracleStore {
        let options = OracleOptions {
            max_connections: 12,
            connection_timeout: Duration::from_secs(20),
            statement_cache: super::statement_cache(),
        };
        docket_oracle::connect_with(&self.url, config, &options)
            .unwrap_or_else(|e| not_run(NAME, format!("cannot open a pool: {e}")))
    }
}

impl Space for OracleSpace {
    /// `TIMESTAMP` columns take no session time zone: values are bound as UTC wall-clock
    /// values, so `_session_time_zone` changes nothing here.
    fn store(&self, config: StoreConfig, _session_time_zone: Option<&str>) -> Arc<dyn Store> {
        Arc::new(self.connect(config))
    }

    fn migrate(&self, config: &StoreConfig, up_to: Option<&str>) {
        let store = self.connect(config.clone());
        docket_oracle::migrate(&store, up_to).expect("migrations apply");
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    fn foreign(&self) -> Box<dyn Foreign> {
        super::foreign_on(&self.connect(StoreConfig::default()))
    }

    /// `oracle_tables.sql`, with `TIMESTAMP(6)` columns: the variant db-scheduler documents
    /// for `alwaysPersistTimestampInUTC` (its default `TIMESTAMP WITH TIME ZONE` is rejected by
    /// adoption: docket binds zone-less UTC values). The table name is quoted as docket quotes
    /// it (db-scheduler's DDL leaves it unquoted: upper case).
    fn db_scheduler_types(&self) -> DbSchedulerTypes {
        DbSchedulerTypes {
            time: "TIMESTAMP(6)",
            flag: "NUMBER(1, 0)",
            failures: "NUMBER(19, 0)",
            version: "NUMBER(19, 0)",
            not_null: &[],
            index_prefix: "scheduled_tasks_",
            ..DbSchedulerTypes::COMMON
        }
    }

    fn reject_updates(&self, table: &TableName, instance: &'static str) -> Vec<String> {
        let table = table_sql(&docket_oracle::OracleDialect, table);
        vec![format!(
            "CREATE TRIGGER reject_update BEFORE UPDATE ON {table} FOR EACH ROW \
             WHEN (OLD.task_instance = '{instance}') \
             BEGIN RAISE_APPLICATION_ERROR(-20001, '{REJECTED}'); END;"
        )]
    }

    /// A failure count beyond docket's 32 bits, which docket's `NUMBER(10)` column holds.
    fn poison(&self, table: &TableName, key: &ExecutionKey) -> (Vec<Rendered>, &'static str) {
        let column = "consecutive_failures";
        let update = set_literal(
            &docket_oracle::OracleDialect,
            table,
            key,
            column,
            "9999999999",
        );
        (vec![update], column)
    }
}

impl Drop for OracleSpace {
    fn drop(&mut self) {
        if let Ok(mut conn) = OciConnection::establish(&admin_url()) {
            let _ = conn.batch_execute(&format!("DROP USER {} CASCADE", self.user));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_user;

    #[test]
    fn user_is_replaced() {
        assert_eq!(
            with_user("oracle://system:pw@db:1521/FREEPDB1", "T1", "x"),
            "oracle://T1:x@db:1521/FREEPDB1"
        );
    }
}
