//! The reliability suite (`cargo test reliab`): scheduler processes against one table, a
//! `kill -9` mid-run, every run counted. Server backends only.

mod reliability {
    /// PostgreSQL.
    mod postgres {
        docket_compat_tests::reliability_suite!(
            docket_compat_tests::backends::Postgres,
            env!("CARGO_BIN_EXE_reliab_worker")
        );
    }
    /// MySQL / MariaDB.
    mod mysql {
        docket_compat_tests::reliability_suite!(
            docket_compat_tests::backends::Mysql,
            env!("CARGO_BIN_EXE_reliab_worker")
        );
    }
}
