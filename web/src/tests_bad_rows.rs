//! Rows docket cannot decode (a time out of range, written by SQL or another program): the
//! pages and `/metrics` still answer, what the bad row hides is named where it stands, and a
//! request about that row alone says what is wrong with it (no 503 "database unavailable").

use super::{router, Access};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use chrono::{Duration, Utc};
use docket_compat_tests::backends::{Postgres, Sqlite};
use docket_compat_tests::{Harness, Space};
use docket_core::dialect::SqlWriter;
use docket_core::queue::{Batch, Record};
use docket_core::{
    ExecutionKey, QueueConfig, SchedulerClient, Store, StoreConfig, TableName, TaskDescriptor,
    WorkQueue,
};
use std::sync::Arc;
use tower::ServiceExt;

const EMAIL: TaskDescriptor = TaskDescriptor::new("email");
const REPORT: TaskDescriptor = TaskDescriptor::new("report");

/// A read-only dashboard (no token) of `store`, as `docket web` without `--token-file` serves it.
pub(super) fn open_dashboard(store: std::sync::Arc<dyn docket_core::Store>) -> super::AppState {
    super::Dashboard::new(
        store,
        Access::Token {
            token: None,
            hosts: super::hosts::Hosts::new("127.0.0.1:80".parse().unwrap(), &[]),
            secure_cookies: false,
        },
    )
    .build()
    .unwrap()
}

/// `GET uri` through the router: its status and body.
pub(super) async fn get(web: &super::AppState, uri: &str) -> (StatusCode, String) {
    let req = Request::get(uri)
        .header(header::HOST, "localhost")
        .body(Body::empty())
        .unwrap();
    let res = router(web.clone()).oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A fresh space of `harness`, migrated with `config`, and its store.
fn migrated(harness: &dyn Harness, config: StoreConfig) -> (Box<dyn Space>, Arc<dyn Store>) {
    let space = harness.space();
    space.migrate(&config, None);
    let store = space.store(config, None);
    (space, store)
}

/// Enqueues three items `1`, `2`, `3` of type `label` (one assignment each).
pub(super) fn three_items(queue: &WorkQueue) {
    queue
        .enqueue(&Batch {
            task_type: "label".into(),
            max_assignments: 1,
            records: ["1", "2", "3"].map(Record::new).to_vec(),
        })
        .unwrap();
}

/// Another program's write, behind docket's back: `UPDATE table SET <set> WHERE task_name =
/// task [AND task_instance = instance]` through the space's own connection, one row changed.
fn write_behind(
    space: &dyn Space,
    table: &TableName,
    set: impl FnOnce(&mut SqlWriter<'_>),
    task: &str,
    instance: Option<&str>,
) {
    let foreign = space.foreign();
    let mut w = SqlWriter::new(foreign.dialect());
    w.push("UPDATE ").table(table).push(" SET ");
    set(&mut w);
    w.push(" WHERE task_name = ").bind(task);
    if let Some(instance) = instance {
        w.push(" AND task_instance = ").bind(instance);
    }
    assert_eq!(foreign.execute(&w.finish()).unwrap(), 1);
}

/// Finding 3: `email/bad` gets the backend's undecodable time (PostgreSQL `-infinity`, on
/// SQLite an out-of-range number, through the compat suite's `Space::poison`). Without the
/// fix `/`, `/api/overview`, the task pages, `/queue`, `/api/search`, `/metrics` and
/// `/api/lag` answered 503 (checked on both backends before the fix).
async fn pages_survive_a_row_docket_cannot_decode(harness: &dyn Harness) {
    let (space, store) = migrated(harness, StoreConfig::with_priority(true));
    let client = SchedulerClient::new(store.clone()).unwrap();
    let now = Utc::now();
    for id in ["good", "bad"] {
        client
            .schedule(EMAIL.instance(id).scheduled_to(now - Duration::minutes(1)))
            .unwrap();
    }
    client
        .schedule(
            REPORT
                .instance("r")
                .scheduled_to(now - Duration::minutes(2)),
        )
        .unwrap();
    let bad = ExecutionKey::new("email", "bad");
    let (statements, column) = space.poison(&TableName::default(), &bad);
    space
        .foreign()
        .transaction(&mut |s| {
            for st in &statements {
                s.execute(st)?;
            }
            Ok(())
        })
        .unwrap();
    let web = open_dashboard(store);
    let get = |uri: &'static str| get(&web, uri);
    for uri in [
        "/",
        "/tasks/email",
        "/tasks/report",
        "/queue",
        "/search?instance=good",
        "/api/search?instance=bad",
        "/api/lag",
    ] {
        let (status, body) = get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert!(
            body.contains(column),
            "{uri} names the column that cannot be read: {body}"
        );
    }
    let (status, body) = get("/api/overview").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let overview: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        overview["unreadable"][0]["what"], "per-task counts",
        "{overview}"
    );
    let email = overview["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "email")
        .expect("the task is still listed");
    assert_eq!(
        email["unreadable"], true,
        "its counts are missing, not zero"
    );
    assert_eq!(
        overview["lag"]["unreadable"][0]["what"], "email",
        "{overview}"
    );
    let report_lag = overview["lag"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "report")
        .expect("the other task's lag is read");
    assert_eq!(report_lag["due"]["count"], 1);
    let (status, metrics) = get("/metrics").await;
    assert_eq!(status, StatusCode::OK, "{metrics}");
    assert!(
        metrics.contains("docket_lag_unreadable{task=\"email\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("docket_executions{task=\"report\",state=\"due\"} 1"),
        "{metrics}"
    );
    // The bad row's own page says what is wrong with it; the good one is served.
    let (status, body) = get("/executions/email/bad").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        body.contains("cannot read") && body.contains(column),
        "{body}"
    );
    assert_eq!(get("/executions/email/good").await.0, StatusCode::OK);
}

async_tests! {
    pages_survive_a_row_docket_cannot_decode_on_postgres =>
        pages_survive_a_row_docket_cannot_decode(&Postgres);
    pages_survive_a_row_docket_cannot_decode_on_sqlite =>
        pages_survive_a_row_docket_cannot_decode(&Sqlite);
}

/// Finding 3, the work queue: `custom_attributes = '{not json'` made `/queue/{type}` answer
/// 500 for every item of the type. Now that item shows its attributes as unreadable and the
/// others are listed. Without the fix the type's page answered 500 (the test fails there).
#[tokio::test]
async fn an_item_with_unreadable_attributes_is_shown_as_such() {
    let (space, store) = migrated(&Sqlite, StoreConfig::default());
    three_items(&WorkQueue::new(store.clone(), QueueConfig::default()).unwrap());
    let attributes = |w: &mut SqlWriter<'_>| {
        w.push("custom_attributes = ").bind("{not json");
    };
    write_behind(
        &*space,
        &TableName::default(),
        attributes,
        "label",
        Some("2"),
    );
    let web = open_dashboard(store);
    for uri in ["/queue/label", "/api/queue/label", "/queue/label/items/2"] {
        let (status, body) = get(&web, uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        if uri == "/queue/label" {
            // The type's table does not show attributes: every item is listed.
            for item in ["1", "2", "3"] {
                assert!(
                    body.contains(&format!("/queue/label/items/{item}\"")),
                    "{body}"
                );
            }
        } else {
            assert!(body.contains("unreadable: "), "{uri}: {body}");
        }
    }
}

/// Finding 3, the work queue: a NULL `record_date` (written by SQL) made every page listing
/// the item's type answer 500 (503 before `StoreError::Decode` had its own answer): the
/// item list is one statement whose rows were all decoded or none. Now that item is listed in
/// its place as unreadable, naming the column, and the other items are listed; a worker's
/// `list_for`, which decodes every item it orders, is named as unreadable where it is shown.
/// Without the fix `/queue/label`, `/api/queue/label`, the worker page and `/api/search`
/// answered 500 (checked on both backends by reverting the fix).
async fn an_item_with_a_null_record_date_is_shown_as_such(harness: &dyn Harness) {
    let (space, store) = migrated(harness, StoreConfig::default());
    let queue = WorkQueue::new(store.clone(), QueueConfig::default()).unwrap();
    three_items(&queue);
    // w1 holds item 1: the type's page then shows what w1 would get next.
    let taken = queue.next_for("w1", "label").unwrap().expect("an item");
    assert_eq!(taken.key.task_instance, "1");
    let null_date = |w: &mut SqlWriter<'_>| {
        w.push("record_date = NULL");
    };
    write_behind(
        &*space,
        &TableName::default(),
        null_date,
        "label",
        Some("2"),
    );
    let web = open_dashboard(store);
    let get = |uri: &'static str| get(&web, uri);
    // The type's page: every item listed, the bad one as unreadable in its place.
    let (status, body) = get("/queue/label").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = |needle: &str| {
        body.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} in {body}"))
    };
    let (one, two, three) = (
        at("/queue/label/items/1\""),
        at("/queue/label/items/2\""),
        at("/queue/label/items/3\""),
    );
    let why = at("unreadable: record_date");
    assert!(one < two && two < why && why < three, "{body}");
    // The API: the same, in order, with the reason on the bad item only.
    let (status, body) = get("/api/queue/label").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let page: serde_json::Value = serde_json::from_str(&body).unwrap();
    let items = page["items"].as_array().unwrap();
    let ids: Vec<&str> = items.iter().map(|i| i["item"].as_str().unwrap()).collect();
    assert_eq!(ids, ["1", "2", "3"], "{page}");
    assert!(
        items[1]["unreadable"]
            .as_str()
            .is_some_and(|why| why.starts_with("record_date")),
        "{page}"
    );
    for i in [&items[0], &items[2]] {
        assert!(i["unreadable"].is_null(), "{page}");
        assert!(i["record"].is_object(), "{page}");
    }
    // The worker page: w1's held item is shown; what it would get next is named unreadable
    // when the bad item is among the items it orders.
    for uri in [
        "/queue/label/workers/w1",
        "/api/queue/label/workers/w1",
        "/api/search?instance=2",
        "/search?instance=2",
    ] {
        let (status, body) = get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert!(body.contains("record_date"), "{uri}: {body}");
    }
    let (_, body) = get("/api/queue/label/workers/w1").await;
    let worker: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(worker["held"][0]["item"], "1", "{worker}");
    // The bad item's own page says what is wrong with it; the others are served.
    let (status, body) = get("/queue/label/items/2").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        body.contains("cannot read") && body.contains("record_date"),
        "{body}"
    );
    assert_eq!(get("/queue/label/items/3").await.0, StatusCode::OK);
}

async_tests! {
    an_item_with_a_null_record_date_is_shown_as_such_on_sqlite =>
        an_item_with_a_null_record_date_is_shown_as_such(&Sqlite);
    an_item_with_a_null_record_date_is_shown_as_such_on_postgres =>
        an_item_with_a_null_record_date_is_shown_as_such(&Postgres);
}

/// Finding 3, the paused tasks: a bad `paused_at` (PostgreSQL `'infinity'`, on SQLite a number
/// of microseconds past any date) hid every paused task from `/metrics` and the overview (the
/// paused list was read all or none) and made every execution page answer 500. Now that row
/// is listed as the paused task it is, its time shown as unreadable, and the others as usual.
/// Without the fix `/metrics` had no `docket_task_paused` sample (and `docket_paused_tasks 0`)
/// and `/executions/email/e1` answered 500 (checked on both backends).
async fn a_bad_paused_at_is_shown_as_such(harness: &dyn Harness, bad: &str) {
    let (space, store) = migrated(harness, StoreConfig::default());
    let client = SchedulerClient::new(store.clone()).unwrap();
    let now = Utc::now();
    for task in [EMAIL, REPORT] {
        client
            .schedule(task.instance("e1").scheduled_to(now - Duration::minutes(1)))
            .unwrap();
        assert!(client.pause(task.name(), Some("test")).unwrap());
    }
    let paused_at = |w: &mut SqlWriter<'_>| {
        w.push("paused_at = ").push(bad);
    };
    write_behind(
        &*space,
        &TableName::default().paused(),
        paused_at,
        "email",
        None,
    );
    let web = open_dashboard(store);
    let get = |uri: &'static str| get(&web, uri);
    let (status, metrics) = get("/metrics").await;
    assert_eq!(status, StatusCode::OK, "{metrics}");
    for sample in [
        "docket_task_paused{task=\"email\"} 1",
        "docket_task_paused{task=\"report\"} 1",
        "\ndocket_paused_tasks 2\n",
        "docket_lag_unreadable{task=\"paused tasks\"} 1",
    ] {
        assert!(metrics.contains(sample), "{sample:?} in {metrics}");
    }
    let (status, body) = get("/api/overview").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let overview: serde_json::Value = serde_json::from_str(&body).unwrap();
    let lag = &overview["lag"];
    assert_eq!(lag["paused_total"], 2, "{lag}");
    let paused = lag["paused"].as_array().unwrap();
    assert_eq!(paused[0]["task"], "email", "{lag}");
    assert!(paused[0]["paused_at"].is_null(), "{lag}");
    assert!(
        paused[0]["unreadable"]
            .as_str()
            .is_some_and(|why| why.starts_with("paused_at")),
        "{lag}"
    );
    assert_eq!(paused[1]["task"], "report", "{lag}");
    assert!(paused[1]["paused_at"].is_string(), "{lag}");
    assert!(paused[1]["unreadable"].is_null(), "{lag}");
    for name in ["email", "report"] {
        let task = lag["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == name)
            .expect("listed");
        assert_eq!(task["paused"], true, "{name}: {lag}");
    }
    let (status, body) = get("/").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains("paused_at"),
        "the notice names the column: {body}"
    );
    let (status, body) = get("/tasks/email").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("at a time docket cannot read"), "{body}");
    // The execution pages still say the task is paused.
    for uri in ["/executions/email/e1", "/api/executions/email/e1"] {
        let (status, body) = get(uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert!(body.contains("paused"), "{uri}: {body}");
    }
}

async_tests! {
    a_bad_paused_at_is_shown_as_such_on_sqlite =>
        a_bad_paused_at_is_shown_as_such(&Sqlite, "9223372036854775807");
    a_bad_paused_at_is_shown_as_such_on_postgres =>
        a_bad_paused_at_is_shown_as_such(&Postgres, "'infinity'");
}
