//! Oracle server for the live compatibility suite.
//!
//! Resolution order, done once per test process and cached (errors included):
//!
//! 1. `DOCKET_ORACLE_URL`, when set and non-empty, is used as is.
//! 2. There is no throwaway Oracle from local binaries; with a reachable Docker engine a
//!    container of `gvenzl/oracle-free:23-slim-faststart` (`DOCKET_TC_ORACLE_IMAGE`) is started through testcontainers, published on 127.0.0.1 only and
//!    removed when the process exits (see [`super::containers`]).
//! 3. If neither works, [`admin_url`] returns a [`NotRun`] saying what was tried and what failed.

use std::sync::OnceLock;

use super::containers::Backend;
use super::{resolve, NotRun, Resolved};

/// Environment variable naming an existing server.
const ENV_VAR: &str = "DOCKET_ORACLE_URL";
static RESOLVED: OnceLock<Result<Resolved, NotRun>> = OnceLock::new();

fn resolved() -> &'static Result<Resolved, NotRun> {
    RESOLVED.get_or_init(|| {
        resolve(
            ENV_VAR,
            None::<fn() -> Result<Resolved, String>>,
            Backend::Oracle,
        )
    })
}

/// Admin connection URL (e.g. `oracle://system:PASSWORD@127.0.0.1:PORT/FREEPDB1`) of a server on which the suite may create and drop its
/// spaces.
///
/// Resolved once per process and cached, including a cached `Err`: `DOCKET_ORACLE_URL` when set and
/// non-empty, otherwise a container when a Docker engine is reachable. Never panics; every
/// failure is reported as a [`NotRun`] with its reason.
pub fn admin_url() -> Result<&'static str, NotRun> {
    match resolved() {
        Ok(r) => Ok(r.url.as_str()),
        Err(e) => Err(e.clone()),
    }
}

/// Where the URL came from, for the log line: "DOCKET_ORACLE_URL" or "testcontainers: ...".
///
/// Resolves the server like [`admin_url`] if that has not happened yet; `None` when no server
/// could be obtained.
pub fn source() -> Option<&'static str> {
    resolved().as_ref().ok().map(|r| r.source.as_str())
}
