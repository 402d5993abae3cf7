//! Servers that cannot be started from local binaries (SQL Server, Oracle), for their live
//! compatibility suites.
//!
//! Resolution order, done once per test process and cached (errors included):
//!
//! 1. The backend's URL variable (`DOCKET_MSSQL_URL`, `DOCKET_ORACLE_URL`), when set and
//!    non-empty, is used as is.
//! 2. With a reachable Docker engine a container is started through testcontainers
//!    (`mcr.microsoft.com/mssql/server:2022-latest`, whose EULA must be accepted with
//!    `DOCKET_TC_MSSQL_ACCEPT_EULA=Y`; `gvenzl/oracle-free:23-slim-faststart`; overridable with
//!    `DOCKET_TC_MSSQL_IMAGE` / `DOCKET_TC_ORACLE_IMAGE`), published on 127.0.0.1 only and
//!    removed when the process exits (see [`super::containers`]).
//! 3. If neither works, [`Remote::admin_url`] returns a [`NotRun`] saying what was tried and
//!    what failed.

use std::sync::OnceLock;

use super::containers::Backend;
use super::{resolve, NotRun, Resolved};

/// One backend whose server comes from a URL or a container.
pub struct Remote {
    env_var: &'static str,
    backend: Backend,
    resolved: OnceLock<Result<Resolved, NotRun>>,
}

/// SQL Server (`DOCKET_MSSQL_URL`, e.g.
/// `mssql://127.0.0.1:PORT;user=sa;password=...;trustServerCertificate=true`).
pub static MSSQL: Remote = Remote::new("DOCKET_MSSQL_URL", Backend::Mssql);

/// Oracle (`DOCKET_ORACLE_URL`, e.g. `oracle://system:PASSWORD@127.0.0.1:PORT/FREEPDB1`).
pub static ORACLE: Remote = Remote::new("DOCKET_ORACLE_URL", Backend::Oracle);

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("env_var", &self.env_var)
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Remote {
    const fn new(env_var: &'static str, backend: Backend) -> Self {
        Self {
            env_var,
            backend,
            resolved: OnceLock::new(),
        }
    }

    fn resolved(&self) -> &Result<Resolved, NotRun> {
        self.resolved.get_or_init(|| {
            resolve(
                self.env_var,
                None::<fn() -> Result<Resolved, String>>,
                self.backend,
            )
        })
    }

    /// Admin connection URL of a server on which the suite may create and drop its spaces:
    /// the URL variable when set and non-empty, otherwise a container when a Docker engine is
    /// reachable. Resolved once per process and cached, a failure too; never panics.
    pub fn admin_url(&self) -> Result<&str, NotRun> {
        match self.resolved() {
            Ok(r) => Ok(r.url.as_str()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Where the URL came from, for the log line: the variable's name or "testcontainers: ...";
    /// `None` when no server could be obtained.
    pub fn source(&self) -> Option<&str> {
        self.resolved().as_ref().ok().map(|r| r.source.as_str())
    }
}
