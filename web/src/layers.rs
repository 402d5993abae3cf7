//! Middleware that every response passes through: security headers, the `Host` allowlist and
//! the request timeout. One place for all routes, the fallback and the error pages alike.

use super::error::{ApiError, HtmlError, WebError};
use super::state::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The pages load only their own stylesheet and submit forms to themselves: no script, no
/// inline style, no frame, no plugin. `frame-ancestors 'none'` (and `X-Frame-Options` for older
/// browsers) stops clickjacking.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'none'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// No `Referer` to other sites, but the full one to this site: with `no-referrer`, browsers
/// send `Origin: null` on every form POST (Fetch standard, "serializing a request origin"),
/// which [`super::auth::Secrets::check_origin`] rightly refuses as cross-site, so nobody could
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
/// [`super::hosts::Hosts`]): a rebound DNS name pointing at this server sends its own name.
pub async fn check_host(State(web): State<AppState>, req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).map(|h| h.to_str());
    match host {
        Some(Ok(h)) if web.hosts.allows(h) => next.run(req).await,
        _ => {
            let shown = host.and_then(Result::ok).unwrap_or("none");
            let e = WebError::WrongHost(format!(
                "this server does not answer to the host name {shown:?} (allowed: {}; add \
                 others with docket web --public-host)",
                web.hosts.list().join(", ")
            ));
            error_response(req.uri().path(), e)
        }
    }
}

/// An error as JSON under `/api/`, else as a page.
pub fn error_response(path: &str, e: WebError) -> Response {
    if path.starts_with("/api/") {
        ApiError(e).into_response()
    } else {
        HtmlError(e).into_response()
    }
}
