//! # docket-mysql
//!
//! The MySQL 8 / MariaDB 10.6+ backend of docket: [`MysqlDialect`] (how statements are spelled,
//! with a [`Flavor`] for the few differences between the two servers), a [`MysqlConnector`]
//! (diesel `MysqlConnection` + r2d2 pool) under the shared
//! [`SqlStore`](docket_core::backend::SqlStore), and embedded migrations.
//!
//! What is particular to this backend:
//!
//! - **Claims.** Lock-and-fetch runs `SELECT ... FOR UPDATE SKIP LOCKED`, then an `UPDATE` of
//!   the selected keys, in one READ COMMITTED transaction (MySQL has no `UPDATE ... RETURNING`
//!   and rejects `LIMIT` in an `IN` subquery). Needs MariaDB 10.6+ or MySQL 8.0.17+; older
//!   servers are refused at connect time with [`StoreError::Unsupported`](docket_core::StoreError).
//! - **Schedule-if-not-exists.** A plain `INSERT` whose duplicate-key error counts as "0 rows
//!   inserted". Not `INSERT IGNORE`: it would turn errors such as an over-long value into a
//!   truncating warning. Every pooled session also adds `STRICT_ALL_TABLES` to its `sql_mode`.
//! - **Times** are `DATETIME(6)` columns holding UTC, bound and read as UTC wall-clock values,
//!   so any session time zone ([`MysqlOptions::session_time_zone`]) reads and writes the same
//!   instants, across DST changes, from 1000 to 9999 with microseconds.
//! - **Keys** use a binary no-pad collation ([`Flavor::key_collation`]): instance ids compare
//!   byte for byte, as on PostgreSQL.
//! - **Flavor** (MariaDB or MySQL) is read from `VERSION()` when connecting.
//!
//! ```no_run
//! use docket_core::StoreConfig;
//! let store = docket_mysql::connect("mysql://root@127.0.0.1:3306/app", StoreConfig::default())?;
//! docket_mysql::migrate(&store, None)?;
//! # Ok::<(), docket_core::StoreError>(())
//! ```

mod connect;
mod dialect;
mod family;
mod file_load;
mod hosts;
mod migrate;

pub use connect::{
    connect, connect_with, from_pool, MysqlConnector, MysqlOptions, MARIADB_OPTIMIZER_SWITCH,
};
pub use dialect::{Flavor, MysqlDialect};
pub use family::{MysqlFamily, MysqlMeta};
pub use hosts::MysqlManager;
pub use migrate::{migrate, MIGRATIONS};

use docket_core::explain::PlanQuery;

docket_core::backend!(
    MysqlBackend,
    "mysql",
    ["mysql", "mariadb"],
    MysqlDialect::MARIADB,
    PLAN_QUERY
);

/// How MySQL/MariaDB show a plan (for `docket explain` and
/// [`docket_core::explain::explain_plan`]): `EXPLAIN FORMAT=JSON`, one line per line of the
/// JSON. Plain `EXPLAIN` does not execute the statement, so explaining a claim claims nothing.
pub const PLAN_QUERY: PlanQuery = PlanQuery::Prefix {
    prefix: "EXPLAIN FORMAT=JSON",
    rolled_back: false,
};

/// The MySQL/MariaDB store.
pub type MysqlStore = docket_core::backend::SqlStore<MysqlConnector>;
