//! How many executions the poller claims: the polling strategy's upper limit, grown toward
//! [`SchedulerConfig::claim_growth_limit`](super::SchedulerConfig::claim_growth_limit) while
//! the poller, not the handlers, is what holds a scheduler back.

use std::time::Duration;

/// The poller's in-flight cap. It starts at the strategy's upper limit. A claim that comes
/// back full while the workers emptied the previous batch faster than that claim took (the
/// handlers wait on the poller) doubles it, up to the growth limit; a claim that comes back
/// short (the backlog is gone) resets it; a full claim whose batch took the workers much
/// longer than a claim (slow handlers: holding more would only keep rows from other
/// processes) halves it again. So a deep backlog of short jobs is claimed in batches large
/// enough to amortize the round trip, and slow jobs are never hoarded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClaimSize {
    upper: usize,
    limit: usize,
    cap: usize,
}

/// A batch that took the workers this many claims' time to run marks the handlers as the
/// limit (the cap shrinks).
const HANDLER_BOUND: u32 = 4;

impl ClaimSize {
    /// `upper`: the strategy's upper limit; `limit`: the most the cap may grow to (at least
    /// `upper`).
    pub(crate) fn new(upper: usize, limit: usize) -> Self {
        Self {
            upper,
            limit: limit.max(upper),
            cap: upper,
        }
    }

    /// The most executions that may be in flight after the next claim.
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// Learns from a claim: whether it came back `full`, how long it took (`claim`), and how
    /// long the workers took to run the previous batch down to the lower limit (`drained`:
    /// the poller's wait before it).
    pub(crate) fn learn(&mut self, full: bool, claim: Duration, drained: Duration) {
        self.cap = if !full {
            self.upper
        } else if drained < claim {
            (self.cap * 2).min(self.limit)
        } else if drained > claim * HANDLER_BOUND {
            (self.cap / 2).max(self.upper)
        } else {
            self.cap
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_poller_bound_backlog_grows_the_claims_to_the_limit() {
        let mut size = ClaimSize::new(40, 100);
        size.learn(true, 2 * MS, MS);
        assert_eq!(size.cap(), 80);
        size.learn(true, 2 * MS, MS);
        assert_eq!(size.cap(), 100);
        size.learn(true, 2 * MS, MS);
        assert_eq!(size.cap(), 100);
        // Same pace: kept.
        size.learn(true, 2 * MS, 3 * MS);
        assert_eq!(size.cap(), 100);
    }

    #[test]
    fn a_short_claim_resets_and_slow_handlers_shrink() {
        let mut size = ClaimSize::new(40, 400);
        size.learn(true, MS, Duration::ZERO);
        size.learn(true, MS, Duration::ZERO);
        assert_eq!(size.cap(), 160);
        size.learn(true, MS, 100 * MS);
        assert_eq!(size.cap(), 80);
        size.learn(true, MS, 100 * MS);
        size.learn(true, MS, 100 * MS);
        assert_eq!(size.cap(), 40, "never below the strategy's upper limit");
        size.learn(true, MS, Duration::ZERO);
        size.learn(false, MS, Duration::ZERO);
        assert_eq!(size.cap(), 40, "the backlog is gone");
    }

    #[test]
    fn a_limit_below_the_upper_limit_turns_growth_off() {
        let mut size = ClaimSize::new(40, 10);
        size.learn(true, 10 * MS, Duration::ZERO);
        assert_eq!(size.cap(), 40);
    }
}
