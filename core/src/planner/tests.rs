//! The planner's policy against a store in memory: every mode, the level cache and the poison
//! hold-back, checked against the order a plain sort of the table gives, without a database.

use super::*;
use crate::error::StoreError;
use crate::ordering::{Aging, Level, PriorityMode, Weights};
use crate::records::Due;
use crate::records::{DueParams, Execution, ExecutionKey, PoisonRow};
use chrono::{DateTime, TimeZone, Utc};
use std::cell::{Cell, RefCell};
use std::sync::LazyLock;
use std::time::Duration;

/// A table in memory. `poison` rows fail to decode; every call counts as one statement.
#[derive(Default)]
struct Memory {
    rows: RefCell<Vec<Execution>>,
    poison: Vec<ExecutionKey>,
    statements: Cell<usize>,
    lists_all: bool,
    /// Claims the database ends for contention before one goes through.
    contended: Cell<usize>,
    /// Claims that go through before every later one fails with a database error.
    claims_before_failing: Cell<Option<usize>>,
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
}

fn row(id: &str, priority: Option<i16>, seconds_ago: i64) -> Execution {
    let mut e = Execution::new("t", id, t0() - chrono::Duration::seconds(seconds_ago));
    e.priority = priority;
    e
}

impl Memory {
    fn with(rows: Vec<Execution>) -> Self {
        Self {
            rows: RefCell::new(rows),
            ..Self::default()
        }
    }

    fn count(&self) {
        self.statements.set(self.statements.get() + 1);
    }

    /// The rows `due` selects, in its level's order (priority first at `Level::Any`).
    fn select(&self, due: &Due<'_>) -> Vec<Execution> {
        let mut rows: Vec<Execution> = self
            .rows
            .borrow()
            .iter()
            .filter(|e| {
                !e.picked
                    && e.execution_time <= due.due_by
                    && due.task_names.contains(&e.task_name)
                    && due.level.holds(e.priority)
                    && !due.exclude.contains(&e.key())
            })
            .cloned()
            .collect();
        rows.sort_by_key(|e| {
            (
                std::cmp::Reverse(e.priority.map_or(i32::MIN, i32::from)),
                e.execution_time,
            )
        });
        rows.truncate(usize::try_from(due.limit).unwrap_or(0));
        rows
    }

    fn decoded(&self, rows: Vec<Execution>) -> Decoded {
        let (bad, rows): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .partition(|e| self.poison.contains(&e.key()));
        Decoded {
            rows,
            poison: bad
                .into_iter()
                .map(|e| PoisonRow {
                    key: e.key(),
                    column: "task_data",
                    reason: "unreadable".into(),
                })
                .collect(),
        }
    }

    fn first(&self, level: Level, pick: impl Fn(&Execution) -> bool) -> Probe {
        self.count();
        self.rows
            .borrow()
            .iter()
            .filter(|e| !e.picked && level.holds(e.priority) && pick(e))
            .map(|e| e.execution_time)
            .min()
            .map_or(Probe::Empty, Probe::At)
    }
}

impl DueSource for Memory {
    fn levels_below(&self, below: Option<i16>) -> Result<Vec<i16>, StoreError> {
        self.count();
        let mut levels: Vec<i16> = self
            .rows
            .borrow()
            .iter()
            .filter_map(|e| e.priority)
            .filter(|p| below.is_none_or(|b| *p < b))
            .collect();
        levels.sort_unstable_by(|a, b| b.cmp(a));
        levels.dedup();
        if !self.lists_all {
            levels.truncate(1);
        }
        Ok(levels)
    }

    fn lists_all_levels(&self) -> bool {
        self.lists_all
    }

    fn due_rows(&self, due: &Due<'_>) -> Result<Decoded, StoreError> {
        self.count();
        Ok(self.decoded(self.select(due)))
    }

    fn claim_rows(&self, due: &Due<'_>, picked_by: &str) -> Result<Decoded, StoreError> {
        self.count();
        match self.claims_before_failing.get() {
            Some(0) => return Err(StoreError::database("the server went away")),
            Some(n) => self.claims_before_failing.set(Some(n - 1)),
            None => {}
        }
        if self.contended.get() > 0 {
            self.contended.set(self.contended.get() - 1);
            return Err(StoreError::Contention {
                source: "Deadlock found when trying to get lock".into(),
            });
        }
        let chosen = self.select(due);
        let mut claimed = Vec::new();
        for e in self.rows.borrow_mut().iter_mut() {
            // A poison row is never left claimed.
            if chosen.iter().any(|c| c.key() == e.key()) && !self.poison.contains(&e.key()) {
                e.picked = true;
                e.picked_by = Some(picked_by.to_owned());
                claimed.push(e.clone());
            }
        }
        let poison = chosen
            .into_iter()
            .filter(|c| self.poison.contains(&c.key()))
            .collect::<Vec<_>>();
        let mut decoded = self.decoded(poison);
        decoded.rows = claimed;
        Ok(decoded)
    }

    fn first_due(&self, probe: &Due<'_>) -> Result<Probe, StoreError> {
        Ok(self.first(probe.level, |e| e.execution_time <= probe.due_by))
    }

    fn next_due(&self, level: Level, now: DateTime<Utc>) -> Result<Probe, StoreError> {
        Ok(self.first(level, |e| e.execution_time > now))
    }
}

fn planner(mode: PriorityMode) -> Planner {
    Planner::new(OrderingPolicy {
        priority: true,
        mode,
        ..OrderingPolicy::default()
    })
}

/// The task names every poll of these tests reads.
static NAMES: LazyLock<Vec<String>> = LazyLock::new(|| vec!["t".to_owned()]);

/// One poll of task `t` at `t0()` for at most `limit` rows, every level read.
fn poll(limit: i64) -> DueParams<'static> {
    DueParams::new(t0(), &NAMES, limit)
}

fn ids(rows: &[Execution]) -> Vec<String> {
    rows.iter().map(|e| e.task_instance.clone()).collect()
}

/// A table of `n` rows over `levels` (and NULL), due at scattered times, some in the future.
fn scattered(n: usize, levels: &[i16]) -> Vec<Execution> {
    let mut seed = 0x2545_f491_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    (0..n)
        .map(|i| {
            let pick = usize::try_from(next() % (levels.len() as u64 + 1)).unwrap_or(0);
            let priority = levels.get(pick).copied();
            let ago = i64::try_from(next() % 600).unwrap_or(0) - 60;
            row(&format!("{i:04}"), priority, ago)
        })
        .collect()
}

/// Strict mode hands out, batch after batch, exactly what a sort of the remaining due rows by
/// (priority descending, NULL last, execution time) gives: claims and plain reads, every
/// batch size, levels listed at once or probed one by one.
#[test]
fn strict_batches_follow_the_sorted_table() {
    for lists_all in [false, true] {
        for limit in [1, 3, 10] {
            let memory = Memory {
                lists_all,
                ..Memory::with(scattered(120, &[1, 5, 9, 50]))
            };
            let planner = planner(PriorityMode::Strict);
            let p = poll(limit);
            loop {
                let all = Due::new(Level::Any, t0(), &NAMES, 10_000);
                let expected: Vec<_> = ids(&memory.select(&all))
                    .into_iter()
                    .take(usize::try_from(limit).unwrap_or(0))
                    .collect();
                assert_eq!(ids(&planner.due(&memory, &p).unwrap()), expected);
                let claimed = planner.claim(&memory, &p, "me").unwrap();
                assert_eq!(
                    ids(&claimed),
                    expected,
                    "lists_all {lists_all}, limit {limit}"
                );
                if claimed.is_empty() {
                    break;
                }
            }
            assert!(
                memory
                    .rows
                    .borrow()
                    .iter()
                    .all(|e| e.picked || e.execution_time > t0()),
                "every due row was handed out"
            );
        }
    }
}

/// Under load, the level cache keeps a poll to about one statement per level with due rows:
/// drained levels are not probed again until the cache expires or a local write says so.
#[test]
fn the_level_cache_skips_drained_levels() {
    let mut rows: Vec<_> = (0..50)
        .map(|i| row(&format!("low{i:02}"), Some(1), 10))
        .collect();
    rows.extend((0..5).map(|i| row(&format!("high{i}"), Some(9), 10)));
    rows.push(row("future", Some(5), -3600));
    let memory = Memory::with(rows);
    let planner = planner(PriorityMode::Strict);
    let p = poll(5);
    assert_eq!(planner.claim(&memory, &p, "me").unwrap().len(), 5);
    // The next poll finds level 9 drained and level 5 not due yet (plain probes first).
    assert_eq!(planner.claim(&memory, &p, "me").unwrap().len(), 5);
    let learning = memory.statements.replace(0);
    assert!(learning >= 5, "levels listed and probed: {learning}");
    // Known now: each later poll claims level 1 only.
    for _ in 0..3 {
        assert_eq!(planner.claim(&memory, &p, "me").unwrap().len(), 5);
        let later = memory.statements.replace(0);
        assert!(later <= 2, "a poll under load: {later} statements");
    }
    // A local write of a due row at level 9 is seen by the next poll.
    memory.rows.borrow_mut().push(row("new-high", Some(9), 0));
    planner.wrote(Some(Some(9)), Some(t0()));
    let next = planner.claim(&memory, &p, "me").unwrap();
    assert_eq!(next[0].task_instance, "new-high");
}

/// A poison row never blocks the rows behind it, is never left claimed, is reported once and
/// is left out of later polls while held back.
#[test]
fn poison_rows_are_skipped_held_back_and_reported_once() {
    for claims in [false, true] {
        let memory = Memory {
            poison: vec![ExecutionKey::new("t", "bad")],
            ..Memory::with(vec![
                row("bad", Some(9), 100),
                row("a", Some(9), 50),
                row("b", Some(5), 50),
            ])
        };
        let planner = planner(PriorityMode::Strict);
        let p = poll(2);
        let poll = || match claims {
            true => planner.claim(&memory, &p, "me").unwrap(),
            false => planner.due(&memory, &p).unwrap(),
        };
        assert_eq!(ids(&poll()), ["a", "b"], "claims {claims}");
        let reports = planner.poisoned();
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].key, ExecutionKey::new("t", "bad"));
        assert!(!memory.rows.borrow()[0].picked, "never left claimed");
        memory.statements.set(0);
        let again = poll();
        if claims {
            assert!(again.is_empty());
        }
        assert!(
            planner.poisoned().is_empty(),
            "reported once while held back"
        );
    }
}

/// Weighted: over many polls each busy level receives about its weight's share.
#[test]
fn weighted_shares_follow_the_weights() {
    let mut rows: Vec<_> = (0..400)
        .map(|i| row(&format!("h{i:03}"), Some(9), 10))
        .collect();
    rows.extend((0..400).map(|i| row(&format!("l{i:03}"), Some(1), 10)));
    let memory = Memory::with(rows);
    let planner = planner(PriorityMode::Weighted(
        Weights::new(&[(9, 3), (1, 1)]).unwrap(),
    ));
    let p = poll(1);
    let mut high = 0;
    for _ in 0..200 {
        let got = planner.claim(&memory, &p, "me").unwrap();
        high += got.iter().filter(|e| e.priority == Some(9)).count();
    }
    assert_eq!(
        high, 150,
        "3 of every 4 hand-outs go to the level of weight 3"
    );
}

/// Aging: a low row that has waited long enough goes before a fresh high one.
#[test]
fn aging_lets_old_low_rows_pass_fresh_high_ones() {
    let memory = Memory::with(vec![
        row("fresh-high", Some(50), 0),
        row("old-low", Some(10), 50 * 60),
        row("young-low", Some(10), 60),
    ]);
    let aging = Aging::new(Duration::from_secs(60), 100).unwrap();
    let planner = planner(PriorityMode::Aging(aging));
    let p = poll(3);
    assert_eq!(
        ids(&planner.claim(&memory, &p, "me").unwrap()),
        ["old-low", "fresh-high", "young-low"]
    );
}

/// The work queue's aging ranks levels by their oldest item with the same arithmetic.
#[test]
fn aging_ranks_levels_by_their_oldest_item() {
    let now = t0();
    let aging = Aging::new(Duration::from_secs(60), 100).unwrap();
    let ago = |m| now - chrono::Duration::minutes(m);
    // Level 90 fresh (band 90), level 10 waiting 85 min (band 95), NULL 30 min (band 39).
    let levels = [
        (Level::Exactly(90), Some(now)),
        (Level::Exactly(10), Some(ago(85))),
        (Level::Null, Some(ago(30))),
    ];
    assert_eq!(
        bands::ranked(bands::bands(levels), &aging, now),
        vec![
            (Level::Exactly(10), ago(85)),
            (Level::Exactly(90), now),
            (Level::Null, ago(30)),
        ]
    );
    // Level 10 waiting 80 min ties level 90 at band 90: the higher level first, and level
    // 10's items must have waited the full 80 minutes to be in that band.
    let tie = bands::ranked(
        bands::bands([
            (Level::Exactly(10), Some(ago(80))),
            (Level::Exactly(90), Some(now)),
        ]),
        &aging,
        now,
    );
    assert_eq!(tie[0].0, Level::Exactly(90));
    assert_eq!(tie[1], (Level::Exactly(10), ago(80)));
}

/// A claim the database ends for contention (a deadlock between claimers) is run again a few
/// times, not a failed poll; past the bound the poll claims nothing (others are claiming those
/// rows), leaves nothing claimed, and is not a failure either.
#[test]
fn contended_claims_are_retried_a_bounded_number_of_times() {
    for (contended, ok) in [(CONTENTION_RETRIES, true), (CONTENTION_RETRIES + 1, false)] {
        let memory = Memory::with(vec![row("a", Some(5), 10)]);
        memory.contended.set(contended);
        let planner = planner(PriorityMode::Strict);
        let p = poll(1);
        let rows = planner
            .claim(&memory, &p, "me")
            .unwrap_or_else(|e| panic!("{contended} contentions: {e}"));
        if ok {
            assert_eq!(ids(&rows), ["a"], "{contended} contentions");
        } else {
            assert!(rows.is_empty(), "{contended} contentions");
            assert!(
                memory.rows.borrow().iter().all(|e| !e.picked),
                "nothing left claimed"
            );
        }
    }
}

/// A claiming poll that fails at a later level hands out the rows it claimed (and committed)
/// at the earlier ones: failing the poll would leave them picked by nobody who knows, until
/// dead detection. A poll that claimed nothing still fails.
#[test]
fn a_claim_failing_at_a_later_level_hands_out_the_earlier_levels() {
    let memory = Memory::with(vec![row("a", Some(5), 10), row("b", Some(3), 10)]);
    memory.claims_before_failing.set(Some(1));
    let planner = planner(PriorityMode::Strict);
    let p = poll(2);
    let rows = planner
        .claim(&memory, &p, "me")
        .expect("the first level's rows");
    assert_eq!(ids(&rows), ["a"]);
    memory.claims_before_failing.set(Some(0));
    assert!(
        planner.claim(&memory, &p, "me").is_err(),
        "nothing claimed: fails"
    );
}
