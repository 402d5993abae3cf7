//! The server-corrected clock: how far this node's clock is from the database server's,
//! estimated from samples of the server's time ([`ExecutionStore::server_time`]).
//!
//! A sample brackets one read of the server's clock with the node's clock: `offset = server -
//! (local before + local after) / 2`, the midpoint measured as `local before + round trip / 2`
//! with the monotonic clock, so a step of the wall clock during the call does not skew it. The
//! server read the time somewhere in the round trip, so the estimate is good to half the round
//! trip; an offset no larger than that (plus [`RESOLUTION`]) cannot be told from zero and is
//! applied as zero, which keeps a node whose clock agrees with the server's (every node on the
//! database's host, every NTP-synchronized one) on exactly its own clock. Of the last
//! [`KEPT_SAMPLES`] samples the one with the shortest round trip is used (the most exact); a
//! sample whose round trip exceeds [`MAX_ROUND_TRIP`] is used only while there is no other,
//! and samples taken before the node's wall clock stepped (it moved differently from the
//! monotonic clock since) are forgotten.
//!
//! [`ExecutionStore::server_time`]: crate::ExecutionStore::server_time

use chrono::{DateTime, TimeDelta, Utc};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Samples kept; the one with the shortest round trip is used.
pub(crate) const KEPT_SAMPLES: usize = 5;

/// A sample whose round trip took longer than this (an overloaded link or server) is used
/// only while no other sample is kept.
pub(crate) const MAX_ROUND_TRIP: Duration = Duration::from_secs(1);

/// Added to half the round trip for the precision of the server's clock (SQLite's `'now'` is
/// milliseconds): the uncertainty below which an offset is taken as zero.
pub(crate) const RESOLUTION: Duration = Duration::from_millis(2);

fn delta(d: Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
}

/// One read of the server's clock, bracketed by the node's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    /// `server - node` at the midpoint of the round trip.
    pub offset: TimeDelta,
    /// How long the read took.
    pub round_trip: Duration,
    /// The node's wall clock at the midpoint.
    pub local: DateTime<Utc>,
    /// The monotonic clock at the midpoint.
    pub taken: Instant,
}

impl Sample {
    /// The sample of a read that started at `local_before` (wall clock) and `started`
    /// (monotonic), took `round_trip` and returned `server`.
    pub fn new(
        local_before: DateTime<Utc>,
        started: Instant,
        round_trip: Duration,
        server: DateTime<Utc>,
    ) -> Self {
        let half = round_trip / 2;
        let local = local_before
            .checked_add_signed(delta(half))
            .unwrap_or(local_before);
        Self {
            offset: server - local,
            round_trip,
            local,
            taken: started + half,
        }
    }

    /// How far the offset may be from the truth: half the round trip and the server clock's
    /// resolution.
    pub fn uncertainty(&self) -> Duration {
        self.round_trip / 2 + RESOLUTION
    }

    /// The offset to correct the node's clock by: zero when it is within the uncertainty.
    pub fn applied(&self) -> TimeDelta {
        if self.offset.abs() <= delta(self.uncertainty()) {
            TimeDelta::zero()
        } else {
            self.offset
        }
    }
}

/// The samples kept, and the best of them.
#[derive(Debug, Default)]
pub(crate) struct Estimator {
    samples: VecDeque<Sample>,
}

impl Estimator {
    /// Takes `sample` into account; returns the sample to correct by (the kept one with the
    /// shortest round trip).
    pub fn add(&mut self, sample: Sample) -> Sample {
        // The node's wall clock stepped (or slewed measurably) since an older sample: its
        // offset is stale by the difference between wall and monotonic time elapsed.
        let tolerance = delta(sample.uncertainty());
        self.samples.retain(|old| {
            let wall = sample.local - old.local;
            let monotonic = delta(sample.taken.saturating_duration_since(old.taken));
            (wall - monotonic).abs() <= tolerance
        });
        if sample.round_trip <= MAX_ROUND_TRIP || self.samples.is_empty() {
            self.samples.push_back(sample);
            while self.samples.len() > KEPT_SAMPLES {
                self.samples.pop_front();
            }
        }
        self.samples
            .iter()
            .copied()
            .min_by_key(|s| s.round_trip)
            .unwrap_or(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_780_000_000 + secs, 0).expect("in range")
    }

    /// A sample taken `after` into the test, on a node whose wall clock reads `skew` off the
    /// server's (and `wall_step` more since the test began), with round trip `rtt` ms.
    fn sample(base: Instant, after: u64, skew: i64, wall_step: i64, rtt: u64) -> Sample {
        let started = base + Duration::from_secs(after);
        let local_before = at(after as i64 + skew + wall_step);
        let round_trip = Duration::from_millis(rtt);
        let server = at(after as i64) + delta(round_trip / 2);
        Sample::new(local_before, started, round_trip, server)
    }

    #[test]
    fn offset_is_server_minus_the_midpoint_and_zero_within_the_uncertainty() {
        let base = Instant::now();
        let ahead = sample(base, 0, 600, 0, 10);
        assert_eq!(ahead.offset, TimeDelta::seconds(-600));
        assert_eq!(ahead.applied(), TimeDelta::seconds(-600));
        assert_eq!(ahead.uncertainty(), Duration::from_millis(7));
        // The server read its clock at the very end of a 10 ms round trip: 5 ms off the
        // midpoint, within the uncertainty, so no correction at all.
        let same = Sample::new(
            at(0),
            base,
            Duration::from_millis(10),
            at(0) + TimeDelta::milliseconds(10),
        );
        assert_eq!(same.offset, TimeDelta::milliseconds(5));
        assert_eq!(same.applied(), TimeDelta::zero());
        // 50 ms off with a 10 ms round trip is a real offset.
        let off = Sample::new(
            at(0),
            base,
            Duration::from_millis(10),
            at(0) + TimeDelta::milliseconds(55),
        );
        assert_eq!(off.applied(), TimeDelta::milliseconds(50));
    }

    #[test]
    fn the_shortest_round_trip_of_the_last_few_wins_and_slow_samples_only_stand_in() {
        let base = Instant::now();
        let mut e = Estimator::default();
        // Alone, a slow sample is better than none.
        let slow = sample(base, 0, -600, 0, 3_000);
        assert_eq!(e.add(slow), slow);
        let fast = sample(base, 5, -600, 0, 4);
        assert_eq!(e.add(fast), fast);
        // Another slow one is ignored; a merely slower one is kept but not used.
        assert_eq!(e.add(sample(base, 10, -600, 0, 2_000)), fast);
        assert_eq!(e.add(sample(base, 15, -600, 0, 40)), fast);
        // After KEPT_SAMPLES newer ones the fast sample is forgotten.
        for i in 0..KEPT_SAMPLES as u64 {
            e.add(sample(base, 20 + i * 5, -600, 0, 30 + i));
        }
        let best = e.add(sample(base, 60, -600, 0, 31));
        assert_eq!(best.round_trip, Duration::from_millis(31));
        assert_eq!(best.applied(), TimeDelta::seconds(600));
    }

    #[test]
    fn samples_from_before_a_wall_clock_step_are_forgotten() {
        let base = Instant::now();
        let mut e = Estimator::default();
        let before = sample(base, 0, 600, 0, 2);
        assert_eq!(e.add(before), before);
        // The node's clock was set right (600 s back) between the samples: the old, faster
        // sample is stale and must not win.
        let after = sample(base, 5, 600, -600, 20);
        let best = e.add(after);
        assert_eq!(best, after);
        assert_eq!(best.applied(), TimeDelta::zero());
    }
}
