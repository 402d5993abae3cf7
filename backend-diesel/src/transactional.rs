//! Transactional enqueue: schedule executions with the caller's own diesel connection, inside
//! the caller's transaction, so that the execution exists if and only if that transaction
//! commits (the outbox pattern without an outbox: River's `InsertTx`, Oban's `Ecto.Multi`).

use crate::family::Family;
use crate::session::DieselConnector;
use diesel::connection::{Connection, TransactionManager};
use docket_core::backend::SqlStore;
use docket_core::clock::{Clock, SystemClock};
use docket_core::records::NewExecution;
use docket_core::store::sql::SqlSession;
use docket_core::{DocketError, Priority, ScheduleOutcome, StoreError, TaskInstance};

/// Schedules on a connection the caller holds, inside the caller's transaction.
///
/// Implemented by the PostgreSQL, MySQL/MariaDB and SQLite stores. The statement is the
/// store's own insert (same table, same dialect, values bound as parameters), run on the
/// caller's connection: nothing is written through docket's pool, so the execution becomes
/// visible to schedulers when, and only if, the caller's transaction commits; a rollback
/// leaves no trace of it.
///
/// ```text
/// use docket::ScheduleInTransaction;
///
/// conn.transaction(|conn| {
///     diesel::insert_into(users).values(&new_user).execute(conn)?;
///     store.schedule_in(conn, WELCOME.instance(new_user.id.to_string()).data(mail))?;
///     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
/// })?;
/// ```
///
/// (A sketch, not compiled here: `docket/examples/transactional.rs` runs it on SQLite in CI.)
///
/// - The connection must be inside a transaction (`Connection::transaction`, or a transaction
///   begun by hand): outside one, the insert would commit on its own, so it is refused with
///   [`DocketError::NotInTransaction`] and nothing is written.
/// - An instance given no priority gets [`Priority::MEDIUM`] (the store does not know the
///   scheduler's tasks and their default priorities); its execution time defaults to now.
/// - On PostgreSQL an execution due now also signals the schedulers listening on the table
///   (`pg_notify` on the caller's connection, inside its transaction: delivered on commit,
///   dropped on rollback), so they start it within milliseconds of the commit, as after
///   [`SchedulerClient::schedule`](docket_core::SchedulerClient). Elsewhere, and for work due
///   later, schedulers find it by polling.
/// - The caller's connection needs no docket session set-up: values are bound in the
///   backend's encoding, and times are UTC whatever the session's time zone.
pub trait ScheduleInTransaction {
    /// The connection type the caller's transaction runs on (e.g. `diesel::PgConnection`).
    type Connection;

    /// Schedules the instance unless it exists (schedule-if-not-exists), on `conn` inside its
    /// open transaction. An existing instance is [`ScheduleOutcome::AlreadyExists`] and leaves
    /// the caller's transaction usable.
    fn schedule_in<T>(
        &self,
        conn: &mut Self::Connection,
        instance: TaskInstance<T>,
    ) -> Result<ScheduleOutcome, DocketError>;

    /// Schedules every instance on `conn` inside its open transaction; existing instances are
    /// skipped. Every instance is validated before anything is written. Returns how many were
    /// created.
    fn schedule_batch_in<T>(
        &self,
        conn: &mut Self::Connection,
        instances: impl IntoIterator<Item = TaskInstance<T>>,
    ) -> Result<u64, DocketError>;
}

impl<F: Family> ScheduleInTransaction for SqlStore<DieselConnector<F>> {
    type Connection = F::Connection;

    fn schedule_in<T>(
        &self,
        conn: &mut F::Connection,
        instance: TaskInstance<T>,
    ) -> Result<ScheduleOutcome, DocketError> {
        let row = instance.into_new_execution(SystemClock.now(), Priority::MEDIUM)?;
        in_transaction::<F>(conn)?;
        if !insert::<F>(self, conn, &row)? {
            return Ok(ScheduleOutcome::AlreadyExists);
        }
        signal_if_due::<F>(self, conn, &[row])?;
        Ok(ScheduleOutcome::Scheduled)
    }

    fn schedule_batch_in<T>(
        &self,
        conn: &mut F::Connection,
        instances: impl IntoIterator<Item = TaskInstance<T>>,
    ) -> Result<u64, DocketError> {
        let now = SystemClock.now();
        let rows = instances
            .into_iter()
            .map(|i| i.into_new_execution(now, Priority::MEDIUM))
            .collect::<Result<Vec<_>, _>>()?;
        in_transaction::<F>(conn)?;
        let mut created = 0;
        for row in &rows {
            created += u64::from(insert::<F>(self, conn, row)?);
        }
        if created > 0 {
            signal_if_due::<F>(self, conn, &rows)?;
        }
        Ok(created)
    }
}

/// Signals the table's listeners from inside the caller's transaction when one of `rows` is
/// due now (work due later is found by polling). One signal per transaction at most matters:
/// PostgreSQL folds identical notifications of one transaction into one.
fn signal_if_due<F: Family>(
    store: &SqlStore<DieselConnector<F>>,
    conn: &mut F::Connection,
    rows: &[NewExecution],
) -> Result<(), DocketError> {
    let now = SystemClock.now();
    if !rows.iter().any(|r| r.execution_time <= now) {
        return Ok(());
    }
    match docket_core::StoreInfo::wake_signals(store) {
        Some(signals) => Ok(F::signal_in(conn, signals.channel())?),
        None => Ok(()),
    }
}

/// Refuses a connection that is not inside a transaction.
fn in_transaction<F: Family>(conn: &mut F::Connection) -> Result<(), DocketError> {
    let status = <<F::Connection as Connection>::TransactionManager as TransactionManager<
        F::Connection,
    >>::transaction_manager_status_mut(conn);
    match status.transaction_depth() {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(DocketError::NotInTransaction),
        Err(e) => Err(StoreError::connection(e).into()),
    }
}

/// Inserts one row; `false` when its key exists. PostgreSQL and SQLite skip an existing key
/// in the statement itself (`ON CONFLICT DO NOTHING`), so the caller's transaction is not
/// aborted; MySQL rolls back only the failed statement.
fn insert<F: Family>(
    store: &SqlStore<DieselConnector<F>>,
    conn: &mut F::Connection,
    row: &NewExecution,
) -> Result<bool, DocketError> {
    let stmt = store.statements().insert(row);
    match store.connector().session(conn).execute(&stmt) {
        Ok(n) => Ok(n == 1),
        Err(StoreError::Duplicate { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
