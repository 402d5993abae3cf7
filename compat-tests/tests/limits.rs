//! Limits across processes (issue 46, "Must show"; docs/RELIABILITY.md, "Limits"): four
//! `limits_worker` processes on one table under `max_running(3)`, `max_running_per_key(1)` with
//! 50 keys, `rate_limit(20, 1 s)`, and a `kill -9` of the process holding every slot, checked
//! from the handlers' own records (see `docket_compat_tests::limits_cluster`). PostgreSQL,
//! MySQL/MariaDB, and SQLite with the processes on one file; a missing server is `NOT RUN`.

/// PostgreSQL.
mod postgres {
    docket_compat_tests::limits_suite!(
        docket_compat_tests::backends::Postgres,
        env!("CARGO_BIN_EXE_limits_worker")
    );
}

/// MySQL / MariaDB.
mod mysql {
    docket_compat_tests::limits_suite!(
        docket_compat_tests::backends::Mysql,
        env!("CARGO_BIN_EXE_limits_worker")
    );
}

/// SQLite: the four processes share one database file.
mod sqlite {
    docket_compat_tests::limits_suite!(
        docket_compat_tests::backends::Sqlite,
        env!("CARGO_BIN_EXE_limits_worker")
    );
}
