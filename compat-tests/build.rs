//! Compiles the SQL Server and Oracle live suites in only when their server URL is set
//! (`DOCKET_MSSQL_URL`, `DOCKET_ORACLE_URL`): no throwaway server exists for them on the build
//! machines, and the issue allows exactly these two backends to be absent. Without the URL,
//! `tests/compat.rs` has one test per backend that prints `NOT RUN` instead.

fn main() {
    for (var, cfg) in [
        ("DOCKET_MSSQL_URL", "docket_mssql_live"),
        ("DOCKET_ORACLE_URL", "docket_oracle_live"),
    ] {
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        println!("cargo:rerun-if-env-changed={var}");
        if std::env::var_os(var).is_some_and(|v| !v.is_empty()) {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
