//! The fault cases of the reliability suite (`cargo test reliab`): a paused process, contention,
//! a partition, a slow link, skewed clocks, a server restart with completions in flight
//! (see `docket_compat_tests::faults`). Server backends only; these share the process's server
//! (none stops it).

docket_compat_tests::server_suites!(faults_suite);
