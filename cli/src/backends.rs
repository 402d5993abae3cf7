//! The backends the CLI can drive, as one table. A backend is chosen by the scheme of
//! `--database-url` (or by name for `explain --backend`); adding one (e.g. MySQL) is one
//! `entry!` line in [`BACKENDS`], because every backend crate exposes the same functions:
//! `connect`, `migrate`, `MIGRATIONS` and `explain_plan`.

use crate::error::CliError;
use docket_core::dialect::{Dialect, Rendered};
use docket_core::{Store, StoreConfig, StoreError};
use std::sync::Arc;

/// Applies pending migrations of a URL's table up to a name; returns the versions applied.
pub type MigrateFn = fn(&str, StoreConfig, Option<&str>) -> Result<Vec<String>, StoreError>;
/// Opens a store on a URL.
pub type ConnectFn = fn(&str, StoreConfig) -> Result<Arc<dyn Store>, StoreError>;
/// The database's plan for each statement (values bound), one list of lines per statement.
pub type ExplainFn = fn(&str, StoreConfig, &[Rendered]) -> Result<Vec<Vec<String>>, StoreError>;

/// One backend: its names, its dialect, and the operations the commands need.
pub struct Backend {
    /// Name used by `explain --backend` and in messages.
    pub name: &'static str,
    /// URL schemes (before `:`) that select it.
    pub schemes: &'static [&'static str],
    /// How it spells statements.
    pub dialect: &'static dyn Dialect,
    /// What `explain --database-url` runs in front of a statement.
    pub plan_label: &'static str,
    /// Names of the migrations it ships, in order.
    pub migration_names: fn() -> Vec<&'static str>,
    /// Applies pending migrations up to a name; returns the versions applied now.
    pub migrate: MigrateFn,
    /// Opens a store.
    pub connect: ConnectFn,
    /// The database's plan for each statement (values bound).
    pub explain: ExplainFn,
}

/// A [`Backend`] for a crate with the standard backend functions.
macro_rules! entry {
    ($name:literal, [$($scheme:literal),+], $krate:ident, $dialect:expr, $plan:literal) => {
        Backend {
            name: $name,
            schemes: &[$($scheme),+],
            dialect: &$dialect,
            plan_label: $plan,
            migration_names: || $krate::MIGRATIONS.iter().map(|m| m.name).collect(),
            migrate: |url, config, to| $krate::migrate(&$krate::connect(url, config)?, to),
            connect: |url, config| Ok(Arc::new($krate::connect(url, config)?) as Arc<dyn Store>),
            explain: |url, config, stmts| {
                let store = $krate::connect(url, config)?;
                stmts.iter().map(|s| $krate::explain_plan(&store, s)).collect()
            },
        }
    };
}

/// Every backend the CLI knows.
pub static BACKENDS: &[Backend] = &[
    entry!(
        "postgres",
        ["postgres", "postgresql"],
        docket_postgres,
        docket_postgres::PgDialect,
        "EXPLAIN (ANALYZE, BUFFERS)"
    ),
    entry!(
        "mysql",
        ["mysql", "mariadb"],
        docket_mysql,
        docket_mysql::MysqlDialect::MARIADB,
        "EXPLAIN FORMAT=JSON"
    ),
    entry!(
        "sqlite",
        ["sqlite"],
        docket_sqlite,
        docket_sqlite::SqliteDialect,
        "EXPLAIN QUERY PLAN"
    ),
    entry!(
        "mssql",
        ["mssql", "sqlserver"],
        docket_mssql,
        docket_mssql::MssqlDialect,
        "SET SHOWPLAN_TEXT ON"
    ),
    entry!(
        "oracle",
        ["oracle"],
        docket_oracle,
        docket_oracle::OracleDialect,
        "EXPLAIN PLAN FOR"
    ),
];

fn known_schemes() -> String {
    BACKENDS
        .iter()
        .flat_map(|b| b.schemes.iter().map(|s| format!("{s}://")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The backend for a database URL, by its scheme.
pub fn for_url(url: &str) -> Result<&'static Backend, CliError> {
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
    BACKENDS
        .iter()
        .find(|b| b.schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme)))
        .ok_or_else(|| CliError::UnknownScheme {
            scheme: scheme.to_owned(),
            known: known_schemes(),
        })
}

/// The backend with this name (or one of its schemes).
pub fn by_name(name: &str) -> Result<&'static Backend, CliError> {
    BACKENDS
        .iter()
        .find(|b| b.name.eq_ignore_ascii_case(name) || b.schemes.contains(&name))
        .ok_or_else(|| CliError::UnknownBackend {
            name: name.to_owned(),
            known: BACKENDS
                .iter()
                .map(|b| b.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_select_backends() {
        assert_eq!(for_url("postgres://u@h/db").unwrap().name, "postgres");
        assert_eq!(for_url("postgresql://u@h/db").unwrap().name, "postgres");
        assert_eq!(for_url("sqlite:///tmp/x.db").unwrap().name, "sqlite");
        assert_eq!(for_url("SQLITE:x.db").unwrap().name, "sqlite");
        assert_eq!(for_url("mssql://h:1433;user=sa").unwrap().name, "mssql");
        assert_eq!(for_url("oracle://u:p@h/svc").unwrap().name, "oracle");
        for bad in ["db2://x", "x.db", ""] {
            assert!(matches!(for_url(bad), Err(CliError::UnknownScheme { .. })));
        }
        assert_eq!(by_name("sqlite").unwrap().name, "sqlite");
        assert!(by_name("db2").is_err());
    }
}
