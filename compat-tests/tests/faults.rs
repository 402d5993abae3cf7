//! The fault cases of the reliability suite (`cargo test reliab`): a paused process, contention,
//! a partition, a slow link, skewed clocks, a server restart with completions in flight
//! (see `docket_compat_tests::faults`). Server backends only; these share the process's server
//! (none stops it).

mod reliability {
    /// PostgreSQL.
    mod postgres {
        docket_compat_tests::faults_suite!(
            docket_compat_tests::backends::Postgres,
            env!("CARGO_BIN_EXE_reliab_worker")
        );
    }
    /// MySQL / MariaDB.
    mod mysql {
        docket_compat_tests::faults_suite!(
            docket_compat_tests::backends::Mysql,
            env!("CARGO_BIN_EXE_reliab_worker")
        );
    }
}
