//! Scheduler configuration: db-scheduler's defaults, except where docs/DESIGN.md ("Defaults") says why not.

use crate::error::DocketError;
use std::time::Duration;

/// How due executions are claimed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PollingStrategy {
    /// Select due candidates, then claim each with an optimistic `version` update right before
    /// running it.
    FetchAndLockOnExecute {
        /// Poll again when executing + queued falls to `threads * lower` (default 0.5).
        lower_limit_fraction: f64,
        /// Fetch up to `threads * upper` (default 3.0).
        upper_limit_fraction: f64,
    },
    /// Claim a batch in one round trip with the dialect's skip-locked idiom.
    LockAndFetch {
        /// Poll again when executing + queued falls to `threads * lower` (default 0.5).
        lower_limit_fraction: f64,
        /// Claim up to `threads * upper` (default 1.0).
        upper_limit_fraction: f64,
    },
}

impl PollingStrategy {
    /// Fetch-and-lock-on-execute with default fractions (0.5 / 3.0).
    pub const fn fetch() -> Self {
        PollingStrategy::FetchAndLockOnExecute {
            lower_limit_fraction: 0.5,
            upper_limit_fraction: 3.0,
        }
    }

    /// Lock-and-fetch with docket's default fractions (0.5 / 4.0; db-scheduler's are
    /// 0.5 / 1.0): a claim of up to `4 x threads` executions per round trip, so that the one
    /// poller keeps up with short jobs. Executions claimed but not started yet are
    /// heart-beaten like running ones; a scheduler that stops hands them back.
    pub const fn lock_and_fetch() -> Self {
        PollingStrategy::LockAndFetch {
            lower_limit_fraction: 0.5,
            upper_limit_fraction: 4.0,
        }
    }

    fn fractions(self) -> (f64, f64) {
        match self {
            PollingStrategy::FetchAndLockOnExecute {
                lower_limit_fraction,
                upper_limit_fraction,
            }
            | PollingStrategy::LockAndFetch {
                lower_limit_fraction,
                upper_limit_fraction,
            } => (lower_limit_fraction, upper_limit_fraction),
        }
    }

    /// `(lower, upper)` limits in executions for `threads` worker threads.
    pub fn limits(self, threads: usize) -> (usize, usize) {
        let (lower, upper) = self.fractions();
        let at = |f: f64| (threads as f64 * f).floor() as usize;
        (at(lower), at(upper).max(1))
    }
}

/// The poller's short interval on backends without wake-up signals (MySQL/MariaDB, SQLite,
/// SQL Server; PostgreSQL with [`SchedulerConfig::wake_listener`] off does not use it: there,
/// turning the listener off means polling only). After a poll that found work the poller polls
/// again after `min`; every poll that finds nothing doubles the wait, up to `max`; then it
/// stays at `max` (or `polling_interval`, if shorter) while idle. An idle scheduler therefore
/// runs one poll (one indexed statement where the level cache is warm) per `max`. See
/// docs/DESIGN.md ("Wake-ups").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortPoll {
    /// The wait after a poll that found work (default 50 ms).
    pub min: Duration,
    /// The longest wait while idle (default 1 s).
    pub max: Duration,
}

impl Default for ShortPoll {
    fn default() -> Self {
        Self {
            min: Duration::from_millis(50),
            max: Duration::from_secs(1),
        }
    }
}

impl ShortPoll {
    /// The wait after `idle_polls` polls in a row that found nothing (0: the last poll found
    /// work), never above `ceiling`.
    pub fn wait(&self, idle_polls: u32, ceiling: Duration) -> Duration {
        let factor = 1u32.checked_shl(idle_polls.min(30)).unwrap_or(u32::MAX);
        self.min.saturating_mul(factor).min(self.max).min(ceiling)
    }
}

/// Scheduler settings. The table and the ordering policy belong to the store
/// ([`StoreConfig`](crate::StoreConfig)).
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// Worker threads (default 10).
    pub threads: usize,
    /// Time between polls when idle (default 10 s).
    pub polling_interval: Duration,
    /// Heartbeat interval for running executions (default 5 min).
    pub heartbeat_interval: Duration,
    /// An execution whose heartbeat is older than `heartbeat_interval * missed_heartbeats_limit`
    /// is dead (default 6, minimum 4).
    pub missed_heartbeats_limit: u32,
    /// Polling strategy (default lock-and-fetch, [`PollingStrategy::lock_and_fetch`]).
    pub polling: PollingStrategy,
    /// How long `stop` waits for running executions (default 30 min).
    pub shutdown_max_wait: Duration,
    /// Unpicked rows of unknown tasks older than this are deleted (default 14 days).
    pub delete_unresolved_after: Duration,
    /// This scheduler's name, written to `picked_by` (default: the host name).
    pub scheduler_name: String,
    /// Outcomes of finished executions (removal, reschedule, failure) are written in batches,
    /// one statement per kind: a batch is written once it holds this many (default 100)...
    pub completion_batch_size: usize,
    /// ...or once its oldest outcome has waited this long (default 5 ms). A crash before the
    /// write re-runs those executions after the dead window (at-least-once, as a crash
    /// mid-run does; see docs/RELIABILITY.md). `completion_batch_size = 1` writes each at once.
    pub completion_flush_interval: Duration,
    /// Listen for the database's wake-up signals (default true): on PostgreSQL a dedicated
    /// connection per scheduler `LISTEN`s on the table's channel, and clients `NOTIFY` it when
    /// they commit work that is due, so a job scheduled by another process starts within
    /// milliseconds instead of at the next poll. Polling at `polling_interval` stays the
    /// fallback; a lost listener connection is opened again with backoff. `false`: polling
    /// only, and one connection fewer. Backends without signals ignore it.
    pub wake_listener: bool,
    /// On backends without wake-up signals, poll at a short interval that backs off while idle
    /// ([`ShortPoll`]; default `Some(ShortPoll::default())`: 50 ms after work, doubling to 1 s).
    /// `None`: wait `polling_interval` between polls, as before.
    pub short_poll: Option<ShortPoll>,
    /// How far claims grow with the backlog, as a fraction of `threads` like the polling
    /// strategy's limits (default 10.0: up to 100 executions in flight for 10 threads). While
    /// claims come back full and the workers run each batch faster than the poller claims the
    /// next (short jobs, deep backlog: the poller is what holds the scheduler back), each claim
    /// may hold twice as many as the last, up to this; a short claim (the backlog is gone)
    /// brings it back to the strategy's upper limit, and slow handlers shrink it again, so slow
    /// jobs are not held from other schedulers. At or below the upper limit: no growth.
    /// Lock-and-fetch only.
    pub claim_growth_limit: f64,
    /// Run on the database server's clock (default true): at start and every heartbeat round
    /// the scheduler reads the server's time and corrects its own clock by the estimated
    /// offset, so heartbeats, dead detection and due times agree between nodes whose clocks
    /// disagree (docs/RELIABILITY.md, "Which clock"). Only the system clock is corrected: a
    /// clock given to [`SchedulerBuilder::clock`](crate::scheduler::SchedulerBuilder::clock)
    /// (a [`ManualClock`](crate::ManualClock) in tests) is used as given. `false`: the node's
    /// clock as it is, one statement per heartbeat round fewer.
    pub clock_correction: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            threads: 10,
            polling_interval: Duration::from_secs(10),
            heartbeat_interval: Duration::from_secs(5 * 60),
            missed_heartbeats_limit: 6,
            polling: PollingStrategy::lock_and_fetch(),
            shutdown_max_wait: Duration::from_secs(30 * 60),
            delete_unresolved_after: Duration::from_secs(14 * 24 * 3600),
            scheduler_name: hostname::get()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "docket".to_owned()),
            completion_batch_size: 100,
            completion_flush_interval: Duration::from_millis(5),
            wake_listener: true,
            short_poll: Some(ShortPoll::default()),
            claim_growth_limit: 10.0,
            clock_correction: true,
        }
    }
}

impl SchedulerConfig {
    /// Checks every value; the first bad one is [`DocketError::InvalidConfig`].
    pub fn validate(&self) -> Result<(), DocketError> {
        let bad = |msg: String| Err(DocketError::InvalidConfig(msg));
        if self.threads == 0 {
            return bad("threads must be at least 1".into());
        }
        if self.missed_heartbeats_limit < 4 {
            return bad(format!(
                "missed_heartbeats_limit must be at least 4, got {}",
                self.missed_heartbeats_limit
            ));
        }
        if self.polling_interval.is_zero() || self.heartbeat_interval.is_zero() {
            return bad("polling and heartbeat intervals must be positive".into());
        }
        let (lower, upper) = self.polling.fractions();
        if !(lower >= 0.0 && upper > 0.0 && lower <= upper && upper.is_finite()) {
            return bad(format!(
                "limit fractions need 0 <= lower <= upper, upper > 0; got {lower} / {upper}"
            ));
        }
        if !(self.claim_growth_limit >= 0.0 && self.claim_growth_limit.is_finite()) {
            return bad(format!(
                "claim_growth_limit must be a finite fraction >= 0, got {}",
                self.claim_growth_limit
            ));
        }
        if self.completion_batch_size == 0 {
            return bad("completion_batch_size must be at least 1".into());
        }
        if let Some(short) = self.short_poll {
            if short.min.is_zero() || short.min > short.max {
                return bad(format!(
                    "short_poll needs 0 < min <= max; got {:?} / {:?}",
                    short.min, short.max
                ));
            }
        }
        if self.scheduler_name.is_empty() {
            return bad("scheduler_name must not be empty".into());
        }
        Ok(())
    }

    /// The most executions claims may grow to hold in flight ([`Self::claim_growth_limit`]
    /// x `threads`), never below the strategy's `upper` limit. Lock-and-fetch only: fetch
    /// claims each execution as it starts, so reading more ahead claims nothing sooner.
    pub fn claim_growth(&self, upper: usize) -> usize {
        match self.polling {
            PollingStrategy::LockAndFetch { .. } => {
                ((self.threads as f64 * self.claim_growth_limit).floor() as usize).max(upper)
            }
            PollingStrategy::FetchAndLockOnExecute { .. } => upper,
        }
    }

    /// `heartbeat_interval * missed_heartbeats_limit`: silence after which an execution is dead.
    pub fn dead_after(&self) -> Duration {
        self.heartbeat_interval * self.missed_heartbeats_limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_differ_from_db_scheduler_only_where_documented() {
        let c = SchedulerConfig::default();
        assert_eq!(c.threads, 10);
        assert_eq!(c.dead_after(), Duration::from_secs(30 * 60));
        // docket: lock-and-fetch, claims of up to 4 x threads (db-scheduler: fetch, 0.5 / 3.0).
        assert_eq!(c.polling, PollingStrategy::lock_and_fetch());
        assert_eq!(c.polling.limits(c.threads), (5, 40));
        assert_eq!(PollingStrategy::fetch().limits(10), (5, 30));
        assert_eq!(c.completion_batch_size, 100);
        c.validate().unwrap();
        let bad = SchedulerConfig {
            missed_heartbeats_limit: 3,
            ..SchedulerConfig::default()
        };
        assert!(bad.validate().is_err());
        let no_batch = SchedulerConfig {
            completion_batch_size: 0,
            ..SchedulerConfig::default()
        };
        assert!(no_batch.validate().is_err());
        assert!(c.wake_listener);
        assert!(c.clock_correction);
        let zero_short = SchedulerConfig {
            short_poll: Some(ShortPoll {
                min: Duration::ZERO,
                max: Duration::from_secs(1),
            }),
            ..SchedulerConfig::default()
        };
        assert!(zero_short.validate().is_err());
    }

    #[test]
    fn short_poll_doubles_from_min_to_max_and_never_passes_the_ceiling() {
        let s = ShortPoll::default();
        let ten = Duration::from_secs(10);
        let waits: Vec<_> = (0..7).map(|n| s.wait(n, ten).as_millis()).collect();
        assert_eq!(waits, [50, 100, 200, 400, 800, 1000, 1000]);
        assert_eq!(s.wait(u32::MAX, ten), Duration::from_secs(1));
        assert_eq!(
            s.wait(3, Duration::from_millis(300)),
            Duration::from_millis(300)
        );
    }
}
