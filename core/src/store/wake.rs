//! Wake-ups across processes: a backend whose database can signal (PostgreSQL's
//! `LISTEN`/`NOTIFY`) hands out [`WakeSignals`], through which clients announce work that
//! became due and schedulers listen for it. Core knows no database: the default is none
//! ([`StoreInfo::wake_signals`](super::StoreInfo::wake_signals)), and a scheduler without
//! signals polls (see `SchedulerConfig::short_poll`).
//!
//! The contract is "a hint, never the truth": a signal may be lost (a listener reconnecting,
//! a process ending before it sends) or spurious (another table's, one whose rows another
//! scheduler took). Schedulers therefore keep polling at `polling_interval`; a signal only
//! makes the next poll happen now.

use crate::error::StoreError;
use std::time::Duration;

/// A backend's cross-process wake-ups for one table.
pub trait WakeSignals: Send + Sync + std::fmt::Debug {
    /// Tells the schedulers listening on this table that work is due. Call it after the commit
    /// that made the work visible (a signal sent before the commit can wake a scheduler that
    /// then finds nothing). Implementations debounce (many calls in a short time become one
    /// signal) and never fail the caller: a signal that cannot be sent is logged, and polling
    /// finds the work.
    fn announce(&self);

    /// Opens a listener: its own connection, subscribed to this table's signals.
    fn listen(&self) -> Result<Box<dyn WakeListener>, StoreError>;

    /// What the signals are called in the database (e.g. the PostgreSQL channel), for
    /// messages and tooling.
    fn channel(&self) -> &str;
}

/// One subscription to a table's signals (see [`WakeSignals::listen`]).
pub trait WakeListener: Send {
    /// Waits up to `timeout` for a signal; `Ok(true)` when at least one arrived (every signal
    /// received so far is consumed: a burst wakes once). An error means the connection is
    /// lost: drop the listener and open another.
    fn wait(&mut self, timeout: Duration) -> Result<bool, StoreError>;
}
