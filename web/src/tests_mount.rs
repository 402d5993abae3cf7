//! The router mounted in an application under `/ops/docket` (`Router::nest`), as a library
//! user mounts it: every URL the pages emit carries the prefix, trusted mode has no sign-in
//! and still checks CSRF and `Origin`, and token mode's cookies live under the prefix.

use super::tests::{claim, seeded_store, send, Reply};
use super::{Access, Dashboard};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use chrono::Utc;
use docket_core::{ExecutionKey, Store};
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

const BASE: &str = "/ops/docket";
const HOST: &str = "app.example";

/// The application: the dashboard nested under [`BASE`], and a page of its own.
fn app(store: Arc<dyn Store>, access: Access) -> Router {
    let dashboard = Dashboard::new(store, access)
        .base_path(BASE)
        .router()
        .unwrap();
    Router::new()
        .route("/", axum::routing::get(|| async { "the application" }))
        .nest(BASE, dashboard)
}

fn trusted(writes: bool) -> Access {
    Access::Trusted {
        writes,
        secure_cookies: false,
    }
}

async fn get(app: &Router, uri: &str, cookie: Option<&str>) -> Reply {
    let mut req = Request::get(uri).header(header::HOST, HOST);
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    send(app, req.body(Body::empty()).unwrap()).await
}

async fn post(
    app: &Router,
    uri: &str,
    cookie: Option<&str>,
    content_type: &str,
    origin: Option<&str>,
    body: &str,
) -> Reply {
    let mut req = Request::post(uri)
        .header(header::HOST, HOST)
        .header(header::CONTENT_TYPE, content_type);
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    if let Some(o) = origin {
        req = req.header(header::ORIGIN, o);
    }
    send(app, req.body(Body::from(body.to_owned())).unwrap()).await
}

/// Every `href`, `action` and `src` value of a page, `&amp;` read back as `&`.
fn urls(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in [" href=\"", " action=\"", " src=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(attr) {
            rest = &rest[at + attr.len()..];
            let end = rest.find('"').unwrap();
            out.push(rest[..end].replace("&amp;", "&"));
            rest = &rest[end..];
        }
    }
    out
}

/// Under the mount: the base path itself (the overview) or below it.
fn under_base(url: &str) -> bool {
    url == BASE || url.starts_with(&format!("{BASE}/")) || url.starts_with(&format!("{BASE}?"))
}

fn hidden_csrf(html: &str) -> Option<String> {
    let marker = "name=\"csrf\" value=\"";
    let at = html.find(marker)? + marker.len();
    let len = html[at..].find('"')?;
    Some(html[at..at + len].to_owned())
}

fn security_headers_present(r: &Reply, url: &str) {
    for h in [
        header::CONTENT_SECURITY_POLICY,
        header::X_FRAME_OPTIONS,
        header::X_CONTENT_TYPE_OPTIONS,
        header::REFERRER_POLICY,
        header::CACHE_CONTROL,
    ] {
        assert!(r.headers.contains_key(&h), "{url}: no {h}");
    }
}

/// Crawls every page reachable from the overview (and the search, worker lookup and error
/// pages): every `href`, `action`, `src` and `Location` starts with the mount prefix, and every
/// response carries the security headers. Returns the pages visited.
async fn crawl(app: &Router, cookie: Option<&str>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: VecDeque<String> = [
        BASE.to_owned(),
        format!("{BASE}/search?instance=high"),
        format!("{BASE}/search?task=email&instance=nothing-like-it"),
        format!("{BASE}/search?instance=&task=email"),
        format!("{BASE}/queue/label/workers?worker=alice"),
        format!("{BASE}/no/such/page"),
        format!("{BASE}/tasks/email/bulk?action=nonsense"),
    ]
    .into();
    while let Some(url) = todo.pop_front() {
        if !seen.insert(url.clone()) || seen.len() > 300 {
            continue;
        }
        let r = get(app, &url, cookie).await;
        security_headers_present(&r, &url);
        assert!(
            !r.headers
                .get_all(header::SET_COOKIE)
                .iter()
                .any(|c| c.to_str().unwrap().starts_with("docket_session")),
            "{url}: a session cookie in trusted mode"
        );
        let mut found = urls(&r.body);
        if let Some(to) = r.headers.get(header::LOCATION) {
            found.push(to.to_str().unwrap().to_owned());
        }
        for u in found {
            assert!(under_base(&u), "{url} links to {u:?}, outside {BASE}");
            // Follow links (not form actions of POSTs: the body says which is which, but a
            // GET of a POST route is a harmless 405).
            if !u.contains("/metrics") {
                todo.push_back(u);
            }
        }
    }
    seen
}

/// Mounted in trusted mode under `/ops/docket`: every URL on every page (and every redirect)
/// carries the prefix; no sign-in page, no session cookie; the security headers apply.
#[tokio::test]
async fn mounted_pages_link_under_the_base_path() {
    let (_dir, store) = seeded_store();
    let app = app(store.clone(), trusted(true));
    // The application's own route is untouched.
    let r = get(&app, "/", None).await;
    assert_eq!(r.body, "the application");

    let r = get(&app, BASE, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let set = r.headers[header::SET_COOKIE].to_str().unwrap().to_owned();
    assert!(
        set.starts_with("docket_csrf=") && set.contains(&format!("Path={BASE};")),
        "{set}"
    );
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert!(!r.body.contains("Sign in") && !r.body.contains("Sign out"));
    let cookie = set.split(';').next().unwrap().to_owned();
    // Same pages, with and without the cookie (a first visit gets one on every page).
    let pages = crawl(&app, Some(&cookie)).await;
    assert!(pages.len() > 25, "crawled only {pages:?}");
    for must in [
        format!("{BASE}/tasks/email"),
        format!("{BASE}/executions/email/high"),
        format!("{BASE}/queue/label"),
        format!("{BASE}/queue/label/items/rec1"),
        format!("{BASE}/queue/label/workers/alice"),
        format!("{BASE}/tasks/report/bulk?action=retry"),
    ] {
        assert!(pages.contains(&must), "{must} not reached: {pages:?}");
    }
    crawl(&app, None).await;
    let page = get(
        &app,
        &format!("{BASE}/executions/email/high"),
        Some(&cookie),
    )
    .await;
    assert!(page
        .body
        .contains(&format!("action=\"{BASE}/executions/email/high/run-now\"")));
    // No sign-in in trusted mode.
    assert_eq!(
        get(&app, &format!("{BASE}/login"), None).await.status,
        StatusCode::NOT_FOUND
    );
    // The JSON API and /metrics answer under the prefix.
    let r = get(&app, &format!("{BASE}/api/overview"), None).await;
    assert_eq!(r.status, StatusCode::OK);
    security_headers_present(&r, "api");
    assert!(
        r.headers.get(header::SET_COOKIE).is_none(),
        "no CSRF cookie for the API"
    );
    let r = get(&app, &format!("{BASE}/metrics"), None).await;
    assert!(r.body.contains("docket_oldest_due_age_seconds"));
    assert!(
        r.headers.get(header::SET_COOKIE).is_none(),
        "no CSRF cookie for a scrape"
    );
    let r = get(&app, &format!("{BASE}/style.css"), None).await;
    assert_eq!(r.status, StatusCode::OK);
}

/// Trusted mode's writes: a form needs the CSRF value derived from its own `docket_csrf`
/// cookie and a same-origin `Origin`; API writes need JSON; a read-only mount refuses all.
#[tokio::test]
async fn trusted_writes_need_csrf_origin_and_json() {
    let (_dir, store) = seeded_store();
    let app = app(store.clone(), trusted(true));
    let version = |store: &Arc<dyn Store>, id: &str| {
        store
            .execution_get(&ExecutionKey::new("email", id))
            .unwrap()
            .unwrap()
            .version
    };
    let page = format!("{BASE}/executions/email/high");
    let r = get(&app, &page, None).await;
    let set = r.headers[header::SET_COOKIE].to_str().unwrap();
    let cookie = set.split(';').next().unwrap().to_owned();
    let csrf = hidden_csrf(&r.body).expect("the page's forms carry a CSRF value");
    assert!(
        !cookie.contains(&csrf),
        "the form's value is not the cookie's"
    );
    // A second visit with the cookie keeps it and its value.
    let again = get(&app, &page, Some(&cookie)).await;
    assert!(again.headers.get(header::SET_COOKIE).is_none());
    assert_eq!(hidden_csrf(&again.body).as_deref(), Some(csrf.as_str()));

    let v = version(&store, "high");
    let action = format!("{page}/run-now");
    let form = "application/x-www-form-urlencoded";
    let origin = Some("http://app.example");
    let other = get(&app, &page, None).await;
    let other_cookie = other.headers[header::SET_COOKIE].to_str().unwrap();
    let other_cookie = other_cookie.split(';').next().unwrap();
    let refused: [(Option<&str>, Option<&str>, String, &str); 5] = [
        (
            Some(&cookie),
            origin,
            format!("version={v}"),
            "no CSRF field",
        ),
        (
            Some(&cookie),
            origin,
            format!("csrf=x{csrf}&version={v}"),
            "wrong CSRF",
        ),
        (
            None,
            origin,
            format!("csrf={csrf}&version={v}"),
            "no cookie",
        ),
        (
            Some(other_cookie),
            origin,
            format!("csrf={csrf}&version={v}"),
            "another browser's cookie",
        ),
        (
            Some(&cookie),
            Some("http://evil.example"),
            format!("csrf={csrf}&version={v}"),
            "cross-site Origin",
        ),
    ];
    for (c, o, body, why) in refused {
        let r = post(&app, &action, c, form, o, &body).await;
        assert!(
            matches!(r.status, StatusCode::FORBIDDEN | StatusCode::BAD_REQUEST),
            "{why}: {} {}",
            r.status,
            r.body
        );
        assert_eq!(version(&store, "high"), v, "{why}: nothing changed");
    }
    let r = post(
        &app,
        &action,
        Some(&cookie),
        form,
        origin,
        &format!("csrf={csrf}&version={v}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(
        r.headers[header::LOCATION],
        format!("{page}?done=run%20now").as_str()
    );
    assert!(version(&store, "high") > v);

    // The API: JSON only (a cross-site form cannot send it), no token.
    let v = version(&store, "low");
    let api = format!("{BASE}/api/executions/email/low/cancel");
    let body = format!("{{\"version\": {v}}}");
    let r = post(&app, &api, None, "text/plain", None, &body).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = post(
        &app,
        &api,
        None,
        "application/json",
        Some("http://evil.example"),
        &body,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = post(&app, &api, None, "application/json", None, &body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(store
        .execution_get(&ExecutionKey::new("email", "low"))
        .unwrap()
        .is_none());
    let r = post(
        &app,
        &format!("{BASE}/api/queue/label/workers/alice/next"),
        None,
        "application/json",
        None,
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    // Mounted read-only: no action form, every write refused.
    let ro = self::app(store.clone(), trusted(false));
    let r = get(&ro, &format!("{BASE}/executions/email/later"), None).await;
    assert!(
        !r.body.contains("run-now") && r.body.contains("read-only"),
        "{}",
        r.body
    );
    let cookie = r.headers[header::SET_COOKIE].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap();
    let csrf = hidden_csrf(&r.body).unwrap_or_default();
    let v = version(&store, "later");
    let r = post(
        &ro,
        &format!("{BASE}/executions/email/later/cancel"),
        Some(cookie),
        form,
        origin,
        &format!("csrf={csrf}&version={v}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = post(
        &ro,
        &format!("{BASE}/api/executions/email/later/cancel"),
        None,
        "application/json",
        None,
        &format!("{{\"version\": {v}}}"),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(version(&store, "later"), v);
    // Error pages are rendered with the prefix too.
    assert!(r.body.contains("read-only"));
    for missing in ["tasks/no-such-task", "no/such/page"] {
        let r = get(&ro, &format!("{BASE}/{missing}"), None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(r.headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert!(
            r.body.contains(&format!("href=\"{BASE}/style.css\""))
                && r.body.contains(&format!("href=\"{BASE}\"")),
            "{}",
            r.body
        );
        assert!(urls(&r.body).iter().all(|u| under_base(u)), "{}", r.body);
    }
    // A running execution stays as it is.
    claim(&*store, &ExecutionKey::new("email", "later"), Utc::now());
}

/// Token mode under a base path (an application may keep docket's own sign-in): the session
/// and sign-in cookies live under the prefix, and signing in comes back under it.
#[tokio::test]
async fn token_mode_under_a_base_path_keeps_its_cookies_there() {
    let (_dir, store) = seeded_store();
    let token = "a-token-of-sixteen-or-more";
    let app = app(
        store,
        Access::Token {
            token: Some(token.into()),
            hosts: super::Hosts::new("127.0.0.1:80".parse().unwrap(), &[HOST.to_owned()]),
            secure_cookies: true,
        },
    );
    let r = get(&app, &format!("{BASE}/login"), None).await;
    let set = r.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        set.contains(&format!("Path={BASE}/login;")) && set.ends_with("; Secure"),
        "{set}"
    );
    assert!(r.body.contains(&format!("action=\"{BASE}/login\"")));
    let login_cookie = set.split(';').next().unwrap();
    let csrf = hidden_csrf(&r.body).unwrap();
    let r = post(
        &app,
        &format!("{BASE}/login"),
        Some(login_cookie),
        "application/x-www-form-urlencoded",
        Some("http://app.example"),
        &format!("csrf={csrf}&token={token}&next=%2F%2Fevil.example"),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(
        r.headers[header::LOCATION],
        BASE,
        "a bad next goes to the overview"
    );
    let session = r.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        session.starts_with("docket_session=") && session.contains(&format!("Path={BASE};")),
        "{session}"
    );
    let session = session.split(';').next().unwrap();
    let crawled = crawl(&app, Some(session)).await;
    assert!(crawled.len() > 25);
    // The Host allowlist still applies.
    let r = send(
        &app,
        Request::get(BASE)
            .header(header::HOST, "evil.example")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST);
    assert!(urls(&r.body).iter().all(|u| under_base(u)), "{}", r.body);
}

/// Two instances of an application given the same CSRF key accept each other's forms (a
/// load balancer may send the POST to another one); with their own random keys they do not.
#[tokio::test]
async fn instances_sharing_a_csrf_key_accept_each_others_forms() {
    let (_dir, store) = seeded_store();
    let mount = |key: Option<[u8; 32]>| {
        let mut d = Dashboard::new(store.clone(), trusted(true)).base_path(BASE);
        if let Some(k) = key {
            d = d.csrf_key(k);
        }
        Router::new().nest(BASE, d.router().unwrap())
    };
    let page = format!("{BASE}/tasks/email");
    for (key, status) in [
        (Some([7u8; 32]), StatusCode::SEE_OTHER),
        (None, StatusCode::FORBIDDEN),
    ] {
        let (a, b) = (mount(key), mount(key));
        let r = get(&a, &page, None).await;
        let cookie = r.headers[header::SET_COOKIE].to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_owned();
        let csrf = hidden_csrf(&r.body).unwrap();
        let r = post(
            &b,
            &format!("{page}/pause"),
            Some(&cookie),
            "application/x-www-form-urlencoded",
            Some("http://app.example"),
            &format!("csrf={csrf}"),
        )
        .await;
        assert_eq!(r.status, status, "key {key:?}: {}", r.body);
        if status == StatusCode::SEE_OTHER {
            assert_eq!(
                r.headers[header::LOCATION],
                format!("{page}?done=paused").as_str()
            );
            // The worker forms redirect under the prefix too.
            let r = post(
                &b,
                &format!("{BASE}/queue/label/workers/bob/next"),
                Some(&cookie),
                "application/x-www-form-urlencoded",
                Some("http://app.example"),
                &format!("csrf={csrf}"),
            )
            .await;
            let to = r.headers[header::LOCATION].to_str().unwrap();
            assert!(
                to.starts_with(&format!("{BASE}/queue/label/workers/bob?done=taken&taken=")),
                "{to}"
            );
        }
    }
    let debug = format!(
        "{:?}",
        Dashboard::new(store.clone(), trusted(true)).csrf_key([7; 32])
    );
    assert!(
        debug.contains("CsrfKey(..)") && !debug.contains("7, 7"),
        "{debug}"
    );
}

/// Base paths the links could not carry are refused when the router is built.
#[test]
fn bad_base_paths_are_refused() {
    let (_dir, store) = seeded_store();
    for bad in ["ops", "/ops//docket", "/ops docket", "/ops/../x"] {
        let e = Dashboard::new(store.clone(), trusted(true))
            .base_path(bad)
            .router()
            .unwrap_err();
        assert!(matches!(e, super::Error::BasePath { .. }), "{bad}: {e}");
    }
}
