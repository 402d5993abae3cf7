//! Limits (`0009_limits`) on the dashboard: the overview's limits card, `/api/lag` and
//! `/api/overview`, and the `docket_limit_*` gauges of `/metrics`, each with what the limit
//! holds now, on SQLite, PostgreSQL and MariaDB; and a table without the migration.

use super::{router, Access, Web};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use chrono::Duration;
use docket_compat_tests::backends::{Mysql, Postgres, Sqlite};
use docket_compat_tests::Harness;
use docket_core::store::DueParams;
use docket_core::{Clock, ManualClock, SchedulerClient, StoreConfig, TaskDescriptor, TaskLimit};
use std::sync::Arc;
use tower::ServiceExt;

const EMAIL: TaskDescriptor = TaskDescriptor::new("email");
const REPORT: TaskDescriptor = TaskDescriptor::new("report");

async fn get(web: &Arc<Web>, uri: &str) -> (StatusCode, String) {
    let req = Request::get(uri)
        .header(header::HOST, "localhost")
        .body(Body::empty())
        .expect("request");
    let res = router(web.clone()).oneshot(req).await.expect("response");
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
        .await
        .expect("body");
    (status, String::from_utf8(bytes.to_vec()).expect("UTF-8"))
}

fn dashboard(store: Arc<dyn docket_core::Store>, clock: &ManualClock) -> Arc<Web> {
    super::Dashboard::new(
        store,
        Access::Token {
            token: None,
            hosts: super::hosts::Hosts::new("127.0.0.1:80".parse().expect("addr"), &[]),
            secure_cookies: false,
        },
    )
    .clock(Arc::new(clock.clone()))
    .build()
    .expect("dashboard")
}

/// The value of the one sample `name{task="email"}` (or without labels), if any.
fn gauge(scrape: &prometheus_parse::Scrape, name: &str, task: Option<&str>) -> Option<f64> {
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && s.labels.get("task") == task)
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) => v,
            ref other => panic!("{name} is not a gauge: {other:?}"),
        })
        .collect();
    assert!(found.len() <= 1, "{name} twice");
    found.first().copied()
}

/// email limited to 2 running, 10 starts a minute and 1 running per key; five due (keys k1,
/// k1, k2, none, none in due order); one limited claim takes `a` (k1), passes `b` (k1 full),
/// takes `c` (k2) and stops at 2: 2 running under 2 keys, 2 starts, 3 held back. report has
/// no limit.
async fn limits_shown(harness: &dyn Harness) {
    let space = harness.space();
    let config = StoreConfig::default();
    space.migrate(&config, None);
    let store = space.store(config, None);
    let clock = ManualClock::new(chrono::Utc::now() - Duration::days(1));
    let client =
        SchedulerClient::with_clock(store.clone(), Arc::new(clock.clone())).expect("client");
    client
        .set_limit(
            &TaskLimit::new("email")
                .max_running(2)
                .rate_limit(10, std::time::Duration::from_secs(60))
                .max_running_per_key(1),
        )
        .expect("set limit");
    let now = clock.now();
    for (i, (id, key)) in [
        ("a", Some("k1")),
        ("b", Some("k1")),
        ("c", Some("k2")),
        ("d", None),
        ("e", None),
    ]
    .into_iter()
    .enumerate()
    {
        let mut instance = EMAIL
            .instance(id)
            .scheduled_to(now - Duration::minutes(10 - i as i64));
        if let Some(key) = key {
            instance = instance.limit_key(key);
        }
        client.schedule(instance).expect("schedule");
    }
    client
        .schedule(
            REPORT
                .instance("r")
                .scheduled_to(now - Duration::minutes(1)),
        )
        .expect("schedule");
    let names = ["email".to_owned()];
    let claimed = store
        .execution_claim_limited(&DueParams::new(now, &names, 10), "test")
        .expect("claim");
    let ids: Vec<&str> = claimed.iter().map(|e| e.task_instance.as_str()).collect();
    assert_eq!(ids, ["a", "c"]);
    let web = dashboard(store, &clock);

    let (status, text) = get(&web, "/metrics").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("parses");
    let email = Some("email");
    for (name, value) in [
        ("docket_limit_max_running", Some(2.0)),
        ("docket_limit_rate", Some(10.0)),
        ("docket_limit_rate_window_seconds", Some(60.0)),
        ("docket_limit_max_running_per_key", Some(1.0)),
        ("docket_limit_rate_per_key", None),
        ("docket_limit_rate_per_key_window_seconds", None),
        ("docket_limit_running", Some(2.0)),
        ("docket_limit_running_keys", Some(2.0)),
        ("docket_limit_started_in_window", Some(2.0)),
        ("docket_limit_due_waiting", Some(3.0)),
        ("docket_limit_due_waiting_capped", Some(0.0)),
    ] {
        assert_eq!(gauge(&scrape, name, email), value, "{name}\n{text}");
        assert_eq!(
            gauge(&scrape, name, Some("report")),
            None,
            "{name}: not limited"
        );
        assert!(scrape.docs.contains_key(name), "{name} has HELP");
    }
    assert_eq!(gauge(&scrape, "docket_limited_tasks", None), Some(1.0));

    let (status, body) = get(&web, "/api/lag").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let lag: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let limit = &lag["lag"]["limits"][0];
    assert_eq!(lag["lag"]["limits_total"], 1);
    assert_eq!(limit["task"], "email");
    assert_eq!(limit["max_running"], 2);
    assert_eq!(limit["rate"]["text"], "10/1m");
    assert_eq!(limit["rate"]["per_ms"], 60_000);
    assert_eq!(limit["max_running_per_key"], 1);
    assert!(limit["rate_per_key"].is_null());
    assert_eq!(limit["running"], 2);
    assert_eq!(limit["running_keys"], 2);
    assert_eq!(limit["started_in_window"], 2);
    assert_eq!(limit["due_waiting"]["count"], 3);
    let (_, body) = get(&web, "/api/overview").await;
    let overview: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(overview["lag"]["limits"], lag["lag"]["limits"]);

    let (status, page) = get(&web, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("id=\"limits\""), "{page}");
    assert!(page.contains("10/1m"), "the rate on the page");
    assert!(
        page.contains("class=\"badge limited\""),
        "email's lag row links its limit"
    );
    let card = &page[page.find("id=\"limits\"").expect("card")..];
    let row = &card[card.find("<tbody>").expect("rows")..card.find("</tbody>").expect("end")];
    let cells: Vec<&str> = row
        .split("<td class=\"num\">")
        .skip(1)
        .map(|c| c.split("</td>").next().unwrap_or_default())
        .collect();
    assert_eq!(
        cells,
        [
            "2",
            "<span class=\"mono\">10/1m</span>",
            "1",
            "<span class=\"muted\">—</span>",
            "2",
            "2",
            "2",
            "3"
        ],
        "{row}"
    );
    assert!(!row.contains("report"), "report has no limit: {row}");

    // The task's page and its API: its limit, and none for report.
    let (status, page) = get(&web, "/tasks/email").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("id=\"limits\""), "{page}");
    assert!(page.contains("class=\"badge limited\""), "{page}");
    let (_, body) = get(&web, "/api/tasks/email").await;
    let task: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(task["limit"], lag["lag"]["limits"][0], "{body}");
    let (_, page) = get(&web, "/tasks/report").await;
    assert!(!page.contains("id=\"limits\""), "{page}");
    let (_, body) = get(&web, "/api/tasks/report").await;
    let task: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert!(task["limit"].is_null(), "{body}");

    // Cleared: gone from every view.
    assert!(client.clear_limit("email").expect("clear"));
    let (_, text) = get(&web, "/metrics").await;
    assert!(!text.contains("docket_limit_running{"), "{text}");
    assert!(text.contains("\ndocket_limited_tasks 0\n"), "{text}");
    let (_, page) = get(&web, "/").await;
    assert!(!page.contains("id=\"limits\""));
}

#[tokio::test]
async fn limits_on_sqlite() {
    limits_shown(&Sqlite).await;
}

#[tokio::test]
async fn limits_on_postgres() {
    limits_shown(&Postgres).await;
}

#[tokio::test]
async fn limits_on_mariadb() {
    limits_shown(&Mysql).await;
}

/// A table without `0009_limits`: no limits anywhere, and every view still answers.
#[tokio::test]
async fn a_table_without_0009_limits_shows_none() {
    let space = Sqlite.space();
    let config = StoreConfig::default();
    space.migrate(&config, Some("0008_paused_tasks"));
    let store = space.store(config, None);
    let clock = ManualClock::new(chrono::Utc::now());
    let client =
        SchedulerClient::with_clock(store.clone(), Arc::new(clock.clone())).expect("client");
    client.schedule(EMAIL.instance("a")).expect("schedule");
    let web = dashboard(store, &clock);
    let (status, text) = get(&web, "/metrics").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("\ndocket_limited_tasks 0\n"), "{text}");
    let (status, body) = get(&web, "/api/lag").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let lag: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(lag["lag"]["limits"], serde_json::json!([]));
    let (status, page) = get(&web, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!page.contains("id=\"limits\""));
}
