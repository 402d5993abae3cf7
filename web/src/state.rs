//! The state every handler shares ([`Web`]) and the blocking pool the synchronous client and
//! work-queue APIs run on. Depends on `auth`, `hosts` and `error` only; `model` adds the
//! reads and writes (`impl Web`), `pages` and `api` serve them.

use super::auth;
use super::error::WebError;
use super::hosts;
use crate::error::CliError;
use docket_core::{Clock, QueueConfig, SchedulerClient, SchedulerConfig, Store, WorkQueue};
use std::sync::Arc;

/// Who may do what: the write token, the `Host` values answered to, cookie flags.
#[derive(Debug, Clone)]
pub struct Access {
    /// What writes need (`None`: read-only).
    pub token: Option<String>,
    /// `Host` values answered to.
    pub hosts: hosts::Hosts,
    /// Whether cookies get `Secure`.
    pub secure_cookies: bool,
}

/// Everything a request handler needs; shared behind an `Arc`.
#[derive(Debug)]
pub struct Web {
    pub(super) client: SchedulerClient,
    /// `Err(reason)` when the table has no work-queue schema (or the backend none).
    pub(super) queue: Result<WorkQueue, String>,
    pub(super) queue_config: QueueConfig,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) auth: auth::Secrets,
    /// `Host` values answered to.
    pub(super) hosts: hosts::Hosts,
    /// Silence after which a picked execution counts as dead.
    pub(super) dead_after: chrono::Duration,
    pub(super) backend: &'static str,
    pub(super) table: String,
}

/// The state of the router.
pub type AppState = Arc<Web>;

impl Web {
    /// State over an open store.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        queue_config: QueueConfig,
        access: Access,
    ) -> Result<Self, CliError> {
        let client = SchedulerClient::with_clock(store.clone(), clock.clone())?;
        let queue = WorkQueue::with_clock(store.clone(), clock.clone(), queue_config.clone())
            .map_err(|e| e.to_string());
        // The scheduler's defaults: 5 min heartbeat x 6 missed heartbeats = 30 min.
        let dead_after = chrono::Duration::from_std(SchedulerConfig::default().dead_after())
            .unwrap_or(chrono::Duration::minutes(30));
        Ok(Self {
            backend: store.backend(),
            table: store.config().table.to_string(),
            client,
            queue,
            queue_config,
            clock,
            auth: auth::Secrets::new(access.token, access.secure_cookies)?,
            hosts: access.hosts,
            dead_after,
        })
    }

    /// The work queue, or why there is none.
    pub(super) fn queue(&self) -> Result<&WorkQueue, WebError> {
        self.queue
            .as_ref()
            .map_err(|reason| WebError::NotFound(format!("this table has no work queue: {reason}")))
    }
}

/// Runs `f` on the blocking pool (the store API is synchronous).
pub(super) async fn blocking<T: Send + 'static>(
    web: &AppState,
    f: impl FnOnce(&Web) -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    let web = web.clone();
    tokio::task::spawn_blocking(move || f(&web))
        .await
        .map_err(|e| WebError::Internal(format!("request worker failed: {e}")))?
}
