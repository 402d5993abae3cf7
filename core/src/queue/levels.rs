//! Which priority level `next_for` claims from in the weighted and aging modes
//! ([`PriorityMode`]). Strict mode claims the first item over all levels in one statement.
//!
//! The choice is made here, in core, from one read of the levels that hold items the worker
//! may take ([`QueueStore::item_levels`]), so it is the same on every backend; the claim is
//! then the strict claim restricted to that level (and, aging, to the items old enough for the
//! level's band), in the task type's primary order.

use super::WorkQueue;
use crate::error::StoreError;
use crate::ordering::{Aging, Level, PriorityMode, Stride, Weights};
use crate::records::{ForWorker, Item};
use crate::store::QueueStore;
use chrono::{DateTime, Utc};

/// A level to claim from: the level and the latest arrival time of the items it may hand out.
type Pick = (Level, DateTime<Utc>);

impl WorkQueue {
    /// The mode of `task_type`: its own ([`super::QueueConfig::modes`]) or the store's.
    pub fn mode_of(&self, task_type: &str) -> PriorityMode {
        self.config
            .modes
            .get(task_type)
            .cloned()
            .unwrap_or_else(|| self.store.config().ordering.mode.clone())
    }

    /// Claims the item `q.worker` gets next, by the task type's [`PriorityMode`].
    pub(super) fn claim(
        &self,
        store: &dyn QueueStore,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError> {
        let mode = self.mode_of(q.task_type);
        if !store.config().ordering.priority || mode == PriorityMode::Strict {
            return store.item_next_for(q, deadline);
        }
        let levels = store.item_levels(q)?;
        let claim_at = |(level, arrived_by): Pick| {
            store.item_next_for(
                &ForWorker {
                    level,
                    arrived_by,
                    ..*q
                },
                deadline,
            )
        };
        let claimed = match &mode {
            PriorityMode::Weighted(weights) => self.weighted(q, &levels, weights, claim_at)?,
            PriorityMode::Aging(aging) => first(aging_order(q.now, &levels, aging), claim_at)?,
            PriorityMode::Strict => None,
        };
        match claimed {
            Some(item) => Ok(Some(item)),
            // Others took the chosen levels' items meanwhile: whatever is left, strictly.
            None => store.item_next_for(q, deadline),
        }
    }

    /// Weighted: the level furthest behind its share first ([`Stride`], one round per
    /// hand-out, per task type), the next when it has nothing left for this worker.
    fn weighted(
        &self,
        q: &ForWorker<'_>,
        levels: &[Pick],
        weights: &Weights,
        mut claim_at: impl FnMut(Pick) -> Result<Option<Item>, StoreError>,
    ) -> Result<Option<Item>, StoreError> {
        let order = self.stride(q.task_type, |s| s.order(levels.iter().map(|(l, _)| *l)));
        let mut claimed = None;
        let mut served = Vec::with_capacity(order.len());
        for (level, pass) in order {
            if claimed.is_none() {
                claimed = claim_at((level, q.now))?;
                served.push((level, pass, usize::from(claimed.is_some())));
            } else {
                served.push((level, pass, 0));
            }
        }
        self.stride(q.task_type, |s| s.settle(weights, served));
        Ok(claimed)
    }

    fn stride<T>(&self, task_type: &str, f: impl FnOnce(&mut Stride) -> T) -> T {
        // The passes steer fairness only: a panic elsewhere cannot make them unsafe to use.
        let mut strides = self
            .strides
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(strides.entry(task_type.to_owned()).or_default())
    }
}

/// Aging: levels by the effective priority of their longest-waiting item, highest first (on a
/// tie the higher level), each with the latest arrival that reaches that band. Items without
/// priority age from one below the lowest level present.
fn aging_order(now: DateTime<Utc>, levels: &[Pick], aging: &Aging) -> Vec<Pick> {
    let lowest = levels
        .iter()
        .filter_map(|(l, _)| l.priority())
        .min()
        .map_or(0, i32::from);
    let mut bands: Vec<(i32, i32, Pick)> = levels
        .iter()
        .map(|&(level, oldest)| {
            let base = level.priority().map_or(lowest - 1, i32::from);
            let band = aging.effective(base, oldest, now);
            (band, base, (level, aging.due_by(base, band, now)))
        })
        .collect();
    bands.sort_by_key(|&(band, base, _)| std::cmp::Reverse((band, base)));
    bands.into_iter().map(|(_, _, pick)| pick).collect()
}

/// The first claim that hands out an item, trying `picks` in order.
fn first(
    picks: Vec<Pick>,
    mut claim_at: impl FnMut(Pick) -> Result<Option<Item>, StoreError>,
) -> Result<Option<Item>, StoreError> {
    for pick in picks {
        if let Some(item) = claim_at(pick)? {
            return Ok(Some(item));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::time::Duration;

    #[test]
    fn aging_ranks_levels_by_their_oldest_item() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
        let aging = Aging::new(Duration::from_secs(60), 100).unwrap();
        let ago = |m| now - chrono::Duration::minutes(m);
        // Level 90 fresh (band 90), level 10 waiting 85 min (band 95), NULL 30 min (band 39).
        let levels = [
            (Level::Exactly(90), now),
            (Level::Exactly(10), ago(85)),
            (Level::Null, ago(30)),
        ];
        let order = aging_order(now, &levels, &aging);
        assert_eq!(
            order,
            vec![
                (Level::Exactly(10), ago(85)),
                (Level::Exactly(90), now),
                (Level::Null, ago(30)),
            ]
        );
        // Level 10 waiting 80 min ties level 90 at band 90: the higher level first, and level
        // 10's items must have waited the full 80 minutes to be in that band.
        let tie = aging_order(
            now,
            &[(Level::Exactly(10), ago(80)), (Level::Exactly(90), now)],
            &aging,
        );
        assert_eq!(tie[0].0, Level::Exactly(90));
        assert_eq!(tie[1], (Level::Exactly(10), ago(80)));
    }
}
