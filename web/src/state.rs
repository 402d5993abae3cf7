//! The state every handler shares ([`Web`]), who may do what ([`Access`]) and
//! the blocking pool the synchronous client and work-queue APIs run on. Depends on `auth`,
//! `hosts`, `links` and `error` only; `model` adds the reads and writes (`impl Web`), `pages`
//! and `api` serve them.

use crate::auth;
use crate::error::{Error, WebError};
use crate::hosts;
use crate::links::BasePath;
use docket_core::store::WakeSignals;
use docket_core::{Clock, QueueConfig, SchedulerClient, SchedulerConfig, Store, WorkQueue};
use std::sync::Arc;

/// Shortest token accepted in [`Access::Token`]: a short one could be guessed despite the
/// sign-in rate limit.
pub const MIN_TOKEN_LEN: usize = 16;

/// Who may do what.
#[derive(Debug, Clone)]
pub enum Access {
    /// `docket web`'s own: writes need `token` (`None`: read-only), and so do reads unless
    /// [`crate::Dashboard::open_reads`]; browsers sign in at `/login` and get a session
    /// cookie, API clients send `Authorization: Bearer <token>`, wrong tokens are rate-limited
    /// per source, and only requests whose `Host` is in `hosts` are answered.
    Token {
        /// What writes need (`None`: read-only); at least [`MIN_TOKEN_LEN`] characters.
        token: Option<String>,
        /// `Host` values answered to.
        hosts: hosts::Hosts,
        /// Whether cookies get `Secure`.
        secure_cookies: bool,
    },
    /// The application mounting the router authenticates every request before it reaches the
    /// router (its own middleware): no token, no sign-in page, no session cookie, no `Host`
    /// check. Forms still carry a CSRF value (a `docket_csrf` cookie under the base path,
    /// derived with a per-router secret) and every write checks a same-origin `Origin`; API
    /// writes need `Content-Type: application/json`.
    Trusted {
        /// Whether writes (run now, reschedule, cancel, pause, bulk and worker actions) are
        /// allowed; `false`: a read-only dashboard.
        writes: bool,
        /// Whether the CSRF cookie gets `Secure` (set it when the application is served over
        /// HTTPS).
        secure_cookies: bool,
    },
}

/// Everything a request handler needs; shared behind an `Arc`.
#[derive(Debug)]
pub struct Web {
    pub(crate) client: SchedulerClient,
    /// `Err(reason)` when the table has no work-queue schema (or the backend none).
    pub(crate) queue: Result<WorkQueue, String>,
    pub(crate) queue_config: QueueConfig,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) auth: auth::Secrets,
    /// `Host` values answered to; `None`: any (the application decides).
    pub(crate) hosts: Option<hosts::Hosts>,
    /// Where the router is mounted.
    pub(crate) base: BasePath,
    /// Silence after which a picked execution counts as dead.
    pub(crate) dead_after: chrono::Duration,
    pub(crate) backend: &'static str,
    pub(crate) table: String,
    /// The backend's cross-process wake-ups (PostgreSQL `NOTIFY`), announced after a write
    /// that makes an execution due now.
    pub(crate) signals: Option<Arc<dyn WakeSignals>>,
}

/// The state of the router.
pub type AppState = Arc<Web>;

impl Web {
    /// State over an open store (see [`crate::Dashboard`]).
    pub(crate) fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        queue_config: QueueConfig,
        access: Access,
        base_path: &str,
        csrf_key: Option<[u8; 32]>,
        open_reads: bool,
    ) -> Result<Self, Error> {
        let base = BasePath::new(base_path)?;
        let (auth, hosts) = match access {
            Access::Token {
                token,
                hosts,
                secure_cookies,
            } => {
                if let Some(t) = &token {
                    let len = t.chars().count();
                    if len < MIN_TOKEN_LEN {
                        return Err(Error::ShortToken {
                            len,
                            min: MIN_TOKEN_LEN,
                        });
                    }
                }
                let auth =
                    auth::Secrets::for_mode(None, None, token, base.as_str(), secure_cookies)?
                        .with_open_reads(open_reads);
                (auth, Some(hosts))
            }
            Access::Trusted {
                writes,
                secure_cookies,
            } => {
                let auth = auth::Secrets::for_mode(
                    Some(writes),
                    csrf_key,
                    None,
                    base.as_str(),
                    secure_cookies,
                )?;
                (auth, None)
            }
        };
        let client = SchedulerClient::with_clock(store.clone(), clock.clone())?;
        let queue = WorkQueue::with_clock(store.clone(), clock.clone(), queue_config.clone())
            .map_err(|e| e.to_string());
        // The scheduler's defaults: 5 min heartbeat x 6 missed heartbeats = 30 min.
        let dead_after = chrono::Duration::from_std(SchedulerConfig::default().dead_after())
            .unwrap_or(chrono::Duration::minutes(30));
        Ok(Self {
            signals: store.wake_signals(),
            backend: store.backend(),
            table: store.config().table.to_string(),
            client,
            queue,
            queue_config,
            clock,
            auth,
            hosts,
            base,
            dead_after,
        })
    }

    /// The table shown.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The backend's name (`postgres`, `sqlite`, ...).
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// The `Host` values answered to (token mode); `None`: any.
    pub fn hosts(&self) -> Option<&[String]> {
        self.hosts.as_ref().map(hosts::Hosts::list)
    }

    /// The base path (`""` at the root).
    pub fn base_path(&self) -> &str {
        self.base.as_str()
    }

    /// The work queue, or why there is none.
    pub(crate) fn queue(&self) -> Result<&WorkQueue, WebError> {
        self.queue
            .as_ref()
            .map_err(|reason| WebError::NotFound(format!("this table has no work queue: {reason}")))
    }
}

/// Runs `f` on the blocking pool (the store API is synchronous).
pub(crate) async fn blocking<T: Send + 'static>(
    web: &AppState,
    f: impl FnOnce(&Web) -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    let web = web.clone();
    tokio::task::spawn_blocking(move || f(&web))
        .await
        .map_err(|e| WebError::Internal(format!("request worker failed: {e}")))?
}
