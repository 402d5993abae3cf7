//! # docket-postgres
//!
//! The PostgreSQL backend of docket: [`PgDialect`] (how statements are spelled), a
//! [`PgConnector`] (diesel `PgConnection` + r2d2 pool) under the shared
//! [`SqlStore`](docket_core::store::sql::SqlStore), and embedded migrations.
//!
//! ```no_run
//! use docket_core::StoreConfig;
//! let store = docket_postgres::connect("postgres://postgres@127.0.0.1/app", StoreConfig::default())?;
//! docket_postgres::migrate(&store, None)?;
//! # Ok::<(), docket_core::StoreError>(())
//! ```

mod connect;
mod dialect;
mod explain;
mod family;
mod migrate;

pub use connect::{connect, connect_with, from_pool, PgConnector, PgOptions};
pub use dialect::PgDialect;
pub use explain::explain_plan;
pub use family::PgFamily;
pub use migrate::{migrate, MIGRATIONS};

docket_core::backend!(
    PostgresBackend,
    "postgres",
    ["postgres", "postgresql"],
    PgDialect,
    "EXPLAIN (ANALYZE, BUFFERS)"
);

/// The PostgreSQL store.
pub type PgStore = docket_core::store::sql::SqlStore<PgConnector>;
