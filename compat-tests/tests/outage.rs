//! The outage cases of the reliability suite (`cargo test reliab`), in their own test binary:
//! each stops and restarts this process's throwaway server, which no other test here uses.

docket_compat_tests::server_suites!(outage_suite);
