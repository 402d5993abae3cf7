//! Injectable time. Every time-dependent statement takes `now` from a [`Clock`] as a bind value,
//! so tests drive time with a [`ManualClock`]. A scheduler on the system clock reads the
//! server's clock once per heartbeat round and runs on a [`CorrectedClock`]: its own clock plus
//! the estimated offset to the server's (docs/RELIABILITY.md, "Which clock").

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A source of the current UTC instant.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current instant, truncated to microseconds (the precision every backend stores).
    fn now(&self) -> DateTime<Utc>;
}

/// Truncates to whole microseconds, the precision all backends round-trip exactly.
pub fn to_micros(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::microseconds(1)).unwrap_or(t)
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        to_micros(Utc::now())
    }
}

/// A clock that moves only when told to; clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<DateTime<Utc>>>,
}

impl ManualClock {
    /// A clock standing at `start` (truncated to microseconds).
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Arc::new(Mutex::new(to_micros(start))),
        }
    }

    /// Moves the clock forward by `by` (truncated to microseconds); it stops at the largest
    /// time chrono can represent. To move it backward, [`set`](ManualClock::set) it.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        let later = TimeDelta::from_std(by)
            .ok()
            .and_then(|by| now.checked_add_signed(by))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        *now = to_micros(later);
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = to_micros(at);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A clock corrected by an offset: `inner.now() + offset`. The scheduler wraps the system
/// clock in one and sets the offset to its estimate of `server clock - node clock`, so every
/// node writes and compares times on (nearly) the database server's clock, whatever its own
/// clock says. The offset starts at zero.
#[derive(Debug)]
pub struct CorrectedClock {
    inner: Arc<dyn Clock>,
    /// The offset in microseconds (the precision of every instant docket handles).
    offset_micros: AtomicI64,
}

impl CorrectedClock {
    /// `inner`, not corrected yet (offset zero).
    pub fn new(inner: Arc<dyn Clock>) -> Self {
        Self {
            inner,
            offset_micros: AtomicI64::new(0),
        }
    }

    /// The clock it corrects.
    pub fn inner(&self) -> &Arc<dyn Clock> {
        &self.inner
    }

    /// The offset added to the inner clock.
    pub fn offset(&self) -> TimeDelta {
        TimeDelta::microseconds(self.offset_micros.load(Ordering::Relaxed))
    }

    /// Sets the offset added to the inner clock (truncated to microseconds; beyond about
    /// 292,000 years it saturates).
    pub fn set_offset(&self, offset: TimeDelta) {
        let micros = offset
            .num_microseconds()
            .unwrap_or(if offset < TimeDelta::zero() {
                i64::MIN
            } else {
                i64::MAX
            });
        self.offset_micros.store(micros, Ordering::Relaxed);
    }
}

impl Clock for CorrectedClock {
    fn now(&self) -> DateTime<Utc> {
        let now = self.inner.now();
        let offset = self.offset();
        now.checked_add_signed(offset)
            .unwrap_or(if offset < TimeDelta::zero() {
                DateTime::<Utc>::MIN_UTC
            } else {
                DateTime::<Utc>::MAX_UTC
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_time() {
        let start = DateTime::parse_from_rfc3339("2026-01-01T00:00:00.123456789Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("valid literal");
        let clock = ManualClock::new(start);
        let other = clock.clone();
        assert_eq!(clock.now().timestamp_subsec_nanos(), 123_456_000);
        other.advance(Duration::from_secs(10));
        assert_eq!(clock.now() - to_micros(start), TimeDelta::seconds(10));
        other.advance(Duration::from_nanos(1500));
        assert_eq!(
            clock.now() - to_micros(start),
            TimeDelta::microseconds(10_000_001)
        );
    }

    #[test]
    fn corrected_clock_adds_its_offset_and_saturates() {
        let start = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("valid literal");
        let manual = ManualClock::new(start);
        let corrected = CorrectedClock::new(Arc::new(manual.clone()));
        assert_eq!(corrected.now(), start, "no offset until one is set");
        corrected.set_offset(TimeDelta::minutes(-10));
        assert_eq!(corrected.now(), start - TimeDelta::minutes(10));
        manual.advance(Duration::from_secs(1));
        assert_eq!(corrected.now() - start, TimeDelta::seconds(-599));
        corrected.set_offset(TimeDelta::MAX);
        assert_eq!(corrected.now(), DateTime::<Utc>::MAX_UTC);
        corrected.set_offset(TimeDelta::MIN);
        assert_eq!(corrected.now(), DateTime::<Utc>::MIN_UTC);
    }
}
