//! The compatibility suite, instantiated per backend: `postgres::priority_on::due_order_reference`.
//! SQL Server and Oracle, whose servers cannot be started here, run from `tests/live.rs`, chosen
//! when the tests run by their URL.

/// PostgreSQL: `DOCKET_POSTGRES_URL`, else a throwaway server from local binaries.
mod postgres {
    docket_compat_tests::compat_suite!(docket_compat_tests::backends::Postgres);
}

/// MySQL/MariaDB: `DOCKET_MYSQL_URL`, else a throwaway server from local binaries.
mod mysql {
    docket_compat_tests::compat_suite!(docket_compat_tests::backends::Mysql);
}

/// SQLite: a temporary database file per test (no server needed).
mod sqlite {
    docket_compat_tests::compat_suite!(docket_compat_tests::backends::Sqlite);
}
