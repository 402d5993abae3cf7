//! PostgreSQL: one schema per test on the server from [`crate::servers::postgres`], selected
//! through the connection's `search_path`.

use super::unique_name;
use crate::harness::{
    not_run, set_literal, table_sql, DbSchedulerTypes, Foreign, Harness, Space, REJECTED,
};
use crate::servers::postgres::SERVER;
use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use docket_core::dialect::Rendered;
use docket_core::{ExecutionKey, Store, StoreConfig, TableName};
use docket_postgres::PgOptions;
use std::sync::Arc;
use std::time::Duration;

/// The PostgreSQL harness.
#[derive(Debug, Clone, Copy)]
pub struct Postgres;

const NAME: &str = "postgres";

impl Harness for Postgres {
    fn name(&self) -> &'static str {
        NAME
    }

    fn migrations(&self) -> &'static [docket_core::migrate::MigrationFile] {
        docket_postgres::MIGRATIONS
    }

    fn space(&self) -> Box<dyn Space> {
        let admin = SERVER.admin_url().unwrap_or_else(|e| not_run(NAME, e));
        let schema = unique_name();
        let mut conn = PgConnection::establish(admin)
            .unwrap_or_else(|e| not_run(NAME, format!("cannot connect to {admin}: {e}")));
        conn.batch_execute(&format!("CREATE SCHEMA \"{schema}\""))
            .unwrap_or_else(|e| panic!("create schema {schema}: {e}"));
        Box::new(PgSpace {
            admin: admin.to_owned(),
            schema,
        })
    }
}

struct PgSpace {
    admin: String,
    schema: String,
}

impl PgSpace {
    /// The admin URL with libpq `options` setting search_path (and the time zone).
    fn url(&self, time_zone: Option<&str>) -> String {
        let mut options = format!("-c search_path={}", self.schema);
        if let Some(tz) = time_zone {
            options.push_str(&format!(" -c TimeZone={tz}"));
        }
        let encoded = options
            .replace('%', "%25")
            .replace(' ', "%20")
            .replace('=', "%3D")
            .replace('/', "%2F");
        let sep = if self.admin.contains('?') { '&' } else { '?' };
        format!("{}{sep}options={encoded}", self.admin)
    }

    fn connect(&self, config: StoreConfig, time_zone: Option<&str>) -> docket_postgres::PgStore {
        let options = PgOptions {
            max_connections: 12,
            connection_timeout: Duration::from_secs(20),
            statement_cache: super::statement_cache(),
            statement_timeout: None,
        };
        docket_postgres::connect_with(&self.url(time_zone), config, &options)
            .unwrap_or_else(|e| not_run(NAME, format!("cannot open a pool: {e}")))
    }
}

impl Space for PgSpace {
    fn store(&self, config: StoreConfig, session_time_zone: Option<&str>) -> Arc<dyn Store> {
        Arc::new(self.connect(config, session_time_zone))
    }

    fn migrate(&self, config: &StoreConfig, up_to: Option<&str>) {
        let store = self.connect(config.clone(), None);
        docket_postgres::migrate(&store, up_to).expect("migrations apply");
    }

    fn url(&self) -> String {
        PgSpace::url(self, None)
    }

    fn foreign(&self) -> Box<dyn Foreign> {
        super::foreign_on(&self.connect(StoreConfig::default(), None))
    }

    /// `postgresql_tables.sql`.
    fn db_scheduler_types(&self) -> DbSchedulerTypes {
        DbSchedulerTypes {
            name: "TEXT",
            instance: "TEXT",
            data: "BYTEA",
            time: "TIMESTAMP WITH TIME ZONE",
            picked_by: "TEXT",
            ..DbSchedulerTypes::COMMON
        }
    }

    fn reject_updates(&self, table: &TableName, instance: &'static str) -> Vec<String> {
        let table = table_sql(&docket_postgres::PgDialect, table);
        vec![
            format!(
                "CREATE FUNCTION reject_update() RETURNS trigger LANGUAGE plpgsql AS $$ \
                 BEGIN IF OLD.task_instance = '{instance}' THEN RAISE EXCEPTION '{REJECTED}'; \
                 END IF; RETURN NEW; END $$"
            ),
            format!(
                "CREATE TRIGGER reject_update BEFORE UPDATE ON {table} FOR EACH ROW \
                 EXECUTE FUNCTION reject_update()"
            ),
        ]
    }

    /// `-infinity`: a `timestamptz` PostgreSQL stores (and sorts first) but chrono cannot hold.
    fn poison(&self, table: &TableName, key: &ExecutionKey) -> (Vec<Rendered>, &'static str) {
        let column = "execution_time";
        let update = set_literal(
            &docket_postgres::PgDialect,
            table,
            key,
            column,
            "'-infinity'",
        );
        (vec![update], column)
    }
}

impl Drop for PgSpace {
    fn drop(&mut self) {
        if let Ok(mut conn) = PgConnection::establish(&self.admin) {
            let _ = conn.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                self.schema
            ));
        }
    }
}
