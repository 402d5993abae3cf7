//! What the `docket` binary's test files share: the binary, migrating, a SQLite file's URL and
//! a fresh PostgreSQL schema.

use assert_cmd::Command;
use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};

/// The `docket` binary under test.
pub fn docket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_docket"))
}

/// The SQLite file [`sqlite_url`] names.
pub const SQLITE_FILE: &str = "docket.db";

/// The URL of the SQLite file [`SQLITE_FILE`] in `dir`.
pub fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join(SQLITE_FILE).display())
}

/// `docket migrate --database-url URL`: every migration.
pub fn migrate_all(url: &str) {
    docket()
        .args(["migrate", "--database-url", url])
        .assert()
        .success();
}

/// A fresh schema on the suite's PostgreSQL server, dropped at the end.
pub struct PgSchema {
    admin: String,
    schema: String,
}

impl PgSchema {
    /// Creates the schema (a test without the server fails with `NOT RUN: postgres: ...`).
    pub fn new() -> Self {
        let admin = docket_compat_tests::servers::postgres::SERVER
            .admin_url()
            .unwrap_or_else(|e| panic!("NOT RUN: postgres: {e}"))
            .to_owned();
        let schema = docket_compat_tests::backends::unique_name();
        PgConnection::establish(&admin)
            .expect("connect")
            .batch_execute(&format!("CREATE SCHEMA \"{schema}\""))
            .expect("create schema");
        Self { admin, schema }
    }

    /// The admin URL with libpq `options` selecting the schema.
    pub fn url(&self) -> String {
        let sep = if self.admin.contains('?') { '&' } else { '?' };
        format!(
            "{}{sep}options=-c%20search_path%3D{}",
            self.admin, self.schema
        )
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut conn) = PgConnection::establish(&self.admin) {
            let _ = conn.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                self.schema
            ));
        }
    }
}
