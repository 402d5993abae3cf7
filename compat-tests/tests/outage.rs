//! The outage cases of the reliability suite (`cargo test reliab`), in their own test binary:
//! each stops and restarts this process's throwaway server, which no other test here uses.

mod reliability {
    /// PostgreSQL.
    mod postgres {
        docket_compat_tests::outage_suite!(
            docket_compat_tests::backends::Postgres,
            env!("CARGO_BIN_EXE_reliab_worker"),
            |d| docket_compat_tests::servers::postgres::SERVER.outage(d)
        );
    }
    /// MySQL / MariaDB.
    mod mysql {
        docket_compat_tests::outage_suite!(
            docket_compat_tests::backends::Mysql,
            env!("CARGO_BIN_EXE_reliab_worker"),
            |d| docket_compat_tests::servers::mysql::SERVER.outage(d)
        );
    }
}
