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
        .execution_lock_and_fetch_due(
            &DueParams {
                now,
                task_names: &names,
                limit: 10,
            },
            "me",
        )
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
