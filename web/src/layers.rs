//! Middleware that every response passes through: security headers, the `Host` allowlist
//! (token mode) and the CSRF cookie (trusted mode); the request timeout is in `serve`. One
//! place for all routes, the fallback and the error pages alike.

use crate::error::{ApiError, HtmlError, WebError};
use crate::limit::ClientIp;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

/// The pages load only their own stylesheet and submit forms to themselves: no script, no
/// inline style, no frame, no plugin. `frame-ancestors 'none'` (and `X-Frame-Options` for older
/// browsers) stops clickjacking.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'none'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// No `Referer` to other sites, but the full one to this site: with `no-referrer`, browsers
/// send `Origin: null` on every form POST (Fetch standard, "serializing a request origin"),
/// which [`crate::auth::Secrets::check_origin`] rightly refuses as cross-site, so nobody could
/// sign in or press a button. `same-origin` keeps the real `Origin` on the dashboard's own
/// POSTs and still gives other sites neither `Referer` nor `Origin` (they get `null`).
pub const REFERRER_POLICY: &str = "same-origin";

/// Headers set on every response (a handler's own value wins for `Cache-Control` only).
const ALWAYS: [(HeaderName, &str); 4] = [
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, REFERRER_POLICY),
];

/// Adds [`ALWAYS`], and `Cache-Control: no-store` unless the handler chose a policy (only the
/// stylesheet does): pages and API answers may show data a signed-in operator saw, and must
/// not be kept in shared or browser caches.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let headers = res.headers_mut();
    for (name, value) in ALWAYS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    res
}

/// Refuses (`421`) a request whose `Host` is not allowed (`--public-host`, see
/// [`crate::hosts::Hosts`]): a rebound DNS name pointing at this server sends its own name.
pub async fn check_host(State(web): State<AppState>, req: Request, next: Next) -> Response {
    let Some(hosts) = &web.hosts else {
        return next.run(req).await;
    };
    let host = req.headers().get(header::HOST).map(|h| h.to_str());
    match host {
        Some(Ok(h)) if hosts.allows(h) => next.run(req).await,
        _ => {
            let shown = host.and_then(Result::ok).unwrap_or("none");
            let e = WebError::WrongHost(format!(
                "this server does not answer to the host name {shown:?} (allowed: {}; add \
                 others with docket web --public-host)",
                hosts.list().join(", ")
            ));
            error_response(req.uri().path(), e)
        }
    }
}

/// Token mode with a token (unless `Dashboard::open_reads`): every request but the sign-in
/// page, sign-out and the stylesheet needs a live session or `Authorization: Bearer <token>`.
/// A page asked for without either is sent to the sign-in page, coming back to it; the API
/// and `/metrics` answer `401` with `WWW-Authenticate: Bearer`. Writes are checked again by
/// their handlers (CSRF, `Origin`).
pub async fn require_read_token(
    State(web): State<AppState>,
    ClientIp(client): ClientIp,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    if matches!(path, "/login" | "/logout" | "/style.css") || !web.auth.reads_need_token() {
        return next.run(req).await;
    }
    match web.auth.check_read(req.headers(), client) {
        Ok(()) => next.run(req).await,
        Err(WebError::Unauthorized(_))
            if !machine(path) && matches!(*req.method(), Method::GET | Method::HEAD) =>
        {
            let here = req.uri().path_and_query().map_or(path, |pq| pq.as_str());
            let next = format!("{}{here}", web.base.as_str());
            Redirect::to(&web.base.login(&next)).into_response()
        }
        Err(e) => {
            let challenge = matches!(e, WebError::Unauthorized(_));
            let mut res = error_response(path, e);
            if challenge {
                res.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"docket web\""),
                );
            }
            res
        }
    }
}

/// Paths read by programs, answered in JSON (or Prometheus text) rather than as pages.
fn machine(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/") || path == "/metrics"
}

/// An error as JSON under `/api/` (and for `/metrics`), else as a page.
pub fn error_response(path: &str, e: WebError) -> Response {
    if machine(path) {
        ApiError(e).into_response()
    } else {
        HtmlError(e).into_response()
    }
}

/// Trusted mode: a page `GET` (or `HEAD`) without a usable `docket_csrf` cookie gets a fresh
/// one, handed to the handler as if the browser had sent it (so the page's forms carry its
/// value) and set in the response. A `POST` never gets one: its form must match the cookie it
/// came with. The JSON API, `/metrics` and the stylesheet have no forms and get none.
pub async fn csrf_cookie(State(web): State<AppState>, mut req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let page = !(path.starts_with("/api/") || path == "/metrics" || path == "/style.css");
    let reading = matches!(*req.method(), Method::GET | Method::HEAD);
    if !page || !reading || !web.auth.needs_csrf_cookie(req.headers()) {
        return next.run(req).await;
    }
    match web.auth.csrf_cookie() {
        Ok((pair, set)) => {
            req.headers_mut().append(header::COOKIE, pair);
            let mut res = next.run(req).await;
            res.headers_mut().append(header::SET_COOKIE, set);
            res
        }
        Err(e) => error_response(req.uri().path(), e),
    }
}
