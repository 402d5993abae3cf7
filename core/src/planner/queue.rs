//! The work queue's hand-out: which priority level `next_for` claims from (strict: the first
//! item over all levels, in one statement; weighted and aging: chosen here from one read of
//! the levels holding items the worker may take, so the choice is the same on every backend),
//! and whether its queries name a custom order's index.

use super::{bands, guard, ItemSource, Planner};
use crate::dialect::OrderIndex;
use crate::error::StoreError;
use crate::ordering::{CustomKey, Level, PriorityMode, Weights};
use crate::records::{ForWorker, Item};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// How long (by the clock passed in [`ForWorker::now`]) the planner trusts what it found about
/// a custom order's index, where the dialect indexes with generated columns and the queries
/// must know whether they exist: an index created or dropped by another process is used, or no
/// longer used, at the latest this long after (a query that fails because the columns went
/// away asks again at once and sorts by the expressions).
pub const ORDER_INDEX_TTL_MS: i64 = 10_000;

/// What the planner knows about one key set's order index.
#[derive(Debug)]
pub(super) struct KnownIndex {
    keys: Vec<CustomKey>,
    index: Arc<OrderIndex>,
    exists: bool,
    checked_at: DateTime<Utc>,
}

/// Times `next_for`'s claim ended by contention is run again before it fails
/// ([`StoreError::Contention`]); each retry waits a little longer, up to 16 to 80 ms (at most
/// about 2 s in all). Six workers on three Galera nodes lost about 60% of their claims to
/// another node's, and 8 retries still failed one `next_for` in a few hundred.
pub const QUEUE_CONTENTION_RETRIES: usize = 30;

/// A level to claim from: the level and the latest arrival time of the items it may hand out.
type Pick = (Level, DateTime<Utc>);

impl Planner {
    /// Claims the item `q.worker` gets next, by `q.mode`; when the levels the mode chose were
    /// emptied by others meanwhile, whatever is left, strictly.
    pub fn next_for(
        &self,
        src: &dyn ItemSource,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError> {
        let q = &ForWorker { key: None, ..*q };
        // A claim the database ends to break a deadlock is run again, as the scheduler's are,
        // but more times: a scheduler whose claim keeps losing simply polls again, while a
        // worker would get an error. On a Galera cluster workers on different nodes all reach
        // for the same first eligible item, and one of each pair fails certification.
        let claim = |q: &ForWorker<'_>| {
            self.with_order_index(src, q, |index| {
                super::levels::retried_up_to(QUEUE_CONTENTION_RETRIES, || {
                    src.item_claim(q, deadline, index)
                })
            })
        };
        if !self.policy.priority || *q.mode == PriorityMode::Strict {
            return claim(q);
        }
        let levels = src.item_levels(q)?;
        let claim_at = |(level, arrived_by): Pick| {
            claim(&ForWorker {
                level,
                arrived_by,
                ..*q
            })
        };
        let claimed = match q.mode {
            PriorityMode::Weighted(weights) => self.weighted_item(q, &levels, weights, claim_at)?,
            PriorityMode::Aging(aging) => {
                let bands = bands::bands(levels.iter().map(|&(l, oldest)| (l, Some(oldest))));
                first(bands::ranked(bands, aging, q.now), claim_at)?
            }
            PriorityMode::Strict => None,
        };
        match claimed {
            Some(item) => Ok(Some(item)),
            None => claim(q),
        }
    }

    /// The items `q.worker` may take, in order (strict: higher level first, whatever the mode),
    /// without claiming.
    pub fn list_for(
        &self,
        src: &dyn ItemSource,
        q: &ForWorker<'_>,
        limit: i64,
    ) -> Result<Vec<Item>, StoreError> {
        self.with_order_index(src, q, |index| src.item_list(q, limit, index))
    }

    /// Weighted: the level furthest behind its share first (a [`crate::ordering::Stride`], one
    /// round per hand-out, per task type), the next when it has nothing left for this worker.
    fn weighted_item(
        &self,
        q: &ForWorker<'_>,
        levels: &[Pick],
        weights: &Weights,
        mut claim_at: impl FnMut(Pick) -> Result<Option<Item>, StoreError>,
    ) -> Result<Option<Item>, StoreError> {
        let order = guard(&self.strides)
            .entry(q.task_type.to_owned())
            .or_default()
            .order(levels.iter().map(|(l, _)| *l));
        let mut claimed = None;
        let mut served = Vec::with_capacity(order.len());
        for (level, pass) in order {
            let received = if claimed.is_none() {
                claimed = claim_at((level, q.now))?;
                usize::from(claimed.is_some())
            } else {
                0
            };
            served.push((level, pass, received));
        }
        guard(&self.strides)
            .entry(q.task_type.to_owned())
            .or_default()
            .settle(weights, served);
        Ok(claimed)
    }

    /// Runs `f` with the order index of `q`'s custom keys when the queries must name it and it
    /// exists, else with `None`. If the index went away meanwhile (its columns with it), the
    /// failed statement is run again sorting by the expressions.
    fn with_order_index<T>(
        &self,
        src: &dyn ItemSource,
        q: &ForWorker<'_>,
        f: impl Fn(Option<&OrderIndex>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Some(index) = self.ready_order_index(src, q)? else {
            return f(None);
        };
        match f(Some(&index)) {
            Err(StoreError::Database { .. }) if !src.order_index_present(&index)? => {
                self.forget_order_index(q.order.custom_keys());
                f(None)
            }
            other => other,
        }
    }

    /// The existing order index of `q`'s custom keys, where the queries name its columns;
    /// asked of the store at most every [`ORDER_INDEX_TTL_MS`].
    fn ready_order_index(
        &self,
        src: &dyn ItemSource,
        q: &ForWorker<'_>,
    ) -> Result<Option<Arc<OrderIndex>>, StoreError> {
        let keys = q.order.custom_keys();
        if keys.is_empty() {
            return Ok(None);
        }
        let ttl = chrono::Duration::milliseconds(ORDER_INDEX_TTL_MS);
        if let Some(known) = guard(&self.order_indexes).iter().find(|k| k.keys == keys) {
            if known.checked_at <= q.now && q.now < known.checked_at + ttl {
                return Ok(known.exists.then(|| Arc::clone(&known.index)));
            }
        }
        let Some(index) = src.named_order_index(keys)? else {
            return Ok(None);
        };
        let index = Arc::new(index);
        let exists = src.order_index_present(&index)?;
        let mut known = guard(&self.order_indexes);
        known.retain(|k| k.keys != keys);
        known.push(KnownIndex {
            keys: keys.to_vec(),
            index: Arc::clone(&index),
            exists,
            checked_at: q.now,
        });
        Ok(exists.then_some(index))
    }

    /// Forgets what it knew of `keys`' order index (created or dropped just now).
    pub fn forget_order_index(&self, keys: &[CustomKey]) {
        guard(&self.order_indexes).retain(|k| k.keys != keys);
    }
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
