//! The work queue at scale: streaming intake in chunks (one transaction for the whole batch,
//! duplicate ids found wherever they are), and the index that serves a custom order.

use crate::harness::{Ctx, Harness, Need, Toggle};
use docket_core::queue::{Batch, IndexChange, Item, QueueConfig, Record};
use docket_core::{DocketError, ExecutionKey, PrimaryOrder, StoreError, WorkQueue};
use serde_json::json;
use std::sync::Arc;

const TASK: &str = "intake";

/// More records than two multi-row inserts carry on every backend (at most 4096 rows each).
const MANY: usize = 10_000;

/// More records than three of MySQL's bulk intake files carry (16,384 rows each).
const LARGE: usize = 50_000;

fn ctx(h: &dyn Harness, t: Toggle) -> Ctx {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::WorkQueue);
    ctx
}

fn queue(ctx: &Ctx, order: Option<&str>) -> WorkQueue {
    let mut config = QueueConfig::default();
    if let Some(keys) = order {
        config.orders.insert(
            TASK.to_owned(),
            PrimaryOrder::parse_custom(keys).expect("valid order"),
        );
    }
    WorkQueue::with_clock(ctx.store.clone(), Arc::new(ctx.clock.clone()), config)
        .expect("work-queue schema is migrated")
}

fn record(id: String, attributes: serde_json::Value) -> Record {
    Record {
        attributes: attributes.as_object().cloned().unwrap_or_default(),
        ..Record::new(id)
    }
}

fn batch(records: Vec<Record>) -> Batch {
    Batch {
        task_type: TASK.to_owned(),
        max_assignments: 1,
        records,
    }
}

/// `MANY` records `r1..`, attributes `team` (7 values) and `score` (as CSV cells: text).
fn many(prefix: &str) -> Vec<Record> {
    (1..=MANY)
        .map(|i| {
            let attrs = json!({"team": format!("t{}", i % 7), "score": (i % 100).to_string()});
            record(format!("{prefix}{i}"), attrs)
        })
        .collect()
}

/// How many items of `TASK` the table holds.
fn count(ctx: &Ctx) -> i64 {
    ctx.store
        .item_counts()
        .expect("item_counts runs")
        .iter()
        .filter(|c| c.task_type == TASK)
        .map(|c| c.items)
        .sum()
}

fn ids(items: &[Item]) -> Vec<String> {
    items.iter().map(|i| i.key.task_instance.clone()).collect()
}

/// A batch spanning several multi-row inserts is one transaction: a bad record at its end, an
/// id repeated thousands of rows later, or an id from an earlier batch inserts nothing, and
/// the error names the record.
pub fn queue_intake_streams_all_or_nothing(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, Some("team,score:number:desc"));

    let mut bad_last = many("a");
    let last = bad_last.len() - 1;
    bad_last[last] = record("a-bad".to_owned(), json!({"score": "lots"}));
    let err = q.enqueue(&batch(bad_last)).unwrap_err();
    assert!(
        matches!(&err, DocketError::InvalidItem { item, reason } if item == "a-bad" && reason.contains("not a number")),
        "{err}"
    );
    assert_eq!(count(&ctx), 0, "nothing of the batch");

    let mut repeated = many("b");
    repeated[MANY - 2].id = "b3".to_owned();
    let err = q.enqueue(&batch(repeated)).unwrap_err();
    assert!(
        matches!(&err, DocketError::Store(StoreError::DuplicateItem { task, item }) if task == TASK && item == "b3"),
        "{err}"
    );
    assert_eq!(count(&ctx), 0, "nothing of the batch");

    assert_eq!(q.enqueue(&batch(many("c"))).unwrap(), MANY as u64);
    assert_eq!(count(&ctx), MANY as i64);
    let item = q
        .item(&ExecutionKey::new(TASK, format!("c{MANY}")))
        .unwrap()
        .expect("the last record is in");
    assert_eq!(item.record.order, MANY as i64);
    assert_eq!(
        item.attributes().unwrap().get("score"),
        Some(&json!(MANY % 100)),
        "normalized for the number key"
    );

    let mut again = many("d");
    again[MANY / 2].id = format!("c{MANY}");
    let err = q.enqueue(&batch(again)).unwrap_err();
    let expected = format!("c{MANY}");
    assert!(
        matches!(&err, DocketError::Store(StoreError::DuplicateItem { item, .. }) if *item == expected),
        "{err}"
    );
    assert_eq!(count(&ctx), MANY as i64, "the second batch left nothing");

    // The typed rows go the same way.
    let rows = q.resolve(&batch(many("e"))).unwrap();
    assert_eq!(q.insert(&rows).unwrap(), MANY as u64);
    assert_eq!(count(&ctx), 2 * MANY as i64);
}

/// A large batch (MySQL/MariaDB load it through a file, docs/DESIGN.md "Bulk intake") stores
/// every value as a one-record batch (a plain insert) does: payload bytes that separate,
/// escape or end lines and fields, text that spells NULL, attributes with control characters,
/// record dates with microseconds, priorities, and no payload at all.
pub fn queue_large_batches_keep_every_byte(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let q = queue(&ctx, None);
    let special = |i: usize, prefix: &str| {
        let mut r = record(
            format!("{prefix}{i}\\N"),
            json!({"note": format!("tab\there\nnewline \\N back\\slash {i}"), "n": i}),
        );
        r.data = match i % 3 {
            0 => None,
            1 => Some(vec![
                b'\\', b'N', 0, b'\t', b'\n', b'\r', 0xff, b'\\', i as u8,
            ]),
            _ => Some(b"\\N".to_vec()),
        };
        r.record_date = Some(Ctx::t0() + chrono::Duration::microseconds(i as i64 * 7));
        r.priority = Some((i % 5) as i16 - 2);
        r
    };
    // Several of the bulk intake's files (16,384 rows each).
    let large = |prefix: &str| (1..=LARGE).map(|i| special(i, prefix)).collect::<Vec<_>>();
    let mut repeated = large("rep");
    repeated[LARGE - 1].id = repeated[0].id.clone();
    let err = q.enqueue(&batch(repeated)).unwrap_err();
    assert!(
        matches!(&err, DocketError::Store(StoreError::DuplicateItem { item, .. }) if item == "rep1\\N"),
        "{err}"
    );
    assert_eq!(count(&ctx), 0, "nothing of the batch");
    assert_eq!(q.enqueue(&batch(large("big"))).unwrap(), LARGE as u64);
    for i in [1, 2, 3, 4097, 16_385, LARGE] {
        q.enqueue(&batch(vec![special(i, "one")])).unwrap();
        let big = q.item(&ExecutionKey::new(TASK, format!("big{i}\\N")));
        let one = q.item(&ExecutionKey::new(TASK, format!("one{i}\\N")));
        let (big, one) = (big.unwrap().expect("stored"), one.unwrap().expect("stored"));
        assert_eq!(big.data, one.data, "payload of record {i}");
        assert_eq!(big.custom_attributes, one.custom_attributes, "record {i}");
        assert_eq!(big.record.date, one.record.date, "record {i}");
        assert_eq!(big.available_at, one.available_at, "record {i}");
        assert_eq!(big.max_assignments, one.max_assignments, "record {i}");
        assert_eq!(
            big.data.as_deref(),
            special(i, "big").data.as_deref(),
            "payload of record {i} as given"
        );
    }
    assert_eq!(count(&ctx), LARGE as i64 + 6);
}

fn created(change: &IndexChange, changed: bool) {
    assert_eq!(change.changed, changed, "{change:?}");
    assert_eq!(change.statements.is_empty(), !changed, "{change:?}");
}

/// The index of a custom order changes nothing in what workers get: the same items in the same
/// order, with missing and mistyped values last, before, while and after it exists.
pub fn queue_order_index_serves_the_same_order(h: &dyn Harness, t: Toggle) {
    let ctx = ctx(h, t);
    let keys = "team,score:number:desc";
    let q = queue(&ctx, Some(keys));
    let (records, expected) = super::queue::two_key_records();
    q.enqueue(&batch(records)).unwrap();
    let sees = |q: &WorkQueue| ids(&q.list_for("w", TASK, 100).unwrap());
    assert_eq!(sees(&q), expected, "without the index");
    let (name, exists) = q.order_index(TASK).unwrap();
    assert!(!exists);
    assert!(name.contains("_ord_"), "{name}");

    let change = q.create_order_index(TASK).unwrap();
    created(&change, true);
    assert_eq!(change.index, name);
    assert_eq!(q.order_index(TASK).unwrap(), (name.clone(), true));
    created(&q.create_order_index(TASK).unwrap(), false);
    assert_eq!(sees(&q), expected, "with the index");
    // A queue built after the index (no cached knowledge) agrees, and claims in that order.
    let fresh = queue(&ctx, Some(keys));
    assert_eq!(sees(&fresh), expected);
    let first = fresh.next_for("w", TASK).unwrap().expect("an item");
    assert_eq!(first.key.task_instance, "B-0");
    assert_eq!(sees(&fresh)[0], "a-big");
    // Intake keeps working with the index (and its generated columns) in place.
    let top = record("a-max".into(), json!({"team": "a", "score": 1e20}));
    q.enqueue(&batch(vec![top])).unwrap();
    assert_eq!(&sees(&q)[..2], ["a-max", "a-big"]);

    let dropped = q.drop_order_index(TASK).unwrap();
    created(&dropped, true);
    created(&q.drop_order_index(TASK).unwrap(), false);
    assert!(!q.order_index(TASK).unwrap().1);
    // `fresh` still believes in the index: its query fails, it asks again, and sorts.
    assert_eq!(&sees(&fresh)[..2], ["a-max", "a-big"], "after the drop");

    // A FIFO task type has its index already (migration 0004).
    let fifo = queue(&ctx, None);
    assert!(matches!(
        fifo.create_order_index(TASK),
        Err(DocketError::InvalidConfig(_))
    ));
}
