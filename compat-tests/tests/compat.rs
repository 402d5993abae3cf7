//! The compatibility suite, instantiated per backend: `postgres::priority_on::due_order_reference`.

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

/// SQL Server: `DOCKET_MSSQL_URL` (no throwaway server exists). Compiled in only when the URL
/// is set at build time (see `build.rs`).
#[cfg(docket_mssql_live)]
mod mssql {
    docket_compat_tests::compat_suite!(docket_compat_tests::backends::Mssql);
}

/// Oracle: `DOCKET_ORACLE_URL` (no throwaway server exists). Compiled in only when the URL is
/// set at build time (see `build.rs`).
#[cfg(docket_oracle_live)]
mod oracle {
    docket_compat_tests::compat_suite!(docket_compat_tests::backends::Oracle);
}

/// Writes past the test harness' output capture, so the line shows in every run.
#[cfg(any(not(docket_mssql_live), not(docket_oracle_live)))]
fn loud(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Without `DOCKET_MSSQL_URL` the SQL Server live suite is not compiled: say so loudly. This
/// test passes because the issue allows SQL Server alone (with Oracle) to be absent; its SQL
/// is still checked by `golden_sql.rs` (exact text, parsed as T-SQL).
#[cfg(not(docket_mssql_live))]
#[test]
fn mssql_live_suite() {
    loud(
        "NOT RUN: mssql live suite (DOCKET_MSSQL_URL is not set at build time; \
         SQL Server is checked by golden SQL and the T-SQL parser only)",
    );
}

/// Without `DOCKET_ORACLE_URL` the Oracle live suite is not compiled: say so loudly (see
/// [`mssql_live_suite`]).
#[cfg(not(docket_oracle_live))]
#[test]
fn oracle_live_suite() {
    loud(
        "NOT RUN: oracle live suite (DOCKET_ORACLE_URL is not set at build time; \
         Oracle is checked by golden SQL and the Oracle parser only)",
    );
}
