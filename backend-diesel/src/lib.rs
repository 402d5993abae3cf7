//! # docket-diesel
//!
//! What docket's diesel backends (PostgreSQL, MySQL/MariaDB, SQLite, Oracle) share, written
//! once: one session and pooled connector generic over a small [`Family`] ([`session`]), the
//! adapter that runs [`docket_core::migrate`] plans through diesel_migrations' harness, and the
//! mapping of diesel and r2d2 errors onto [`StoreError`], and scheduling inside the caller's
//! own transaction ([`ScheduleInTransaction`]). Each backend keeps its dialect, its SQL, and
//! its family: how it binds values and reads columns.

pub mod family;
pub mod session;
pub mod transactional;

pub use family::{push_scalar, unbindable, Prepare, Statement, StatementError};
pub use family::{Cells, Family};
pub use session::{DieselConnector, DieselSession};
pub use transactional::ScheduleInTransaction;

use diesel::backend::Backend;
use diesel::connection::BoxableConnection;
use diesel::migration::{
    Migration, MigrationMetadata, MigrationName, MigrationSource, MigrationVersion,
};
use diesel_migrations::MigrationHarness;
use docket_core::migrate::TableMigration;
use docket_core::StoreError;
use std::fmt;

/// A diesel error, normalized: a unique-key violation is [`StoreError::Duplicate`] (diesel
/// reports every backend's code as `UniqueViolation`), a closed connection
/// [`StoreError::Connection`], a missing row [`StoreError::NotFound`], a deadlock or
/// serialization failure [`StoreError::Contention`] (diesel reports MySQL's 1213 and
/// PostgreSQL's 40001 as `SerializationFailure`; PostgreSQL's deadlock, 40P01, and MySQL's
/// lock wait timeout, 1205, only by their messages). MySQL's 1213 raised by a `COMMIT` is
/// known by its message too: diesel sends `COMMIT` as plain text, whose errors it reports
/// without their code. That is how a Galera cluster ends the loser of two nodes' transactions
/// on the same rows (certification at commit; row locks are local to a node), so without the
/// message such a claim was a failed poll instead of a retry.
pub fn db(e: diesel::result::Error) -> StoreError {
    use diesel::result::{DatabaseErrorKind as Kind, Error};
    const CONTENTION: [&str; 3] = [
        "deadlock detected",
        "Lock wait timeout exceeded",
        "Deadlock found when trying to get lock",
    ];
    match e {
        Error::DatabaseError(Kind::SerializationFailure, _) => StoreError::Contention {
            source: Box::new(e),
        },
        Error::DatabaseError(_, ref info)
            if CONTENTION.iter().any(|m| info.message().contains(m)) =>
        {
            StoreError::Contention {
                source: Box::new(e),
            }
        }
        Error::DatabaseError(Kind::UniqueViolation, _) => StoreError::Duplicate {
            source: Box::new(e),
        },
        Error::DatabaseError(Kind::ClosedConnection, _) | Error::BrokenTransactionManager => {
            StoreError::connection(e)
        }
        Error::NotFound => StoreError::NotFound {
            source: Box::new(e),
        },
        other => StoreError::database(other),
    }
}

/// A pool (connection) error.
pub fn pool(e: r2d2::Error) -> StoreError {
    StoreError::connection(e)
}

/// Builds a pool that opens connections only when one is asked for, after one connection made
/// directly: a permanent error (connection refused, unknown host, unknown database, bad
/// credentials) is reported at once, in the driver's own words, as
/// [`StoreError::Connection`]. Through the pool it would surface only after the pool's
/// `connection_timeout` (30 s by default), as r2d2's "timed out waiting for connection". The
/// pool then checks one connection out, so that what the direct connection skips (a connection
/// customizer's session set-up) fails here too. A server that never answers is bounded by the
/// driver's own connect timeout (libpq: `connect_timeout` in the URL).
///
/// No `min_idle`: a pool that keeps an idle connection opens its replacement in a background
/// thread whenever the idle one is checked out, and a program that exits while that thread is
/// still connecting crashed in libpq's OpenSSL teardown (SIGSEGV in `OPENSSL_strcasecmp`, about
/// one short `docket` command in ten against PostgreSQL).
pub fn open_pool<M>(builder: r2d2::Builder<M>, manager: M) -> Result<r2d2::Pool<M>, StoreError>
where
    M: r2d2::ManageConnection,
    M::Error: Send + Sync,
{
    drop(manager.connect().map_err(StoreError::connection)?);
    let connections = builder.min_idle(Some(0)).build(manager).map_err(pool)?;
    drop(connections.get().map_err(pool)?);
    Ok(connections)
}

/// How long the server waits for the next statement of a docket transaction before it ends the
/// transaction and its session, where the database can be told (PostgreSQL on every docket
/// transaction, MariaDB on the sessions of a pool docket opens). docket sends a transaction's
/// statements back to back, so only a client that was cut off, paused or killed mid-transaction
/// waits that long; its row locks would otherwise hold until the server noticed the lost
/// connection (hours, with default TCP keepalive), and every other scheduler's dead detection
/// would wait behind them. What such a transaction wrote is rolled back.
pub const IDLE_IN_TRANSACTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

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

/// diesel's view of one planned [`TableMigration`]; `by_statement` runs its SQL one statement
/// per call (for connections that execute a single statement at a time, such as Oracle's).
struct Step {
    migration: TableMigration,
    by_statement: bool,
}

impl Step {
    fn apply<DB: Backend>(
        &self,
        conn: &mut dyn BoxableConnection<DB>,
        sql: &str,
    ) -> diesel::migration::Result<()> {
        if sql.trim().is_empty() {
            // An adopted migration with nothing left to create: only its version is recorded
            // (MySQL rejects an empty query).
            return Ok(());
        }
        if self.by_statement {
            for stmt in docket_core::migrate::split_statements(sql) {
                conn.batch_execute(&stmt)?;
            }
            Ok(())
        } else {
            Ok(conn.batch_execute(sql)?)
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.migration.version)
    }
}

impl MigrationName for Step {
    fn version(&self) -> MigrationVersion<'_> {
        MigrationVersion::from(self.migration.version.as_str())
    }
}

impl MigrationMetadata for Step {}

impl<DB: Backend> Migration<DB> for Step {
    fn run(&self, conn: &mut dyn BoxableConnection<DB>) -> diesel::migration::Result<()> {
        self.apply(conn, &self.migration.up)
    }

    fn revert(&self, conn: &mut dyn BoxableConnection<DB>) -> diesel::migration::Result<()> {
        self.apply(conn, &self.migration.down)
    }

    fn metadata(&self) -> &dyn MigrationMetadata {
        self
    }

    fn name(&self) -> &dyn MigrationName {
        self
    }
}

struct Steps {
    plan: Vec<TableMigration>,
    by_statement: bool,
}

impl<DB: Backend> MigrationSource<DB> for Steps {
    fn migrations(&self) -> diesel::migration::Result<Vec<Box<dyn Migration<DB>>>> {
        Ok(self
            .plan
            .iter()
            .map(|m| {
                Box::new(Step {
                    migration: m.clone(),
                    by_statement: self.by_statement,
                }) as Box<dyn Migration<DB>>
            })
            .collect())
    }
}

/// Applies the pending migrations of `plan` on `conn` through diesel_migrations' harness
/// (which records them in `__diesel_schema_migrations`); returns the versions applied now.
pub fn run_migrations<DB: Backend>(
    conn: &mut impl MigrationHarness<DB>,
    plan: Vec<TableMigration>,
) -> Result<Vec<String>, StoreError> {
    run(conn, plan, false)
}

/// [`run_migrations`] for connections that run one statement per call (Oracle): each
/// migration's SQL is split with [`docket_core::migrate::split_statements`].
pub fn run_migrations_by_statement<DB: Backend>(
    conn: &mut impl MigrationHarness<DB>,
    plan: Vec<TableMigration>,
) -> Result<Vec<String>, StoreError> {
    run(conn, plan, true)
}

/// The versions in `__diesel_schema_migrations` (created if missing, as migrating does).
pub(crate) fn recorded<DB: Backend>(
    conn: &mut impl MigrationHarness<DB>,
) -> Result<Vec<String>, StoreError> {
    let versions = conn
        .applied_migrations()
        .map_err(|source| StoreError::Migration { source })?;
    Ok(versions.iter().map(ToString::to_string).collect())
}

pub(crate) fn run<DB: Backend>(
    conn: &mut impl MigrationHarness<DB>,
    plan: Vec<TableMigration>,
    by_statement: bool,
) -> Result<Vec<String>, StoreError> {
    let applied = conn
        .run_pending_migrations(Steps { plan, by_statement })
        .map_err(|source| StoreError::Migration { source })?;
    Ok(applied.iter().map(ToString::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::db;
    use diesel::result::{DatabaseErrorKind as Kind, Error};
    use docket_core::StoreError;

    fn unknown(message: &str) -> Error {
        Error::DatabaseError(Kind::Unknown, Box::new(message.to_owned()))
    }

    /// MySQL/MariaDB's 1213 from a `COMMIT` (diesel reports it without its code): a Galera
    /// certification conflict, retried as contention like the 1213 of a statement.
    #[test]
    fn deadlock_at_commit_is_contention() {
        let e = unknown("Deadlock found when trying to get lock; try restarting transaction");
        assert!(matches!(db(e), StoreError::Contention { .. }));
        let e = Error::DatabaseError(Kind::SerializationFailure, Box::new(String::new()));
        assert!(matches!(db(e), StoreError::Contention { .. }));
        let e = unknown("Lock wait timeout exceeded; try restarting transaction");
        assert!(matches!(db(e), StoreError::Contention { .. }));
    }

    #[test]
    fn other_errors_are_not_contention() {
        let e = unknown("Table 'docket.x' doesn't exist");
        assert!(matches!(db(e), StoreError::Database { .. }));
    }
}
