//! `/metrics` scraped and parsed with a Prometheus text-format parser (`prometheus-parse`), on
//! SQLite and PostgreSQL (each test its own file or schema, through the compat suite's
//! harnesses), its gauges checked against known data and against SQL run on the table; and
//! the same lag on the overview page and in `/api/lag`.

use super::{router, Access, Web};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use chrono::{DateTime, Duration, Utc};
use docket_compat_tests::backends::{Postgres, Sqlite};
use docket_compat_tests::{Foreign, Harness};
use docket_core::dialect::SqlWriter;
use docket_core::{
    Clock, ExecutionKey, ManualClock, QueueConfig, SchedulerClient, StoreConfig, TableName,
    TaskDescriptor, WorkQueue,
};
use std::collections::HashMap;
use std::sync::Arc;
use tower::ServiceExt;

const EMAIL: TaskDescriptor = TaskDescriptor::new("email");
const REPORT: TaskDescriptor = TaskDescriptor::new("report");

/// Seeds the table at `t0` + 10 min (`now`): `label` items 1..3 arrived at `t0`, item 1 taken
/// (max 1 assignment); email `a` (p10, due 8 min ago), `b` (p90, 5 min ago), `c` (p50, in
/// 1 h), `d` (picked, heartbeat 2 h ago: dead), `e` (picked now: running); report `r` (in 1 day).
fn seed(store: &Arc<dyn docket_core::Store>, clock: &ManualClock) -> DateTime<Utc> {
    let queue = WorkQueue::with_clock(
        store.clone(),
        Arc::new(clock.clone()),
        QueueConfig::default(),
    )
    .unwrap();
    super::tests_bad_rows::three_items(&queue);
    clock.advance(std::time::Duration::from_secs(600));
    assert!(queue.next_for("w1", "label").unwrap().is_some());
    let now = clock.now();
    let client = SchedulerClient::with_clock(store.clone(), Arc::new(clock.clone())).unwrap();
    for (id, p, at) in [
        ("a", 10, now - Duration::minutes(8)),
        ("b", 90, now - Duration::minutes(5)),
        ("c", 50, now + Duration::hours(1)),
        ("d", 50, now - Duration::minutes(20)),
        ("e", 50, now - Duration::minutes(1)),
    ] {
        client
            .schedule(EMAIL.instance(id).priority(p).scheduled_to(at))
            .unwrap();
    }
    client
        .schedule(REPORT.instance("r").scheduled_to(now + Duration::days(1)))
        .unwrap();
    for (id, beat) in [("d", now - Duration::hours(2)), ("e", now)] {
        super::tests::claim(&**store, &ExecutionKey::new("email", id), beat);
    }
    now
}

/// `SELECT MIN(execution_time)` and `COUNT(*)` of `task` where `cond` holds, written in the
/// space's dialect with binds, run as another program would.
fn sql_oldest_and_count(
    foreign: &dyn Foreign,
    task: &str,
    items: bool,
    now: DateTime<Utc>,
) -> (Option<DateTime<Utc>>, i64) {
    let mut w = SqlWriter::new(foreign.dialect());
    w.push("SELECT MIN(execution_time) AS oldest, COUNT(*) AS n FROM ")
        .table(&TableName::default())
        .push(" WHERE task_name = ")
        .bind(task)
        .push(" AND execution_time <= ")
        .bind(now);
    if items {
        w.push(" AND max_assignments IS NOT NULL AND held_by IS NULL AND assignments < max_assignments");
    } else {
        w.push(" AND picked = ").bind(false);
    }
    let mut rows = foreign.query(&w.finish()).unwrap();
    let mut row = rows.remove(0);
    (row.opt_timestamp("oldest").unwrap(), row.i64("n").unwrap())
}

struct Scraped {
    samples: Vec<prometheus_parse::Sample>,
}

impl Scraped {
    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let found: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.metric == name)
            .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .filter(|s| s.labels.len() == labels.len())
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{name} is not a gauge: {other:?}"),
            })
            .collect();
        assert!(found.len() <= 1, "{name} {labels:?} twice");
        found.first().copied()
    }

    fn must(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.gauge(name, labels)
            .unwrap_or_else(|| panic!("no sample {name} {labels:?}"))
    }
}

const TOKEN: &str = "a-token-for-metrics-tests";

/// `GET uri` as a scraper configured with the token (`authorization: credentials`).
async fn get(web: &Arc<Web>, uri: &str) -> (StatusCode, String, String) {
    get_with(web, uri, Some(TOKEN)).await
}

async fn get_with(web: &Arc<Web>, uri: &str, token: Option<&str>) -> (StatusCode, String, String) {
    let mut req = Request::get(uri).header(header::HOST, "localhost");
    if let Some(t) = token {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let req = req.body(Body::empty()).unwrap();
    let res = router(web.clone()).oneshot(req).await.unwrap();
    let status = res.status();
    let ctype = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
        .await
        .unwrap();
    (status, ctype, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn metrics_match_sql(harness: &dyn Harness) {
    let space = harness.space();
    let config = StoreConfig::with_priority(true);
    space.migrate(&config, None);
    let store = space.store(config, None);
    let clock = ManualClock::new(Utc::now() - Duration::days(1));
    let now = seed(&store, &clock);
    let web = super::Dashboard::new(
        store.clone(),
        Access::Token {
            token: Some(TOKEN.into()),
            hosts: super::hosts::Hosts::new("127.0.0.1:80".parse().unwrap(), &[]),
            secure_cookies: false,
        },
    )
    .clock(Arc::new(clock.clone()))
    .build()
    .unwrap();

    // With a token set, /metrics is a read that needs it, like every GET of the API.
    let (status, _, _) = get_with(&web, "/metrics", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, ctype, text) = get(&web, "/metrics").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(ctype, super::metrics::CONTENT_TYPE);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).unwrap();
    assert!(scrape.docs.contains_key("docket_oldest_due_age_seconds"));
    let m = Scraped {
        samples: scrape.samples,
    };

    // Known data.
    let email = [("task", "email")];
    assert_eq!(m.must("docket_oldest_due_age_seconds", &email), 480.0);
    let by = |p: &'static str| [("task", "email"), ("priority", p)];
    assert_eq!(
        m.must("docket_oldest_due_age_seconds_by_priority", &by("90")),
        300.0
    );
    assert_eq!(
        m.must("docket_oldest_due_age_seconds_by_priority", &by("10")),
        480.0
    );
    assert_eq!(
        m.gauge("docket_oldest_due_age_seconds_by_priority", &by("50")),
        None,
        "no due row at 50"
    );
    for (state, n) in [
        ("due", 2.0),
        ("scheduled", 1.0),
        ("running", 1.0),
        ("dead", 1.0),
    ] {
        let labels = [("task", "email"), ("state", state)];
        assert_eq!(m.must("docket_executions", &labels), n, "email {state}");
    }
    assert_eq!(
        m.must("docket_oldest_due_age_seconds", &[("task", "report")]),
        0.0,
        "nothing due"
    );
    assert_eq!(
        m.must(
            "docket_executions",
            &[("task", "report"), ("state", "scheduled")]
        ),
        1.0
    );
    let label = [("task_type", "label")];
    assert_eq!(
        m.must("docket_queue_oldest_open_age_seconds", &label),
        600.0
    );
    assert_eq!(
        m.must(
            "docket_queue_items",
            &[("task_type", "label"), ("state", "open")]
        ),
        2.0
    );
    assert_eq!(
        m.gauge("docket_oldest_due_age_seconds", &[("task", "label")]),
        None
    );
    assert_eq!(
        m.must("docket_count_cap", &[]),
        super::model::LAG_CAP as f64
    );
    assert_eq!(m.must("docket_names_capped", &[]), 0.0);

    // The same against SQL on the table.
    let foreign = space.foreign();
    for (task, items) in [("email", false), ("report", false), ("label", true)] {
        let (oldest, n) = sql_oldest_and_count(foreign.as_ref(), task, items, now);
        let age = oldest.map_or(0.0, |t| (now - t).num_seconds() as f64);
        let (age_gauge, count_gauge) = if items {
            (
                m.must(
                    "docket_queue_oldest_open_age_seconds",
                    &[("task_type", task)],
                ),
                m.must(
                    "docket_queue_items",
                    &[("task_type", task), ("state", "open")],
                ),
            )
        } else {
            (
                m.must("docket_oldest_due_age_seconds", &[("task", task)]),
                m.must("docket_executions", &[("task", task), ("state", "due")]),
            )
        };
        assert_eq!(age_gauge, age, "{task}: oldest age against SQL");
        assert_eq!(count_gauge, n as f64, "{task}: count against SQL");
    }

    // The JSON API and the overview page show the same.
    let (status, _, body) = get(&web, "/api/lag").await;
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let tasks: HashMap<String, &serde_json::Value> = v["lag"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["task"].as_str().unwrap().to_owned(), t))
        .collect();
    assert_eq!(tasks["email"]["oldest_due_age_secs"], 480);
    assert_eq!(tasks["email"]["due"]["count"], 2);
    assert_eq!(tasks["email"]["levels"][0]["priority"], 90);
    assert_eq!(v["lag"]["queue_types"][0]["oldest_open_age_secs"], 600);
    let (_, _, overview) = get(&web, "/api/overview").await;
    let o: serde_json::Value = serde_json::from_str(&overview).unwrap();
    assert_eq!(o["lag"]["tasks"], v["lag"]["tasks"]);
    let (_, _, page) = get(&web, "/").await;
    assert!(page.contains("id=\"lag\""), "{page}");
    assert!(page.contains("8 min"), "email's oldest due age on the page");
    assert!(page.contains("p90"));
}

async_tests! {
    metrics_are_parsed_and_match_sql_on_sqlite => metrics_match_sql(&Sqlite);
    metrics_are_parsed_and_match_sql_on_postgres => metrics_match_sql(&Postgres);
}
