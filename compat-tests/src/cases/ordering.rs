//! Due-query order: priority (NULL last) in front of execution time, exactly as the toggle says.

use super::{due, ids, strings, WORK};
use crate::harness::{Ctx, Harness, Toggle};
use chrono::Duration;
use docket_core::store::{Changes, DueParams, Guard, PickChange};
use docket_core::{ExecutionKey, SchedulerClient, StoreConfig};
use std::sync::Arc;

/// The reference case: priorities 1, 2, 3 at now-10s, now-30s, now-20s.
pub fn due_order_reference(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let now = Ctx::t0();
    for (priority, ago) in [(1, 10), (2, 30), (3, 20)] {
        let instance = WORK.instance(format!("p{priority}"));
        client
            .schedule(
                instance
                    .priority(priority)
                    .scheduled_to(now - Duration::seconds(ago)),
            )
            .unwrap();
    }
    let expected =
        [strings(&["p2", "p3", "p1"]), strings(&["p3", "p2", "p1"])][usize::from(t.on())].clone();
    assert_eq!(
        ids(&due(&*ctx.store, now, &["work"])),
        expected,
        "fetch order"
    );
    let names = strings(&["work"]);
    let claimed = ctx
        .store
        .execution_lock_and_fetch_due(&DueParams::new(now, &names, 10), "me")
        .unwrap();
    assert_eq!(ids(&claimed), expected, "lock-and-fetch order");
}

/// NULL priority (rows written with the toggle off) ranks below every value, negative ones too.
pub fn due_order_null_priority_last(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let now = Ctx::t0();
    let without_priority = ctx.space.store(StoreConfig::with_priority(false), None);
    let off_client =
        SchedulerClient::with_clock(without_priority, Arc::new(ctx.clock.clone())).unwrap();
    off_client
        .schedule(
            WORK.instance("null")
                .priority(99)
                .scheduled_to(now - Duration::seconds(60)),
        )
        .unwrap();
    let client = ctx.client();
    for (id, priority, ago) in [("low", 1, 10), ("high", 90, 5), ("negative", -5, 1)] {
        client
            .schedule(
                WORK.instance(id)
                    .priority(priority)
                    .scheduled_to(now - Duration::seconds(ago)),
            )
            .unwrap();
    }
    let stored = client
        .get(&ExecutionKey::new("work", "null"))
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.priority, None,
        "a priority-off writer leaves priority NULL"
    );
    let expected = [
        strings(&["null", "low", "high", "negative"]),
        strings(&["high", "low", "negative", "null"]),
    ][usize::from(t.on())]
    .clone();
    assert_eq!(ids(&due(&*ctx.store, now, &["work"])), expected);
}

/// Only due (execution_time <= now), unpicked executions of the named tasks are returned.
pub fn due_excludes_future_and_picked(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let now = Ctx::t0();
    client
        .schedule(WORK.instance("now").scheduled_to(now))
        .unwrap();
    client
        .schedule(
            WORK.instance("past")
                .scheduled_to(now - Duration::seconds(1)),
        )
        .unwrap();
    client
        .schedule(
            WORK.instance("future")
                .scheduled_to(now + Duration::microseconds(1)),
        )
        .unwrap();
    assert_eq!(
        ids(&due(&*ctx.store, now, &["work"])),
        strings(&["past", "now"])
    );
    assert!(due(&*ctx.store, now, &["other"]).is_empty());

    let claim = Changes {
        pick: Some(PickChange::Claim {
            by: "me".into(),
            at: now,
        }),
        ..Changes::default()
    };
    assert!(ctx
        .store
        .execution_update(&ExecutionKey::new("work", "past"), Guard::Any, &claim)
        .unwrap());
    assert_eq!(
        ids(&due(&*ctx.store, now, &["work"])),
        strings(&["now"]),
        "a claimed execution is not due again"
    );
    let later = now + Duration::seconds(1);
    assert_eq!(
        ids(&due(&*ctx.store, later, &["work"])),
        strings(&["now", "future"])
    );
}

/// A batch fills from the highest level down, skipping levels with only future rows and other
/// tasks' rows, and reaches NULL priority last; lock-and-fetch claims in the same order.
pub fn due_batches_span_levels_in_order(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let now = Ctx::t0();
    let at = |secs: i64| now + Duration::seconds(secs);
    let off = ctx.space.store(StoreConfig::with_priority(false), None);
    let off_client = SchedulerClient::with_clock(off, Arc::new(ctx.clock.clone())).unwrap();
    for (id, secs) in [("null-a", -90), ("null-b", -80)] {
        off_client
            .schedule(WORK.instance(id).scheduled_to(at(secs)))
            .unwrap();
    }
    let client = ctx.client();
    const OTHER: docket_core::TaskDescriptor = docket_core::TaskDescriptor::new("other");
    client
        .schedule(OTHER.instance("p8").priority(8).scheduled_to(at(-100)))
        .unwrap();
    let rows: [(&str, i16, i64); 7] = [
        ("p9-future", 9, 60),
        ("p7-a", 7, -10),
        ("p7-b", 7, -5),
        ("p7-future", 7, 30),
        ("p5-a", 5, -70),
        ("p5-b", 5, -60),
        ("p5-c", 5, -50),
    ];
    for (id, priority, secs) in rows {
        client
            .schedule(WORK.instance(id).priority(priority).scheduled_to(at(secs)))
            .unwrap();
    }
    let (first, rest) = [
        (
            strings(&["null-a", "null-b", "p5-a", "p5-b"]),
            strings(&["p5-c", "p7-a", "p7-b"]),
        ),
        (
            strings(&["p7-a", "p7-b", "p5-a", "p5-b"]),
            strings(&["p5-c", "null-a", "null-b"]),
        ),
    ][usize::from(t.on())]
    .clone();
    let names = strings(&["work"]);
    let params = |limit| DueParams::new(now, &names, limit);
    assert_eq!(
        ids(&ctx.store.execution_fetch_due(&params(4)).unwrap()),
        first
    );
    let claimed = ctx
        .store
        .execution_lock_and_fetch_due(&params(4), "me")
        .unwrap();
    assert_eq!(ids(&claimed), first, "lock-and-fetch claims the same batch");
    assert_eq!(
        ids(&ctx.store.execution_fetch_due(&params(10)).unwrap()),
        rest
    );
}

/// More distinct priorities than are probed one by one: the order still holds.
pub fn many_priority_levels_keep_order(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let now = Ctx::t0();
    let levels = docket_core::planner::MAX_PROBED_LEVELS as i16 + 6;
    let instances = (0..levels).map(|p| {
        // Higher priority is younger, so the two orders differ.
        WORK.instance(format!("p{p:03}"))
            .priority(p)
            .scheduled_to(now - Duration::seconds(i64::from(1000 - p)))
    });
    ctx.client().schedule_batch(instances).unwrap();
    let top = |ps: &[i16]| ps.iter().map(|p| format!("p{p:03}")).collect::<Vec<_>>();
    let expected =
        [top(&[0, 1, 2]), top(&[levels - 1, levels - 2, levels - 3])][usize::from(t.on())].clone();
    let names = strings(&["work"]);
    let got = ctx
        .store
        .execution_fetch_due(&DueParams::new(now, &names, 3))
        .unwrap();
    assert_eq!(ids(&got), expected);
}

/// With priority on, a store caches its priority levels for
/// `docket_core::planner::LEVEL_CACHE_TTL_MS` (by the clock it is given): its own writes show
/// at once, a level found empty is probed again when its next row falls due, and writes through
/// another store (another process) are seen in order at the latest when the cache expires.
pub fn level_cache_staleness_is_bounded(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let now = Ctx::t0();
    let ttl = Duration::milliseconds(docket_core::planner::LEVEL_CACHE_TTL_MS);
    let client = ctx.client();
    let other_store = ctx.space.store(ctx.config(), None);
    let other = SchedulerClient::with_clock(other_store, Arc::new(ctx.clock.clone())).unwrap();
    let at = |ms: i64| now + Duration::milliseconds(ms);
    let schedule = |c: &SchedulerClient, id: &str, priority: i16, ms: i64| {
        c.schedule(WORK.instance(id).priority(priority).scheduled_to(at(ms)))
            .unwrap();
    };
    let pick = |off: &[&str], on: &[&str]| [strings(off), strings(on)][usize::from(t.on())].clone();
    schedule(&client, "p5", 5, -10_000);
    schedule(&client, "p8-soon", 8, ttl.num_milliseconds() / 2);
    assert_eq!(ids(&due(&*ctx.store, now, &["work"])), strings(&["p5"]));

    // A local write into a new level: seen by the next poll, same instant.
    schedule(&client, "p7", 7, -1_000);
    assert_eq!(
        ids(&due(&*ctx.store, now, &["work"])),
        pick(&["p5", "p7"], &["p7", "p5"]),
        "own writes are never stale"
    );

    // Level 8 was empty at `now`; its row falls due within the cache's life and leads at once.
    let soon = at(ttl.num_milliseconds() / 2);
    ctx.clock.set(soon);
    assert_eq!(
        ids(&due(&*ctx.store, soon, &["work"])),
        pick(&["p5", "p7", "p8-soon"], &["p8-soon", "p7", "p5"]),
        "a level seen empty is probed again when its next row is due"
    );

    // Another store writes into a new level and into a level this store saw empty.
    schedule(&other, "p9", 9, -500);
    schedule(&other, "p8-now", 8, -400);
    let stale = ids(&due(&*ctx.store, soon, &["work"]));
    let exact = pick(
        &["p5", "p7", "p9", "p8-now", "p8-soon"],
        &["p9", "p8-now", "p8-soon", "p7", "p5"],
    );
    let known: Vec<String> = exact
        .iter()
        .filter(|id| stale.contains(id))
        .cloned()
        .collect();
    let missing: Vec<&String> = exact.iter().filter(|id| !stale.contains(id)).collect();
    assert!(
        stale == known
            && missing
                .iter()
                .all(|id| ["p9", "p8-now"].contains(&id.as_str())),
        "before the cache expires: in order, missing at most the other store's rows, got {stale:?}"
    );

    // Once the cache has expired, the order is exact again.
    let expired = now + ttl;
    ctx.clock.set(expired);
    assert_eq!(ids(&due(&*ctx.store, expired, &["work"])), exact);
}
