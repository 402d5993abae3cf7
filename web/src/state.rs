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
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
    /// Turns for the pages' and the API's database work.
    pub(crate) pages: Gate,
    /// Turns for `/metrics`, apart from the pages'.
    pub(crate) scrapes: Gate,
    /// Turns for execution pages: the store reads a row's task data whole, which may be
    /// megabytes; one at a time keeps at most one such row in memory.
    pub(crate) rows: Gate,
    /// The thread execution pages run on (see [`RowThread`]).
    rows_thread: RowThread,
}

/// Work for the [`RowThread`].
type Job = Box<dyn FnOnce() + Send>;

/// One thread that runs every execution page's database work. A row's task data may be
/// megabytes, read whole by the driver and copied by the store; on the blocking pool each such
/// read could land on another thread, and glibc's per-thread arenas then keep the freed
/// megabytes of each one (measured: 8 pages of a 20 MB row, one at a time, took the server
/// from 141 to 372 MiB; on one thread, or with `MALLOC_ARENA_MAX=1`, 126 MiB in all). `None`
/// when the thread could not be started: the blocking pool is used then.
#[derive(Debug)]
struct RowThread(Option<Mutex<std::sync::mpsc::Sender<Job>>>);

impl RowThread {
    /// Starts the thread; it ends when the dashboard's state is dropped (the sender with it).
    fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("docket-web-rows".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            });
        Self(started.ok().map(|_| Mutex::new(tx)))
    }
}

/// The state of the router.
pub type AppState = Arc<Web>;

/// What [`crate::Dashboard`] passes to [`Web::new`] besides the store and where it lives.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    /// Trusted mode's CSRF key (drawn when `None`).
    pub(crate) csrf_key: Option<[u8; 32]>,
    /// Token mode: reads need no token.
    pub(crate) open_reads: bool,
    /// Bounds of concurrent page and API work.
    pub(crate) concurrency: Concurrency,
}

impl Web {
    /// State over an open store (see [`crate::Dashboard`]).
    pub(crate) fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        queue_config: QueueConfig,
        access: Access,
        base_path: &str,
        options: Options,
    ) -> Result<Self, Error> {
        let Options {
            csrf_key,
            open_reads,
            concurrency,
        } = options;
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
            pages: Gate::new(concurrency, "page and API"),
            scrapes: Gate::new(
                Concurrency {
                    work: SCRAPE_WORK,
                    queue: SCRAPE_QUEUE,
                },
                "/metrics",
            ),
            rows: Gate::new(
                Concurrency {
                    work: ROW_WORK,
                    queue: ROW_QUEUE,
                },
                "execution page",
            ),
            rows_thread: RowThread::start(),
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

/// Default bound of page and API requests doing database work at once ([`Concurrency`]).
pub const PAGE_WORK: usize = 2;
/// Default number of page and API requests that may wait for a turn; past it, `503` at once.
pub const PAGE_QUEUE: usize = 8;
/// `/metrics` scrapes doing database work at once, apart from the pages' bound.
pub const SCRAPE_WORK: usize = 2;
/// `/metrics` scrapes that may wait for a turn.
pub const SCRAPE_QUEUE: usize = 4;
/// Execution pages (each reads one whole row, its task data included) at once.
pub const ROW_WORK: usize = 1;
/// Execution pages that may wait for a turn.
pub const ROW_QUEUE: usize = 16;
/// Longest wait for a turn before `503`: short, so that a busy answer is a fast one.
pub const QUEUE_WAIT: std::time::Duration = std::time::Duration::from_millis(750);

/// How much database work the dashboard's requests do at once: `work` requests run, `queue`
/// more wait (at most [`QUEUE_WAIT`]) for a turn, any further one is answered `503` at once.
/// A turn is held until the request's database work ends, even when the request itself was
/// answered (timed out) before: the bound is on the work, not on the answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency {
    /// Requests doing database work at once (at least 1).
    pub work: usize,
    /// Requests waiting for a turn.
    pub queue: usize,
}

impl Default for Concurrency {
    /// 2 at once, 8 waiting: well below the pool's default 10
    /// connections, so `/metrics` (its own 2 turns) and the schedulers' `NOTIFY`
    /// still get one, and few enough that page work (scans of the table) leaves the
    /// database's CPUs to the scrapes on a small machine (2 cores measured).
    fn default() -> Self {
        Self {
            work: PAGE_WORK,
            queue: PAGE_QUEUE,
        }
    }
}

/// Turns for database work: a semaphore and a bounded queue in front of it.
#[derive(Debug)]
pub(crate) struct Gate {
    pub(crate) turns: Arc<Semaphore>,
    /// Turns in all.
    work: usize,
    waiting: AtomicUsize,
    queue: usize,
    what: &'static str,
}

impl Gate {
    pub(crate) fn new(limits: Concurrency, what: &'static str) -> Self {
        Self {
            turns: Arc::new(Semaphore::new(limits.work.max(1))),
            work: limits.work.max(1),
            waiting: AtomicUsize::new(0),
            queue: limits.queue,
            what,
        }
    }

    /// A turn: at once if one is free, else after waiting in the queue (at most
    /// [`QUEUE_WAIT`]); `Busy` when the queue is full or the wait ran out.
    async fn enter(&self) -> Result<OwnedSemaphorePermit, WebError> {
        if let Ok(turn) = self.turns.clone().try_acquire_owned() {
            return Ok(turn);
        }
        let busy = |why: &str| WebError::Busy {
            message: format!(
                "docket web is busy: all {} turns for {} requests are reading the database and \
                 {why}; try again in a moment",
                self.work, self.what
            ),
            retry_after_secs: 1,
        };
        let queued = Queued::join(&self.waiting);
        if queued.ahead >= self.queue {
            return Err(busy("the queue is full"));
        }
        match tokio::time::timeout(QUEUE_WAIT, self.turns.clone().acquire_owned()).await {
            Ok(Ok(turn)) => Ok(turn),
            _ => Err(busy("no turn came free in time")),
        }
    }
}

/// A place in a [`Gate`]'s queue, given up when dropped.
struct Queued<'a> {
    waiting: &'a AtomicUsize,
    /// Requests that were waiting before this one.
    ahead: usize,
}

impl<'a> Queued<'a> {
    fn join(waiting: &'a AtomicUsize) -> Self {
        let ahead = waiting.fetch_add(1, Ordering::SeqCst);
        Self { waiting, ahead }
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` on the blocking pool (the store API is synchronous), in a turn of the pages'
/// [`Gate`].
pub(crate) async fn blocking<T: Send + 'static>(
    web: &AppState,
    f: impl FnOnce(&Web) -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    let turn = web.pages.enter().await?;
    run(web, turn, f).await
}

/// As [`blocking`], in a turn of `/metrics`' own [`Gate`]: a scrape never waits behind page
/// work.
pub(crate) async fn blocking_scrape<T: Send + 'static>(
    web: &AppState,
    f: impl FnOnce(&Web) -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    let turn = web.scrapes.enter().await?;
    run(web, turn, f).await
}

/// As [`blocking`], in a turn of the execution pages' own [`Gate`] (one at a time: a row's task
/// data is read whole, whatever its size).
pub(crate) async fn blocking_row<T: Send + 'static>(
    web: &AppState,
    f: impl FnOnce(&Web) -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    let turn = web.rows.enter().await?;
    let Some(sender) = &web.rows_thread.0 else {
        return run(web, turn, f).await;
    };
    let (answer, answered) = tokio::sync::oneshot::channel();
    let w = web.clone();
    let job: Job = Box::new(move || {
        // Held until the database work ends, even if the request was answered before.
        let _turn = turn;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&w)))
            .unwrap_or_else(|_| {
                Err(WebError::Internal(
                    "an execution page's worker panicked".into(),
                ))
            });
        let _ = answer.send(result);
    });
    sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send(job)
        .map_err(|_| WebError::Internal("the execution pages' thread has stopped".into()))?;
    answered
        .await
        .map_err(|_| WebError::Internal("the execution pages' thread has stopped".into()))?
}

async fn run<T: Send + 'static>(
    web: &AppState,
    turn: OwnedSemaphorePermit,
    f: impl FnOnce(&Web) -> Result<T, WebError> + Send + 'static,
) -> Result<T, WebError> {
    let web = web.clone();
    tokio::task::spawn_blocking(move || {
        // Held until the database work ends, even if the request was answered before.
        let _turn = turn;
        f(&web)
    })
    .await
    .map_err(|e| WebError::Internal(format!("request worker failed: {e}")))?
}
