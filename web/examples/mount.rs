//! The dashboard mounted in an application of its own: an axum app whose middleware
//! authenticates every request (here: an `X-App-User` header, standing in for your sessions or
//! SSO) nests the docket router under `/ops/docket` in trusted mode, on SQLite.
//!
//! It starts on 127.0.0.1 (a free port), checks itself over HTTP (refused without the app's
//! authentication; the overview through it, its links under `/ops/docket`; a write through the
//! API), and exits 0. With `--serve` it keeps serving on 127.0.0.1:8080 instead (send the
//! header with a browser extension or curl: `curl -H 'X-App-User: ann' localhost:8080/ops/docket`).
//!
//! `cargo run -p docket-web --example mount`

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use docket::{SchedulerClient, StoreConfig, TaskDescriptor};
use docket_web::{Access, Dashboard};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BASE: &str = "/ops/docket";
const REPORT: TaskDescriptor = TaskDescriptor::new("report");

/// The application's own authentication: here any non-empty `X-App-User` header. A real
/// application checks its session cookie or token and may also check a role.
async fn require_user(req: Request, next: Next) -> Response {
    let user = req
        .headers()
        .get("x-app-user")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.trim().is_empty());
    match user {
        Some(_) => next.run(req).await,
        None => (
            StatusCode::UNAUTHORIZED,
            "sign in to the application first\n",
        )
            .into_response(),
    }
}

/// One HTTP/1.1 request over a fresh connection: the status code, the head and the body.
async fn request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<(u16, String, String), Box<dyn std::error::Error>> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).await?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("no HTTP head")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status code")?;
    Ok((status, head.to_owned(), body.to_owned()))
}

fn check(ok: bool, what: &str) -> Result<(), Box<dyn std::error::Error>> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(format!("failed: {what}").into())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let serve_forever = std::env::args().any(|a| a == "--serve");
    let dir = tempfile::Builder::new()
        .prefix("docket-web-example-")
        .tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("example.db").display());
    let store = docket::sqlite::connect(&url, StoreConfig::default())?;
    docket::sqlite::migrate(&store, None)?;
    let store: Arc<dyn docket::store::Store> = Arc::new(store);
    let client = SchedulerClient::new(store.clone())?;
    for id in ["monday", "tuesday"] {
        client.schedule(REPORT.instance(id))?;
    }

    // The dashboard: trusted mode (the application authenticates), under BASE.
    let dashboard = Dashboard::new(
        store.clone(),
        Access::Trusted {
            writes: true,
            // Set when the application is served over HTTPS.
            secure_cookies: false,
        },
    )
    .base_path(BASE)
    .router()?;
    let app = Router::new()
        .route("/", get(|| async { "the application's home page\n" }))
        .nest(BASE, dashboard.layer(middleware::from_fn(require_user)));

    let listen = if serve_forever {
        "127.0.0.1:8080"
    } else {
        "127.0.0.1:0"
    };
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    println!("serving http://{addr}/ with the dashboard at http://{addr}{BASE}");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    if serve_forever {
        server.await??;
        return Ok(());
    }

    let (status, _, _) = request(addr, "GET", BASE, &[], "").await?;
    check(
        status == 401,
        "the dashboard refuses a request the application did not authenticate",
    )?;

    let user = [("X-App-User", "ann")];
    let (status, head, page) = request(addr, "GET", BASE, &user, "").await?;
    check(
        status == 200,
        "the overview answers through the application's authentication",
    )?;
    check(
        page.contains(&format!("href=\"{BASE}/tasks/report\"")),
        "the overview links to a task under the mount prefix",
    )?;
    check(
        page.contains(&format!("href=\"{BASE}/style.css\"")),
        "the stylesheet is loaded from under the prefix",
    )?;
    let lower = head.to_ascii_lowercase();
    check(
        lower.contains("set-cookie: docket_csrf=") && head.contains(&format!("Path={BASE};")),
        "the CSRF cookie is set under the prefix",
    )?;
    check(
        !lower.contains("docket_session") && !page.contains("Sign in"),
        "no docket sign-in or session in trusted mode",
    )?;
    check(
        lower.contains("x-frame-options: deny") && lower.contains("content-security-policy:"),
        "the security headers apply",
    )?;

    let version = store
        .execution_get(&docket::ExecutionKey::new("report", "monday"))?
        .ok_or("monday is gone")?
        .version;
    let (status, _, body) = request(
        addr,
        "POST",
        &format!("{BASE}/api/executions/report/monday/cancel"),
        &[("X-App-User", "ann"), ("Content-Type", "application/json")],
        &format!("{{\"version\": {version}}}"),
    )
    .await?;
    check(status == 200, &format!("a write through the API: {body}"))?;
    check(
        store
            .execution_get(&docket::ExecutionKey::new("report", "monday"))?
            .is_none(),
        "the cancelled execution is gone from the table",
    )?;
    server.abort();
    println!("the dashboard is mounted at {BASE} behind the application's authentication");
    Ok(())
}
