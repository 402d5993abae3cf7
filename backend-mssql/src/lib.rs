//! # docket-mssql
//!
//! The SQL Server (2019+) backend of docket: [`MssqlDialect`] (how statements are spelled), an
//! [`MssqlConnector`] (tiberius clients, each on its own current-thread tokio runtime, in a
//! small blocking pool) under the shared [`SqlStore`](docket_core::backend::SqlStore), and
//! versioned migrations templated by [`docket_core::migrate::plan`], recorded in
//! `docket_schema_migrations`.
//!
//! What is particular to this backend:
//!
//! - **Claims.** Lock-and-fetch is one statement: an ordered `TOP (n)` CTE read `WITH
//!   (UPDLOCK, READPAST, ROWLOCK)`, updated through, `OUTPUT inserted...` returning the rows.
//! - **Schedule-if-not-exists.** A plain `INSERT`; the session reports its duplicate-key error
//!   (2627, 2601) as [`StoreError::Duplicate`](docket_core::StoreError), which the shared store
//!   counts as "already exists". With `XACT_ABORT OFF` (set on every connection) the error
//!   ends only that statement, so a batch carries on past existing keys.
//! - **Times** are `DATETIME2(6)` columns holding UTC, bound and read as UTC wall-clock values.
//! - **Keys** are `NVARCHAR` in a binary collation (`Latin1_General_100_BIN2`).
//! - **Work queue** (migrations `0003_ordering`, `0004_work_queue`): `next_for` reads candidates
//!   without locks, then locks one by key `WITH (UPDLOCK, READPAST, ROWLOCK)`; custom keys are
//!   read with `JSON_VALUE` from an `NVARCHAR(MAX)` column checked with `ISJSON`, and a custom
//!   order is indexed through computed columns of the same expressions (every connection
//!   sets the `SET` options such an index needs). JSON the check refuses at intake is
//!   [`StoreError::RejectedItem`](docket_core::StoreError) naming the item. Golden-tested and
//!   parsed only; not yet run against a server.
//!
//! URLs: `mssql://host:port;database=app;user=sa;password=...;trustServerCertificate=true`
//! (the JDBC connection-string syntax after the scheme; `sqlserver://` works too).
//!
//! ```no_run
//! use docket_core::StoreConfig;
//! let url = "mssql://127.0.0.1:1433;database=app;user=sa;password=Secret_1;trustServerCertificate=true";
//! let store = docket_mssql::connect(url, StoreConfig::default())?;
//! docket_mssql::migrate(&store, None)?;
//! # Ok::<(), docket_core::StoreError>(())
//! ```

mod connect;
mod dialect;
mod error;
mod migrate;
mod pool;
mod session;

pub use connect::{connect, connect_with, parse_url, MssqlConnector, MssqlOptions};
pub use dialect::{MssqlDialect, TEXT_KEY_BYTES};
pub use error::MssqlError;
pub use migrate::{migrate, MIGRATIONS, VERSION_TABLE};

use docket_core::explain::PlanQuery;

docket_core::backend!(
    MssqlBackend,
    "mssql",
    ["mssql", "sqlserver"],
    MssqlDialect,
    PLAN_QUERY
);

/// How SQL Server shows a plan (for `docket explain` and [`docket_core::explain::explain_plan`]):
/// the estimated plan as `SHOWPLAN_TEXT` lines. `SET SHOWPLAN_TEXT ON` must be the only
/// statement of its batch (sent as plain text, see the session's `execute_unprepared`) and
/// makes the server return plans instead of running statements; the statement is sent through
/// `sp_executesql` with its parameters, whose plan is then the one shown. Nothing is executed,
/// so explaining a claim claims nothing.
pub const PLAN_QUERY: PlanQuery = PlanQuery::Toggled {
    on: "SET SHOWPLAN_TEXT ON",
    off: "SET SHOWPLAN_TEXT OFF",
};

/// The SQL Server store.
pub type MssqlStore = docket_core::backend::SqlStore<MssqlConnector>;
