//! The aging mode's arithmetic, written once for the scheduler's polls and the work queue:
//! each level's base priority (rows without priority age from one below the lowest level
//! present), the highest effective priority its waiting rows reach ([`Aging::effective`]),
//! and the latest due or arrival time that reaches a band ([`Aging::due_by`]).

use crate::ordering::{Aging, Level};
use chrono::{DateTime, Utc};

/// One level under aging: its base priority and what is known of its longest-waiting row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Band {
    pub(super) level: Level,
    pub(super) base: i32,
    /// The time its oldest waiting row became due (or arrived); `None`: not known, so as old
    /// as aging allows.
    pub(super) head: Option<DateTime<Utc>>,
}

impl Band {
    /// The highest effective priority the level's rows reach at `now`.
    pub(super) fn top(&self, aging: &Aging, now: DateTime<Utc>) -> i32 {
        match self.head {
            None => self.base + i32::from(aging.cap()),
            Some(t) => aging.effective(self.base, t, now),
        }
    }

    /// The latest time a row of the level may have become due to be in `band` at `now`.
    pub(super) fn due_by(&self, aging: &Aging, band: i32, now: DateTime<Utc>) -> DateTime<Utc> {
        aging.due_by(self.base, band, now)
    }
}

/// `levels` with their heads as bands.
pub(super) fn bands(levels: impl IntoIterator<Item = (Level, Option<DateTime<Utc>>)>) -> Vec<Band> {
    let levels: Vec<_> = levels.into_iter().collect();
    let lowest = levels
        .iter()
        .filter_map(|(l, _)| l.priority())
        .min()
        .map_or(0, i32::from);
    levels
        .into_iter()
        .map(|(level, head)| Band {
            level,
            base: level.priority().map_or(lowest - 1, i32::from),
            head,
        })
        .collect()
}

/// The band to serve first: the highest effective priority; on a tie, the higher level.
pub(super) fn highest(bands: &[Band], aging: &Aging, now: DateTime<Utc>) -> Option<usize> {
    (0..bands.len()).max_by_key(|&i| (bands[i].top(aging, now), bands[i].base))
}

/// `bands` in the order aging serves them at `now`, each with the latest time that reaches its
/// band (one round: the work queue hands out one item per call).
pub(super) fn ranked(
    mut bands: Vec<Band>,
    aging: &Aging,
    now: DateTime<Utc>,
) -> Vec<(Level, DateTime<Utc>)> {
    bands.sort_by_key(|b| std::cmp::Reverse((b.top(aging, now), b.base)));
    bands
        .into_iter()
        .map(|b| (b.level, b.due_by(aging, b.top(aging, now), now)))
        .collect()
}
