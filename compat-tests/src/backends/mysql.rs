//! MySQL/MariaDB: one database per test on the server from [`crate::servers::mysql`].

use super::unique_name;
use crate::harness::{
    literal, not_run, set_literal, table_sql, DbSchedulerTypes, Foreign, Harness, Space, REJECTED,
};
use crate::servers::mysql::SERVER;
use diesel::connection::SimpleConnection;
use diesel::{Connection, MysqlConnection};
use docket_core::dialect::Rendered;
use docket_core::{ExecutionKey, Store, StoreConfig, TableName};
use docket_mysql::MysqlOptions;
use std::sync::Arc;
use std::time::Duration;

/// The MySQL/MariaDB harness.
#[derive(Debug, Clone, Copy)]
pub struct Mysql;

const NAME: &str = "mysql";

/// `url` with its database path replaced by `database` (`None`: no database), query kept.
fn with_database(url: &str, database: Option<&str>) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = base[..authority_end].to_owned();
    if let Some(db) = database {
        out.push('/');
        out.push_str(db);
    }
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

impl Harness for Mysql {
    fn name(&self) -> &'static str {
        NAME
    }

    fn migrations(&self) -> &'static [docket_core::migrate::MigrationFile] {
        docket_mysql::MIGRATIONS
    }

    fn space(&self) -> Box<dyn Space> {
        let admin = with_database(
            SERVER.admin_url().unwrap_or_else(|e| not_run(NAME, e)),
            None,
        );
        let database = unique_name();
        let mut conn = MysqlConnection::establish(&admin)
            .unwrap_or_else(|e| not_run(NAME, format!("cannot connect to {admin}: {e}")));
        conn.batch_execute(&format!("CREATE DATABASE `{database}`"))
            .unwrap_or_else(|e| panic!("create database {database}: {e}"));
        Box::new(MysqlSpace { admin, database })
    }
}

struct MysqlSpace {
    admin: String,
    database: String,
}

impl MysqlSpace {
    fn connect(&self, config: StoreConfig, time_zone: Option<&str>) -> docket_mysql::MysqlStore {
        let options = MysqlOptions {
            max_connections: 12,
            connection_timeout: Duration::from_secs(20),
            session_time_zone: time_zone.map(str::to_owned),
            statement_cache: super::statement_cache(),
            max_statement_time: None,
        };
        docket_mysql::connect_with(&self.url(), config, &options)
            .unwrap_or_else(|e| not_run(NAME, format!("cannot open a pool: {e}")))
    }
}

impl Space for MysqlSpace {
    fn store(&self, config: StoreConfig, session_time_zone: Option<&str>) -> Arc<dyn Store> {
        Arc::new(self.connect(config, session_time_zone))
    }

    fn migrate(&self, config: &StoreConfig, up_to: Option<&str>) {
        let store = self.connect(config.clone(), None);
        docket_mysql::migrate(&store, up_to).expect("migrations apply");
    }

    fn url(&self) -> String {
        with_database(&self.admin, Some(&self.database))
    }

    fn foreign(&self) -> Box<dyn Foreign> {
        self.foreign_in(None)
    }

    fn foreign_in(&self, time_zone: Option<&str>) -> Box<dyn Foreign> {
        super::foreign_on(&self.connect(StoreConfig::default(), time_zone))
    }

    /// `mysql_tables.sql` (`mariadb_tables.sql` is the same).
    fn db_scheduler_types(&self) -> DbSchedulerTypes {
        DbSchedulerTypes {
            time: "DATETIME(6)",
            ..DbSchedulerTypes::COMMON
        }
    }

    /// Today's `DATETIME(6)` DDL, and the `TIMESTAMP(6)` one db-scheduler shipped for years
    /// (most production tables have it), written by a node whose session is not in UTC.
    fn db_scheduler_variants(&self) -> Vec<DbSchedulerTypes> {
        vec![
            self.db_scheduler_types(),
            DbSchedulerTypes {
                time: "TIMESTAMP(6)",
                node_time_zone: Some("-05:00"),
                ..DbSchedulerTypes::COMMON
            },
        ]
    }

    fn reject_updates(&self, table: &TableName, instance: &'static str) -> Vec<String> {
        let table = table_sql(&docket_mysql::MysqlDialect::MARIADB, table);
        // One compound statement: the server parses its body (no client-side delimiter).
        vec![format!(
            "CREATE TRIGGER reject_update BEFORE UPDATE ON {table} FOR EACH ROW BEGIN \
             IF OLD.task_instance = '{instance}' THEN SIGNAL SQLSTATE '45000' \
             SET MESSAGE_TEXT = '{REJECTED}'; END IF; END"
        )]
    }

    /// The zero date, which MySQL and MariaDB store outside `NO_ZERO_DATE` mode (a legacy
    /// favourite) and sort first, but which is no date.
    fn poison(&self, table: &TableName, key: &ExecutionKey) -> (Vec<Rendered>, &'static str) {
        let column = "execution_time";
        let zero = "'0000-00-00 00:00:00'";
        let update = set_literal(
            &docket_mysql::MysqlDialect::MARIADB,
            table,
            key,
            column,
            zero,
        );
        (vec![literal("SET SESSION sql_mode = ''"), update], column)
    }
}

impl Drop for MysqlSpace {
    fn drop(&mut self) {
        if let Ok(mut conn) = MysqlConnection::establish(&self.admin) {
            let _ = conn.batch_execute(&format!("DROP DATABASE IF EXISTS `{}`", self.database));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_is_replaced_and_query_kept() {
        assert_eq!(
            with_database("mysql://root@127.0.0.1:3306", Some("d")),
            "mysql://root@127.0.0.1:3306/d"
        );
        assert_eq!(
            with_database("mysql://u:p@h/app?ssl_mode=disabled", Some("d")),
            "mysql://u:p@h/d?ssl_mode=disabled"
        );
        assert_eq!(with_database("mysql://h/app", None), "mysql://h");
    }
}
