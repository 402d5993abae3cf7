//! A connector that records every statement a store sends, so a benchmark can replay and
//! measure exactly what one operation costs.

use docket_core::dialect::{Dialect, Rendered};
use docket_core::ident::TableName;
use docket_core::migrate::{MigrationFile, TableMigration};
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::store::Row;
use docket_core::StoreError;
use std::sync::{Arc, Mutex, PoisonError};

/// Which [`SqlSession`] method ran a recorded statement, so it can be replayed the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// [`SqlSession::execute`].
    Execute,
    /// [`SqlSession::query`].
    Query,
}

/// One statement a store sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// How it ran.
    pub call: Call,
    /// What ran.
    pub stmt: Rendered,
}

impl Recorded {
    /// Replays the statement on `session` the way it first ran; returns the rows or rows
    /// affected.
    pub fn replay(&self, session: &mut dyn SqlSession) -> Result<u64, StoreError> {
        match self.call {
            Call::Execute => session.execute(&self.stmt),
            Call::Query => Ok(session.query(&self.stmt)?.len() as u64),
        }
    }
}

/// A [`SqlConnector`] that passes everything to `inner` and records every statement, so a
/// benchmark can measure exactly what a store sends for one operation.
#[derive(Debug)]
pub struct Recording<C> {
    inner: C,
    log: Arc<Mutex<Vec<Recorded>>>,
    /// Every transaction is rolled back once its work is done ([`Recording::rolling_back`]).
    roll_back: bool,
}

impl<C: SqlConnector> Recording<C> {
    /// Records what goes through `inner`.
    pub fn new(inner: C) -> Self {
        Self {
            inner,
            log: Arc::default(),
            roll_back: false,
        }
    }

    /// Records what goes through `inner` and rolls every transaction back when its work is
    /// done, handing its result on as if it had committed: a claim can be recorded as a store
    /// really sends it, locks and all, without claiming anything.
    pub fn rolling_back(inner: C) -> Self {
        Self {
            roll_back: true,
            ..Self::new(inner)
        }
    }

    /// The statements recorded since the last call, oldest first.
    pub fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

struct RecordingSession<'a> {
    inner: &'a mut dyn SqlSession,
    log: &'a Mutex<Vec<Recorded>>,
}

impl RecordingSession<'_> {
    fn note(&self, call: Call, stmt: &Rendered) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Recorded {
                call,
                stmt: stmt.clone(),
            });
    }
}

impl SqlSession for RecordingSession<'_> {
    fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
        self.note(Call::Execute, stmt);
        self.inner.execute(stmt)
    }
    fn query(&mut self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        self.note(Call::Query, stmt);
        self.inner.query(stmt)
    }
}

impl<C: SqlConnector> SqlConnector for Recording<C> {
    fn recorded(&self) -> Result<Vec<String>, StoreError> {
        self.inner.recorded()
    }

    /// The inner connector's: a recorded store is woken as the real one is (the signals send
    /// through the inner pool and are not recorded).
    fn wake_signals(&self, table: &TableName) -> Option<Arc<dyn docket_core::store::WakeSignals>> {
        self.inner.wake_signals(table)
    }

    fn dialect(&self) -> &'static dyn Dialect {
        self.inner.dialect()
    }

    fn with_session<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.inner.with_session(&mut |s| {
            f(&mut RecordingSession {
                inner: s,
                log: &self.log,
            })
        })
    }

    fn in_transaction<T>(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut session = |s: &mut dyn SqlSession| {
            f(&mut RecordingSession {
                inner: s,
                log: &self.log,
            })
        };
        if !self.roll_back {
            return self.inner.in_transaction(&mut session);
        }
        let mut done = None;
        let rolled_back = self.inner.in_transaction(&mut |s| {
            done = Some(session(s)?);
            Err(StoreError::conflict(
                "rolled back by the recording connector",
            ))
        });
        match done {
            Some(value) => Ok(value),
            None => rolled_back,
        }
    }

    fn migrations(&self) -> &'static [MigrationFile] {
        self.inner.migrations()
    }

    fn apply(
        &self,
        table: &TableName,
        steps: Vec<TableMigration>,
    ) -> Result<Vec<String>, StoreError> {
        self.inner.apply(table, steps)
    }
}
