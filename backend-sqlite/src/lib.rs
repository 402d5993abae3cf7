//! # docket-sqlite
//!
//! The SQLite backend of docket, its embedded default: [`SqliteDialect`] (how statements are
//! spelled), a [`SqliteConnector`] (diesel `SqliteConnection` + r2d2 pool, SQLite compiled in
//! from the bundled `libsqlite3-sys`, so no system library is needed) under the shared
//! [`SqlStore`](docket_core::backend::SqlStore), and embedded migrations.
//!
//! SQLite has no row locks and a single writer per file. Claims therefore need none:
//! lock-and-fetch is one `UPDATE ... RETURNING` (atomic under the write lock) and transactions
//! start with `BEGIN IMMEDIATE`. Every pooled connection runs in WAL mode with a busy timeout,
//! so threads and processes sharing a file wait for each other instead of failing.
//!
//! ```no_run
//! use docket_core::StoreConfig;
//! let store = docket_sqlite::connect("sqlite://docket.db", StoreConfig::default())?;
//! docket_sqlite::migrate(&store, None)?;
//! # Ok::<(), docket_core::StoreError>(())
//! ```

mod connect;
mod dialect;
mod family;
mod migrate;

pub use connect::{
    connect, connect_with, database_path, from_pool, Pragmas, SqliteConnector, SqliteOptions,
};
pub use dialect::SqliteDialect;
pub use family::SqliteFamily;
pub use migrate::{migrate, MIGRATIONS};

use docket_core::explain::PlanQuery;

docket_core::backend!(
    SqliteBackend,
    "sqlite",
    ["sqlite"],
    SqliteDialect,
    PLAN_QUERY
);

/// How SQLite shows a plan (for `docket explain` and [`docket_core::explain::explain_plan`]):
/// `EXPLAIN QUERY PLAN`, one line per step, indented by depth (`SEARCH ... USING INDEX ...`).
/// Nothing is executed, so this is safe for statements that write (the lock-and-fetch
/// `UPDATE`).
pub const PLAN_QUERY: PlanQuery = PlanQuery::Tree {
    prefix: "EXPLAIN QUERY PLAN",
};

/// The SQLite store.
pub type SqliteStore = docket_core::backend::SqlStore<SqliteConnector>;
