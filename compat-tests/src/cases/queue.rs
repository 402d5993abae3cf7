//! The work queue (SPEC section 5): the three acceptance flows on a manual clock, concurrent
//! workers, hiding rules, custom ordering, extend, and the migrations it needs.

use crate::harness::{Ctx, Harness, Need, Toggle};
use chrono::Duration;
use docket_core::queue::{AssignmentStatus, Batch, Item, QueueConfig, Record};
use docket_core::store::StoreConfig;
use docket_core::{
    CustomKey, Direction, DocketError, ExecutionKey, KeyType, PrimaryOrder, StoreError, WorkQueue,
};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

const TASK: &str = "review";

/// Lease and hide periods of the queues under test.
const LEASE: StdDuration = StdDuration::from_secs(60);
const HIDE: StdDuration = StdDuration::from_secs(120);

fn config() -> QueueConfig {
    QueueConfig {
        lease: LEASE,
        hide_for: HIDE,
        ..QueueConfig::default()
    }
}

/// A migrated space for a work-queue case: NOT RUN (and failed) where the backend has no
/// work queue.
fn ctx(h: &dyn Harness, t: Toggle) -> Ctx {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::WorkQueue);
    ctx
}

fn queue(ctx: &Ctx, config: QueueConfig) -> WorkQueue {
    WorkQueue::with_clock(ctx.store.clone(), Arc::new(ctx.clock.clone()), config)
        .expect("work-queue schema is migrated")
}

fn batch(max_assignments: i32, records: Vec<Record>) -> Batch {
    Batch {
        task_type: TASK.to_owned(),
        max_assignments,
        records,
    }
}

fn records(ids: &[&str]) -> Vec<Record> {
    ids.iter().map(|id| Record::new(*id)).collect()
}

fn key(id: &str) -> ExecutionKey {
    ExecutionKey::new(TASK, id)
}

fn ids(items: &[Item]) -> Vec<String> {
    items.iter().map(|i| i.key.task_instance.clone()).collect()
}

fn sees(q: &WorkQueue, worker: &str) -> Vec<String> {
    ids(&q.list_for(worker, TASK, 100).expect("list_for runs"))
}

fn take(q: &WorkQueue, worker: &str) -> String {
    let item = q.next_for(worker, TASK).expect("next_for runs");
    item.unwrap_or_else(|| panic!("{worker} gets an item"))
        .key
        .task_instance
}

fn advance(ctx: &Ctx, d: StdDuration) {
    ctx.clock.advance(d);
}

/// Basic: five records of one batch, same date: record1..record5.
pub fn basic_flow(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    let names = ["record1", "record2", "record3", "record4", "record5"];
    assert_eq!(q.enqueue(&batch(1, records(&names))).unwrap(), 5);
    assert_eq!(sees(&q, "w1"), names);
    let first = q.next_for("w1", TASK).unwrap().expect("an item");
    assert_eq!(first.key, key("record1"));
    assert_eq!((first.record.order, first.record.date), (1, Ctx::t0()));
    assert_eq!((first.assignments, first.max_assignments), (1, 1));
    assert_eq!(first.held_by.as_deref(), Some("w1"));
    assert_eq!(sees(&q, "w2"), &names[1..]);
}

/// Gateway: records 1,3,5 arrive after 10, 20, 30 s; 2 and 4 after 30 and 60 s.
pub fn gateway_flow(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    let arrivals = [10, 30, 20, 60, 30];
    let recs = arrivals
        .iter()
        .enumerate()
        .map(|(i, secs)| Record {
            arrives_after: Some(StdDuration::from_secs(*secs)),
            ..Record::new(format!("{}", i + 1))
        })
        .collect();
    q.enqueue(&batch(1, recs)).unwrap();
    assert!(sees(&q, "w").is_empty());
    for (at, expected) in [
        (20, vec!["1", "3"]),
        (30, vec!["1", "2", "3", "5"]),
        (60, vec!["1", "2", "3", "4", "5"]),
    ] {
        ctx.clock.set(Ctx::t0() + Duration::seconds(at));
        assert_eq!(sees(&q, "w"), expected, "at {at} s");
    }
}

/// Adjudication (max 2): the SPEC's sequence, then both workers drain the queue; every item
/// ends with exactly two submissions by two workers.
pub fn adjudication_flow(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    q.enqueue(&batch(2, records(&["1", "2", "3", "4", "5"])))
        .unwrap();
    assert_eq!(sees(&q, "w1"), ["1", "2", "3", "4", "5"]);
    assert_eq!(take(&q, "w1"), "1");
    assert_eq!(sees(&q, "w2"), ["2", "3", "4", "5"]);
    assert_eq!(take(&q, "w2"), "2");
    q.submit("w1", &key("1")).unwrap();
    assert_eq!(sees(&q, "w1"), ["3", "4", "5"]);
    assert_eq!(take(&q, "w1"), "3");
    q.submit("w2", &key("2")).unwrap();
    assert_eq!(sees(&q, "w1"), ["2", "4", "5"]);
    assert_eq!(sees(&q, "w2"), ["1", "4", "5"]);
    q.submit("w1", &key("3")).unwrap();
    for worker in ["w1", "w2"].iter().cycle().take(20) {
        if let Some(item) = q.next_for(worker, TASK).unwrap() {
            q.submit(worker, &item.key).unwrap();
        }
    }
    for id in ["1", "2", "3", "4", "5"] {
        let a = q.assignments(&key(id)).unwrap();
        let done: Vec<_> = a.iter().map(|a| (a.worker.as_str(), a.status)).collect();
        assert_eq!(
            done,
            [
                ("w1", AssignmentStatus::Submitted),
                ("w2", AssignmentStatus::Submitted)
            ],
            "item {id}"
        );
        let item = q.item(&key(id)).unwrap().expect("item exists");
        assert_eq!((item.assignments, item.held_by), (2, None));
    }
    assert!(q.next_for("w3", TASK).unwrap().is_none(), "all items full");
}

/// Priority composes in front of FIFO when on; off, FIFO alone decides.
pub fn queue_priority_composes_in_front(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    let prio = [None, Some(1), Some(9), None, Some(5)];
    let recs = prio
        .iter()
        .enumerate()
        .map(|(i, p)| Record {
            priority: *p,
            ..Record::new(format!("r{}", i + 1))
        })
        .collect();
    q.enqueue(&batch(1, recs)).unwrap();
    let expected = match t {
        Toggle::On => ["r3", "r5", "r2", "r1", "r4"],
        Toggle::Off => ["r1", "r2", "r3", "r4", "r5"],
    };
    assert_eq!(sees(&q, "w"), expected);
    assert_eq!(take(&q, "w"), expected[0]);
}

/// FIFO is by record date first, then record order; a missing date is the batch start.
pub fn queue_fifo_by_record_date_then_order(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    let date = |s: &str| Some(docket_core::queue::parse_record_date(s).unwrap());
    let recs = vec![
        Record {
            record_date: date("2026-06-02T00:00:00"),
            ..Record::new("late")
        },
        Record::new("undated-2"),
        Record {
            record_date: date("2020-03-11T10:15:55.935"),
            ..Record::new("early")
        },
        Record::new("undated-4"),
    ];
    q.enqueue(&batch(1, recs)).unwrap();
    // Batch start (t0 = 2026-06-01T12:00) lies between the two dates.
    assert_eq!(sees(&q, "w"), ["early", "undated-2", "undated-4", "late"]);
    let early = q.item(&key("early")).unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(early.record).unwrap(),
        json!({"hitOrder": 3, "hitOrderDate": "2020-03-11T10:15:55.935"})
    );
}

/// Many workers call `next_for` at once: no item is ever held by two, none passes
/// `max_assignments`, and every item ends with exactly `max` submissions by distinct workers.
pub fn queue_concurrent_workers_never_share_items(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    let n = 30;
    let ids: Vec<String> = (1..=n).map(|i| format!("i{i:02}")).collect();
    let recs = ids.iter().map(Record::new).collect();
    q.enqueue(&batch(2, recs)).unwrap();
    // Each hold is recorded as (item, worker, tick when next_for returned it, tick just before
    // submit, which releases it): a shared counter orders those moments across threads, and
    // the check happens after the race, on what was recorded, never on a belief in between.
    let tick = AtomicU64::new(0);
    let holds = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for w in 0..6 {
            let (q, tick, holds) = (&q, &tick, &holds);
            s.spawn(move || {
                let worker = format!("w{w}");
                while let Some(item) = q.next_for(&worker, TASK).expect("next_for runs") {
                    let taken = tick.fetch_add(1, SeqCst);
                    assert_eq!(item.held_by.as_deref(), Some(worker.as_str()));
                    assert!(item.assignments <= item.max_assignments, "past max");
                    let released = tick.fetch_add(1, SeqCst);
                    let id = item.key.task_instance.clone();
                    holds
                        .lock()
                        .unwrap()
                        .push((id, worker.clone(), taken, released));
                    q.submit(&worker, &item.key).expect("submit");
                }
            });
        }
    });
    let mut holds = holds.into_inner().unwrap();
    holds.sort_by_key(|h| (h.0.clone(), h.2));
    for pair in holds.windows(2) {
        let ((a, wa, _, released), (b, wb, taken, _)) = (&pair[0], &pair[1]);
        assert!(
            a != b || taken > released,
            "{a} handed to {wb} before {wa} gave it back"
        );
    }
    let claims: Vec<(String, String)> = holds.into_iter().map(|h| (h.0, h.1)).collect();
    // A worker stops at its first None, which can come while another still holds the last item
    // it could take (its submit reopens the item): after the race, drain what is left in turn.
    let mut claims = claims;
    loop {
        let before = claims.len();
        for w in 0..6 {
            let worker = format!("w{w}");
            while let Some(item) = q.next_for(&worker, TASK).expect("next_for runs") {
                claims.push((item.key.task_instance.clone(), worker.clone()));
                q.submit(&worker, &item.key).expect("submit");
            }
        }
        if claims.len() == before {
            break;
        }
    }
    assert_eq!(claims.len(), 2 * n, "every item taken exactly twice");
    let mut per_item: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (id, worker) in &claims {
        assert!(
            per_item.entry(id).or_default().insert(worker),
            "{worker} took {id} twice"
        );
    }
    for id in &ids {
        let item = q.item(&key(id)).unwrap().unwrap();
        assert_eq!((item.assignments, item.max_assignments), (2, 2), "{id}");
        let submitted = q.assignments(&key(id)).unwrap();
        assert_eq!(submitted.len(), 2, "{id}");
        assert!(submitted
            .iter()
            .all(|a| a.status == AssignmentStatus::Submitted));
    }
    assert!(
        sees(&q, "fresh").is_empty(),
        "every item is full and unassignable"
    );
}

/// RETURNED and ABANDONED hide an item from that worker only until the deadline; SKIPPED for
/// good; others see it at once. Finishing an assignment one does not hold is a typed error.
pub fn queue_returned_and_abandoned_hide_until_deadline(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    q.enqueue(&batch(1, records(&["a", "b"]))).unwrap();

    assert_eq!(take(&q, "w1"), "a");
    assert!(matches!(
        q.submit("w2", &key("a")),
        Err(DocketError::Queue { .. })
    ));
    q.give_back("w1", &key("a")).unwrap();
    assert_eq!(sees(&q, "w1"), ["b"]);
    assert_eq!(sees(&q, "w2"), ["a", "b"]);
    assert_eq!(take(&q, "w1"), "b", "the claim hides it too");
    q.give_back("w1", &key("b")).unwrap();
    advance(&ctx, HIDE - StdDuration::from_secs(1));
    assert!(
        sees(&q, "w1").is_empty(),
        "both still hidden just before the deadline"
    );
    advance(&ctx, StdDuration::from_secs(1));
    assert_eq!(sees(&q, "w1"), ["a", "b"], "visible again at the deadline");

    // Abandon: the lease passes while accepted.
    assert_eq!(take(&q, "w1"), "a");
    assert_eq!(q.abandon_expired().unwrap(), 0, "lease not over yet");
    advance(&ctx, LEASE);
    assert_eq!(q.abandon_expired().unwrap(), 1);
    let a = q.assignments(&key("a")).unwrap();
    assert_eq!(a[0].status, AssignmentStatus::Abandoned);
    assert!(
        q.submit("w1", &key("a")).is_err(),
        "abandoned cannot submit"
    );
    assert_eq!(sees(&q, "w1"), ["b"]);
    assert_eq!(sees(&q, "w2"), ["a", "b"]);
    advance(&ctx, HIDE);
    assert_eq!(sees(&q, "w1"), ["a", "b"]);

    // Skip: hidden from that worker for good.
    assert_eq!(take(&q, "w1"), "a");
    q.skip("w1", &key("a")).unwrap();
    advance(&ctx, HIDE * 10);
    assert_eq!(sees(&q, "w1"), ["b"]);
    assert_eq!(take(&q, "w2"), "a");
}

/// Custom order by two keys (text ascending by code point, number descending), missing last.
pub fn queue_custom_order_two_keys(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let keys = vec![
        CustomKey::new("team", KeyType::Text, Direction::Asc).unwrap(),
        CustomKey::new("score", KeyType::Number, Direction::Desc).unwrap(),
    ];
    let mut cfg = config();
    cfg.orders
        .insert(TASK.to_owned(), PrimaryOrder::Custom(keys));
    let q = queue(&ctx, cfg);
    let (recs, expected) = two_key_records();
    q.enqueue(&batch(1, recs)).unwrap();
    assert_eq!(sees(&q, "w"), expected);
    assert_eq!(take(&q, "w"), "B-0");

    let bad = Record {
        attributes: json!({"score": "lots"}).as_object().cloned().unwrap(),
        ..Record::new("bad")
    };
    let err = q
        .enqueue(&batch(1, vec![Record::new("ok"), bad]))
        .unwrap_err();
    assert!(matches!(err, DocketError::InvalidItem { .. }), "{err}");
    assert!(
        q.item(&key("ok")).unwrap().is_none(),
        "nothing of the batch"
    );
}

/// Records for the custom order `team` (text, ascending), `score` (number, descending), and
/// the order they are handed out in: numbers given as numbers or numeric text, missing and
/// mistyped values last, integers exact beyond `f64` (2^53 + 1 sorts before 2^53 descending),
/// a trailing space significant.
pub(super) fn two_key_records() -> (Vec<Record>, Vec<&'static str>) {
    let rows = [
        ("no-team", json!({"score": 99})),
        ("a-9", json!({"team": "a", "score": "9"})),
        ("b-1", json!({"team": "b", "score": 1})),
        ("a-none", json!({"team": "a"})),
        ("a-10", json!({"team": "a", "score": "10"})),
        ("B-0", json!({"team": "B", "score": 0.5})),
        ("nothing", json!({})),
        ("a-minus", json!({"team": "a", "score": -2.5})),
        (
            "a-big",
            json!({"team": "a", "score": 9_007_199_254_740_993i64}),
        ),
        (
            "a-big-1",
            json!({"team": "a", "score": 9_007_199_254_740_992i64}),
        ),
        ("a -space", json!({"team": "a ", "score": 1})),
    ];
    let records = rows
        .iter()
        .map(|(id, attrs)| Record {
            attributes: attrs.as_object().cloned().unwrap_or_default(),
            ..Record::new(*id)
        })
        .collect();
    let expected = vec![
        "B-0", "a-big", "a-big-1", "a-10", "a-9", "a-minus", "a-none", "a -space", "b-1",
        "no-team", "nothing",
    ];
    (records, expected)
}

/// `extend` raises `max_assignments`: the "2+1" third assignment.
pub fn queue_extend_allows_a_third_assignment(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    q.enqueue(&batch(2, records(&["x", "held"]))).unwrap();
    // Extending a held item keeps it held: nobody else sees it until it is released.
    assert_eq!(take(&q, "w9"), "x");
    q.extend(&key("x"), 1).unwrap();
    assert_eq!(sees(&q, "w8"), ["held"]);
    q.give_back("w9", &key("x")).unwrap();
    let x = q.item(&key("x")).unwrap().unwrap();
    assert_eq!((x.assignments, x.max_assignments), (0, 3));
    for w in ["w1", "w2", "w3"] {
        assert_eq!(take(&q, w), "x");
        q.submit(w, &key("x")).unwrap();
    }
    assert_eq!(sees(&q, "w4"), ["held"]);
    q.extend(&key("x"), 1).unwrap();
    assert_eq!(sees(&q, "w4"), ["x", "held"]);
    assert_eq!(take(&q, "w4"), "x");
    assert_eq!(take(&q, "w5"), "held");
    assert!(q.next_for("w6", TASK).unwrap().is_none());
    assert!(q.extend(&key("missing"), 1).is_err());
    assert!(q.extend(&key("x"), 0).is_err());
    let item = q.item(&key("x")).unwrap().unwrap();
    assert_eq!((item.assignments, item.max_assignments), (4, 4));
}

/// Without migrations 0003/0004 the queue refuses to start, naming the migration; a batch with
/// a duplicate id inserts nothing.
pub fn queue_needs_its_migrations(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let config = StoreConfig::with_priority(t.on());
    for (up_to, missing) in [
        ("0002_priority", "0003_ordering"),
        ("0003_ordering", "0004_work_queue"),
    ] {
        let space = h.space();
        space.migrate(&config, Some(up_to));
        let err =
            WorkQueue::new(space.store(config.clone(), None), QueueConfig::default()).unwrap_err();
        assert!(
            matches!(&err, DocketError::Store(StoreError::MissingMigration { name, .. }) if *name == missing),
            "{up_to}: {err}"
        );
    }
    let q = queue(&ctx, QueueConfig::default());
    q.enqueue(&batch(1, records(&["dup"]))).unwrap();
    assert!(q.enqueue(&batch(1, records(&["new", "dup"]))).is_err());
    assert!(q.item(&key("new")).unwrap().is_none());
    assert!(q.enqueue(&batch(0, records(&["zero"]))).is_err());
}

/// Items share the table with executions, but their task types are not unknown tasks: a
/// scheduler on the same table neither reports them nor deletes them, however old.
pub fn queue_items_are_not_unknown_tasks(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    q.enqueue(&batch(1, records(&["old"]))).unwrap();
    let scheduler = ctx.build(
        "s1",
        docket_core::PollingStrategy::fetch(),
        vec![super::counting_task(super::WORK).0],
    );
    ctx.clock
        .advance(std::time::Duration::from_secs(30 * 86_400));
    assert!(scheduler.check_unresolved().unwrap().is_empty());
    assert!(q.item(&key("old")).unwrap().is_some(), "item kept");
    assert_eq!(
        scheduler.run_due().unwrap(),
        0,
        "items are not executions to run"
    );
}

/// Quotes, semicolons and comment markers in item ids, worker names, task types and attribute
/// values are data: they round-trip and order like any other value. In attribute *names* used
/// as custom keys they are rejected before any SQL is written.
pub fn queue_hostile_input_is_data(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let hostile = "x'); DROP TABLE scheduled_tasks; -- /*";
    let keys = vec![CustomKey::new("label", KeyType::Text, Direction::Asc).unwrap()];
    let mut cfg = config();
    cfg.orders
        .insert(hostile.to_owned(), PrimaryOrder::Custom(keys));
    let q = queue(&ctx, cfg);
    let recs = ["b\"--", "a';"]
        .iter()
        .enumerate()
        .map(|(i, label)| Record {
            attributes: json!({ "label": label, "note": hostile })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Record::new(format!("{hostile}{i}"))
        })
        .collect();
    q.enqueue(&Batch {
        task_type: hostile.to_owned(),
        max_assignments: 1,
        records: recs,
    })
    .unwrap();
    let seen = q.list_for(hostile, hostile, 10).unwrap();
    assert_eq!(ids(&seen), [format!("{hostile}1"), format!("{hostile}0")]);
    assert_eq!(seen[0].attributes().unwrap()["note"], json!(hostile));
    let item = q.next_for(hostile, hostile).unwrap().expect("an item");
    q.submit(hostile, &item.key).unwrap();
    assert_eq!(q.assignments(&item.key).unwrap()[0].worker, hostile);
    for bad in ["a'b", "a;b", "a--b", "a/*b*/", "a\"b", "$.a"] {
        assert!(matches!(
            CustomKey::new(bad, KeyType::Text, Direction::Asc),
            Err(DocketError::InvalidAttribute { .. })
        ));
    }
}

/// Workers calling `next_for` at the same instant each get an item while items remain, in FIFO
/// and in a custom order (which the database sorts: a claim must not lock, and so hide, every
/// row its sort read).
pub fn queue_concurrent_next_for_never_starves(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let keys = vec![CustomKey::new("rank", KeyType::Number, Direction::Desc).unwrap()];
    let mut cfg = config();
    cfg.orders
        .insert("custom".to_owned(), PrimaryOrder::Custom(keys));
    let q = queue(&ctx, cfg);
    let (workers, rounds) = (6, 5);
    for task_type in [TASK, "custom"] {
        let recs = (0..workers * rounds)
            .map(|i| Record {
                attributes: json!({ "rank": i })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                ..Record::new(format!("{task_type}-{i}"))
            })
            .collect();
        q.enqueue(&Batch {
            task_type: task_type.to_owned(),
            max_assignments: 1,
            records: recs,
        })
        .unwrap();
        let barrier = std::sync::Barrier::new(workers);
        let got = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for w in 0..workers {
                let (q, barrier, got) = (&q, &barrier, &got);
                s.spawn(move || {
                    // No panic in here: the others would wait at the barrier for ever.
                    for round in 0..rounds {
                        barrier.wait();
                        let got_one = match q.next_for(&format!("w{w}"), task_type) {
                            Ok(Some(item)) => item.key.task_instance,
                            Ok(None) => format!("nothing for w{w} in round {round}"),
                            Err(e) => format!("w{w} failed in round {round}: {e}"),
                        };
                        got.lock().unwrap().push(got_one);
                    }
                });
            }
        });
        let got = got.into_inner().unwrap();
        let prefix = format!("{task_type}-");
        let misses: Vec<_> = got.iter().filter(|g| !g.starts_with(&prefix)).collect();
        assert!(misses.is_empty(), "{task_type}: {misses:?}");
        assert_eq!(
            got.iter().collect::<HashSet<_>>().len(),
            workers * rounds,
            "{task_type}"
        );
    }
}

/// Bad input to the queue API is a typed error with nothing written; attribute values a custom
/// key cannot read (a number under a text key, left unnormalized because the items arrived
/// under FIFO) count as missing on every backend.
pub fn queue_bad_input_is_rejected(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    let mut rows = q.resolve(&batch(1, records(&["ok", "bad"]))).unwrap();
    rows[1].max_assignments = 0;
    assert!(matches!(
        q.insert(&rows),
        Err(DocketError::InvalidItem { .. })
    ));
    rows[1].max_assignments = 1;
    rows[1].custom_attributes = Some(r#"{"note": "a\u0000b"}"#.to_owned());
    assert!(matches!(
        q.insert(&rows),
        Err(DocketError::InvalidItem { .. })
    ));
    rows[1].custom_attributes = Some("[1, 2]".to_owned());
    assert!(matches!(
        q.insert(&rows),
        Err(DocketError::InvalidItem { .. })
    ));
    let nul = Record {
        attributes: json!({"note": "a\u{0}b"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Record::new("nul")
    };
    assert!(q.enqueue(&batch(1, vec![nul])).is_err());
    let far = Record {
        arrives_after: Some(StdDuration::from_secs(10_000 * 366 * 24 * 3600)),
        ..Record::new("far")
    };
    assert!(matches!(
        q.enqueue(&batch(1, vec![far])),
        Err(DocketError::InvalidItem { .. })
    ));
    assert!(q.list_for("w", TASK, -1).is_err());
    assert!(sees(&q, "w").is_empty(), "nothing was written");
    let forever = QueueConfig {
        hide_for: StdDuration::from_secs(u64::MAX),
        ..config()
    };
    assert!(matches!(
        WorkQueue::new(ctx.store.clone(), forever),
        Err(DocketError::InvalidConfig(_))
    ));

    let attrs = |v: serde_json::Value| Record {
        attributes: v.as_object().cloned().unwrap_or_default(),
        ..Record::default()
    };
    let recs = vec![
        Record {
            id: "number".into(),
            ..attrs(json!({"team": 12}))
        },
        Record {
            id: "text".into(),
            ..attrs(json!({"team": "9"}))
        },
        Record {
            id: "bool".into(),
            ..attrs(json!({"team": true}))
        },
    ];
    q.enqueue(&batch(1, recs)).unwrap();
    let mut by_team = config();
    by_team.orders.insert(
        TASK.to_owned(),
        PrimaryOrder::parse_custom("team:text").unwrap(),
    );
    let custom = queue(&ctx, by_team);
    // Only the string is read; the others tie as missing, then go by record order.
    assert_eq!(sees(&custom, "w"), ["text", "number", "bool"]);
}

/// A timestamp key compares instants, whatever offset or precision the value was written with.
pub fn queue_custom_timestamp_key(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let mut cfg = config();
    cfg.orders.insert(
        TASK.to_owned(),
        PrimaryOrder::parse_custom("due:timestamp:asc").unwrap(),
    );
    let q = queue(&ctx, cfg);
    let recs = [
        ("noon-utc", "2021-01-01T12:00:00Z"),
        ("eleven-utc-as-plus-two", "2021-01-01T13:00:00+02:00"),
        ("noon-and-a-bit", "2021-01-01T12:00:00.5"),
        ("last-year", "2020-12-31T23:59:59.999"),
    ]
    .iter()
    .map(|(id, due)| Record {
        attributes: json!({ "due": due })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Record::new(*id)
    })
    .collect();
    q.enqueue(&batch(1, recs)).unwrap();
    assert_eq!(
        sees(&q, "w"),
        [
            "last-year",
            "eleven-utc-as-plus-two",
            "noon-utc",
            "noon-and-a-bit"
        ]
    );
    let bad = Record {
        attributes: json!({"due": "tomorrow"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        ..Record::new("bad")
    };
    assert!(matches!(
        q.enqueue(&batch(1, vec![bad])),
        Err(DocketError::InvalidItem { .. })
    ));
}

/// A custom order over attributes stored as they came (a queue without that order, as
/// `docket enqueue` without `--order` stores CSV cells: every value a JSON string): a number
/// key reads `"2"` as 2 and a timestamp key reads record-date text, the way OPENJSON's typed
/// `WITH` columns convert them; JSON numbers, text that does not convert, other JSON types and
/// missing attributes mixed in. The same order with the custom-order index in place.
pub fn queue_custom_order_converts_text(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let fifo = queue(&ctx, config());
    let rows = [
        ("one", json!({"score": "1", "at": "2021-01-01T12:00:00"})),
        ("garbage", json!({"score": "lots", "at": "tomorrow"})),
        (
            "three",
            json!({"score": "3", "at": "2020-06-01T00:00:00.5"}),
        ),
        ("true", json!({"score": true, "at": false})),
        (
            "two-n",
            json!({"score": 2, "at": "2021-01-01T12:00:00.000001Z"}),
        ),
        (
            "minus",
            json!({"score": "-2.5", "at": "2019-01-01T00:00:00.000000Z"}),
        ),
        ("ten", json!({"score": "10", "at": "2100-01-01T00:00:00"})),
        (
            "spaced",
            json!({"score": " 4", "at": " 2020-01-01T00:00:00"}),
        ),
        ("exp", json!({"score": "1e3", "at": "2021-01-01"})),
        ("frac", json!({"score": "2.75", "at": 20210101})),
        ("none", json!({})),
    ];
    let recs = rows
        .iter()
        .map(|(id, attrs)| Record {
            attributes: attrs.as_object().cloned().unwrap_or_default(),
            ..Record::new(*id)
        })
        .collect();
    fifo.enqueue(&batch(1, recs)).unwrap();
    let converted = |order: &str, expected: &[&str]| {
        let mut cfg = config();
        cfg.orders
            .insert(TASK.to_owned(), PrimaryOrder::parse_custom(order).unwrap());
        let q = queue(&ctx, cfg);
        // Ties (the values that count as missing) are unspecified: compare them as a set.
        let head = expected.len();
        for indexed in [false, true] {
            if indexed {
                q.create_order_index(TASK).unwrap();
            }
            let seen = sees(&q, "w");
            assert_eq!(
                seen[..head],
                *expected,
                "{order}, index {indexed}: {seen:?}"
            );
            assert_eq!(seen.len(), rows.len(), "{order}: {seen:?}");
        }
        q.drop_order_index(TASK).unwrap();
    };
    converted(
        "score:number:desc",
        &["ten", "three", "frac", "two-n", "one", "minus"],
    );
    converted(
        "at:timestamp:asc",
        &["minus", "three", "one", "two-n", "ten"],
    );
}

/// Per-assignment deadlines: `next_for_until` gives one assignment its own abandon deadline
/// and `give_back_until` its own hide deadline; `lease` and `hide_for` stay the defaults.
pub fn queue_per_assignment_deadlines(h: &dyn Harness, t: Toggle) {
    use docket_core::Clock;
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    q.enqueue(&batch(1, records(&["a", "b"]))).unwrap();
    let now = ctx.clock.now();
    let short = now + Duration::seconds(10);
    let a = q
        .next_for_until("w1", TASK, short)
        .unwrap()
        .expect("an item");
    assert_eq!(take(&q, "w2"), "b");
    let deadline = |item: &str| q.assignments(&key(item)).unwrap()[0].deadline;
    assert_eq!((a.key.task_instance.as_str(), deadline("a")), ("a", short));
    assert_eq!(
        deadline("b"),
        now + Duration::from_std(LEASE).unwrap(),
        "the lease stays the default"
    );
    advance(&ctx, StdDuration::from_secs(11));
    assert_eq!(
        q.abandon_expired().unwrap(),
        1,
        "only the short deadline passed"
    );
    assert_eq!(
        q.assignments(&key("a")).unwrap()[0].status,
        AssignmentStatus::Abandoned
    );
    assert!(sees(&q, "w1").is_empty(), "abandoned: hidden for hide_for");
    assert_eq!(sees(&q, "w3"), ["a"]);

    q.give_back_until("w2", &key("b"), ctx.clock.now() + Duration::seconds(5))
        .unwrap();
    assert_eq!(
        sees(&q, "w2"),
        ["a"],
        "b hidden from w2 until its own deadline"
    );
    advance(&ctx, StdDuration::from_secs(5));
    assert_eq!(sees(&q, "w2"), ["a", "b"]);
    assert_eq!(sees(&q, "w1"), ["b"], "a still hidden from w1 (hide_for)");
    let far = ctx.clock.now() + Duration::days(366 * 8000);
    assert!(matches!(
        q.next_for_until("w4", TASK, far),
        Err(DocketError::InvalidConfig(_))
    ));
}

/// `items_with_assignments`: one read lists the first items by arrival with their versions,
/// their first assignments by worker and their counts; a status this version does not know
/// is listed as unknown without failing the others; the item and holder filters narrow it.
pub fn queue_items_with_assignments_in_one_read(h: &dyn Harness, t: Toggle) {
    use docket_core::queue::{ItemsQuery, StatusRead};
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    q.enqueue(&batch(3, records(&["1", "2", "3"]))).unwrap();
    for worker in ["w1", "w2", "w3"] {
        assert_eq!(take(&q, worker), "1");
        if worker != "w3" {
            q.submit(worker, &key("1")).unwrap();
        }
    }
    // w2's row gets a status no version of docket writes.
    let foreign = ctx.space.foreign();
    let mut w = docket_core::dialect::SqlWriter::new(foreign.dialect());
    w.push("UPDATE ")
        .table(&docket_core::TableName::default().assignments())
        .push(" SET status = ")
        .bind("WEIRD")
        .push(" WHERE worker = ")
        .bind("w2");
    assert_eq!(foreign.execute(&w.finish()).unwrap(), 1);
    assert!(q.assignments(&key("1")).is_err(), "the strict read fails");

    let listed = q
        .items_with_assignments(&ItemsQuery {
            assignments: 2,
            ..ItemsQuery::new(TASK, 2)
        })
        .unwrap();
    let ids: Vec<_> = listed
        .iter()
        .map(|l| l.item.key.task_instance.as_str())
        .collect();
    assert_eq!(ids, ["1", "2"], "the first two by arrival");
    let one = &listed[0];
    assert_eq!(one.assignments_total, 3);
    let shown: Vec<_> = one
        .assignments
        .iter()
        .map(|a| (a.worker.as_str(), a.status.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            ("w1", StatusRead::Known(AssignmentStatus::Submitted)),
            ("w2", StatusRead::Unknown("WEIRD".into())),
        ]
    );
    assert_eq!(shown[1].1.to_string(), "unknown: WEIRD");
    let version = ctx.store.execution_get(&key("1")).unwrap().unwrap().version;
    assert_eq!(one.version, version);
    assert_eq!(
        (listed[1].assignments_total, listed[1].assignments.len()),
        (0, 0)
    );

    // Counted only.
    let counted = q
        .items_with_assignments(&ItemsQuery::new(TASK, 10))
        .unwrap();
    assert_eq!(counted.len(), 3);
    assert!(counted.iter().all(|l| l.assignments.is_empty()));
    assert_eq!(counted[0].assignments_total, 3);

    // One item; the items a worker holds.
    let item = q.item_with_assignments(&key("1"), 100).unwrap().unwrap();
    assert_eq!(item.assignments.len(), 3);
    assert!(q.item_with_assignments(&key("9"), 1).unwrap().is_none());
    let held = q
        .items_with_assignments(&ItemsQuery {
            held_by: Some("w3"),
            ..ItemsQuery::new(TASK, 10)
        })
        .unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].item.held_by.as_deref(), Some("w3"));
    assert!(q.items_with_assignments(&ItemsQuery::new(TASK, 0)).is_err());
}

/// `items_with_assignments_read`: an item whose row holds a value docket cannot decode (a NULL
/// `record_date`, written by SQL) is listed in its place as unreadable, with its key, its
/// version and the column, and the other items as usual, however many rows its assignments
/// add;
/// the strict `items_with_assignments` fails with that column's decode error.
pub fn queue_unreadable_item_is_listed_in_its_place(h: &dyn Harness, t: Toggle) {
    use docket_core::queue::{ItemRead, ItemsQuery};
    use docket_core::StoreError;
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    q.enqueue(&batch(2, records(&["1", "2", "3"]))).unwrap();
    // Items 1 and 2 go to two workers each: each is two rows of the read.
    assert_eq!(take(&q, "w1"), "1");
    q.submit("w1", &key("1")).unwrap();
    assert_eq!(take(&q, "w2"), "1");
    assert_eq!(take(&q, "w3"), "2");
    q.submit("w3", &key("2")).unwrap();
    assert_eq!(take(&q, "w1"), "2");
    let foreign = ctx.space.foreign();
    let mut w = docket_core::dialect::SqlWriter::new(foreign.dialect());
    w.push("UPDATE ")
        .table(&docket_core::TableName::default())
        .push(" SET record_date = NULL WHERE task_name = ")
        .bind(TASK)
        .push(" AND task_instance = ")
        .bind("2");
    assert_eq!(foreign.execute(&w.finish()).unwrap(), 1);
    let version = ctx.store.execution_get(&key("2")).unwrap().unwrap().version;

    let read = q
        .items_with_assignments_read(&ItemsQuery {
            assignments: 10,
            ..ItemsQuery::new(TASK, 10)
        })
        .unwrap();
    assert_eq!(read.len(), 3, "{read:?}");
    match &read[0] {
        ItemRead::Listed(l) => {
            assert_eq!(l.item.key, key("1"));
            assert_eq!(l.assignments.len(), 2);
        }
        other => panic!("item 1 is read: {other:?}"),
    }
    match &read[1] {
        ItemRead::Unreadable(u) => {
            assert_eq!(u.key, key("2"));
            assert_eq!(u.version, Some(version));
            assert_eq!(u.column, "record_date");
        }
        other => panic!("item 2 is unreadable: {other:?}"),
    }
    assert!(matches!(&read[2], ItemRead::Listed(l) if l.item.key == key("3")));
    let strict = q.items_with_assignments(&ItemsQuery::new(TASK, 10));
    assert!(
        matches!(
            strict,
            Err(docket_core::DocketError::Store(StoreError::Decode {
                column: "record_date",
                ..
            }))
        ),
        "{strict:?}"
    );
}

/// The lag read (`SchedulerClient::lag`, the dashboard's gauges): per task the oldest due
/// execution (per priority level with priority on) and its due, scheduled and picked counts;
/// per task type the oldest open item and the open count; counts stop at the cap; names come in
/// order and stop at their own cap.
pub fn lag_per_task_level_and_task_type(h: &dyn Harness, t: Toggle) {
    use docket_core::store::{Changes, Guard, PickChange};
    use docket_core::{CappedCount, Clock, LevelLag, TaskDescriptor};
    const EMAIL: TaskDescriptor = TaskDescriptor::new("email");
    const WORK: TaskDescriptor = TaskDescriptor::new("work");
    let ctx = ctx(h, t);
    let q = queue(&ctx, config());
    let arrived = ctx.clock.now();
    q.enqueue(&batch(1, records(&["1", "2", "3"]))).unwrap();
    advance(&ctx, StdDuration::from_secs(600));
    assert_eq!(take(&q, "w1"), "1");
    let now = ctx.clock.now();
    let client = ctx.client();
    for (id, p, at) in [
        ("a", 10, now - Duration::minutes(8)),
        ("b", 90, now - Duration::minutes(5)),
        ("c", 50, now + Duration::hours(1)),
        ("d", 50, now - Duration::minutes(20)),
    ] {
        client
            .schedule(EMAIL.instance(id).priority(p).scheduled_to(at))
            .unwrap();
    }
    let claim = Changes {
        pick: Some(PickChange::Claim {
            by: "node-1".into(),
            at: now,
        }),
        ..Changes::default()
    };
    assert!(ctx
        .store
        .execution_update(&ExecutionKey::new("email", "d"), Guard::Unpicked, &claim)
        .unwrap());
    for id in ["x", "y", "z"] {
        client
            .schedule(WORK.instance(id).scheduled_to(now - Duration::minutes(1)))
            .unwrap();
    }

    let lag = client.lag(10, 2, true).unwrap();
    assert_eq!(lag.now, now);
    assert!(!lag.names_capped);
    let names: Vec<_> = lag.names.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["email", "review", "work"]);
    let count = |count, capped| CappedCount { count, capped };

    let email = &lag.names[0];
    assert!(!email.queue_type);
    assert_eq!(email.oldest, Some(now - Duration::minutes(8)));
    assert_eq!(email.waiting, count(2, false));
    assert_eq!(email.scheduled, count(1, false));
    assert_eq!(email.picked, count(1, false));
    let level = |priority, minutes, count| LevelLag {
        priority,
        oldest: now - Duration::minutes(minutes),
        count,
    };
    let expected = if t.on() {
        vec![level(Some(90), 5, 1), level(Some(10), 8, 1)]
    } else {
        vec![level(None, 8, 2)]
    };
    assert_eq!(email.levels, expected);

    let review = &lag.names[1];
    assert!(review.queue_type);
    assert_eq!(review.oldest, Some(arrived), "the oldest open item");
    assert_eq!(review.waiting, count(2, false), "item 1 is held");
    assert_eq!(review.picked, count(0, false));

    let work = &lag.names[2];
    assert_eq!(work.oldest, Some(now - Duration::minutes(1)));
    assert_eq!(
        work.waiting,
        count(2, true),
        "three due, counted up to the cap"
    );
    assert_eq!(work.levels.iter().map(|l| l.count).sum::<i64>(), 2);

    let first = client.lag(1, 100, true).unwrap();
    assert!(first.names_capped);
    assert_eq!(first.names.len(), 1);
    assert!(client.lag(0, 1, true).is_err());
    assert!(client.lag(1, 0, true).is_err());
    // Without the work-queue columns' say, every name reads as a scheduler task.
    let plain = client.lag(10, 100, false).unwrap();
    assert!(plain.names.iter().all(|n| !n.queue_type));
}
