//! # docket-postgres
//!
//! The PostgreSQL backend of docket: [`PgDialect`] (how statements are spelled), a
//! [`PgConnector`] (diesel `PgConnection` + r2d2 pool) under the shared
//! [`SqlStore`](docket_core::backend::SqlStore), and embedded migrations.
//!
//! ```no_run
//! use docket_core::StoreConfig;
//! let store = docket_postgres::connect("postgres://postgres@127.0.0.1/app", StoreConfig::default())?;
//! docket_postgres::migrate(&store, None)?;
//! # Ok::<(), docket_core::StoreError>(())
//! ```

mod connect;
mod dialect;
mod family;
mod migrate;
pub mod wake;

pub use connect::{connect, connect_with, from_pool, PgConnector, PgOptions};
pub use dialect::PgDialect;
pub use family::{PgFamily, PgMeta};
pub use migrate::{migrate, MIGRATIONS};

use docket_core::explain::PlanQuery;

docket_core::backend!(
    PostgresBackend,
    "postgres",
    ["postgres", "postgresql"],
    PgDialect,
    PLAN_QUERY
);

/// How PostgreSQL shows a plan (for `docket explain` and [`docket_core::explain::explain_plan`]):
/// `EXPLAIN (ANALYZE, BUFFERS)`. ANALYZE executes the statement, so it runs inside a
/// transaction that is always rolled back: explaining the lock-and-fetch `UPDATE` claims
/// nothing.
pub const PLAN_QUERY: PlanQuery = PlanQuery::Prefix {
    prefix: "EXPLAIN (ANALYZE, BUFFERS)",
    rolled_back: true,
};

/// The PostgreSQL store.
pub type PgStore = docket_core::backend::SqlStore<PgConnector>;
