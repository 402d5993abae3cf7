//! # docket-mysql
//!
//! The MySQL 8 / MariaDB 10.6+ backend of docket: [`MysqlDialect`] (how statements are spelled,
//! with a [`Flavor`] for the few differences between the two servers), a [`MysqlConnector`]
//! (diesel `MysqlConnection` + r2d2 pool) under the shared
//! [`SqlStore`](docket_core::store::sql::SqlStore), and embedded migrations.
//!
//! Lock-and-fetch claims with `SELECT ... FOR UPDATE SKIP LOCKED` and an `UPDATE` of the
//! selected keys in one transaction; times are `DATETIME(6)` columns holding UTC, so any
//! session time zone reads and writes the same instants.
//!
//! ```no_run
//! use docket_core::StoreConfig;
//! let store = docket_mysql::connect("mysql://root@127.0.0.1:3306/app", StoreConfig::default())?;
//! docket_mysql::migrate(&store, None)?;
//! # Ok::<(), docket_core::StoreError>(())
//! ```

mod connect;
mod dialect;
mod error;
mod migrate;
mod store;

pub use connect::{connect, connect_with, MysqlConnector, MysqlOptions};
pub use dialect::{Flavor, MysqlDialect};
pub use migrate::{migrate, migration_names};

/// The MySQL/MariaDB store.
pub type MysqlStore = docket_core::store::sql::SqlStore<MysqlConnector>;
