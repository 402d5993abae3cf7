//! The one list of backends this build has (by cargo feature), for code that picks a backend
//! at run time by name or URL scheme: the CLI and the compatibility suite both read it.

pub use docket_core::backend::Backend;

/// Every backend compiled in, in a fixed order.
pub fn all() -> &'static [&'static dyn Backend] {
    &[
        #[cfg(feature = "postgres")]
        &docket_postgres::PostgresBackend,
        #[cfg(feature = "mysql")]
        &docket_mysql::MysqlBackend,
        #[cfg(feature = "sqlite")]
        &docket_sqlite::SqliteBackend,
        #[cfg(feature = "mssql")]
        &docket_mssql::MssqlBackend,
        #[cfg(feature = "oracle")]
        &docket_oracle::OracleBackend,
    ]
}

/// The backend a database URL selects, by its scheme (case-insensitive).
pub fn for_url(url: &str) -> Option<&'static dyn Backend> {
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
    all()
        .iter()
        .copied()
        .find(|b| b.schemes().iter().any(|s| s.eq_ignore_ascii_case(scheme)))
}

/// The backend with this name (or one of its schemes).
pub fn by_name(name: &str) -> Option<&'static dyn Backend> {
    all().iter().copied().find(|b| {
        b.name().eq_ignore_ascii_case(name)
            || b.schemes().iter().any(|s| s.eq_ignore_ascii_case(name))
    })
}

/// `postgres://, postgresql://, ...`: the schemes this build knows, for messages.
pub fn known_schemes() -> String {
    all()
        .iter()
        .flat_map(|b| b.schemes().iter().map(|s| format!("{s}://")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names of the backends this build has, for messages.
pub fn known_names() -> String {
    all()
        .iter()
        .map(|b| b.name())
        .collect::<Vec<_>>()
        .join(", ")
}
