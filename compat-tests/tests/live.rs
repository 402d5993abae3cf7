//! The SQL Server and Oracle suites, chosen when the tests run: with `DOCKET_MSSQL_URL` (or
//! `DOCKET_ORACLE_URL`) set, every case of the compatibility suite runs against that server,
//! both priority toggles (`mssql::priority_on::basic_flow`); without it, one test per backend
//! says `NOT RUN` loudly. No throwaway server of either can be started on the build machines
//! (no image or package exists), so their absence is allowed; their SQL is still checked by
//! `golden_sql.rs` (exact text, parsed by `sqlparser`). The same test binary serves a user with
//! a server, without a rebuild.

use docket_compat_tests::backends::{mssql, oracle, Mssql, Oracle};
use docket_compat_tests::{cases, Harness, Toggle};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    suite(&mut trials, "mssql", mssql::URL_VAR, &Mssql);
    suite(&mut trials, "oracle", oracle::URL_VAR, &Oracle);
    libtest_mimic::run(&args, trials).exit();
}

/// Every case for both toggles when `var` names a server; else one test that says NOT RUN.
fn suite<H: Harness + Copy + Send + 'static>(
    trials: &mut Vec<Trial>,
    backend: &'static str,
    var: &'static str,
    harness: &H,
) {
    if std::env::var(var).map_or(true, |v| v.is_empty()) {
        trials.push(Trial::test(format!("{backend}_live_suite"), move || {
            eprintln!(
                "NOT RUN: {backend} live suite ({var} is not set; {backend}'s SQL is checked by \
                 golden SQL and its parser only)"
            );
            Ok(())
        }));
        return;
    }
    for (toggle, module) in [(Toggle::Off, "priority_off"), (Toggle::On, "priority_on")] {
        for (name, case) in cases() {
            let harness = *harness;
            trials.push(Trial::test(
                format!("{backend}::{module}::{name}"),
                move || run(case, &harness, toggle),
            ));
        }
    }
}

/// Runs one case; a panic (an assertion) is its failure, with the panic's message.
fn run(
    case: fn(&dyn Harness, Toggle),
    harness: &dyn Harness,
    toggle: Toggle,
) -> Result<(), Failed> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(harness, toggle))).map_err(
        |panic| {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("the case panicked");
            Failed::from(message)
        },
    )
}
