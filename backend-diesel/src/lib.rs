//! # docket-diesel
//!
//! What docket's diesel backends (PostgreSQL, MySQL/MariaDB, SQLite) share, written once: the
//! adapter that runs [`docket_core::migrate`] plans through diesel_migrations' harness, and the
//! mapping of diesel and r2d2 errors onto [`StoreError`]. Each backend keeps its dialect, its
//! SQL, its bind and row types.

use diesel::backend::Backend;
use diesel::connection::BoxableConnection;
use diesel::migration::{
    Migration, MigrationMetadata, MigrationName, MigrationSource, MigrationVersion,
};
use diesel_migrations::MigrationHarness;
use docket_core::migrate::TableMigration;
use docket_core::StoreError;
use std::fmt;

/// A database error.
pub fn db(e: diesel::result::Error) -> StoreError {
    StoreError::Database(e.to_string())
}

/// A pool (connection) error.
pub fn pool(e: r2d2::Error) -> StoreError {
    StoreError::Connection(e.to_string())
}

/// Carries a store error through diesel's transaction closure.
#[derive(Debug)]
pub enum TxError {
    /// Raised by docket code inside the transaction.
    Store(StoreError),
    /// Raised by diesel (begin, commit, a statement).
    Diesel(diesel::result::Error),
}

impl From<diesel::result::Error> for TxError {
    fn from(e: diesel::result::Error) -> Self {
        TxError::Diesel(e)
    }
}

impl From<TxError> for StoreError {
    fn from(e: TxError) -> Self {
        match e {
            TxError::Store(s) => s,
            TxError::Diesel(d) => db(d),
        }
    }
}

/// diesel's view of one planned [`TableMigration`].
struct Step(TableMigration);

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.version)
    }
}

impl MigrationName for Step {
    fn version(&self) -> MigrationVersion<'_> {
        MigrationVersion::from(self.0.version.as_str())
    }
}

impl MigrationMetadata for Step {}

impl<DB: Backend> Migration<DB> for Step {
    fn run(&self, conn: &mut dyn BoxableConnection<DB>) -> diesel::migration::Result<()> {
        Ok(conn.batch_execute(&self.0.up)?)
    }

    fn revert(&self, conn: &mut dyn BoxableConnection<DB>) -> diesel::migration::Result<()> {
        Ok(conn.batch_execute(&self.0.down)?)
    }

    fn metadata(&self) -> &dyn MigrationMetadata {
        self
    }

    fn name(&self) -> &dyn MigrationName {
        self
    }
}

struct Steps(Vec<TableMigration>);

impl<DB: Backend> MigrationSource<DB> for Steps {
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<DB>>>> {
        Ok(self
            .0
            .iter()
            .map(|m| Box::new(Step(m.clone())) as Box<dyn Migration<DB>>)
            .collect())
    }
}

/// Applies the pending migrations of `plan` on `conn` through diesel_migrations' harness
/// (which records them in `__diesel_schema_migrations`); returns the versions applied now.
pub fn run_migrations<DB: Backend>(
    conn: &mut impl MigrationHarness<DB>,
    plan: Vec<TableMigration>,
) -> Result<Vec<String>, StoreError> {
    let applied = conn
        .run_pending_migrations(Steps(plan))
        .map_err(|e| StoreError::Database(format!("migration failed: {e}")))?;
    Ok(applied.iter().map(ToString::to_string).collect())
}
