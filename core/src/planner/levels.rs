//! Which priority levels a poll reads, in which order, with how much room and up to which
//! `execution_time` ([`PriorityMode`]: strict, weighted, aging), and the level cache that keeps
//! a poll under load to about one statement.
//!
//! Every mode sends the same statements: one index range `priority = ? AND execution_time <= ?`
//! per probe. Only the probes chosen and the bound values differ, and they are chosen here, in
//! core, so the hand-out is the same on every backend.

use super::{bands, guard, Decoded, DueSource, Planner, Probe};
use crate::error::StoreError;
use crate::ordering::{Aging, Level, PriorityMode, Stride, Weights};
use crate::records::Due;
use crate::records::{DueParams, Execution, ExecutionKey};
use chrono::{DateTime, Utc};
use std::collections::HashSet;
use std::sync::MutexGuard;
use std::time::Instant;

/// Times a claim ended by contention is run again before the poll fails
/// ([`StoreError::Contention`]).
pub const CONTENTION_RETRIES: usize = 3;

/// Times a batch of outcomes ended by contention is run again before the scheduler keeps it
/// for a later write. More than a claim's: a claim that gives up loses nothing (the next poll
/// reads on), an outcome not written holds its execution picked. On a Galera node applying
/// the other nodes' claims, a batch of deletes can lose a few times running (seen in CI:
/// four times within 35 ms); the pauses double up to 16 to 80 ms.
pub const COMPLETION_CONTENTION_RETRIES: usize = 6;

/// Rounds of due-query a poll spends refilling its batch after it found poison rows.
const POISON_ROUNDS: usize = 4;

/// Most distinct priority levels probed one at a time (see `Planner::by_level`).
pub const MAX_PROBED_LEVELS: usize = 64;

/// How long (by the clock passed in [`DueParams::now`]) a store trusts its priority-level cache:
/// the list of levels, and for each level what it knows of its unpicked rows (the oldest due
/// one, or when the next falls due). Writes made through the same store update the cache at
/// once; writes by other processes or other store instances (a new level, an earlier row in a
/// level seen empty, a released row) are seen at the latest this long after the cache was
/// filled. That is the only staleness the priority order accepts (docs/DESIGN.md, "Priority
/// due-query").
pub const LEVEL_CACHE_TTL_MS: i64 = 1_000;

/// Most due-queries one aging poll sends: each lowers some level's effective priority by at
/// least one band, and the poll ends when its batch is full. What is left is read next poll.
const MAX_AGING_PROBES: usize = 32;

/// What a store knows of a level's unpicked rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Nothing: probe it.
    Probe,
    /// No unpicked row before this time: when it is in the past, the level's oldest due row
    /// (as far as this store knows); in the future, when its next row falls due.
    At(DateTime<Utc>),
    /// Found empty with nothing after it: skip until the cache expires.
    Never,
}

impl Next {
    /// Skip the level at `now`?
    fn skips(self, now: DateTime<Utc>) -> bool {
        match self {
            Next::Probe => false,
            Next::At(t) => now < t,
            Next::Never => true,
        }
    }

    /// Something may be due at `at` (`None`: at any time): never skip past it.
    fn lower(self, at: Option<DateTime<Utc>>) -> Next {
        match (self, at) {
            (Next::Probe, _) | (_, None) => Next::Probe,
            (Next::Never, Some(t)) => Next::At(t),
            (Next::At(x), Some(t)) => Next::At(x.min(t)),
        }
    }
}

/// The priority levels one store saw, filled by a poll and trusted for [`LEVEL_CACHE_TTL_MS`].
#[derive(Debug, Clone)]
struct LevelCache {
    /// The task names of the poll that filled it (emptiness is per task set).
    task_names: Vec<String>,
    /// The poll's `now`.
    filled_at: DateTime<Utc>,
    /// Levels highest first, then NULL; `None` past [`MAX_PROBED_LEVELS`] (single statement).
    levels: Option<Vec<(Level, Next)>>,
}

impl LevelCache {
    fn fresh_for(&self, p: &DueParams<'_>) -> bool {
        let ttl = chrono::Duration::milliseconds(LEVEL_CACHE_TTL_MS);
        self.task_names.as_slice() == p.task_names
            && self.filled_at <= p.now
            && p.now < self.filled_at + ttl
    }
}

/// The cache and a counter of local writes, so a poll never stores what it learned about a
/// level after a write it did not see (the write wins; the next poll probes again); and the
/// weighted mode's passes.
#[derive(Debug, Default)]
pub(super) struct LevelState {
    cache: Option<LevelCache>,
    writes: u64,
    /// Weighted mode: the passes of the levels busy in the last poll.
    stride: Stride,
}

/// One poll's reads: the rows taken so far and what it learned about levels.
struct Poll<'p, 'n, F> {
    src: &'p dyn DueSource,
    p: &'p DueParams<'n>,
    /// Whether a read claims what it returns (lock-and-fetch). A read that does not claim
    /// returns the same rows again, so a second read of a level asks for more and drops them.
    claims: bool,
    slice: F,
    rows: Vec<Execution>,
    seen: HashSet<ExecutionKey>,
    learned: Vec<(Level, Next)>,
    began: Instant,
}

impl<F> Poll<'_, '_, F>
where
    F: FnMut(Level, i64, DateTime<Utc>) -> Result<Vec<Execution>, StoreError>,
{
    fn room(&self) -> i64 {
        self.p.limit - self.rows.len() as i64
    }

    /// Whether another level may be read: there is room, and a claiming poll that holds rows
    /// has not run past [`DueParams::claim_for`] (its rows get heartbeats only once it
    /// returns).
    fn open(&self) -> bool {
        let late = self.claims
            && !self.rows.is_empty()
            && self.p.claim_for.is_some_and(|d| self.began.elapsed() >= d);
        self.room() > 0 && !late
    }

    /// Reads up to the room at `level`, due by `due_by`. Returns how many rows it added and
    /// whether the level has no more unpicked rows due by `due_by` (for this poll).
    fn take(&mut self, level: Level, due_by: DateTime<Utc>) -> Result<(usize, bool), StoreError> {
        let room = self.room();
        let again = if self.claims {
            0
        } else {
            self.rows.iter().filter(|e| level.holds(e.priority)).count() as i64
        };
        let mut got = (self.slice)(level, room + again, due_by)?;
        let short = (got.len() as i64) < room + again;
        // One level: its rows in execution-time order (a claim may return them unordered).
        got.sort_by_key(|e| e.execution_time);
        got.retain(|e| self.seen.insert(e.key()));
        got.truncate(usize::try_from(room).unwrap_or(0));
        let added = got.len();
        self.rows.extend(got);
        Ok((added, short))
    }
}

impl Planner {
    /// Due, unpicked executions (fetch-and-lock-on-execute) in hand-out order, poison rows
    /// skipped and held back.
    pub fn due(
        &self,
        src: &dyn DueSource,
        p: &DueParams<'_>,
    ) -> Result<Vec<Execution>, StoreError> {
        if p.task_names.is_empty() || p.limit <= 0 {
            return Ok(Vec::new());
        }
        self.by_level(src, p, false, |level, limit, due_by| {
            self.without_poison(src, p, (level, limit, due_by), None)
        })
    }

    /// Claims due executions (lock-and-fetch) in hand-out order: strict mode sorts the batch
    /// by the policy; the other modes keep the order their probes chose (each level's rows in
    /// time order). Poison rows are skipped, never left claimed, and held back.
    pub fn claim(
        &self,
        src: &dyn DueSource,
        p: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError> {
        if p.task_names.is_empty() || p.limit <= 0 {
            return Ok(Vec::new());
        }
        let claimed = self.by_level(src, p, true, |level, limit, due_by| {
            self.without_poison(src, p, (level, limit, due_by), Some(picked_by))
        });
        let mut rows = match claimed {
            Ok(rows) => rows,
            // Still ended by contention after every retry: other schedulers are claiming these
            // rows right now (on a multi-primary cluster, each node's claim of the same rows
            // until one wins certification). Nothing was written; this poll claims nothing,
            // counted, and the next poll reads on. Not a failed poll: the work is being done.
            Err(StoreError::Contention { source }) => {
                metrics::counter!("docket_contention_gave_up_total").increment(1);
                tracing::debug!(error = %source, "claim kept losing to contention; claiming nothing this poll");
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        if self.policy.mode == PriorityMode::Strict {
            rows.sort_by(|a, b| a.cmp_in_hand_out_order(b, &self.policy));
        }
        Ok(rows)
    }

    /// Fills up to `limit` rows of `level` due by `due_by`, one due-query (a claim for
    /// `picked_by`, when given) a round, each leaving out the held-back keys and the rows
    /// already taken; again while a round finds poison rows and fills its room: the good rows
    /// behind poison rows are handed out in the same poll.
    fn without_poison(
        &self,
        src: &dyn DueSource,
        p: &DueParams<'_>,
        (level, limit, due_by): (Level, i64, DateTime<Utc>),
        picked_by: Option<&str>,
    ) -> Result<Vec<Execution>, StoreError> {
        let now = p.now;
        let mut rows: Vec<Execution> = Vec::new();
        for _ in 0..POISON_ROUNDS {
            let room = limit - rows.len() as i64;
            if room <= 0 {
                break;
            }
            // Fetch-and-lock-on-execute leaves the rows it read due: a refill must not read
            // them again.
            let mut exclude = guard(&self.quarantine).held_back(now);
            exclude.extend(rows.iter().map(Execution::key));
            let due = p.at_level(level, room, due_by, &exclude);
            let Decoded { rows: good, poison } = match picked_by {
                None => src.due_rows(&due)?,
                // Each claim is stamped (its rows' heartbeat) as of its own start when the
                // params give a clock: a poll's probes and earlier levels took 4 s of round
                // trips over a slow link, and rows stamped with the poll's start were dead to
                // the other schedulers the moment they were claimed.
                Some(by) => retried(|| {
                    let stamped = Due {
                        now: p.clock.map_or(p.now, |c| c.now()),
                        ..due
                    };
                    src.claim_rows(&stamped, by)
                })?,
            };
            let more = !poison.is_empty() && (good.len() + poison.len()) as i64 >= room;
            rows.extend(good);
            self.hold_back(poison, now);
            if !more {
                break;
            }
        }
        Ok(rows)
    }

    /// Collects up to `p.limit` due rows by calling `slice(level, room, due_by)`. With priority
    /// off that is one call for [`Level::Any`]. With priority on, levels are probed one at a
    /// time ([`PriorityMode`] decides which, in which order, with how much room): each probe
    /// is one index range, so drained levels with millions of future rows cost a few page
    /// reads instead of a walk through those rows. Beyond [`MAX_PROBED_LEVELS`] distinct
    /// levels, the single ordered statement is cheaper (strict order, whatever the mode).
    ///
    /// The level list and, per level, what a poll learned of its unpicked rows are cached for
    /// [`LEVEL_CACHE_TTL_MS`] (see [`LevelCache`]): a poll under load sends only the probes of
    /// levels that can have due rows, usually one statement, as with priority off. `claims`
    /// says whether `slice` claims what it returns (lock-and-fetch).
    fn by_level(
        &self,
        src: &dyn DueSource,
        p: &DueParams<'_>,
        claims: bool,
        slice: impl FnMut(Level, i64, DateTime<Utc>) -> Result<Vec<Execution>, StoreError>,
    ) -> Result<Vec<Execution>, StoreError> {
        let mut slice = slice;
        if !self.policy.priority {
            return slice(Level::Any, p.limit, p.now);
        }
        let (plan, writes) = self.level_plan(src, p)?;
        let Some(plan) = plan else {
            return slice(Level::Any, p.limit, p.now);
        };
        let mut poll = Poll {
            src,
            p,
            claims,
            slice,
            rows: Vec::new(),
            seen: HashSet::new(),
            learned: Vec::new(),
            began: Instant::now(),
        };
        let walked = match &self.policy.mode {
            PriorityMode::Strict => self.strict(&mut poll, &plan),
            PriorityMode::Weighted(weights) => self.weighted(&mut poll, &plan, weights),
            PriorityMode::Aging(aging) => self.aging(&mut poll, &plan, aging),
        };
        if let Err(e) = walked {
            // Each level's claim is a transaction of its own, committed: a claiming poll that
            // fails at a later level hands out what it claimed before. Failing the poll would
            // leave those rows picked by a scheduler that does not know it holds them, never
            // heart-beaten, revived only after the dead window (seen on Galera: a level's
            // claim ended by certification conflicts after an earlier level's committed).
            if claims && !poll.rows.is_empty() {
                if !matches!(e, StoreError::Contention { .. }) {
                    tracing::warn!(err = %e, claimed = poll.rows.len(),
                        "poll ended early by an error; handing out what it claimed");
                }
                return Ok(poll.rows);
            }
            return Err(e);
        }
        let mut state = self.level_state();
        if state.writes == writes {
            if let Some(levels) = state.cache.as_mut().and_then(|c| c.levels.as_mut()) {
                for (level, next) in levels.iter_mut() {
                    if let Some((_, n)) = poll.learned.iter().rev().find(|(l, _)| l == level) {
                        *next = *n;
                    }
                }
            }
        }
        Ok(poll.rows)
    }

    /// Strict: highest level first, then NULL, until the batch is full.
    fn strict<F>(
        &self,
        poll: &mut Poll<'_, '_, F>,
        plan: &[(Level, Next)],
    ) -> Result<(), StoreError>
    where
        F: FnMut(Level, i64, DateTime<Utc>) -> Result<Vec<Execution>, StoreError>,
    {
        let now = poll.p.now;
        for &(level, next) in plan {
            if !poll.open() {
                break;
            }
            if self.before_locking(poll, level, next)?.skips(now) {
                continue;
            }
            if poll.take(level, now)?.0 == 0 {
                poll.learned
                    .push((level, next_at(poll.src, level, poll.p)?));
            }
        }
        Ok(())
    }

    /// Weighted: the batch goes to the level with the lowest pass (executions received divided
    /// by weight), room it cannot use to the next lowest, and so on ([`Weights`]).
    fn weighted<F>(
        &self,
        poll: &mut Poll<'_, '_, F>,
        plan: &[(Level, Next)],
        weights: &Weights,
    ) -> Result<(), StoreError>
    where
        F: FnMut(Level, i64, DateTime<Utc>) -> Result<Vec<Execution>, StoreError>,
    {
        let now = poll.p.now;
        let live = plan.iter().filter(|(_, next)| !next.skips(now));
        let order = self.level_state().stride.order(live.map(|(l, _)| *l));
        let mut served = Vec::with_capacity(order.len());
        for (level, pass) in order {
            let mut received = 0;
            let next = plan
                .iter()
                .find(|(l, _)| *l == level)
                .map_or(Next::Probe, |(_, n)| *n);
            if poll.open() && !self.before_locking(poll, level, next)?.skips(now) {
                received = poll.take(level, now)?.0;
                if received == 0 {
                    poll.learned
                        .push((level, next_at(poll.src, level, poll.p)?));
                }
            }
            served.push((level, pass, received));
        }
        self.level_state().stride.settle(weights, served);
        Ok(())
    }

    /// Aging: bands of effective priority, highest first; each probe reads one level's rows
    /// old enough to reach the band ([`Aging`]).
    fn aging<F>(
        &self,
        poll: &mut Poll<'_, '_, F>,
        plan: &[(Level, Next)],
        aging: &Aging,
    ) -> Result<(), StoreError>
    where
        F: FnMut(Level, i64, DateTime<Utc>) -> Result<Vec<Execution>, StoreError>,
    {
        let now = poll.p.now;
        let plan = plan
            .iter()
            .map(|&(level, next)| Ok((level, self.before_locking(poll, level, next)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        // Each level's oldest unpicked due time: `None` unknown, so the oldest. Every level
        // of the table sets the base of NULL, skipped ones included.
        let heads = plan.iter().map(|&(level, next)| match next {
            Next::At(t) => (level, Some(t)),
            _ => (level, None),
        });
        let mut bands: Vec<_> = bands::bands(heads)
            .into_iter()
            .zip(&plan)
            .filter(|(_, (_, next))| !next.skips(now))
            .map(|(band, _)| band)
            .collect();
        for _ in 0..MAX_AGING_PROBES {
            if !poll.open() {
                break;
            }
            let Some(i) = bands::highest(&bands, aging, now) else {
                break;
            };
            let level = bands[i].level;
            let due_by = bands[i].due_by(aging, bands[i].top(aging, now), now);
            let (added, short) = poll.take(level, due_by)?;
            if !short {
                // The batch is full; the rows taken were the level's oldest in the band.
                if let Some(last) = poll
                    .rows
                    .iter()
                    .rev()
                    .take(added)
                    .map(|e| e.execution_time)
                    .max()
                {
                    poll.learned.push((level, Next::At(last)));
                }
                continue;
            }
            // Nothing left in this band: find the level's oldest unpicked due row, and never
            // probe this band of it again in this poll (its rows may be locked by others).
            let next = next_at(poll.src, level, poll.p)?;
            poll.learned.push((level, next));
            let past_band = due_by + chrono::Duration::microseconds(1);
            let head = match next {
                Next::At(t) => t.max(past_band),
                Next::Probe => past_band,
                Next::Never => DateTime::<Utc>::MAX_UTC,
            };
            if head > now {
                bands.swap_remove(i);
            } else {
                bands[i].head = Some(head);
            }
        }
        Ok(())
    }

    /// What a claiming poll (lock-and-fetch) knows of `level` before it sends a locking read
    /// there: a level it knows nothing of is first asked with a plain read ([`next_at`]),
    /// and what that finds is learned. A locking read of a level without due rows still walks
    /// its whole index range, and on InnoDB locks every entry there, the delete-marked entries
    /// of rows deleted but not yet purged included: after the due rows of five levels were
    /// deleted at 1M due + 10M future rows, each such read took 0.1 to 1.3 s under load
    /// against a few milliseconds for the plain read (docs/BENCHMARKS.md, "Full scale").
    fn before_locking<F>(
        &self,
        poll: &mut Poll<'_, '_, F>,
        level: Level,
        next: Next,
    ) -> Result<Next, StoreError> {
        if !poll.claims || next != Next::Probe {
            return Ok(next);
        }
        let next = next_at(poll.src, level, poll.p)?;
        poll.learned.push((level, next));
        Ok(next)
    }

    fn level_state(&self) -> MutexGuard<'_, LevelState> {
        guard(&self.levels)
    }

    /// The levels to probe (cached or read now) and the write count they are valid for.
    #[allow(clippy::type_complexity)]
    fn level_plan(
        &self,
        src: &dyn DueSource,
        p: &DueParams<'_>,
    ) -> Result<(Option<Vec<(Level, Next)>>, u64), StoreError> {
        let writes = {
            let state = self.level_state();
            if let Some(cache) = state.cache.as_ref().filter(|c| c.fresh_for(p)) {
                return Ok((cache.levels.clone(), state.writes));
            }
            state.writes
        };
        let found = priority_levels(src)?;
        let levels = (found.len() <= MAX_PROBED_LEVELS).then(|| {
            found
                .into_iter()
                .map(Level::Exactly)
                .chain([Level::Null])
                .map(|l| (l, Next::Probe))
                .collect::<Vec<_>>()
        });
        let mut state = self.level_state();
        if state.writes == writes {
            state.cache = Some(LevelCache {
                task_names: p.task_names.to_vec(),
                filled_at: p.now,
                levels: levels.clone(),
            });
        }
        Ok((levels, writes))
    }

    /// A local write may have made rows of `level` (`None`: of any level) due at `at` (`None`:
    /// at any time). A level the cache does not know drops the cache.
    pub fn wrote(&self, level: Option<Option<i16>>, at: Option<DateTime<Utc>>) {
        if !self.policy.priority {
            return;
        }
        let mut state = self.level_state();
        state.writes += 1;
        let Some(cache) = state.cache.as_mut() else {
            return;
        };
        let Some(levels) = cache.levels.as_mut() else {
            return;
        };
        match level.map(|p| p.map_or(Level::Null, Level::Exactly)) {
            None => levels.iter_mut().for_each(|(_, n)| *n = n.lower(at)),
            Some(level) => match levels.iter_mut().find(|(l, _)| *l == level) {
                Some((_, n)) => *n = n.lower(at),
                None => state.cache = None,
            },
        }
    }
}

/// The table's levels, highest first, [`MAX_PROBED_LEVELS`] + 1 at most: in one query, or one
/// index probe per level where the store lists the highest below a bound
/// ([`DueSource::lists_all_levels`]).
fn priority_levels(src: &dyn DueSource) -> Result<Vec<i16>, StoreError> {
    let all = src.lists_all_levels();
    let mut found: Vec<i16> = Vec::new();
    loop {
        let before = found.len();
        found.extend(src.levels_below(found.last().copied())?);
        if all || found.len() == before || found.len() > MAX_PROBED_LEVELS {
            return Ok(found);
        }
    }
}

/// What `level`, found without (more) rows to take at `p.now`, holds: its oldest unpicked due
/// row, or when its next row falls due. A skip-locked probe also comes back empty while other
/// claimers hold the level's rows (and one of them may roll back, or lock a row it does not
/// claim), so a plain read decides first: a level with a due, unpicked row stays probed. A row
/// whose time does not decode (a poison row) keeps the level probed instead of failing the
/// poll.
fn next_at(src: &dyn DueSource, level: Level, p: &DueParams<'_>) -> Result<Next, StoreError> {
    let next = |probe| match probe {
        Probe::Empty => Next::Never,
        Probe::At(t) => Next::At(t),
        Probe::Unreadable => Next::Probe,
    };
    match next(src.first_due(&p.at_level(level, 1, p.now, &[]))?) {
        Next::Never => Ok(next(src.next_due(level, p.now)?)),
        found => Ok(found),
    }
}

/// Runs a claim (or a batch of completions) again when the database ended it to break a
/// deadlock or a serialization conflict with other schedulers ([`StoreError::Contention`]:
/// nothing was written), up to [`CONTENTION_RETRIES`] times; each retry is counted
/// (`docket_contention_retries_total`). Schedulers locking rows in different orders is normal
/// contention (MariaDB ends one of two transactions now and then; on a Galera cluster every
/// two nodes' claims of the same rows, one failing certification at commit), so it is not a
/// failure. Each retry waits a moment first ([`pause_before_retry`]).
pub(crate) fn retried<T>(claim: impl FnMut() -> Result<T, StoreError>) -> Result<T, StoreError> {
    retried_up_to(CONTENTION_RETRIES, claim)
}

/// [`retried`], up to `bound` times.
pub(crate) fn retried_up_to<T>(
    bound: usize,
    mut claim: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut retries = 0;
    loop {
        match claim() {
            Err(StoreError::Contention { source }) if retries < bound => {
                retries += 1;
                metrics::counter!("docket_contention_retries_total").increment(1);
                tracing::debug!(error = %source, retries, "claim ended by contention; retrying");
                pause_before_retry(retries);
            }
            other => return other,
        }
    }
}

/// A random 1 to 5 ms, doubled for each retry so far: two claimers that met are unlikely to
/// meet again at once, and on a Galera node the winner's write set has had time to be
/// applied, so the retry sees its rows picked instead of claiming them again.
fn pause_before_retry(retries: usize) {
    use std::hash::{BuildHasher, Hasher};
    let mut random = std::collections::hash_map::RandomState::new().build_hasher();
    random.write_usize(retries);
    let micros = (1_000 + random.finish() % 4_000) << (retries.saturating_sub(1).min(4));
    std::thread::sleep(std::time::Duration::from_micros(micros));
}
