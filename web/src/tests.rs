//! Handler tests: the router driven with `tower::ServiceExt::oneshot` against a SQLite store in
//! a temporary directory; every write is checked in the database afterwards.

use super::{router, AppState};
use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use chrono::{Duration, Utc};
use docket_core::queue::{AssignmentStatus, Batch, Record};
use docket_core::store::{Changes, Guard, NewExecution, PickChange};
use docket_core::{
    ExecutionKey, QueueConfig, SchedulerClient, Store, StoreConfig, SystemClock, TaskDescriptor,
    WorkQueue,
};
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

const EMAIL: TaskDescriptor = TaskDescriptor::new("email");
const REPORT: TaskDescriptor = TaskDescriptor::new("report");
const TOKEN: &str = "s3cret-token-for-tests";
const XSS: &str = "<script>alert(1)</script>";

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    web: AppState,
}

impl Fixture {
    /// A migrated SQLite table with priority on, seeded with:
    /// email: `high` (due, 90), `low` (due, 10), `<script>...` (due, 10), `later` (in 1 h);
    /// report: `failing` (due, 2 failures), `running` (picked, heartbeat 1 min ago), `dead`
    /// (picked, heartbeat 2 h ago); work queue `label`: rec1..rec3, 2 assignments each.
    fn new(token: Option<&str>) -> Self {
        Self::with_reads(token, true)
    }

    /// As [`Fixture::new`]; `open_reads`: whether reads need no token (see
    /// `Dashboard::open_reads`; these tests read as visitors unless they test that).
    fn with_reads(token: Option<&str>, open_reads: bool) -> Self {
        Self::with_limits(token, open_reads, super::Concurrency::default())
    }

    /// As [`Fixture::with_reads`], with other bounds of concurrent database work.
    fn with_limits(token: Option<&str>, open_reads: bool, concurrency: super::Concurrency) -> Self {
        let (dir, store) = seeded_store();
        let web = super::Dashboard::new(
            store.clone(),
            super::Access::Token {
                token: token.map(str::to_owned),
                hosts: super::hosts::Hosts::new(
                    "127.0.0.1:80".parse().unwrap(),
                    &["dash.example".to_owned()],
                ),
                secure_cookies: false,
            },
        )
        .clock(Arc::new(SystemClock))
        .open_reads(open_reads)
        .concurrency(concurrency)
        .build()
        .unwrap();
        Self {
            _dir: dir,
            store,
            web,
        }
    }

    fn queue(&self) -> WorkQueue {
        WorkQueue::new(self.store.clone(), QueueConfig::default()).unwrap()
    }

    fn version(&self, task: &str, instance: &str) -> i64 {
        self.store
            .execution_get(&ExecutionKey::new(task, instance))
            .unwrap()
            .unwrap()
            .version
    }

    async fn send(&self, req: Request<Body>) -> Reply {
        send(&router(self.web.clone()), req).await
    }

    async fn get(&self, uri: &str) -> Reply {
        self.get_signed_in(uri, None).await
    }

    /// `GET uri`, with the session cookie when given.
    async fn get_signed_in(&self, uri: &str, cookie: Option<&str>) -> Reply {
        let mut req = Request::get(uri).header(header::HOST, "localhost");
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, c);
        }
        self.send(req.body(Body::empty()).unwrap()).await
    }

    /// `POST uri` with the bearer token and a JSON `body`.
    async fn api(&self, uri: &str, body: &str) -> Reply {
        self.api_post(uri, Some(TOKEN), body).await
    }

    /// `POST uri` with the bearer token and `{"version":version}`, as a write by version sends.
    async fn api_version(&self, uri: &str, version: i64) -> Reply {
        self.api(uri, &format!(r#"{{"version":{version}}}"#)).await
    }

    async fn api_post(&self, uri: &str, token: Option<&str>, body: &str) -> Reply {
        let mut req = Request::post(uri)
            .header(header::HOST, "localhost")
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        self.send(req.body(Body::from(body.to_owned())).unwrap())
            .await
    }

    /// `POST uri` with the bearer token and no body.
    async fn api_post_empty(&self, uri: &str) -> Reply {
        let req = Request::post(uri)
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        self.send(req).await
    }

    async fn form_post(
        &self,
        uri: &str,
        cookie: Option<&str>,
        origin: Option<&str>,
        body: &str,
    ) -> Reply {
        let mut req = Request::post(uri)
            .header(header::HOST, "localhost")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, c);
        }
        if let Some(o) = origin {
            req = req.header(header::ORIGIN, o);
        }
        self.send(req.body(Body::from(body.to_owned())).unwrap())
            .await
    }

    /// Posts a signed-in form as the dashboard's own pages send it (same origin) and asserts
    /// the redirect a done write answers with.
    async fn form_redirects(&self, uri: &str, cookie: &str, body: &str) -> Reply {
        let r = self
            .form_post(uri, Some(cookie), Some("http://localhost"), body)
            .await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{uri}: {}", r.body);
        r
    }

    /// Each `(cookie, origin, body, status, says)` posted to `uri` as a form: answered with
    /// `status`, an HTML page that contains `says`.
    async fn forms_answer(&self, uri: &str, cases: Vec<Case<'_>>) {
        for (cookie, origin, body, status, says) in cases {
            let r = self.form_post(uri, cookie, origin, &body).await;
            assert_eq!(r.status, status, "{body}: {}", r.body);
            assert!(r.body.contains(says), "{says}: {}", r.body);
            assert!(r.body.contains("<!DOCTYPE html>"), "{}", r.body);
        }
    }

    /// Posts back a bulk cancel's confirmation page's `rows`, signed in, and asserts it was
    /// done.
    async fn bulk_cancel_confirmed(&self, cookie: &str, rows: &str) -> Reply {
        let csrf = self.csrf_of(cookie).await;
        let form = format!("csrf={csrf}&rows={}", super::links::seg(rows));
        let done = self
            .form_post("/tasks/report/bulk/cancel", Some(cookie), None, &form)
            .await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.body);
        done
    }

    /// `req` (a method and a URI) with no body and `Authorization: authorization`.
    async fn send_authorized(
        &self,
        req: axum::http::request::Builder,
        authorization: &str,
    ) -> Reply {
        let req = req
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, authorization)
            .body(Body::empty())
            .unwrap();
        self.send(req).await
    }

    /// The sign-in form's CSRF value and the `Cookie` header value that pairs with it.
    async fn login_form(&self) -> (String, String) {
        let r = self.get("/login").await;
        let set = r.headers[header::SET_COOKIE].to_str().unwrap();
        let cookie = set.split(';').next().unwrap().to_owned();
        (hidden_csrf(&r.body).expect("a CSRF field"), cookie)
    }

    /// The session's CSRF value, as its pages carry it.
    async fn csrf_of(&self, cookie: &str) -> String {
        let page = self.get_signed_in("/login", Some(cookie)).await;
        // The sign-out form in the header carries the session's value.
        let at = page.body.find("action=\"/logout\"").expect("signed in");
        hidden_csrf(&page.body[at..]).expect("a CSRF field")
    }

    /// Posts the sign-in form with the right token and `next` (form-encoded).
    async fn sign_in_to(&self, next: &str) -> Reply {
        let (csrf, cookie) = self.login_form().await;
        self.form_post(
            "/login",
            Some(&cookie),
            Some("http://localhost"),
            &format!("csrf={csrf}&token={TOKEN}&next={next}"),
        )
        .await
    }

    /// Signs in through the form; returns the `Cookie` header value.
    async fn sign_in(&self) -> String {
        let r = self.sign_in_to("%2Fqueue").await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        assert_eq!(r.headers[header::LOCATION], "/queue");
        let cookie = r.headers[header::SET_COOKIE].to_str().unwrap();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
        assert!(cookie.contains("Path=/;") && !cookie.contains("Secure"));
        assert!(
            !cookie.contains(TOKEN),
            "the cookie must not hold the token"
        );
        cookie.split(';').next().unwrap().to_owned()
    }
}

/// A migrated SQLite table with priority on, seeded as [`Fixture::new`] says.
pub(super) fn seeded_store() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("web.db").display());
    let store = docket_sqlite::connect(&url, StoreConfig::with_priority(true)).unwrap();
    docket_sqlite::migrate(&store, None).unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let now = Utc::now();
    let client = SchedulerClient::new(store.clone()).unwrap();
    for (id, p, at) in [
        ("high", 90, now - Duration::minutes(5)),
        ("low", 10, now - Duration::minutes(4)),
        (XSS, 10, now - Duration::minutes(3)),
        ("later", 50, now + Duration::hours(1)),
    ] {
        client
            .schedule(EMAIL.instance(id).priority(p).scheduled_to(at))
            .unwrap();
    }
    for id in ["failing", "running", "dead"] {
        client
            .schedule(
                REPORT
                    .instance(id)
                    .scheduled_to(now - Duration::minutes(10)),
            )
            .unwrap();
    }
    let failing = Changes {
        last_failure: Some(now - Duration::minutes(1)),
        consecutive_failures: Some(2),
        ..Changes::default()
    };
    assert!(store
        .execution_update(
            &ExecutionKey::new("report", "failing"),
            Guard::Any,
            &failing
        )
        .unwrap());
    for (id, beat) in [
        ("running", now - Duration::minutes(1)),
        ("dead", now - Duration::hours(2)),
    ] {
        claim(&*store, &ExecutionKey::new("report", id), beat);
    }
    WorkQueue::new(store.clone(), QueueConfig::default())
        .unwrap()
        .enqueue(&Batch {
            task_type: "label".into(),
            max_assignments: 2,
            records: ["rec1", "rec2", "rec3"].map(Record::new).to_vec(),
        })
        .unwrap();
    (dir, store)
}

/// The value of the first hidden `csrf` field in `html`.
/// Marks `key` picked by `node-a`, its heartbeat at `beat`.
pub(super) fn claim(
    store: &dyn docket_core::Store,
    key: &ExecutionKey,
    beat: chrono::DateTime<chrono::Utc>,
) {
    let claim = Changes {
        pick: Some(PickChange::Claim {
            by: "node-a".into(),
            at: beat,
        }),
        ..Changes::default()
    };
    assert!(store.execution_update(key, Guard::Any, &claim).unwrap());
}

/// The value of the first field named `name` in `html`, its HTML escapes undone.
pub(super) fn hidden_value(html: &str, name: &str) -> Option<String> {
    let marker = format!("name=\"{name}\" value=\"");
    let at = html.find(&marker)? + marker.len();
    let len = html[at..].find('"')?;
    Some(
        html[at..at + len]
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&#39;", "'")
            .replace("&amp;", "&"),
    )
}

pub(super) fn hidden_csrf(html: &str) -> Option<String> {
    let marker = "name=\"csrf\" value=\"";
    let at = html.find(marker)? + marker.len();
    let len = html[at..].find('"')?;
    Some(html[at..at + len].to_owned())
}

/// Cookie, Origin, form body, expected status, expected words.
type Case<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    String,
    StatusCode,
    &'a str,
);

/// A router's answer, its body read whole.
pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: String,
}

/// Sends `req` to `app` and reads the whole answer.
pub(super) async fn send(app: &axum::Router, req: Request<Body>) -> Reply {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
        .await
        .unwrap();
    Reply {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// Asserts a refusal: `status`, and a JSON `error` that contains `says`.
    fn assert_error(&self, status: StatusCode, says: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        let error = self.json()["error"].as_str().map(str::to_owned);
        assert!(
            error.as_deref().is_some_and(|e| e.contains(says)),
            "{says:?} in {}",
            self.body
        );
    }
}

/// The text `field` of every element of the JSON array `list`.
fn strs<'a>(list: &'a Value, field: &str) -> Vec<&'a str> {
    let list = list
        .as_array()
        .unwrap_or_else(|| panic!("an array: {list}"));
    list.iter()
        .map(|e| {
            e[field]
                .as_str()
                .unwrap_or_else(|| panic!("{field} in {e}"))
        })
        .collect()
}

fn task_row<'a>(overview: &'a Value, task: &str) -> &'a Value {
    overview["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == task)
        .unwrap_or_else(|| panic!("no task {task} in {overview}"))
}

#[tokio::test]
async fn overview_counts_every_state_and_draws_the_backlog_by_priority() {
    let f = Fixture::new(None);
    let o = f.get("/api/overview").await.json();
    let email = &task_row(&o, "email")["counts"];
    assert_eq!(
        (
            email["due"].as_i64(),
            email["scheduled"].as_i64(),
            email["running"].as_i64()
        ),
        (Some(3), Some(1), Some(0))
    );
    let report = &task_row(&o, "report")["counts"];
    assert_eq!(report["due"], 1);
    assert_eq!(report["running"], 1);
    assert_eq!(report["dead"], 1);
    assert_eq!(report["failing"], 1);
    assert_eq!(report["scheduled"], 0);
    // Work-queue task types are not scheduler tasks.
    assert_eq!(o["tasks"].as_array().unwrap().len(), 2);
    assert_eq!(o["queue_types"], serde_json::json!(["label"]));
    // Due backlog: email high (90), email low + <script> (10), report failing (default 50).
    let levels: Vec<(Value, i64)> = o["backlog"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["priority"].clone(), l["due"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        levels,
        vec![(90.into(), 1), (50.into(), 1), (10.into(), 2)],
        "{o}"
    );
    assert_eq!(o["running"][0]["instance"], "running");
    assert_eq!(o["running"][0]["picked_by"], "node-a");
    assert!(o["running"][0]["heartbeat_age_secs"].as_i64().unwrap() >= 60);
    assert_eq!(o["dead"][0]["instance"], "dead");
    assert_eq!(o["dead"][0]["state"], "dead");
    assert_eq!(o["failing"][0]["instance"], "failing");
    assert!(o["failing"][0]["last_failure"].is_string());
    assert_eq!(o["meta"]["dead_after_secs"], 30 * 60);
    assert_eq!(o["meta"]["read_only"], true);

    let page = f.get("/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("<svg class=\"chart\""));
    assert!(page.body.contains("priority 90"));
    assert!(page.body.contains("node-a"));
    assert!(page.body.contains("Read-only"));
    // No action form in a read-only site.
    assert!(!page.body.contains("method=\"post\" action=\"/executions"));
}

#[tokio::test]
async fn user_values_are_html_escaped() {
    let f = Fixture::new(None);
    let page = f.get("/tasks/email").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains(XSS), "raw instance id in the page");
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // The link to it is percent-encoded and resolves.
    assert!(page
        .body
        .contains("/executions/email/%3Cscript%3Ealert%281%29%3C%2Fscript%3E"));
    let exec = f
        .get("/executions/email/%3Cscript%3Ealert%281%29%3C%2Fscript%3E")
        .await;
    assert_eq!(exec.status, StatusCode::OK);
    assert!(!exec.body.contains(XSS));
    let search = f
        .get("/search?instance=%3Cscript%3Ealert%281%29%3C%2Fscript%3E")
        .await;
    assert_eq!(search.status, StatusCode::OK);
    assert!(!search.body.contains(XSS));
    assert!(search.body.contains("1 found"));
}

#[tokio::test]
async fn unknown_things_are_clear_404s_in_html_and_json() {
    let f = Fixture::new(Some(TOKEN));
    for (uri, says) in [
        ("/tasks/nope", "no scheduler task \"nope\""),
        ("/tasks/label", "no scheduler task \"label\""),
        ("/executions/email/nope", "no execution email/nope"),
        ("/executions/label/rec1", "no execution label/rec1"),
        ("/queue/nope", "no work-queue task type \"nope\""),
        ("/queue/email", "no work-queue task type \"email\""),
        ("/queue/label/items/nope", "no work-queue item label/nope"),
        (
            "/queue/email/workers/w1",
            "no work-queue task type \"email\"",
        ),
        ("/queue/nope/workers/w1", "no work-queue task type \"nope\""),
        ("/queue/email/items/high", "no work-queue item email/high"),
        ("/no/such/page", "there is no such page"),
    ] {
        let page = f.get(uri).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{uri}");
        assert!(
            page.body.contains("<h1>Not found</h1>"),
            "{uri}: {}",
            page.body
        );
        assert!(
            page.body.contains(&says.replace('"', "&quot;")),
            "{uri}: {}",
            page.body
        );
    }
    let api = f.get("/api/tasks/nope").await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);
    assert_eq!(api.json()["status"], 404);
    let r = f
        .api("/api/executions/email/nope/run-now", r#"{"version":1}"#)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = f.api("/api/queue/email/workers/w1/next", "").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let v = f.version("email", "high");
    let r = f
        .api_version("/api/queue/email/workers/w1/items/high/submit", v)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = f
        .api("/api/executions/email/high/explode", r#"{"version":1}"#)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
}

#[tokio::test]
async fn read_only_site_refuses_every_write() {
    let f = Fixture::new(None);
    let v = f.version("email", "high");
    let before = f
        .store
        .execution_get(&ExecutionKey::new("email", "high"))
        .unwrap();
    let r = f.api_version("/api/executions/email/high/cancel", v).await;
    r.assert_error(StatusCode::FORBIDDEN, "read-only");
    let r = f
        .form_post(
            "/executions/email/high/cancel",
            None,
            None,
            &format!("csrf=x&version={v}"),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = f
        .form_post("/login", None, None, &format!("csrf=x&token={TOKEN}"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = f.api("/api/queue/label/workers/w1/next", "").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        f.store
            .execution_get(&ExecutionKey::new("email", "high"))
            .unwrap(),
        before
    );
    assert!(f
        .queue()
        .assignments(&ExecutionKey::new("label", "rec1"))
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn api_actions_need_the_token_and_the_current_version() {
    let f = Fixture::new(Some(TOKEN));
    let key = ExecutionKey::new("email", "later");
    let before = f.store.execution_get(&key).unwrap().unwrap();
    let v = before.version;
    let body = format!(r#"{{"version":{v}}}"#);
    let url = "/api/executions/email/later/run-now";
    for token in [None, Some("wrong")] {
        let r = f.api_post(url, token, &body).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{token:?}: {}", r.body);
    }
    let r = f.api(url, r#"{"version":"x"}"#).await;
    r.assert_error(StatusCode::BAD_REQUEST, "malformed JSON");
    let r = f.api(url, &format!(r#"{{"version":{}}}"#, v + 1)).await;
    r.assert_error(StatusCode::CONFLICT, "changed since version");
    let r = f
        .api(
            "/api/executions/email/later/reschedule",
            &format!(r#"{{"version":{v},"at":"tomorrow"}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        f.store.execution_get(&key).unwrap().unwrap(),
        before,
        "nothing changed"
    );

    // Run now: due at (about) now, version bumped.
    let r = f.api(url, &body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["done"], "run now");
    let after = f.store.execution_get(&key).unwrap().unwrap();
    assert!(
        after.execution_time <= Utc::now()
            && after.execution_time > Utc::now() - Duration::minutes(1)
    );
    assert!(after.version > v);
    assert_eq!(r.json()["row"]["version"], after.version);
    // The same (now stale) request again: refused, nothing changed.
    let r = f.api(url, &body).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(f.store.execution_get(&key).unwrap().unwrap(), after);

    // Reschedule to a given time (datetime-local form, read as UTC).
    let r = f
        .api(
            "/api/executions/email/later/reschedule",
            &format!(
                r#"{{"version":{},"at":"2031-05-06T07:08:09"}}"#,
                after.version
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let moved = f.store.execution_get(&key).unwrap().unwrap();
    assert_eq!(
        moved.execution_time.to_rfc3339(),
        "2031-05-06T07:08:09+00:00"
    );

    // A running execution cannot be changed.
    let rv = f.version("report", "running");
    let r = f
        .api_version("/api/executions/report/running/cancel", rv)
        .await;
    r.assert_error(StatusCode::CONFLICT, "running");
    assert!(f
        .store
        .execution_get(&ExecutionKey::new("report", "running"))
        .unwrap()
        .is_some());

    // Cancel removes it.
    let r = f
        .api(
            "/api/executions/email/later/cancel",
            &format!(r#"{{"version":{}}}"#, moved.version),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["row"], Value::Null);
    assert!(f.store.execution_get(&key).unwrap().is_none());
}

#[tokio::test]
async fn forms_need_sign_in_csrf_and_same_origin() {
    let f = Fixture::new(Some(TOKEN));
    let key = ExecutionKey::new("email", "low");
    let before = f.store.execution_get(&key).unwrap();
    let v = f.version("email", "low");
    let url = "/executions/email/low/reschedule";

    // Sign-in: wrong CSRF, no CSRF cookie, wrong token, cross-site origin.
    let (login_csrf, login_cookie) = f.login_form().await;
    let lc = Some(login_cookie.as_str());
    let right = format!("csrf={login_csrf}&token={TOKEN}");
    let cross_site = "cross-site request refused";
    f.forms_answer(
        "/login",
        vec![
            (
                lc,
                None,
                format!("csrf=bad&token={TOKEN}"),
                StatusCode::FORBIDDEN,
                "",
            ),
            (None, None, right.clone(), StatusCode::FORBIDDEN, ""),
            (
                lc,
                None,
                format!("csrf={login_csrf}&token=nope"),
                StatusCode::UNAUTHORIZED,
                "wrong token",
            ),
            (
                lc,
                Some("http://evil.example"),
                right.clone(),
                StatusCode::FORBIDDEN,
                cross_site,
            ),
            // What a sandboxed frame or a page with `no-referrer` elsewhere sends: refused too.
            (lc, Some("null"), right, StatusCode::FORBIDDEN, cross_site),
        ],
    )
    .await;
    let cookie = f.sign_in().await;
    let csrf = f.csrf_of(&cookie).await;
    let good = format!("csrf={csrf}&version={v}&at=2030-01-02T03%3A04");

    // Not signed in; a forged cookie; cross-site; no CSRF; malformed; stale.
    let cases: Vec<Case<'_>> = vec![
        (
            None,
            None,
            good.clone(),
            StatusCode::UNAUTHORIZED,
            "sign in",
        ),
        (
            Some("docket_session=guess"),
            None,
            good.clone(),
            StatusCode::UNAUTHORIZED,
            "sign in",
        ),
        (
            Some(&cookie),
            Some("http://evil.example"),
            good.clone(),
            StatusCode::FORBIDDEN,
            "cross-site",
        ),
        (
            Some(&cookie),
            None,
            format!("csrf=other&version={v}&at=2030-01-02T03%3A04"),
            StatusCode::FORBIDDEN,
            "CSRF",
        ),
        (
            Some(&cookie),
            None,
            format!("csrf={csrf}&at=2030-01-02T03%3A04"),
            StatusCode::BAD_REQUEST,
            "malformed form",
        ),
        (
            Some(&cookie),
            None,
            format!("csrf={csrf}&version={}&at=2030-01-02T03%3A04", v - 1),
            StatusCode::CONFLICT,
            "changed since version",
        ),
    ];
    f.forms_answer(url, cases).await;
    assert_eq!(
        f.store.execution_get(&key).unwrap(),
        before,
        "nothing changed"
    );

    // The signed-in page shows the forms with the CSRF value and the version.
    let page = f
        .get_signed_in("/executions/email/low", Some(&cookie))
        .await;
    assert!(page
        .body
        .contains(&format!("name=\"csrf\" value=\"{csrf}\"")));
    assert!(page
        .body
        .contains(&format!("name=\"version\" value=\"{v}\"")));

    let r = f.form_redirects(url, &cookie, &good).await;
    assert_eq!(
        r.headers[header::LOCATION],
        "/executions/email/low?done=rescheduled"
    );
    let after = f.store.execution_get(&key).unwrap().unwrap();
    assert_eq!(
        after.execution_time.to_rfc3339(),
        "2030-01-02T03:04:00+00:00"
    );
}

#[tokio::test]
async fn queue_pages_show_record_keys_assignments_and_a_workers_list() {
    let f = Fixture::new(Some(TOKEN));
    let q = f.get("/api/queue").await.json();
    assert_eq!(q["types"][0]["task_type"], "label");
    assert_eq!(q["types"][0]["items"], 3);

    f.queue().next_for("w1", "label").unwrap().unwrap();
    let t = f.get("/api/queue/label").await.json();
    let items = t["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["item"], "rec1");
    assert_eq!(items[0]["record"]["hitOrder"], 1);
    assert!(items[0]["record"]["hitOrderDate"].as_str().unwrap().len() == 23);
    assert_eq!(items[0]["held_by"], "w1");
    assert_eq!(items[0]["assignment_list"][0]["status"], "ACCEPTED");
    assert!(items[0]["assignment_list"][0]["deadline"].is_string());

    // The seed's "Worker 1 sees ...": every worker with an assignment here, with their list.
    assert_eq!(
        t["worker_lists"],
        serde_json::json!([{"worker": "w1", "items": ["rec2", "rec3"]}])
    );
    let page = f.get("/queue/label").await;
    assert!(page.body.contains("&quot;hitOrder&quot;:2"));
    assert!(page.body.contains("ACCEPTED"));
    assert_eq!(
        f.get("/api/queue/label?limit=0").await.status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        f.get("/api/queue/label?limit=x").await.status,
        StatusCode::BAD_REQUEST
    );

    // What w2 would see: rec2, rec3 (rec1 is held by w1).
    let w = f.get("/api/queue/label/workers/w2").await.json();
    let list = strs(&w["list"], "item");
    assert_eq!(list, ["rec2", "rec3"]);
    let w1 = f.get("/api/queue/label/workers/w1").await.json();
    assert_eq!(w1["held"][0]["item"], "rec1");
    let lookup = f.get("/queue/label/workers?worker=w%202").await;
    assert_eq!(lookup.status, StatusCode::SEE_OTHER);
    assert_eq!(
        lookup.headers[header::LOCATION],
        "/queue/label/workers/w%202"
    );
    assert_eq!(
        f.get("/queue/label/workers?worker=%20").await.status,
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn two_workers_take_submit_skip_and_give_back_through_the_api() {
    let f = Fixture::new(Some(TOKEN));
    let take = |w: &'static str| {
        let f = &f;
        async move {
            let r = f
                .api(&format!("/api/queue/label/workers/{w}/next"), "")
                .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            r.json()["row"].clone()
        }
    };
    let a = take("w1").await;
    let b = take("w2").await;
    assert_eq!(
        (a["item"].as_str(), b["item"].as_str()),
        (Some("rec1"), Some("rec2"))
    );

    // w2 cannot submit w1's item; a stale version is refused.
    let v1 = a["version"].as_i64().unwrap();
    let r = f
        .api_version("/api/queue/label/workers/w2/items/rec1/submit", v1)
        .await;
    r.assert_error(StatusCode::CONFLICT, "not held by worker \"w2\"");
    let r = f
        .api(
            "/api/queue/label/workers/w1/items/rec1/submit",
            &format!(r#"{{"version":{}}}"#, v1 - 1),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let rec1 = ExecutionKey::new("label", "rec1");
    assert_eq!(
        f.queue().assignments(&rec1).unwrap()[0].status,
        AssignmentStatus::Accepted
    );

    let r = f
        .api_version("/api/queue/label/workers/w1/items/rec1/submit", v1)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json()["row"]["held_by"], Value::Null);
    assert_eq!(
        f.queue().assignments(&rec1).unwrap()[0].status,
        AssignmentStatus::Submitted
    );

    // w2 gives rec2 back for 60 s: RETURNED with a deadline about a minute away.
    let v2 = b["version"].as_i64().unwrap();
    let r = f
        .api(
            "/api/queue/label/workers/w2/items/rec2/give-back",
            &format!(r#"{{"version":{v2},"hide_for_secs":60}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let a2 = &f
        .queue()
        .assignments(&ExecutionKey::new("label", "rec2"))
        .unwrap()[0];
    assert_eq!(a2.status, AssignmentStatus::Returned);
    let left = a2.deadline - Utc::now();
    assert!(
        left > Duration::seconds(50) && left <= Duration::seconds(60),
        "{left}"
    );

    // w2 next gets rec1 (submitted once by w1, max 2), then skips it.
    let c = take("w2").await;
    assert_eq!(c["item"], "rec1");
    let r = f
        .api(
            "/api/queue/label/workers/w2/items/rec1/skip",
            &format!(r#"{{"version":{}}}"#, c["version"]),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let statuses: Vec<_> = f
        .queue()
        .assignments(&rec1)
        .unwrap()
        .into_iter()
        .map(|a| (a.worker, a.status))
        .collect();
    assert!(
        statuses.contains(&("w2".to_owned(), AssignmentStatus::Skipped)),
        "{statuses:?}"
    );
    let r = f
        .api("/api/queue/label/workers/w2/items/rec1/nope", "{}")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = f
        .api("/api/queue/label/workers/w2/items/rec1/skip", "{}")
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_worker_page_takes_and_submits_through_forms() {
    let f = Fixture::new(Some(TOKEN));
    let cookie = f.sign_in().await;
    let csrf = f.csrf_of(&cookie).await;
    let r = f
        .form_redirects(
            "/queue/label/workers/w1/next",
            &cookie,
            &format!("csrf={csrf}"),
        )
        .await;
    assert_eq!(
        r.headers[header::LOCATION],
        "/queue/label/workers/w1?done=taken&taken=rec1"
    );
    let page = f
        .get_signed_in(
            "/queue/label/workers/w1?done=taken&taken=rec1",
            Some(&cookie),
        )
        .await;
    assert!(page.body.contains("Done: taken."));
    assert!(page.body.contains("data-item=\"rec1\""));
    assert!(page
        .body
        .contains("action=\"/queue/label/workers/w1/items/rec1/submit\""));
    let v = f.version("label", "rec1");
    let submitted = format!("csrf={csrf}&version={v}");
    let submit = || {
        f.form_post(
            "/queue/label/workers/w1/items/rec1/submit",
            Some(&cookie),
            None,
            &submitted,
        )
    };
    let r = submit().await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let a = f
        .queue()
        .assignments(&ExecutionKey::new("label", "rec1"))
        .unwrap();
    assert_eq!(
        (a[0].worker.as_str(), a[0].status),
        ("w1", AssignmentStatus::Submitted)
    );
    // Submitting again from the same (stale) page: a 409 page, nothing changed.
    let r = submit().await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(r.body.contains("nothing was changed"));
    assert_eq!(
        f.queue()
            .assignments(&ExecutionKey::new("label", "rec1"))
            .unwrap(),
        a
    );
}

#[tokio::test]
async fn search_finds_instances_across_tasks_and_items() {
    let f = Fixture::new(None);
    let r = f.get("/api/search?instance=rec2").await.json();
    assert_eq!(r["items"][0]["item"], "rec2");
    assert!(r["executions"].as_array().unwrap().is_empty());
    let r = f.get("/api/search?task=report&instance=dead").await.json();
    assert_eq!(r["executions"][0]["state"], "dead");
    let r = f.get("/api/search?task=email&instance=dead").await.json();
    assert!(r["executions"].as_array().unwrap().is_empty());
    assert_eq!(f.get("/api/search").await.status, StatusCode::BAD_REQUEST);
    let to_task = f.get("/search?task=email").await;
    assert_eq!(to_task.status, StatusCode::SEE_OTHER);
    assert_eq!(to_task.headers[header::LOCATION], "/tasks/email");
    let to_type = f.get("/search?task=label").await;
    assert_eq!(to_type.headers[header::LOCATION], "/queue/label");
    assert_eq!(
        f.get("/search?task=nope").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn due_counting_stops_at_the_cap_and_says_so() {
    const BULK: TaskDescriptor = TaskDescriptor::new("bulk");
    let f = Fixture::new(None);
    let now = Utc::now();
    let n = super::model::DUE_CAP + 1;
    let client = SchedulerClient::new(f.store.clone()).unwrap();
    client
        .schedule_batch((0..n).map(|i| {
            BULK.instance(format!("b{i}"))
                .priority(100)
                .scheduled_to(now - Duration::seconds(i + 1))
        }))
        .unwrap();
    let o = f.get("/api/overview").await.json();
    assert_eq!(o["backlog"]["capped"], true);
    let levels = o["backlog"]["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 1, "lower levels are not drawn: {levels:?}");
    assert_eq!(levels[0]["due"], super::model::DUE_CAP);
    assert_eq!(levels[0]["capped"], true);
    let bulk = &task_row(&o, "bulk")["counts"];
    assert_eq!(bulk["due"], super::model::DUE_CAP);
    assert_eq!(bulk["due_capped"], true);
    assert_eq!(bulk["scheduled"], Value::Null);
    let email = &task_row(&o, "email")["counts"];
    assert_eq!(
        (email["due"].as_i64(), email["due_capped"].as_bool()),
        (Some(0), Some(true))
    );
    let page = f.get("/").await.body;
    assert!(page.contains("≥ 1000") && page.contains("Counting stops at 1000"));
    // One task's page counts that task alone.
    let t = f.get("/api/tasks/email").await.json();
    assert_eq!(t["row"]["counts"]["due"], 3);
    assert_eq!(t["row"]["counts"]["due_capped"], false);
}

/// `next` is followed only when it is a local path; a bad one sends to `/` and never makes
/// signing in fail (a tab made `/\t/evil.example` a redirect to another site; CR/LF or DEL
/// made the `Location` header invalid).
#[tokio::test]
async fn sign_in_redirects_only_to_local_paths() {
    let f = Fixture::new(Some(TOKEN));
    for (next, to) in [
        ("%2F%09%2Fevil.example%2Fx", "/"),
        ("%2F%2Fevil.example", "/"),
        ("%2F%5Cevil.example", "/"),
        ("%2Fqueue%0D%0ASet-Cookie%3A%20x%3Dy", "/"),
        ("%2Fqueue%7F", "/"),
        ("https%3A%2F%2Fevil.example%2F", "/"),
        ("%2Fqueue%2Flabel%3Flimit%3D5", "/queue/label?limit=5"),
    ] {
        let r = f.sign_in_to(next).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{next}: {}", r.body);
        assert_eq!(r.headers[header::LOCATION], to, "{next}");
        assert!(r.headers.contains_key(header::SET_COOKIE), "{next}");
    }
    // The sign-in form carries only a local `next`.
    let page = f.get("/login?next=%2F%09%2Fevil.example%2Fx").await;
    assert!(
        page.body.contains("name=\"next\" value=\"/\""),
        "{}",
        page.body
    );
}

/// Every answer (pages, API, errors, the stylesheet) forbids framing and sniffing and leaks
/// no referrer to other sites; pages and API answers are not cached.
#[tokio::test]
async fn every_response_carries_the_security_headers() {
    let f = Fixture::new(Some(TOKEN));
    for uri in [
        "/",
        "/queue/label",
        "/api/overview",
        "/no/such/page",
        "/api/tasks/nope",
        "/login",
        "/style.css",
    ] {
        let r = f.get(uri).await;
        let h = |name: header::HeaderName| {
            r.headers
                .get(&name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_else(|| panic!("{uri}: no {name}"))
                .to_owned()
        };
        assert_eq!(h(header::X_FRAME_OPTIONS), "DENY", "{uri}");
        let csp = h(header::CONTENT_SECURITY_POLICY);
        assert!(csp.contains("frame-ancestors 'none'"), "{uri}: {csp}");
        assert!(csp.contains("default-src 'self'"), "{uri}: {csp}");
        assert_eq!(h(header::X_CONTENT_TYPE_OPTIONS), "nosniff", "{uri}");
        // Not `no-referrer`: browsers would then send `Origin: null` with every form POST,
        // which the same-origin check refuses (nobody could sign in; browser test).
        assert_eq!(h(header::REFERRER_POLICY), "same-origin", "{uri}");
        let cache = h(header::CACHE_CONTROL);
        if uri == "/style.css" {
            assert!(cache.starts_with("max-age"), "{cache}");
        } else {
            assert_eq!(cache, "no-store", "{uri}");
        }
    }
    // Signed in, and a redirect after an action.
    let cookie = f.sign_in().await;
    let r = f.get_signed_in("/queue", Some(&cookie)).await;
    assert_eq!(r.headers[header::CACHE_CONTROL], "no-store");
    assert_eq!(r.headers[header::X_FRAME_OPTIONS], "DENY");
}

/// A `Host` outside the allowlist (a rebound DNS name) is refused before any handler runs,
/// in HTML and in JSON; the listen address's local names and `--public-host` are answered.
#[tokio::test]
async fn requests_for_other_host_names_are_refused() {
    let f = Fixture::new(Some(TOKEN));
    let with_host = |uri: &str, host: Option<&str>| {
        let mut req = Request::get(uri);
        if let Some(h) = host {
            req = req.header(header::HOST, h);
        }
        req.body(Body::empty()).unwrap()
    };
    for host in [Some("evil.example"), Some("localhost:8080"), None] {
        let r = f.send(with_host("/", host)).await;
        assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST, "{host:?}");
        assert!(
            r.body.contains("does not answer to the host name"),
            "{}",
            r.body
        );
        assert_eq!(r.headers[header::X_FRAME_OPTIONS], "DENY");
        let r = f.send(with_host("/api/overview", host)).await;
        assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST, "{host:?}");
        assert_eq!(r.json()["status"], 421);
    }
    // A write with a rebound name is refused too (nothing changed).
    let v = f.version("email", "later");
    let req = Request::post("/api/executions/email/later/cancel")
        .header(header::HOST, "evil.example")
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(format!(r#"{{"version":{v}}}"#)))
        .unwrap();
    assert_eq!(f.send(req).await.status, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(f.version("email", "later"), v);
    for host in [
        "localhost",
        "127.0.0.1:80",
        "LocalHost:80",
        "dash.example",
        "dash.example:80",
    ] {
        assert_eq!(
            f.send(with_host("/", Some(host))).await.status,
            StatusCode::OK,
            "{host}"
        );
    }
}

/// Each sign-in gets its own random session and CSRF value; signing out ends the session on
/// the server, so the old cookie (even replayed) no longer works; visitors who are not signed
/// in are shown no CSRF value that a write would accept.
#[tokio::test]
async fn sessions_are_per_sign_in_and_sign_out_revokes_them() {
    let f = Fixture::new(Some(TOKEN));
    let (a, b) = (f.sign_in().await, f.sign_in().await);
    assert_ne!(a, b, "every sign-in gets its own session id");
    let (csrf_a, csrf_b) = (f.csrf_of(&a).await, f.csrf_of(&b).await);
    assert_ne!(csrf_a, csrf_b, "every session has its own CSRF value");
    let run_now = |cookie: &str, csrf: &str| {
        let v = f.version("email", "later");
        let (cookie, body) = (cookie.to_owned(), format!("csrf={csrf}&version={v}"));
        let f = &f;
        async move {
            f.form_post(
                "/executions/email/later/run-now",
                Some(&cookie),
                None,
                &body,
            )
            .await
        }
    };
    // Session b's CSRF value does not pass with session a's cookie.
    assert_eq!(run_now(&a, &csrf_b).await.status, StatusCode::FORBIDDEN);

    // Anonymous pages carry no CSRF value; the sign-in form's does not pass for a write.
    for uri in ["/", "/executions/email/later", "/queue/label/workers/w1"] {
        assert_eq!(hidden_csrf(&f.get(uri).await.body), None, "{uri}");
    }
    let (login_csrf, _) = f.login_form().await;
    assert_eq!(run_now(&a, &login_csrf).await.status, StatusCode::FORBIDDEN);

    // Sign out a: its cookie no longer signs in, b's still does.
    let r = f
        .form_redirects("/logout", &a, &format!("csrf={csrf_a}"))
        .await;
    let cleared = r.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(cleared.starts_with("docket_session=;") && cleared.contains("Max-Age=0"));
    let r = run_now(&a, &csrf_a).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    let page = f.get_signed_in("/executions/email/later", Some(&a)).await;
    assert!(
        page.body.contains("Sign in with the token"),
        "{}",
        page.body
    );
    assert_eq!(hidden_csrf(&page.body), None);
    let v = f.version("email", "later");
    let r = run_now(&b, &csrf_b).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert!(f.version("email", "later") > v);
}

/// Wrong tokens are counted per client address: past 10 in the window, that address gets
/// `429` with `Retry-After` (even with the right token), through the API and the sign-in
/// form; another address is not blocked.
#[tokio::test]
async fn wrong_tokens_are_rate_limited_per_client() {
    use axum::extract::ConnectInfo;
    let f = Fixture::new(Some(TOKEN));
    let from = |ip: [u8; 4], token: &str| {
        let mut req = Request::post("/api/queue/label/workers/w1/next")
            .header(header::HOST, "localhost")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        req.extensions_mut()
            .insert(ConnectInfo(std::net::SocketAddr::from((ip, 40000))));
        f.send(req)
    };
    let attacker = [10, 0, 0, 66];
    for n in 0..10 {
        let r = from(attacker, &format!("guess-{n}")).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{n}");
    }
    let r = from(attacker, TOKEN).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    let retry: u64 = r.headers[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry), "{retry}");
    assert_eq!(r.json()["status"], 429);
    // Nothing was taken by the blocked request; another address is served.
    assert!(f
        .queue()
        .assignments(&ExecutionKey::new("label", "rec1"))
        .unwrap()
        .is_empty());
    assert_eq!(from([10, 0, 0, 7], TOKEN).await.status, StatusCode::OK);

    // Finding 7: wrong tokens from 100 other addresses (one each) lock nobody else out (the
    // old total limit of 100 refused everyone for 5 minutes).
    for n in 0..100u8 {
        let r = from([10, 1, 0, n], "wrong-guess").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{n}");
    }
    assert_eq!(from([10, 0, 0, 8], TOKEN).await.status, StatusCode::OK);

    // The sign-in form from the blocked address: 429 page with Retry-After.
    let (csrf, cookie) = f.login_form().await;
    let mut req = Request::post("/login")
        .header(header::HOST, "localhost")
        .header(header::COOKIE, cookie)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(format!("csrf={csrf}&token={TOKEN}")))
        .unwrap();
    req.extensions_mut()
        .insert(ConnectInfo(std::net::SocketAddr::from((attacker, 40001))));
    let r = f.send(req).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert!(r.headers.contains_key(header::RETRY_AFTER));
    assert!(r.body.contains("too many wrong tokens"));
    assert!(!r.headers.contains_key(header::SET_COOKIE), "not signed in");
}

/// A request slower than the request timeout is answered `503` (with the security headers);
/// the real router carries the 30 s limit.
#[tokio::test]
async fn slow_requests_time_out() {
    use axum::routing::get;
    let slow = axum::Router::new()
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                "late"
            }),
        )
        .layer(axum::middleware::from_fn_with_state(
            std::time::Duration::from_millis(50),
            super::serve::request_timeout,
        ));
    let started = std::time::Instant::now();
    let res = slow
        .oneshot(Request::get("/slow").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(
        super::serve::REQUEST_TIMEOUT,
        std::time::Duration::from_secs(30)
    );
}

/// Over a real socket: a client that sends half its headers, or keeps a connection idle after
/// a request, is disconnected after the header read timeout; peers get their address passed on.
#[tokio::test]
async fn slow_and_idle_connections_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let f = Fixture::new(Some(TOKEN));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let limit = std::time::Duration::from_millis(300);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(super::serve::serve(
        listener,
        router(f.web.clone()),
        limit,
        async {
            let _ = stopped.await;
        },
    ));
    /// Sends `request` on a new connection and reads until the server closes it (panics if it
    /// stays open for 3 s): what came back, and how long the connection was open.
    async fn until_closed(
        addr: std::net::SocketAddr,
        request: &[u8],
    ) -> (String, std::time::Duration) {
        let started = std::time::Instant::now();
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(request).await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
        loop {
            match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => {
                    return (
                        String::from_utf8_lossy(&got).into_owned(),
                        started.elapsed(),
                    )
                }
                Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
                Err(_) => panic!("connection still open after 3 s"),
            }
        }
    }
    // Half a request: closed without an answer.
    let (got, open) = until_closed(addr, b"GET / HTTP/1.1\r\nHost: localhost\r\n").await;
    assert!(open >= limit, "{open:?}");
    assert!(!got.contains("200 OK"), "{got}");
    // A whole request on a kept-alive connection: answered, then closed once idle.
    let whole = b"GET /style.css HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let (got, open) = until_closed(addr, whole).await;
    assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
    assert!(open >= limit, "{open:?}");
    stop.send(()).unwrap();
    server.await.unwrap();
}

/// With 2,000 dead executions and 250 tasks, every list on the overview, a task's page, the
/// search and their JSON twins stays at its cap, says how many there are, and the pages stay
/// small (50,000 dead executions made `/` 11 MB).
#[tokio::test]
async fn lists_are_capped_whatever_the_table_size() {
    use super::model::{LIST_LIMIT, NAME_ROWS};
    const GHOST: TaskDescriptor = TaskDescriptor::new("ghost");
    let f = Fixture::new(None);
    let client = SchedulerClient::new(f.store.clone()).unwrap();
    let now = Utc::now();
    let long_ago = now - Duration::hours(3);
    client
        .schedule_batch(
            (0..2000).map(|i| GHOST.instance(format!("g{i:04}")).scheduled_to(long_ago)),
        )
        .unwrap();
    // Claimed 2 h ago, never heard of since: dead.
    let ghost = ["ghost".to_owned()];
    let claimed = f
        .store
        .execution_lock_and_fetch_due(
            &docket_core::store::DueParams {
                now: now - Duration::hours(2),
                task_names: &ghost,
                limit: 5000,
                claim_for: None,
                clock: None,
                include_limited: false,
            },
            "node-x",
        )
        .unwrap();
    assert_eq!(claimed.len(), 2000);
    client
        .schedule_batch((0..250).map(|i| {
            // A descriptor needs a 'static name: 250 small leaks in a test.
            let name: &'static str = Box::leak(format!("t{i:03}").into_boxed_str());
            TaskDescriptor::<()>::new(name)
                .instance("one")
                .scheduled_to(now + Duration::hours(1))
        }))
        .unwrap();

    let o = f.get("/api/overview").await;
    assert!(o.body.len() < 300_000, "{} bytes", o.body.len());
    let o = o.json();
    assert_eq!(o["dead"].as_array().unwrap().len(), LIST_LIMIT as usize);
    assert_eq!(o["dead_total"], 2001);
    assert_eq!(task_row(&o, "ghost")["counts"]["dead"], 2000);
    assert_eq!(o["totals"]["dead"], 2001);
    assert_eq!(o["tasks"].as_array().unwrap().len(), NAME_ROWS);
    assert_eq!(o["tasks_total"], 253);

    let page = f.get("/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.len() < 300_000, "{} bytes", page.body.len());
    assert!(page.body.matches("/executions/ghost/").count() <= LIST_LIMIT as usize);
    assert!(
        page.body.contains("Showing 100 of 2001 dead executions"),
        "dead note"
    );
    assert!(page.body.contains("Showing 200 of 253 tasks"), "tasks note");

    let t = f.get("/api/tasks/ghost").await.json();
    assert_eq!(t["picked"].as_array().unwrap().len(), LIST_LIMIT as usize);
    assert_eq!(t["dead_total"], 2000);
    let page = f.get("/tasks/ghost").await;
    assert!(page.body.len() < 300_000, "{} bytes", page.body.len());
    assert!(page.body.contains("of 2000 dead executions"));

    // Search looks an instance up in at most NAME_ROWS task names, and says so.
    let r = f.get("/api/search?instance=one").await.json();
    assert_eq!(r["names_searched"], NAME_ROWS);
    assert!(r["names_total"].as_u64().unwrap() > NAME_ROWS as u64);
    let r = f.get("/api/search?task=t249&instance=one").await.json();
    assert_eq!(r["executions"][0]["task"], "t249");
}

/// An assignment whose status this version does not know (written by hand) no longer takes
/// the item and task-type pages down (they answered 503), nor hides the item's other
/// assignments: that one row shows as `unknown: WEIRD`, the others as usual.
#[tokio::test]
async fn an_unknown_assignment_status_is_shown_not_fatal() {
    use diesel::{Connection, RunQueryDsl};
    let f = Fixture::new(None);
    let q = f.queue();
    let first = q.next_for("w1", "label").unwrap().unwrap();
    q.submit("w1", &first.key).unwrap();
    assert_eq!(q.next_for("w2", "label").unwrap().unwrap().key, first.key);
    let db = f._dir.path().join("web.db");
    let mut conn = diesel::SqliteConnection::establish(&db.display().to_string()).unwrap();
    let changed = diesel::sql_query(
        "UPDATE scheduled_tasks_assignments SET status = 'WEIRD' \
         WHERE task_instance = 'rec1' AND worker = 'w2'",
    )
    .execute(&mut conn)
    .unwrap();
    assert_eq!(changed, 1);
    for uri in ["/queue/label/items/rec1", "/queue/label"] {
        let page = f.get(uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}: {}", page.body);
        assert!(page.body.contains("unknown: WEIRD"), "{uri}");
        assert!(
            page.body.contains("SUBMITTED"),
            "{uri}: the other row still shows"
        );
    }
    let item = f.get("/api/queue/label/items/rec1").await;
    assert_eq!(item.status, StatusCode::OK, "{}", item.body);
    let list = item.json()["item"]["assignment_list"].clone();
    let statuses: Vec<(&str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["worker"].as_str().unwrap(), a["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses, [("w1", "SUBMITTED"), ("w2", "unknown: WEIRD")]);
    assert_eq!(item.json()["item"]["assignments_total"], 2);
    assert_eq!(f.get("/api/queue/label").await.status, StatusCode::OK);
}

/// Names with a right-to-left override or other invisible characters are shown with the
/// character as a visible escape, isolated in `<bdi>`: `abc\u{202E}exe.txt` cannot pass for
/// `abctxt.exe`.
#[tokio::test]
async fn bidi_and_control_characters_in_names_are_made_visible() {
    use diesel::{Connection, RunQueryDsl};
    const SPOOF: TaskDescriptor = TaskDescriptor::new("spoof");
    let f = Fixture::new(None);
    let client = SchedulerClient::new(f.store.clone()).unwrap();
    client.schedule(SPOOF.instance("x")).unwrap();
    // The scheduler refuses control characters in ids; a row written by SQL may have them.
    let db = f._dir.path().join("web.db");
    let mut conn = diesel::SqliteConnection::establish(&db.display().to_string()).unwrap();
    let changed = diesel::sql_query(
        "UPDATE scheduled_tasks SET task_instance = 'abc' || char(8238) || 'exe.txt' || \
         char(8203) || char(7) WHERE task_name = 'spoof'",
    )
    .execute(&mut conn)
    .unwrap();
    assert_eq!(changed, 1);
    for uri in [
        "/tasks/spoof",
        "/executions/spoof/abc%E2%80%AEexe.txt%E2%80%8B%07",
        "/search?instance=abc%E2%80%AEexe.txt%E2%80%8B%07",
    ] {
        let page = f.get(uri).await;
        assert_eq!(page.status, StatusCode::OK, "{uri}: {}", page.body);
        // Only a search box may hold the id as typed (so it can be searched again).
        let text = without_attribute_values(&page.body);
        assert!(!text.contains('\u{202E}'), "{uri}: raw U+202E");
        assert!(
            !text.contains('\u{200B}') && !text.contains('\u{7}'),
            "{uri}"
        );
        assert!(
            text.contains("<bdi>abc\\u{202E}exe.txt\\u{200B}\\u{0007}</bdi>"),
            "{uri}: {}",
            page.body
        );
    }
    // The link still carries the real id, percent-encoded.
    let page = f.get("/tasks/spoof").await;
    assert!(page
        .body
        .contains("/executions/spoof/abc%E2%80%AEexe.txt%E2%80%8B%07"));
}

/// `html` without the values of `value="..."` attributes.
fn without_attribute_values(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(at) = rest.find("value=\"") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 7..];
        rest = after.find('"').map_or("", |end| &after[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// An execution's page shows its data (pretty JSON, hostile strings escaped and bidi
/// characters made visible; binary as size and hex head) and what happens next in each state;
/// the API returns the same.
#[tokio::test]
async fn execution_detail_shows_data_and_what_happens_next() {
    let f = Fixture::new(None);
    let set_data = |task: &str, id: &str, data: &[u8]| {
        let changes = Changes {
            data: Some(Some(data.to_vec())),
            ..Changes::default()
        };
        assert!(f
            .store
            .execution_update(&ExecutionKey::new(task, id), Guard::Any, &changes)
            .unwrap());
    };
    let json = format!(r#"{{"to":"{XSS}","name":"abc\u202Edef","n":[1,2]}}"#);
    set_data("email", "later", json.as_bytes());
    let mut java = docket_core::records::JAVA_SERIALIZATION_MAGIC.to_vec();
    java.extend_from_slice(b"t\x00\x05hello");
    set_data("email", "high", &java);

    let page = f.get("/executions/email/later").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains(XSS), "escaped");
    assert!(page.body.contains("&lt;script&gt;"));
    assert!(
        page.body.contains("\\u{202E}"),
        "the override is shown, not applied"
    );
    assert!(!page.body.contains('\u{202E}'));
    assert!(
        page.body.contains("\n  &quot;n&quot;: ["),
        "pretty-printed: {}",
        page.body
    );
    assert!(
        page.body.contains("Due at "),
        "scheduled: what happens next"
    );
    let api: Value =
        serde_json::from_str(&f.get("/api/executions/email/later").await.body).unwrap();
    assert_eq!(api["data"]["kind"], "json");
    assert_eq!(api["data"]["bytes"], json.len());
    assert_eq!(api["next"]["state"], "scheduled");
    assert_eq!(
        api["version"],
        f.version("email", "later"),
        "the columns are still there"
    );

    let page = f.get("/executions/email/high").await;
    assert!(page.body.contains("ac ed 00 05 74 00 05 68"), "hex head");
    assert!(page.body.contains("Java-serialized"));
    assert!(page.body.contains("Due since "));
    let api: Value = serde_json::from_str(&f.get("/api/executions/email/high").await.body).unwrap();
    assert_eq!(api["data"]["kind"], "binary");
    assert_eq!(api["data"]["bytes"], java.len());

    let running = f.get("/executions/report/running").await;
    assert!(
        running.body.contains("Running on node-a"),
        "{}",
        running.body
    );
    let dead = f.get("/executions/report/dead").await;
    assert!(dead.body.contains("Dead since "));
    let api: Value =
        serde_json::from_str(&f.get("/api/executions/report/dead").await.body).unwrap();
    assert_eq!(api["next"]["state"], "dead");
    assert_eq!(api["next"]["on"], "node-a");
    assert!(api["next"]["at"].is_string());
    // Linked from the lists.
    let overview = f.get("/").await;
    assert!(overview.body.contains("href=\"/executions/report/dead\""));
}

/// Pausing and resuming a task: from the page (signed in, CSRF) and through the API (bearer),
/// each recorded in `<table>_paused`, shown on the task page, the overview's lag table, the
/// API and `/metrics`; read-only sites and visitors without the token cannot.
#[tokio::test]
async fn tasks_are_paused_and_resumed_from_the_page_and_the_api() {
    let f = Fixture::new(Some(TOKEN));
    let client = SchedulerClient::new(f.store.clone()).unwrap();
    let page = f.get("/tasks/email").await;
    assert!(page.body.contains("Running normally"));
    assert!(
        !page.body.contains("Pause task"),
        "not signed in: no button"
    );

    // Without a token or a session: refused, nothing paused.
    let r = f.api_post("/api/tasks/email/pause", None, "").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = f
        .form_post("/tasks/email/pause", None, None, "csrf=x")
        .await;
    assert!(r.status.is_client_error());
    assert!(client.paused().unwrap().is_empty());
    let r = f.api("/api/tasks/email/stop", "").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // From the page.
    let cookie = f.sign_in().await;
    let page = f.get_signed_in("/tasks/email", Some(&cookie)).await;
    assert!(page.body.contains("Pause task"));
    let csrf = f.csrf_of(&cookie).await;
    let r = f
        .form_post(
            "/tasks/email/pause",
            Some(&cookie),
            None,
            &format!("csrf={csrf}"),
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.headers[header::LOCATION], "/tasks/email?done=paused");
    let paused = client.paused().unwrap();
    assert_eq!(paused.len(), 1);
    assert_eq!(
        (paused[0].task_name.as_str(), paused[0].paused_by.as_deref()),
        ("email", Some("docket web"))
    );
    let page = f
        .get_signed_in("/tasks/email?done=paused", Some(&cookie))
        .await;
    assert!(page.body.contains("Done: paused."));
    assert!(page.body.contains("Resume task"));
    let overview = f.get("/").await;
    assert!(overview.body.contains("badge paused"));
    let api: Value = serde_json::from_str(&f.get("/api/tasks/email").await.body).unwrap();
    assert_eq!(api["paused"]["paused_by"], "docket web");
    let metrics = f.get("/metrics").await.body;
    assert!(
        metrics.contains("docket_task_paused{task=\"email\"} 1"),
        "{metrics}"
    );

    // Through the API: resume, then resume again changes nothing.
    let r = f.api("/api/tasks/email/resume", "").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        (v["done"].as_str(), v["row"].is_null()),
        (Some("resumed"), true)
    );
    let r = f.api("/api/tasks/email/resume", "").await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["done"], "not paused");
    assert!(client.paused().unwrap().is_empty());
    let r = f.api("/api/tasks/email/pause", "").await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["done"], "paused");
    assert_eq!(v["row"]["task"], "email");

    // Read-only: refused.
    let ro = Fixture::new(None);
    let r = ro.api("/api/tasks/email/pause", "").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

/// Bulk actions on a task's failing executions: previewed (the confirmation lists the rows and
/// their versions), applied only to rows still at those versions and not running, bounded,
/// through the API and the forms; each row checked in the database.
#[tokio::test]
async fn bulk_actions_on_failing_executions_are_confirmed_and_bounded() {
    let f = Fixture::new(Some(TOKEN));
    let now = Utc::now();
    // email: three failing (high, low, later); report: failing (due) and the running and dead
    // rows, made failing too (running ones are never touched).
    for (task, id) in [
        ("email", "high"),
        ("email", "low"),
        ("email", "later"),
        ("report", "running"),
    ] {
        let failing = Changes {
            last_failure: Some(now - Duration::minutes(1)),
            consecutive_failures: Some(3),
            ..Changes::default()
        };
        assert!(f
            .store
            .execution_update(&ExecutionKey::new(task, id), Guard::Any, &failing)
            .unwrap());
    }

    // The preview: failing, not picked, with versions.
    let preview: Value = serde_json::from_str(&f.get("/api/tasks/email/bulk").await.body).unwrap();
    let rows = preview["rows"].as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["instance"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{preview}");
    assert!(ids.contains(&"high") && ids.contains(&"low") && ids.contains(&"later"));
    let report: Value = serde_json::from_str(&f.get("/api/tasks/report/bulk").await.body).unwrap();
    let ids = strs(&report["rows"], "instance");
    assert_eq!(ids, ["failing"], "running executions are not offered");

    // API retry: `later` changed since the preview (its version moved): left alone.
    let body = serde_json::json!({
        "rows": rows.iter().map(|r| serde_json::json!({
            "instance": r["instance"], "version": r["version"],
        })).collect::<Vec<_>>(),
    });
    let later_before = f.version("email", "later");
    let bump = Changes {
        consecutive_failures: Some(4),
        ..Changes::default()
    };
    assert!(f
        .store
        .execution_update(&ExecutionKey::new("email", "later"), Guard::Any, &bump)
        .unwrap());
    let r = f
        .api_post("/api/tasks/email/bulk/retry", None, &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "the token is needed");
    let r = f
        .api("/api/tasks/email/bulk/retry", &body.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let result: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(result["done"], 2);
    assert_eq!(result["skipped"][0]["instance"], "later");
    let after = Utc::now();
    for id in ["high", "low"] {
        let e = f
            .store
            .execution_get(&ExecutionKey::new("email", id))
            .unwrap()
            .unwrap();
        assert!(
            e.execution_time >= now && e.execution_time <= after,
            "{id} retried now"
        );
    }
    assert_eq!(
        f.version("email", "later"),
        later_before + 1,
        "only the bump"
    );

    // Bounded: more rows than the limit are refused, nothing changed.
    let many: Vec<Value> = (0..=super::model::BULK_LIMIT)
        .map(|i| serde_json::json!({"instance": format!("x{i}"), "version": 1}))
        .collect();
    let r = f
        .api(
            "/api/tasks/email/bulk/cancel",
            &serde_json::json!({ "rows": many }).to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = f
        .api(
            "/api/tasks/email/bulk/reschedule",
            r#"{"rows":[{"instance":"low","version":1}]}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "reschedule needs a time");

    // Forms: the confirmation page, then cancel what it listed.
    let cookie = f.sign_in().await;
    let task_page = f.get_signed_in("/tasks/report", Some(&cookie)).await;
    assert!(task_page.body.contains("/tasks/report/bulk?action=cancel"));
    let confirm = f
        .get_signed_in("/tasks/report/bulk?action=cancel", Some(&cookie))
        .await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(confirm.body.contains("Confirm: cancel 1 executions"));
    let version = f.version("report", "failing");
    let rows = hidden_value(&confirm.body, "rows").expect("the rows field");
    assert_eq!(
        serde_json::from_str::<Value>(&rows).unwrap(),
        serde_json::json!([{"instance": "failing", "version": version}])
    );
    let done = f.bulk_cancel_confirmed(&cookie, &rows).await;
    assert!(done.body.contains("Done: 1 cancelled."));
    assert!(f
        .store
        .execution_get(&ExecutionKey::new("report", "failing"))
        .unwrap()
        .is_none());
    assert!(
        f.store
            .execution_get(&ExecutionKey::new("report", "running"))
            .unwrap()
            .is_some(),
        "the running one is untouched"
    );
    let r = f
        .form_post(
            "/tasks/report/bulk/cancel",
            Some(&cookie),
            None,
            "csrf=x&rows=1%20a",
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "CSRF checked");
}

/// Finding 2: a failing row whose instance id holds a line feed (`x\n1 victim`, possible
/// through db-scheduler or SQL) must not make the confirmation change a row it never showed,
/// and no bulk action changes a row that is not failing, whoever sends its key and version.
/// Without the fix the hidden field was `VERSION INSTANCE` lines: posting the confirmation
/// back cancelled the healthy `victim`; and the API cancelled a healthy row given its key.
#[tokio::test]
async fn bulk_actions_change_exactly_the_confirmed_failing_rows() {
    let f = Fixture::new(Some(TOKEN));
    let now = Utc::now();
    let sneaky = "x\n1 victim";
    for id in [sneaky, "victim"] {
        assert!(f
            .store
            .execution_insert(&NewExecution {
                task_name: "report".into(),
                task_instance: id.into(),
                task_data: None,
                execution_time: now - Duration::minutes(1),
                priority: None,
                limit_key: None,
            })
            .unwrap());
    }
    let failing = Changes {
        last_failure: Some(now),
        consecutive_failures: Some(1),
        ..Changes::default()
    };
    assert!(f
        .store
        .execution_update(&ExecutionKey::new("report", sneaky), Guard::Any, &failing)
        .unwrap());
    let victim = ExecutionKey::new("report", "victim");
    let victim_version = f.version("report", "victim");
    assert_eq!(
        victim_version, 1,
        "the id the line feed forges names version 1"
    );

    // The confirmation, posted back as the browser would.
    let cookie = f.sign_in().await;
    let confirm = f
        .get_signed_in("/tasks/report/bulk?action=cancel", Some(&cookie))
        .await;
    assert_eq!(confirm.status, StatusCode::OK, "{}", confirm.body);
    let rows = hidden_value(&confirm.body, "rows").expect("the rows field");
    let done = f.bulk_cancel_confirmed(&cookie, &rows).await;
    assert!(
        f.store.execution_get(&victim).unwrap().is_some(),
        "the healthy row was never shown: it must not be cancelled"
    );
    for id in [sneaky, "failing"] {
        assert!(
            f.store
                .execution_get(&ExecutionKey::new("report", id))
                .unwrap()
                .is_none(),
            "{id:?} was confirmed and cancelled"
        );
    }
    assert!(done.body.contains("Done: 2 cancelled."), "{}", done.body);
    assert!(
        done.body.contains("x\\u{000A}1 victim"),
        "the result names the rows changed, the line feed made visible: {}",
        done.body
    );

    // The API: a healthy row's key and version is refused (left alone, with the reason).
    let r = f
        .api(
            "/api/tasks/report/bulk/cancel",
            &format!(r#"{{"rows":[{{"instance":"victim","version":{victim_version}}}]}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let result: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(result["done"], 0, "{result}");
    assert_eq!(result["changed"], serde_json::json!([]), "{result}");
    assert_eq!(result["skipped"][0]["instance"], "victim", "{result}");
    assert!(
        result["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("not failing"),
        "{result}"
    );
    assert!(f.store.execution_get(&victim).unwrap().is_some());

    // And a failing one through the API is named in the result.
    assert!(f
        .store
        .execution_update(&victim, Guard::Any, &failing)
        .unwrap());
    let v = f.version("report", "victim");
    let r = f
        .api(
            "/api/tasks/report/bulk/retry",
            &format!(r#"{{"rows":[{{"instance":"victim","version":{v}}}]}}"#),
        )
        .await;
    let result: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        result["changed"],
        serde_json::json!([{"instance": "victim", "version": v}]),
        "{result}"
    );
}

/// Finding 8: with a token configured, reads needed none (an execution's page showed up to
/// 64 KiB of task data to anyone reaching the port). Now, by default, every read needs a
/// session or the bearer token; `open_reads(true)` opens them again. Without the fix the
/// anonymous reads below answered 200.
#[tokio::test]
async fn reads_need_the_token_when_one_is_set() {
    let f = Fixture::with_reads(Some(TOKEN), false);
    for page in [
        "/",
        "/executions/email/later",
        "/tasks/email",
        "/queue",
        "/search?instance=x",
    ] {
        let r = f.get(page).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{page}: {}", r.body);
        assert_eq!(
            r.headers[header::LOCATION],
            format!("/login?next={}", super::links::seg(page)),
            "{page}"
        );
    }
    for machine in ["/api/executions/email/later", "/api/overview", "/metrics"] {
        let r = f.get(machine).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{machine}: {}", r.body);
        assert!(
            r.headers.contains_key(header::WWW_AUTHENTICATE),
            "{machine}"
        );
        assert_eq!(r.json()["status"], 401, "{machine}");
        assert!(
            !r.body.contains("later\",\"state"),
            "{machine}: nothing shown"
        );
    }
    // The sign-in page and the stylesheet stay open.
    assert_eq!(f.get("/login").await.status, StatusCode::OK);
    assert_eq!(f.get("/style.css").await.status, StatusCode::OK);
    // The bearer token (any case of the scheme) or a session opens every read.
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let later = Request::get("/api/executions/email/later");
        let r = f.send_authorized(later, &format!("{scheme} {TOKEN}")).await;
        assert_eq!(r.status, StatusCode::OK, "{scheme}: {}", r.body);
    }
    let wrong = f
        .send_authorized(Request::get("/metrics"), "Bearer wrong-token-here!")
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let cookie = f.sign_in().await;
    for page in ["/", "/executions/email/later", "/metrics", "/api/overview"] {
        let r = f.get_signed_in(page, Some(&cookie)).await;
        assert_eq!(r.status, StatusCode::OK, "{page} signed in: {}", r.body);
    }
    // Opened on purpose: reads need nothing, writes still the token.
    let open = Fixture::with_reads(Some(TOKEN), true);
    assert_eq!(
        open.get("/executions/email/later").await.status,
        StatusCode::OK
    );
    let r = open
        .api_post(
            "/api/executions/email/later/cancel",
            None,
            r#"{"version":1}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // Without a token everything is read-only and open, as before.
    assert_eq!(
        Fixture::with_reads(None, false).get("/").await.status,
        StatusCode::OK
    );
}

/// Finding 8's smaller items: `/api/<unknown>` answers JSON, `bearer` in lower case is a
/// bearer token on writes too, and a paused task's execution page does not promise a run at
/// the next poll.
#[tokio::test]
async fn api_404s_are_json_lower_case_bearer_works_and_paused_pages_say_so() {
    let f = Fixture::new(Some(TOKEN));
    let r = f.get("/api/no-such-thing").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.json()["status"], 404, "{}", r.body);
    assert!(f.get("/no-such-page").await.body.contains("<html"));

    let pause = Request::post("/api/tasks/email/pause");
    let r = f.send_authorized(pause, &format!("bearer {TOKEN}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let page = f.get("/executions/email/high").await;
    assert!(page.body.contains("the task is paused"), "{}", page.body);
    assert!(!page.body.contains("at its next poll"), "{}", page.body);
    let api: Value = serde_json::from_str(&f.get("/api/executions/email/high").await.body).unwrap();
    assert!(
        api["next"]["text"].as_str().unwrap().contains("paused"),
        "{api}"
    );
}

/// Finding 5: 60 concurrent overviews answered 55 x 503 after long waits and `/metrics` took
/// 6 to 14 s behind them. Now page and API requests take turns for their database work
/// (`Concurrency`), a request finding every turn taken and the queue full is answered `503`
/// with `Retry-After` at once, and `/metrics` has turns of its own. Without the bound the
/// overview below answered 200 (nothing limited it); without `/metrics`' own turns it
/// answered 503 with the pages' turn taken.
#[tokio::test]
async fn a_busy_dashboard_answers_503_at_once_and_metrics_still_answer() {
    let f = Fixture::with_limits(Some(TOKEN), true, super::Concurrency { work: 1, queue: 0 });
    // Another request holds the only turn (its database work still running).
    let turn = f.web.pages.turns.clone().try_acquire_owned().unwrap();
    let r = f.get("/").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    assert_eq!(r.headers[header::RETRY_AFTER], "1");
    assert!(r.body.contains("busy"), "{}", r.body);
    let r = f.get("/api/overview").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.json()["status"], 503);
    let r = f.get("/metrics").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body.contains("docket_count_cap 1000"), "{}", r.body);
    drop(turn);
    assert_eq!(f.get("/").await.status, StatusCode::OK);
    assert_eq!(
        f.web.pages.turns.available_permits(),
        1,
        "the turn is given back when the work ends"
    );
}

/// Finding 6: pausing a task that does not exist succeeded (a typo reported success while the
/// real task ran on), and a zero-width look-alike of a real name was paused and shown in
/// `/metrics` as the real one. Now a name with no execution is refused (`404`), unless the API
/// confirms it (`?confirm=unknown`), which a name with hidden characters never passes.
/// Without the check every pause below answered 200.
#[tokio::test]
async fn pausing_refuses_unknown_and_look_alike_task_names() {
    let f = Fixture::new(Some(TOKEN));
    let fx = &f;
    let pause = |name: &str, query: &str| {
        let uri = format!("/api/tasks/{}/pause{query}", super::links::seg(name));
        async move { fx.api_post_empty(&uri).await }
    };
    let look_alike = "emai\u{200B}l";
    for name in ["emial", look_alike] {
        let r = pause(name, "").await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{name:?}: {}", r.body);
        assert!(r.json()["error"]
            .as_str()
            .unwrap()
            .contains("nothing was paused"));
    }
    let r = pause(look_alike, "?confirm=unknown").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body.contains("u{200B}"),
        "the hidden character is named: {}",
        r.body
    );
    let r = pause("email", "?confirm=yes").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let paused = f.store.paused_list().unwrap();
    assert!(paused.is_empty(), "nothing paused: {paused:?}");

    // A real task, and a new name confirmed on purpose.
    assert_eq!(pause("email", "").await.status, StatusCode::OK);
    assert_eq!(
        pause("nightly", "?confirm=unknown").await.status,
        StatusCode::OK
    );
    let names: Vec<String> = f
        .store
        .paused_list()
        .unwrap()
        .into_iter()
        .map(|p| p.task_name)
        .collect();
    assert_eq!(names, ["email", "nightly"]);
}

/// Finding 6, the size part: 50,000 paused rows made `/metrics` 2.1 MB and `/api/overview`
/// 4.5 MB (every paused task listed). Now the first 200 by name are listed, with the total.
/// Without the cap this test saw 250 `docket_task_paused` samples.
#[tokio::test]
async fn paused_lists_are_capped_in_metrics_and_the_api() {
    let f = Fixture::new(Some(TOKEN));
    for i in 0..250 {
        assert!(f
            .store
            .paused_set(&format!("gone-{i:03}"), Utc::now(), Some("sql"))
            .unwrap());
    }
    let metrics = f.get("/metrics").await.body;
    let samples = metrics
        .lines()
        .filter(|l| l.starts_with("docket_task_paused{"))
        .count();
    assert_eq!(samples, 200, "{metrics}");
    assert!(metrics.contains("\ndocket_paused_tasks 250\n"), "{metrics}");
    let lag = f.get("/api/lag").await.json();
    assert_eq!(lag["lag"]["paused"].as_array().unwrap().len(), 200);
    assert_eq!(lag["lag"]["paused_total"], 250);
    let overview = f.get("/api/overview").await.json();
    assert_eq!(overview["lag"]["paused"].as_array().unwrap().len(), 200);
}
