//! Limits the cluster keeps (`0009_limits`, SPEC 18): per task and per key, running and rate,
//! enforced by the claim, the same on every backend. The cluster-wide proof with processes and
//! threads is `tests/limits.rs`; these cases pin the semantics step by step on a manual clock.

use super::{ids, WORK};
use crate::harness::{Ctx, Harness, Toggle};
use docket_core::store::{Completion, DueParams, Execution};
use docket_core::{
    Clock, DocketError, PollingStrategy, Store, StoreConfig, StoreError, TaskDescriptor, TaskLimit,
};
use std::sync::Arc;
use std::time::Duration;

const EXPORT: TaskDescriptor = TaskDescriptor::new("export");

/// Claims what the limited tasks among `names` allow (at most `room`), as scheduler `by`.
fn claim_limited(
    store: &dyn Store,
    ctx: &Ctx,
    names: &[&str],
    room: i64,
    by: &str,
) -> Vec<Execution> {
    let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    let mut rows = store
        .execution_claim_limited(
            &DueParams {
                now: ctx.clock.now(),
                task_names: &names,
                limit: room,
                claim_for: None,
                clock: None,
                include_limited: false,
            },
            by,
        )
        .expect("limited claim runs");
    rows.sort_by(|a, b| a.task_instance.cmp(&b.task_instance));
    rows
}

/// The ordinary claim (lock-and-fetch) of `names`.
fn claim(store: &dyn Store, ctx: &Ctx, names: &[&str]) -> Vec<Execution> {
    let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
    let mut rows = store
        .execution_lock_and_fetch_due(
            &DueParams {
                now: ctx.clock.now(),
                task_names: &names,
                limit: 100,
                claim_for: None,
                clock: None,
                include_limited: false,
            },
            "s1",
        )
        .expect("claim runs");
    rows.sort_by(|a, b| a.task_instance.cmp(&b.task_instance));
    rows
}

/// Removes claimed executions as a finished run does (their slots free).
fn complete(store: &dyn Store, rows: &[Execution]) {
    let done: Vec<_> = rows
        .iter()
        .map(|e| Completion {
            key: e.key(),
            version: e.version,
            update: None,
        })
        .collect();
    assert!(store
        .execution_complete_batch(&done)
        .unwrap()
        .iter()
        .all(|w| *w));
}

/// `max_running(3)`: three picked at most, from any store (another process), in hand-out
/// order; the other tasks are claimed as usual meanwhile; a finished execution frees its slot,
/// and so does a revived one (its scheduler died): nothing stays counted.
pub fn max_running_holds_across_stores_and_frees_slots(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    for i in 0..8 {
        let at = ctx.clock.now() - chrono::Duration::seconds(60 - i);
        client
            .schedule(EXPORT.instance(format!("e{i}")).scheduled_to(at))
            .unwrap();
    }
    for i in 0..3 {
        client.schedule(WORK.instance(format!("w{i}"))).unwrap();
    }
    client
        .set_limit(&TaskLimit::new("export").max_running(3))
        .unwrap();
    assert_eq!(
        client.limits().unwrap(),
        vec![TaskLimit::new("export").max_running(3)]
    );
    assert!(
        super::due(&*ctx.store, ctx.clock.now(), &["export"]).is_empty(),
        "a poll's fetch leaves the limited task to its own claim"
    );
    // With priority on, that poll found the levels empty of what it may take: a view sees the
    // limited task's rows there once the level cache's bound has passed.
    ctx.clock.advance(Duration::from_millis(
        docket_core::planner::LEVEL_CACHE_TTL_MS as u64 + 1,
    ));
    let counts = client.due_counts(&["export".to_owned()], 100).unwrap();
    assert_eq!(
        counts.per_task.get("export"),
        Some(&8),
        "a view counts the limited task's due work"
    );
    let other: Arc<dyn Store> = ctx.space.store(ctx.config(), None);
    other.check_schema().unwrap();

    assert_eq!(
        ids(&claim(&*ctx.store, &ctx, &["export", "work"])),
        ["w0", "w1", "w2"],
        "the ordinary claim leaves the limited task to its own claim and holds nothing back"
    );
    let first = claim_limited(&*ctx.store, &ctx, &["export", "work"], 10, "s1");
    assert_eq!(ids(&first), ["e0", "e1", "e2"], "the first three, in order");
    assert!(claim_limited(&*other, &ctx, &["export"], 10, "s2").is_empty());
    assert!(claim_limited(&*ctx.store, &ctx, &["export"], 10, "s1").is_empty());

    complete(&*ctx.store, &first[..1]);
    let next = claim_limited(&*other, &ctx, &["export"], 10, "s2");
    assert_eq!(
        ids(&next),
        ["e3"],
        "one slot freed, one taken, by the other process"
    );

    // s1 dies holding e1 and e2: once revived they are due again and their slots free.
    ctx.clock.advance(Duration::from_secs(3_600));
    let reviver = ctx.build(
        "reviver",
        PollingStrategy::lock_and_fetch(),
        vec![super::counting_task(WORK).0, super::counting_task(EXPORT).0],
    );
    assert_eq!(
        reviver.detect_dead().unwrap(),
        6,
        "e1, e2, e3 and w0 to w2 revived"
    );
    let usage = client.limit_usage(100).unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].running, 0, "revived: nothing counted as running");
    assert_eq!(usage[0].due_waiting, 7, "e1 to e7 wait");
    let again = claim_limited(&*other, &ctx, &["export"], 10, "s2");
    assert_eq!(again.len(), 3, "the revived slots are free again");

    // Cleared: the ordinary claim takes the task again.
    assert!(client.clear_limit("export").unwrap());
    assert!(!client.clear_limit("export").unwrap());
    let rest = claim(&*other, &ctx, &["export"]);
    assert_eq!(rest.len(), 4, "the four not picked");
}

/// `max_running_per_key(1)`: a busy key's executions wait one at a time while every other key,
/// and the executions without a key (one count of their own), are claimed in the same claim.
pub fn per_key_limit_never_holds_back_other_keys(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let base = ctx.clock.now() - chrono::Duration::seconds(100);
    let schedule = |id: &str, key: Option<&str>, secs: i64| {
        let mut instance = EXPORT
            .instance(id)
            .scheduled_to(base + chrono::Duration::seconds(secs));
        if let Some(key) = key {
            instance = instance.limit_key(key);
        }
        client.schedule(instance).unwrap();
    };
    // The busy customer's three come first in hand-out order.
    schedule("b1", Some("busy"), 0);
    schedule("b2", Some("busy"), 1);
    schedule("b3", Some("busy"), 2);
    schedule("c1", Some("calm"), 3);
    schedule("d1", Some("dull"), 4);
    schedule("n1", None, 5);
    schedule("n2", None, 6);
    client
        .set_limit(&TaskLimit::new("export").max_running_per_key(1))
        .unwrap();

    let first = claim_limited(&*ctx.store, &ctx, &["export"], 10, "s1");
    assert_eq!(ids(&first), ["b1", "c1", "d1", "n1"], "one per key");
    assert!(claim_limited(&*ctx.store, &ctx, &["export"], 10, "s1").is_empty());
    let usage = client.limit_usage(100).unwrap();
    assert_eq!((usage[0].running, usage[0].running_keys), (4, 3));

    complete(&*ctx.store, &first[..1]);
    let next = claim_limited(&*ctx.store, &ctx, &["export"], 10, "s1");
    assert_eq!(ids(&next), ["b2"], "the busy key's next, nothing else");
}

/// `rate_limit(2, 10 s)`: two starts per window, counted for the window and its margin
/// (50 ms), finished or not; per key too.
pub fn rate_limit_counts_starts_in_their_window(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let at = |i: usize| ctx.clock.now() - chrono::Duration::seconds(10 - i as i64);
    for i in 0..5 {
        let e = EXPORT.instance(format!("e{i}")).scheduled_to(at(i));
        client.schedule(e).unwrap();
    }
    for (i, key) in ["a", "a", "a", "b"].into_iter().enumerate() {
        let w = WORK.instance(format!("w{i}")).scheduled_to(at(i));
        client.schedule(w.limit_key(key)).unwrap();
    }
    client
        .set_limit(&TaskLimit::new("export").rate_limit(2, Duration::from_secs(10)))
        .unwrap();
    client
        .set_limit(&TaskLimit::new("work").rate_limit_per_key(1, Duration::from_secs(10)))
        .unwrap();

    let first = claim_limited(&*ctx.store, &ctx, &["export", "work"], 10, "s1");
    assert_eq!(ids(&first), ["e0", "e1", "w0", "w3"]);
    complete(&*ctx.store, &first);
    assert!(
        claim_limited(&*ctx.store, &ctx, &["export", "work"], 10, "s1").is_empty(),
        "finished, but their starts are in the window"
    );
    ctx.clock.advance(Duration::from_secs(10));
    assert!(
        claim_limited(&*ctx.store, &ctx, &["export", "work"], 10, "s1").is_empty(),
        "within the margin"
    );
    ctx.clock.advance(Duration::from_millis(51));
    let next = claim_limited(&*ctx.store, &ctx, &["export", "work"], 10, "s1");
    assert_eq!(ids(&next), ["e2", "e3", "w1"]);
}

/// A table without `0009_limits` refuses limits with the migration's name: at start-up (a
/// scheduler given a limit), when set, and when scheduling with a limit key; without any it
/// works as before.
pub fn limits_need_their_migration(h: &dyn Harness, t: Toggle) {
    let space = h.space();
    let config = StoreConfig::with_priority(t.on());
    space.migrate(&config, Some("0008_paused_tasks"));
    let store = space.store(config, None);
    let ctx_clock = docket_core::ManualClock::new(Ctx::t0());
    let client =
        docket_core::SchedulerClient::with_clock(store.clone(), Arc::new(ctx_clock.clone()))
            .unwrap();
    let missing = |err: DocketError| match err {
        DocketError::Store(StoreError::MissingMigration { name, .. }) => {
            assert_eq!(name, "0009_limits")
        }
        other => panic!("expected the missing migration, got {other}"),
    };
    missing(
        client
            .set_limit(&TaskLimit::new("export").max_running(1))
            .unwrap_err(),
    );
    missing(
        client
            .schedule(EXPORT.instance("k").limit_key("customer"))
            .unwrap_err(),
    );
    let built = docket_core::Scheduler::builder(store.clone())
        .clock(Arc::new(ctx_clock.clone()))
        .limit(TaskLimit::new("export").max_running(1))
        .task(super::counting_task(EXPORT).0)
        .build();
    match built {
        Ok(_) => panic!("a limit on a table without 0009_limits must be refused at start-up"),
        Err(err) => missing(err),
    }
    client.schedule(EXPORT.instance("plain")).unwrap();
    assert!(client.limits().unwrap().is_empty());
    let (task, runs) = super::counting_task(EXPORT);
    let scheduler = docket_core::Scheduler::builder(store)
        .clock(Arc::new(ctx_clock))
        .task(task)
        .build()
        .unwrap();
    assert_eq!(scheduler.run_due().unwrap(), 1);
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A scheduler started with a limit stores it for every scheduler and runs the limited task
/// to the end, under either polling strategy, beside an unlimited one.
pub fn schedulers_run_limited_tasks_to_the_end(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    for i in 0..7 {
        client.schedule(EXPORT.instance(format!("e{i}"))).unwrap();
        client.schedule(WORK.instance(format!("w{i}"))).unwrap();
    }
    for polling in [PollingStrategy::lock_and_fetch(), PollingStrategy::fetch()] {
        let (export, exports) = super::counting_task(EXPORT);
        let (work, works) = super::counting_task(WORK);
        let scheduler = ctx
            .scheduler("s1", polling)
            .limit(TaskLimit::new("export").max_running(2))
            .tasks(vec![export, work])
            .build()
            .unwrap();
        assert_eq!(client.limits().unwrap().len(), 1, "stored at start-up");
        assert_eq!(scheduler.run_due().unwrap(), 14);
        assert_eq!(exports.load(std::sync::atomic::Ordering::SeqCst), 7);
        assert_eq!(works.load(std::sync::atomic::Ordering::SeqCst), 7);
        for i in 0..7 {
            client.schedule(EXPORT.instance(format!("e{i}"))).unwrap();
            client.schedule(WORK.instance(format!("w{i}"))).unwrap();
        }
    }
}

/// The ordinary claim of a table with limits (task by task where the dialect claims so): a
/// limited task's held-back backlog, due before everything else, and a paused task are left
/// out, and the other tasks' rows come in time order across tasks; a limit cleared by another
/// process frees its task to the ordinary claim at once.
pub fn claim_beside_a_limited_backlog_keeps_time_order(h: &dyn Harness, t: Toggle) {
    const REPORT: TaskDescriptor = TaskDescriptor::new("report");
    const MAIL: TaskDescriptor = TaskDescriptor::new("mail");
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let at = |secs: i64| ctx.clock.now() - chrono::Duration::seconds(secs);
    for i in 0..30 {
        let instance = EXPORT
            .instance(format!("e{i:02}"))
            .scheduled_to(at(100 - i));
        client.schedule(instance).unwrap();
    }
    client
        .schedule(MAIL.instance("m0").scheduled_to(at(60)))
        .unwrap();
    for i in 0..4 {
        let w = WORK.instance(format!("w{i}")).scheduled_to(at(50 - 2 * i));
        let r = REPORT
            .instance(format!("r{i}"))
            .scheduled_to(at(49 - 2 * i));
        client.schedule(w).unwrap();
        client.schedule(r).unwrap();
    }
    client
        .set_limit(&TaskLimit::new("export").max_running(1))
        .unwrap();
    assert!(client.pause("mail", None).unwrap());
    let names: Vec<String> = ["export", "work", "report", "mail"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let claim_first = |store: &dyn Store, n: i64| {
        let mut rows = store
            .execution_lock_and_fetch_due(&DueParams::new(ctx.clock.now(), &names, n), "s1")
            .expect("claim runs");
        rows.sort_by_key(|e| e.execution_time);
        ids(&rows)
    };
    // The limited task's claim takes its one slot (and fills the store's cache of limits).
    assert_eq!(
        claim_limited(&*ctx.store, &ctx, &["export"], 10, "s1").len(),
        1
    );
    assert_eq!(
        claim_first(&*ctx.store, 5),
        ["w0", "r0", "w1", "r1", "w2"],
        "the first five by time, across tasks, past the limited backlog and the paused task"
    );
    // Cleared by another process: this store's cache still lists the limit.
    let other: Arc<dyn Store> = ctx.space.store(ctx.config(), None);
    other.check_schema().unwrap();
    assert!(other.limit_clear("export").unwrap());
    assert_eq!(
        claim_first(&*ctx.store, 3),
        ["e01", "e02", "e03"],
        "the task is claimed as any other at once"
    );
}
