//! What building the dashboard can fail with ([`Error`]), and what a request can fail with, as
//! an HTML page ([`HtmlError`]) or a JSON body ([`ApiError`]), both with the same 4xx/5xx status.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use docket_core::{DocketError, StoreError};

/// Why the dashboard could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store has no docket schema the client can read.
    #[error(transparent)]
    Docket(#[from] DocketError),
    /// The OS gave no random numbers (session ids, CSRF secrets).
    #[error("no random numbers from the OS: {0}")]
    Random(String),
    /// The base path is not `""` or `/segment[/segment...]`.
    #[error("base path {path:?}: {reason}")]
    BasePath {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The write token is too short to resist guessing.
    #[error("the token has {len} characters; at least {min} are needed")]
    ShortToken {
        /// Its length in characters.
        len: usize,
        /// The least accepted.
        min: usize,
    },
}

/// A request's failure. Every variant but [`WebError::Store`], [`WebError::TimedOut`],
/// [`WebError::Busy`] and [`WebError::Internal`] is the client's: a 4xx, and nothing was
/// changed.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// No such task, execution, item or page.
    #[error("{0}")]
    NotFound(String),
    /// A malformed form, query or body.
    #[error("{0}")]
    BadRequest(String),
    /// No token, or a wrong one.
    #[error("{0}")]
    Unauthorized(String),
    /// The site is read-only, or the request failed the cross-site checks.
    #[error("{0}")]
    Forbidden(String),
    /// The request's `Host` is not one this server answers to (DNS rebinding).
    #[error("{0}")]
    WrongHost(String),
    /// Too many wrong tokens: wait `retry_after_secs`.
    #[error("{message}")]
    TooManyRequests {
        /// What to tell the client.
        message: String,
        /// When to try again.
        retry_after_secs: u64,
    },
    /// The row changed since the page was rendered, is running, or is not held by the worker.
    #[error("{0}")]
    Conflict(String),
    /// The database failed (unreachable, or an error of its own). A store error that names
    /// the request's data or a concurrent change is [`WebError::BadRequest`] or
    /// [`WebError::Conflict`] instead (see the `From<StoreError>` impl).
    #[error("database: {0}")]
    Store(StoreError),
    /// A row holds a value docket cannot read (a time out of range, a malformed attribute),
    /// written by SQL or another program; lists show such a row as unreadable in its place,
    /// this is what a request about that row alone answers.
    #[error("{0}")]
    Unreadable(String),
    /// The request took longer than the server's request timeout.
    #[error("{0}")]
    TimedOut(String),
    /// The dashboard is at its bound of concurrent database work and its queue is full (or the
    /// wait for a turn ran out): answered at once, try again after `retry_after_secs`.
    #[error("{message}")]
    Busy {
        /// What to tell the client.
        message: String,
        /// When to try again.
        retry_after_secs: u64,
    },
    /// Something on the server side failed (a worker thread, a configuration).
    #[error("{0}")]
    Internal(String),
}

impl From<DocketError> for WebError {
    fn from(e: DocketError) -> Self {
        match e {
            DocketError::Store(e) => WebError::from(e),
            DocketError::NotFound { .. } => WebError::NotFound(e.to_string()),
            DocketError::Running { .. } | DocketError::Queue { .. } => {
                WebError::Conflict(e.to_string())
            }
            DocketError::InvalidIdentifier { .. }
            | DocketError::InvalidName { .. }
            | DocketError::InvalidItem { .. }
            | DocketError::InvalidAttribute { .. }
            | DocketError::InvalidConfig(_)
            | DocketError::UnknownTask(_) => WebError::BadRequest(e.to_string()),
            other => WebError::Internal(other.to_string()),
        }
    }
}

impl From<StoreError> for WebError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Input(e) => WebError::from(*e),
            // Rolled back: the rows were in another state than the request expected.
            StoreError::Conflict { .. } | StoreError::DuplicateItem { .. } => {
                WebError::Conflict(e.to_string())
            }
            StoreError::RejectedItem { .. } | StoreError::RepeatedItem { .. } => {
                WebError::BadRequest(e.to_string())
            }
            StoreError::Decode { .. } => WebError::Unreadable(format!(
                "a row holds a value docket cannot read ({e}); it was written by SQL or another \
                 program: fix or delete it with SQL"
            )),
            other => WebError::Store(other),
        }
    }
}

impl WebError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            WebError::NotFound(_) => StatusCode::NOT_FOUND,
            WebError::BadRequest(_) => StatusCode::BAD_REQUEST,
            WebError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            WebError::Forbidden(_) => StatusCode::FORBIDDEN,
            WebError::Conflict(_) => StatusCode::CONFLICT,
            WebError::WrongHost(_) => StatusCode::MISDIRECTED_REQUEST,
            WebError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            WebError::Store(_) | WebError::TimedOut(_) | WebError::Busy { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            WebError::Internal(_) | WebError::Unreadable(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// A short title for the status.
    pub fn title(&self) -> &'static str {
        match self {
            WebError::NotFound(_) => "Not found",
            WebError::BadRequest(_) => "Bad request",
            WebError::Unauthorized(_) => "Sign-in required",
            WebError::Forbidden(_) => "Forbidden",
            WebError::Conflict(_) => "Conflict: nothing was changed",
            WebError::WrongHost(_) => "Unknown host name",
            WebError::TooManyRequests { .. } => "Too many attempts",
            WebError::Store(_) => "Database unavailable",
            WebError::TimedOut(_) => "Timed out",
            WebError::Busy { .. } => "Busy: try again shortly",
            WebError::Internal(_) => "Server error",
            WebError::Unreadable(_) => "A stored value docket cannot read",
        }
    }
}

/// A failure rendered as an HTML page (its `IntoResponse` is in `pages`, which renders it:
/// errors stay a leaf every other module may use).
#[derive(Debug)]
pub struct HtmlError(pub WebError);

impl<E: Into<WebError>> From<E> for HtmlError {
    fn from(e: E) -> Self {
        HtmlError(e.into())
    }
}

impl WebError {
    /// `Retry-After` on a `429`.
    pub fn with_retry_after(&self, mut res: Response) -> Response {
        if let WebError::TooManyRequests {
            retry_after_secs, ..
        }
        | WebError::Busy {
            retry_after_secs, ..
        } = self
        {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
        }
        res
    }
}

/// A failure rendered as JSON: `{"error": "...", "status": 409}`.
#[derive(Debug)]
pub struct ApiError(pub WebError);

impl<E: Into<WebError>> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError(e.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.0.status();
        let body = serde_json::json!({
            "error": self.0.to_string(),
            "status": status.as_u16(),
        });
        self.0
            .with_retry_after((status, axum::Json(body)).into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Store errors about the request's data or a concurrent change are the client's (4xx);
    /// only the database's own failures are 503.
    #[test]
    fn store_errors_map_to_their_status() {
        let cases = [
            (
                StoreError::conflict("claimed 3 of 4 locked rows"),
                StatusCode::CONFLICT,
            ),
            (
                StoreError::DuplicateItem {
                    task: "label".into(),
                    item: "7".into(),
                },
                StatusCode::CONFLICT,
            ),
            (
                StoreError::RejectedItem {
                    task: "label".into(),
                    item: "7".into(),
                    reason: "not JSON".into(),
                },
                StatusCode::BAD_REQUEST,
            ),
            (
                StoreError::Input(Box::new(DocketError::InvalidConfig("bad".into()))),
                StatusCode::BAD_REQUEST,
            ),
            (
                StoreError::database("connection reset"),
                StatusCode::SERVICE_UNAVAILABLE,
            ),
        ];
        for (e, status) in cases {
            let text = e.to_string();
            assert_eq!(WebError::from(e).status(), status, "{text}");
        }
        // The same through the scheduler's error type.
        let wrapped = WebError::from(DocketError::Store(StoreError::conflict("x")));
        assert_eq!(wrapped.status(), StatusCode::CONFLICT);
    }
}
