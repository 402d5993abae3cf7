//! The same scenario in docket-mysql and docket-sqlite (`tests/common` of each): drives
//! `WorkQueue` through enqueue, next_for, submit, give back, abandon, extend and a custom order,
//! on a store migrated to the latest version.

use chrono::{DateTime, Duration, TimeZone, Utc};
use docket_core::queue::{AssignmentStatus, Batch, Record};
use docket_core::{
    CustomKey, Direction, ExecutionKey, KeyType, ManualClock, PrimaryOrder, QueueConfig, Store,
    WorkQueue,
};
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap()
}

fn attrs(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn batch(task_type: &str, max: i32, records: Vec<Record>) -> Batch {
    Batch {
        task_type: task_type.into(),
        max_assignments: max,
        records,
    }
}

fn ids(items: &[docket_core::queue::Item]) -> Vec<String> {
    items.iter().map(|i| i.key.task_instance.clone()).collect()
}

fn key(task: &str, id: &str) -> ExecutionKey {
    ExecutionKey::new(task, id)
}

/// Runs the scenario on a migrated store.
pub fn scenario(store: Arc<dyn Store>) {
    let clock = ManualClock::new(t0());
    let ranked = PrimaryOrder::Custom(vec![
        CustomKey::new("team", KeyType::Text, Direction::Asc).unwrap(),
        CustomKey::new("score", KeyType::Number, Direction::Desc).unwrap(),
    ]);
    let config = QueueConfig {
        orders: [("ranked".to_owned(), ranked)].into_iter().collect(),
        ..QueueConfig::default()
    };
    let q = WorkQueue::with_clock(store, Arc::new(clock.clone()), config).unwrap();

    // FIFO: record date, then record order (position in the batch).
    let mut late = Record::new("r0");
    late.record_date = Some(t0() + Duration::hours(1));
    let records = vec![
        late,
        Record::new("r1"),
        Record::new("r2"),
        Record::new("r3"),
    ];
    assert_eq!(q.enqueue(&batch("review", 2, records)).unwrap(), 4);
    let next = |w: &str| {
        q.next_for(w, "review")
            .unwrap()
            .map(|i| i.key.task_instance)
    };
    assert_eq!(next("w1").as_deref(), Some("r1"));
    assert_eq!(next("w1").as_deref(), Some("r2"));
    assert_eq!(next("w2").as_deref(), Some("r3"));
    assert_eq!(next("w3").as_deref(), Some("r0"));
    assert_eq!(next("w4"), None, "every item is held");
    q.submit("w1", &key("review", "r1")).unwrap();
    let r1 = q.item(&key("review", "r1")).unwrap().unwrap();
    assert_eq!((r1.assignments, r1.held_by.as_deref()), (1, None));
    assert_eq!(next("w1"), None, "w1 submitted r1 and holds r2");
    assert_eq!(next("w4").as_deref(), Some("r1"));
    q.submit("w4", &key("review", "r1")).unwrap();
    assert_eq!(next("w5"), None, "r1 is full, the others held");
    // Giving back frees the slot and hides the item from its worker only.
    q.give_back("w2", &key("review", "r3")).unwrap();
    assert_eq!(next("w2"), None, "r3 is hidden from w2");
    assert_eq!(next("w5").as_deref(), Some("r3"));
    let list = q.assignments(&key("review", "r3")).unwrap();
    let statuses: Vec<_> = list.iter().map(|a| (a.worker.as_str(), a.status)).collect();
    assert_eq!(
        statuses,
        [
            ("w2", AssignmentStatus::Returned),
            ("w5", AssignmentStatus::Accepted)
        ]
    );
    assert!(q.submit("w2", &key("review", "r3")).is_err());
    // Past the lease, the accepted assignments are abandoned and the items released.
    clock.advance(Duration::hours(1));
    assert_eq!(q.abandon_expired().unwrap(), 3, "r2 (w1), r0 (w3), r3 (w5)");
    q.extend(&key("review", "r1"), 1).unwrap();
    assert_eq!(
        next("w6").as_deref(),
        Some("r1"),
        "extended: room for one more"
    );

    // Custom order: team ascending (code point order), score descending, missing last.
    let rec = |id: &str, v: Value| Record {
        attributes: attrs(v),
        ..Record::new(id)
    };
    let records = vec![
        rec("a", json!({"team": "b", "score": 1})),
        rec("b", json!({"team": "a", "score": 2.5})),
        rec("c", json!({"team": "a", "score": "10"})),
        rec("d", json!({"score": 100})),
        rec("e", json!({"team": "a"})),
        rec("f", json!({"team": "a ", "score": 1})),
        rec("g", json!({"team": "a\t", "score": 1})),
        rec("h", json!({"team": "B", "score": 1})),
        rec("i", json!({"team": "é", "score": -3})),
        rec("j", json!({"team": "a", "score": 9007199254740993i64})),
        rec("k", json!({"team": "a", "score": 9007199254740992i64})),
    ];
    assert_eq!(q.enqueue(&batch("ranked", 1, records)).unwrap(), 11);
    let order = ids(&q.list_for("x", "ranked", 20).unwrap());
    assert_eq!(
        order,
        ["h", "j", "k", "c", "b", "e", "g", "f", "a", "i", "d"],
        "B < a < a\\t < a  < b < é; within a: 2^53 + 1, 2^53 (exact), 10, 2.5, missing"
    );
    assert_eq!(
        q.next_for("x", "ranked")
            .unwrap()
            .unwrap()
            .key
            .task_instance,
        "h"
    );
    assert_eq!(
        q.next_for("y", "ranked")
            .unwrap()
            .unwrap()
            .key
            .task_instance,
        "j"
    );
}
