//! Priority without starvation: the weighted and aging modes hand a low level out within their
//! bound while a high level is fed continuously; strict mode never does; with priority off the
//! modes change nothing. Driven by hand with the manual clock, both polling strategies, and
//! through the work queue's `next_for`.

use super::ids;
use crate::harness::{Ctx, Harness, Need, Toggle};
use chrono::Duration;
use docket_core::queue::{Batch, QueueConfig, Record};
use docket_core::store::DueParams;
use docket_core::store::Guard;
use docket_core::{
    Aging, Execution, PriorityMode, SchedulerClient, Store, TaskDescriptor, Weights, WorkQueue,
};
use std::sync::Arc;

/// One task per polling strategy, so the two runs share a space without meeting.
const BY_FETCH: TaskDescriptor = TaskDescriptor::new("fair-fetch");
const BY_LOCK: TaskDescriptor = TaskDescriptor::new("fair-lock");

/// The feed: this many level-90 executions fall due at every tick, and a poll takes this many.
const BATCH: usize = 4;

/// What the low level received: the tick of its first hand-out and how many it received.
#[derive(Debug, PartialEq)]
struct Served {
    first: Option<usize>,
    total: usize,
}

/// `low` level-10 executions due at the start, then per one-second tick: [`BATCH`] fresh
/// level-90 executions, one poll of [`BATCH`] (claim or fetch), everything handed out run
/// (removed). Runs for `ticks` ticks with `mode`, once per polling strategy.
fn feed(ctx: &Ctx, mode: PriorityMode, low: usize, ticks: usize) -> Vec<(&'static str, Served)> {
    let mut config = ctx.config();
    config.ordering.mode = mode;
    let store = ctx.space.store(config, None);
    let client = SchedulerClient::with_clock(store.clone(), Arc::new(ctx.clock.clone()))
        .expect("schema is migrated");
    let mut results = Vec::new();
    for (strategy, task) in [("fetch", BY_FETCH), ("lock-and-fetch", BY_LOCK)] {
        let schedule = |id: String, priority: i16, at| {
            let instance = task.instance(id).priority(priority).scheduled_to(at);
            client.schedule(instance).expect("schedules");
        };
        let start = Ctx::t0();
        ctx.clock.set(start);
        (0..low).for_each(|i| schedule(format!("low-{i}"), 10, start));
        let mut served = Served {
            first: None,
            total: 0,
        };
        for tick in 0..ticks {
            let now = start + Duration::seconds(tick as i64 + 1);
            ctx.clock.set(now);
            (0..BATCH).for_each(|j| schedule(format!("high-{tick}-{j}"), 90, now));
            let handed = poll(&*store, strategy, task.name(), now);
            assert_eq!(handed.len(), BATCH, "{strategy}: a poll fills its batch");
            let lows = ids(&handed)
                .iter()
                .filter(|id| id.starts_with("low-"))
                .count();
            if lows > 0 {
                served.first.get_or_insert(tick);
                served.total += lows;
            }
            for e in &handed {
                assert!(store
                    .execution_remove(&e.key(), Guard::Any)
                    .expect("removes"));
            }
        }
        results.push((strategy, served));
    }
    results
}

fn poll(
    store: &dyn Store,
    strategy: &str,
    task: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Execution> {
    let names = [task.to_owned()];
    let p = DueParams::new(now, &names, BATCH as i64);
    match strategy {
        "fetch" => store.execution_fetch_due(&p),
        _ => store.execution_lock_and_fetch_due(&p, "fair-node"),
    }
    .expect("due-query runs")
}

/// Weighted 90:70, 10:10: the low level gets a batch at the second poll and its share over the
/// run (about 10 of 80 while both are busy); strict never serves it; priority off serves it
/// first (it is the oldest).
pub fn weighted_priority_serves_every_level(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::LockAndFetch);
    let weights = Weights::new(&[(90, 70), (10, 10)]).expect("valid weights");
    let ticks = 24;
    for (strategy, served) in feed(&ctx, PriorityMode::Weighted(weights), 40, ticks) {
        if t.on() {
            // Bound: sum of the busy levels' weights / the low level's weight = 8 polls.
            let first = served.first.expect("the low level is served");
            assert!(
                first < 8,
                "{strategy}: low level first served at poll {first}"
            );
            let share = served.total as f64 / (ticks * BATCH) as f64;
            assert!(
                (0.08..=0.2).contains(&share),
                "{strategy}: low level's share {share} (weight share 0.125)"
            );
        } else {
            assert_eq!(
                served.first,
                Some(0),
                "{strategy}: priority off: oldest first"
            );
        }
    }
    if t.on() {
        let strict = Ctx::new(h, t);
        for (strategy, served) in feed(&strict, PriorityMode::Strict, 4, 12) {
            assert_eq!(
                served.first, None,
                "{strategy}: strict priority starves level 10"
            );
        }
    }
}

/// Aging one level per second, cap 100: a level-10 execution due at the start reaches
/// effective priority 90 after 80 s (a tie: the higher level goes first) and passes the fresh
/// level-90 executions at 81 s, exactly. With cap 50 it never passes them; with priority off it
/// goes first.
pub fn aging_priority_serves_old_executions(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::LockAndFetch);
    let aging = Aging::new(std::time::Duration::from_secs(1), 100).expect("valid aging");
    for (strategy, served) in feed(&ctx, PriorityMode::Aging(aging), 1, 84) {
        // Tick k polls at t0 + (k + 1) s: the low execution has waited k + 1 seconds.
        let expected = if t.on() { Some(80) } else { Some(0) };
        assert_eq!(
            served.first, expected,
            "{strategy}: first hand-out of the aged execution"
        );
        assert_eq!(served.total, 1, "{strategy}");
    }
    if t.on() {
        let capped = Ctx::new(h, t);
        let aging = Aging::new(std::time::Duration::from_secs(1), 50).expect("valid aging");
        for (strategy, served) in feed(&capped, PriorityMode::Aging(aging), 1, 84) {
            assert_eq!(
                served.first, None,
                "{strategy}: capped at 60, it never passes 90"
            );
        }
    }
}

/// The work queue's task type in [`queue_feed`].
const QUEUE_TASK: &str = "fair-review";

/// [`feed`] through the work queue, in its own space: `low` level-10 items arrive at the
/// start, then per one-second tick [`BATCH`] level-90 items arrive and one worker takes
/// [`BATCH`] (`next_for`, then submit), the task type in `mode`.
fn queue_feed(h: &dyn Harness, t: Toggle, mode: PriorityMode, low: usize, ticks: usize) -> Served {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::WorkQueue);
    let mut config = QueueConfig::default();
    config.modes.insert(QUEUE_TASK.to_owned(), mode);
    let queue = WorkQueue::with_clock(ctx.store.clone(), Arc::new(ctx.clock.clone()), config)
        .expect("work-queue schema is migrated");
    let arrive = |prefix: &str, priority: i16, n: usize| {
        let records = (0..n)
            .map(|i| Record {
                priority: Some(priority),
                ..Record::new(format!("{prefix}-{i}"))
            })
            .collect();
        let batch = Batch {
            task_type: QUEUE_TASK.to_owned(),
            max_assignments: 1,
            records,
        };
        queue.enqueue(&batch).expect("enqueues");
    };
    let start = Ctx::t0();
    ctx.clock.set(start);
    arrive("low", 10, low);
    let mut served = Served {
        first: None,
        total: 0,
    };
    for tick in 0..ticks {
        ctx.clock.set(start + Duration::seconds(tick as i64 + 1));
        arrive(&format!("high-{tick}"), 90, BATCH);
        for _ in 0..BATCH {
            let item = queue
                .next_for("w", QUEUE_TASK)
                .expect("next_for runs")
                .expect("an item is open");
            if item.key.task_instance.starts_with("low-") {
                served.first.get_or_insert(tick);
                served.total += 1;
            }
            queue.submit("w", &item.key).expect("submits");
        }
    }
    served
}

/// The work queue composes the same way, one `next_for` per round. Weighted 90:70, 10:10: a
/// level-10 item goes out second (its pass is behind), the three of them within 20 hand-outs
/// (one in eight); aging one level per second: the aged item passes fresh level-90 items at
/// 81 s, exactly; strict never hands one out. With priority off every mode is FIFO: the
/// level-10 items arrived first.
pub fn queue_priority_modes_serve_every_level(h: &dyn Harness, t: Toggle) {
    let weights = Weights::new(&[(90, 70), (10, 10)]).expect("valid weights");
    let weighted = queue_feed(h, t, PriorityMode::Weighted(weights), 3, 6);
    let aging = Aging::new(std::time::Duration::from_secs(1), 100).expect("valid aging");
    let aged = queue_feed(h, t, PriorityMode::Aging(aging), 1, 84);
    if !t.on() {
        assert_eq!(
            weighted,
            Served {
                first: Some(0),
                total: 3
            },
            "weighted, priority off"
        );
        assert_eq!(
            aged,
            Served {
                first: Some(0),
                total: 1
            },
            "aging, priority off"
        );
        return;
    }
    assert_eq!(
        weighted,
        Served {
            first: Some(0),
            total: 3
        },
        "weighted"
    );
    assert_eq!(
        aged,
        Served {
            first: Some(80),
            total: 1
        },
        "aging"
    );
    let strict = queue_feed(h, t, PriorityMode::Strict, 3, 6);
    assert_eq!(
        strict,
        Served {
            first: None,
            total: 0
        },
        "strict starves level 10"
    );
}
