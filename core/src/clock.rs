//! Injectable time. Every time-dependent statement takes `now` from a [`Clock`] as a bind value,
//! so tests drive time with a [`ManualClock`] and no statement reads the server clock.

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
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
}
