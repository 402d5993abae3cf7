//! The docket dashboard as an axum [`Router`]: an operator overview, task, execution and
//! work-queue pages, a worker page, a JSON API and `/metrics`, over a docket [`Store`].
//!
//! `docket web` serves this router on its own listener (token mode, [`Access::Token`]); an
//! application mounts it under a path of its own, behind its own authentication
//! ([`Access::Trusted`]), as Oban Web mounts in a Phoenix router:
//!
//! ```no_run
//! # fn mount(store: std::sync::Arc<dyn docket_core::Store>) -> Result<(), docket_web::Error> {
//! use docket_web::{Access, Dashboard};
//! let dashboard = Dashboard::new(store, Access::Trusted { writes: true, secure_cookies: true })
//!     .base_path("/ops/docket")
//!     .router()?;
//! let app: axum::Router = axum::Router::new().nest("/ops/docket", dashboard);
//! // ... app.layer(your authentication middleware), then serve it.
//! # Ok(()) }
//! ```
//!
//! Every page is rendered on the server (`pages`) from the same data the JSON API returns
//! (`api`, `model`); the store is synchronous, so every database call runs in
//! `tokio::task::spawn_blocking` (the router needs a multi-threaded tokio runtime). See
//! `docs/WEB.md`, "Mounting the dashboard in your application".

mod api;
mod auth;
mod chart;
mod error;
mod hosts;
mod layers;
mod limit;
mod links;
mod metrics;
mod model;
mod pages;
pub mod serve;
mod state;

/// `#[tokio::test]` functions, one a line, each awaiting one case (as a case runs once per
/// backend): `name_on_sqlite => case(&Sqlite, args);`.
#[cfg(test)]
macro_rules! async_tests {
    ($($test:ident => $case:ident($($arg:expr),*);)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                $case($($arg),*).await;
            }
        )*
    };
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bad_rows;
#[cfg(test)]
mod tests_data;
#[cfg(test)]
mod tests_limits;
#[cfg(test)]
mod tests_metrics;
#[cfg(test)]
mod tests_mount;
#[cfg(test)]
mod tests_race;
#[cfg(test)]
mod tests_timeout;

use axum::routing::{get, post};
use axum::Router;
use docket_core::{Clock, QueueConfig, Store, SystemClock};
use std::sync::Arc;

pub use error::Error;
pub use hosts::{parse_public_host, Hosts};
pub use state::{Access, AppState, Concurrency, Web, MIN_TOKEN_LEN, QUEUE_WAIT};

/// Builds the dashboard: the store to show, who may do what, and where it is mounted.
///
/// ```no_run
/// # fn mount(store: std::sync::Arc<dyn docket_core::Store>) -> Result<(), docket_web::Error> {
/// use docket_web::{Access, Dashboard};
/// let dashboard = Dashboard::new(store, Access::Trusted { writes: true, secure_cookies: true })
///     .base_path("/ops/docket")
///     .router()?;
/// let app: axum::Router = axum::Router::new().nest("/ops/docket", dashboard);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Dashboard {
    store: Arc<dyn Store>,
    access: Access,
    clock: Arc<dyn Clock>,
    queue_config: QueueConfig,
    base_path: String,
    csrf_key: Option<CsrfKey>,
    open_reads: bool,
    concurrency: Concurrency,
}

/// A trusted mode's CSRF key, never shown by `Debug`.
struct CsrfKey([u8; 32]);

impl std::fmt::Debug for CsrfKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CsrfKey(..)")
    }
}

impl Dashboard {
    /// The dashboard of `store`'s table, at the root, on the system clock, with the work queue's
    /// default configuration.
    pub fn new(store: Arc<dyn Store>, access: Access) -> Self {
        Self {
            store,
            access,
            clock: Arc::new(SystemClock),
            queue_config: QueueConfig::default(),
            base_path: String::new(),
            csrf_key: None,
            open_reads: false,
            concurrency: Concurrency::default(),
        }
    }

    /// The path the application mounts the router under (`Router::nest(path, ...)`), which
    /// every link, form action, redirect and cookie path carries: `/ops/docket`. Default: the
    /// root. axum's `nest` strips the prefix before the router sees the request, so the router
    /// cannot find it out itself; a proxy that strips a prefix is served the same way.
    pub fn base_path(mut self, path: impl Into<String>) -> Self {
        self.base_path = path.into();
        self
    }

    /// The clock "now" is read from (tests).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The work queue's configuration: custom orders of task types, `hide_for`.
    pub fn queue_config(mut self, config: QueueConfig) -> Self {
        self.queue_config = config;
        self
    }

    /// [`Access::Trusted`]: the secret the CSRF values are derived with (HMAC-SHA256 of each
    /// browser's `docket_csrf` cookie). Default: 32 random bytes drawn when the router is built,
    /// so a form rendered by one process is refused by another and by the next start. Give
    /// every instance of a load-balanced application the same 32 secret random bytes (from its
    /// secret store, not from source code). Ignored in token mode.
    pub fn csrf_key(mut self, key: [u8; 32]) -> Self {
        self.csrf_key = Some(CsrfKey(key));
        self
    }

    /// [`Access::Token`] with a token: whether reads (pages, the JSON API, `/metrics`) are open
    /// to anyone who can reach the port, only writes needing the token. Default `false`: with
    /// a token, every read needs it too (a session from `/login`, or `Authorization: Bearer`),
    /// since an execution's page shows its task data. Ignored without a token (everything is
    /// read-only and open) and in trusted mode (the application authenticates).
    pub fn open_reads(mut self, open: bool) -> Self {
        self.open_reads = open;
        self
    }

    /// How many page and API requests do database work at once and how many may wait for a
    /// turn (default [`Concurrency::default`]: 2 and 8, waiting at most [`QUEUE_WAIT`]);
    /// past that a request is answered
    /// `503` with `Retry-After: 1` at once. `/metrics` has its own turns (2, and 4 waiting).
    pub fn concurrency(mut self, concurrency: Concurrency) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// The shared state, for [`router`].
    pub fn build(self) -> Result<AppState, Error> {
        Ok(Arc::new(Web::new(
            self.store,
            self.clock,
            self.queue_config,
            self.access,
            &self.base_path,
            state::Options {
                csrf_key: self.csrf_key.map(|k| k.0),
                open_reads: self.open_reads,
                concurrency: self.concurrency,
            },
        )?))
    }

    /// The router, ready to be nested under [`Dashboard::base_path`] or served.
    pub fn router(self) -> Result<axum::Router, Error> {
        Ok(router(self.build()?))
    }
}

/// Every page and API route, behind the request timeout, the `Host` check (token mode), the
/// CSRF cookie (trusted mode), the error pages and the security headers. Token mode adds the
/// sign-in and sign-out routes.
pub fn router(web: AppState) -> Router {
    let mut routes = Router::new()
        .route("/", get(pages::overview))
        .route("/style.css", get(pages::stylesheet));
    if !web.auth.trusted() {
        routes = routes
            .route("/login", get(pages::login_form).post(pages::login))
            .route("/logout", post(pages::logout));
    }
    let mut router = routes
        .route("/search", get(pages::search))
        .route("/tasks/{task}", get(pages::task))
        .route("/tasks/{task}/{action}", post(pages::task_action))
        .route("/tasks/{task}/bulk", get(pages::bulk_preview))
        .route("/tasks/{task}/bulk/{action}", post(pages::bulk_apply))
        .route("/executions/{task}/{instance}", get(pages::execution))
        .route(
            "/executions/{task}/{instance}/{action}",
            post(pages::execution_action),
        )
        .route("/queue", get(pages::queue))
        .route("/queue/{task_type}", get(pages::queue_type))
        .route("/queue/{task_type}/items/{item}", get(pages::item))
        .route("/queue/{task_type}/workers", get(pages::worker_lookup))
        .route("/queue/{task_type}/workers/{worker}", get(pages::worker))
        .route(
            "/queue/{task_type}/workers/{worker}/next",
            post(pages::worker_next),
        )
        .route(
            "/queue/{task_type}/workers/{worker}/items/{item}/{action}",
            post(pages::worker_action),
        )
        .route("/metrics", get(metrics::metrics))
        .route("/api/overview", get(api::overview))
        .route("/api/lag", get(api::lag))
        .route("/api/search", get(api::search))
        .route("/api/tasks/{task}", get(api::task))
        .route("/api/tasks/{task}/{action}", post(api::task_action))
        .route("/api/tasks/{task}/bulk", get(api::bulk_preview))
        .route("/api/tasks/{task}/bulk/{action}", post(api::bulk_apply))
        .route("/api/executions/{task}/{instance}", get(api::execution))
        .route(
            "/api/executions/{task}/{instance}/{action}",
            post(api::execution_action),
        )
        .route("/api/queue", get(api::queue))
        .route("/api/queue/{task_type}", get(api::queue_type))
        .route("/api/queue/{task_type}/items/{item}", get(api::item))
        .route("/api/queue/{task_type}/workers/{worker}", get(api::worker))
        .route(
            "/api/queue/{task_type}/workers/{worker}/next",
            post(api::worker_next),
        )
        .route(
            "/api/queue/{task_type}/workers/{worker}/items/{item}/{action}",
            post(api::worker_action),
        )
        .fallback(pages::not_found)
        .with_state(web.clone())
        .layer(axum::middleware::from_fn_with_state(
            serve::REQUEST_TIMEOUT,
            serve::request_timeout,
        ));
    if web.auth.reads_need_token() {
        router = router.layer(axum::middleware::from_fn_with_state(
            web.clone(),
            layers::require_read_token,
        ));
    }
    if web.hosts.is_some() {
        router = router.layer(axum::middleware::from_fn_with_state(
            web.clone(),
            layers::check_host,
        ));
    }
    if web.auth.trusted() {
        router = router.layer(axum::middleware::from_fn_with_state(
            web.clone(),
            layers::csrf_cookie,
        ));
    }
    router
        .layer(axum::middleware::from_fn_with_state(
            web,
            pages::render_error_page,
        ))
        .layer(axum::middleware::from_fn(layers::security_headers))
}
