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
//! 3. If neither works, [`Server::admin_url`] returns a [`NotRun`](super::NotRun) saying what was tried and
//!    what failed.

use super::containers::Backend;
use super::Server;

/// SQL Server (`DOCKET_MSSQL_URL`, e.g.
/// `mssql://127.0.0.1:PORT;user=sa;password=...;trustServerCertificate=true`).
pub static MSSQL: Server = Server::new("DOCKET_MSSQL_URL", Backend::Mssql, None);

/// Oracle (`DOCKET_ORACLE_URL`, e.g. `oracle://system:PASSWORD@127.0.0.1:PORT/FREEPDB1`).
pub static ORACLE: Server = Server::new("DOCKET_ORACLE_URL", Backend::Oracle, None);
