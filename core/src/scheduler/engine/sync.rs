//! The scheduler's clock corrected by the database server's: samples of the server's time
//! and the offset they give (see `super::super::clock_sync`).

use super::{chrono, Engine};
use crate::clock::CorrectedClock;
use crate::error::StoreError;
use crate::scheduler::clock_sync::{Estimator, Sample};
use chrono::TimeDelta;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;
use tracing::{debug, warn};

/// The correction of a scheduler's clock by the server's (see `super::clock_sync`).
#[derive(Debug)]
pub(crate) struct ClockSync {
    /// The engine's clock: the system clock plus the offset.
    clock: Arc<CorrectedClock>,
    estimator: Mutex<Estimator>,
    /// Whether a sample was taken: until then polls, heartbeats and dead detection take one
    /// first, so no time of the uncorrected clock is ever written or compared.
    synced: AtomicBool,
}

impl ClockSync {
    /// Corrects `clock`.
    pub fn new(clock: Arc<CorrectedClock>) -> Self {
        Self {
            clock,
            estimator: Mutex::new(Estimator::default()),
            synced: AtomicBool::new(false),
        }
    }
}

impl Engine {
    /// Reads the server's clock once and corrects this scheduler's clock by the best
    /// estimate of the offset (see `super::clock_sync`); returns the offset applied, `None`
    /// when the clock is not corrected (an injected clock, `clock_correction: false`, a store
    /// that cannot read the server's clock). Sets the gauge `docket_clock_offset_seconds`;
    /// an offset beyond a quarter of the dead window is logged as a warning and counted in
    /// `docket_clock_skew_warnings_total` (the clocks need fixing: the correction holds only
    /// to half a round trip, and a node that cannot reach the database runs uncorrected).
    pub fn sync_clock(&self) -> Result<Option<TimeDelta>, StoreError> {
        let Some(sync) = &self.sync else {
            return Ok(None);
        };
        let local_before = sync.clock.inner().now();
        let started = Instant::now();
        let server = match self.store.server_time() {
            Ok(server) => server,
            Err(StoreError::Unsupported { .. }) => {
                sync.synced.store(true, Ordering::SeqCst);
                return Ok(None);
            }
            Err(err) => return Err(err),
        };
        let sample = Sample::new(local_before, started, started.elapsed(), server);
        let best = sync
            .estimator
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(sample);
        let offset = best.applied();
        sync.clock.set_offset(offset);
        sync.synced.store(true, Ordering::SeqCst);
        let seconds = offset.num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6;
        metrics::gauge!("docket_clock_offset_seconds").set(seconds);
        let quarter = chrono(self.config.dead_after() / 4);
        if offset.abs() > quarter {
            warn!(
                offset_ms = offset.num_milliseconds(),
                round_trip_ms = best.round_trip.as_millis() as u64,
                "this node's clock is far from the database server's: corrected by the offset; \
                 fix the clock (NTP)"
            );
            metrics::counter!("docket_clock_skew_warnings_total").increment(1);
        } else {
            debug!(
                offset_ms = offset.num_milliseconds(),
                sample_offset_us = sample.offset.num_microseconds(),
                round_trip_us = sample.round_trip.as_micros() as u64,
                "clock synchronized"
            );
        }
        Ok(Some(offset))
    }

    /// The offset applied to this scheduler's clock, `None` when it is not corrected.
    pub fn clock_offset(&self) -> Option<TimeDelta> {
        self.sync.as_ref().map(|s| s.clock.offset())
    }

    /// Takes the first sample of the server's clock if none was taken yet (a scheduler driven
    /// step by step, or one whose first sample failed).
    pub(super) fn ensure_synced(&self) -> Result<(), StoreError> {
        match &self.sync {
            Some(sync) if !sync.synced.load(Ordering::SeqCst) => self.sync_clock().map(drop),
            _ => Ok(()),
        }
    }
}
