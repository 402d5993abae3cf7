//! The reliability suite (`cargo test reliab`): scheduler processes against one table, a
//! `kill -9` mid-run, every run counted. Server backends only.

docket_compat_tests::server_suites!(reliability_suite);
