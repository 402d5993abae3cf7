//! SQL Server server for the live compatibility suite.
//!
//! Resolution order, done once per test process and cached (errors included):
//!
//! 1. `DOCKET_MSSQL_URL`, when set and non-empty, is used as is.
//! 2. There is no throwaway SQL Server from local binaries; with a reachable Docker engine a
//!    container of `mcr.microsoft.com/mssql/server:2022-latest` (`DOCKET_TC_MSSQL_IMAGE`; its EULA must be accepted with `DOCKET_TC_MSSQL_ACCEPT_EULA=Y`) is started through testcontainers, published on 127.0.0.1 only and
//!    removed when the process exits (see [`super::containers`]).
//! 3. If neither works, [`admin_url`] returns a [`NotRun`] saying what was tried and what failed.

use std::sync::OnceLock;

use super::containers::Backend;
use super::{resolve, NotRun, Resolved};

/// Environment variable naming an existing server.
const ENV_VAR: &str = "DOCKET_MSSQL_URL";
static RESOLVED: OnceLock<Result<Resolved, NotRun>> = OnceLock::new();

fn resolved() -> &'static Result<Resolved, NotRun> {
    RESOLVED.get_or_init(|| {
        resolve(
            ENV_VAR,
            None::<fn() -> Result<Resolved, String>>,
            Backend::Mssql,
        )
    })
}

/// Admin connection URL (e.g. `mssql://127.0.0.1:PORT;user=sa;password=...;trustServerCertificate=true`) of a server on which the suite may create and drop its
/// spaces.
///
/// Resolved once per process and cached, including a cached `Err`: `DOCKET_MSSQL_URL` when set and
/// non-empty, otherwise a container when a Docker engine is reachable. Never panics; every
/// failure is reported as a [`NotRun`] with its reason.
pub fn admin_url() -> Result<&'static str, NotRun> {
    match resolved() {
        Ok(r) => Ok(r.url.as_str()),
        Err(e) => Err(e.clone()),
    }
}

/// Where the URL came from, for the log line: "DOCKET_MSSQL_URL" or "testcontainers: ...".
///
/// Resolves the server like [`admin_url`] if that has not happened yet; `None` when no server
/// could be obtained.
pub fn source() -> Option<&'static str> {
    resolved().as_ref().ok().map(|r| r.source.as_str())
}
