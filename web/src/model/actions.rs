//! The writes: run now, reschedule, cancel, bulk actions, pause and resume, and a worker's
//! actions, each checked against the version the caller saw and guarded in one statement.

use super::reads::*;
use super::views::*;
use crate::error::WebError;
use crate::state::{blocking, AppState, Web};
use chrono::{DateTime, Utc};
use docket_core::queue::ListedItem;
use docket_core::store::{Changes, Guard, ListFilter};
use docket_core::ExecutionKey;

/// Pause or resume a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAction {
    /// Stop every scheduler claiming it.
    Pause,
    /// Let them claim it again.
    Resume,
}

impl TaskAction {
    /// From the URL's last segment.
    pub fn parse(action: &str) -> Result<Self, WebError> {
        match action {
            "pause" => Ok(Self::Pause),
            "resume" => Ok(Self::Resume),
            other => Err(WebError::NotFound(format!(
                "no action {other:?}: pause or resume"
            ))),
        }
    }

    /// What it did: `paused`, `resumed`, or that nothing changed.
    pub fn done(self, changed: bool) -> &'static str {
        match (self, changed) {
            (Self::Pause, true) => "paused",
            (Self::Pause, false) => "paused already",
            (Self::Resume, true) => "resumed",
            (Self::Resume, false) => "not paused",
        }
    }
}

/// What `paused_by` records for a pause from the dashboard.
pub const PAUSED_BY: &str = "docket web";

/// What a guarded write needs the row (at the version the caller saw) to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Not picked (single actions).
    Unpicked,
    /// Not picked and failing (bulk actions: the state their confirmation showed).
    FailingUnpicked,
}

/// One audit line on standard error: `docket web audit: <time> <what>` (a failed write to
/// stderr is not the request's failure). Names in `what` are written `{:?}`, so a line feed or
/// control character in one cannot forge another line.
pub fn audit(what: &str) {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr().lock(),
        "docket web audit: {} {}",
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        what
    );
}

/// What an execution action changes.
#[derive(Debug, Clone, Copy)]
pub enum ExecAction {
    /// Reschedule to now.
    RunNow,
    /// Reschedule to a given time.
    Reschedule,
    /// Remove.
    Cancel,
}

impl ExecAction {
    /// From the URL's last segment.
    pub fn parse(action: &str) -> Result<Self, WebError> {
        match action {
            "run-now" => Ok(Self::RunNow),
            "reschedule" => Ok(Self::Reschedule),
            "cancel" => Ok(Self::Cancel),
            other => Err(WebError::NotFound(format!(
                "no action {other:?}: run-now, reschedule or cancel"
            ))),
        }
    }

    /// Past tense.
    pub fn done(self) -> &'static str {
        match self {
            Self::RunNow => "run now",
            Self::Reschedule => "rescheduled",
            Self::Cancel => "cancelled",
        }
    }

    /// Applies it; returns the row afterwards (`None` after cancel).
    pub async fn apply(
        self,
        web: &AppState,
        key: ExecutionKey,
        version: i64,
        at: Option<&str>,
    ) -> Result<Option<ExecutionView>, WebError> {
        let at = match self {
            Self::Reschedule => Some(parse_time(at.ok_or_else(|| {
                WebError::BadRequest("reschedule needs a time (field \"at\")".into())
            })?)?),
            _ => None,
        };
        blocking(web, move |w| {
            match self {
                Self::RunNow => w.reschedule(&key, version, w.clock.now())?,
                Self::Reschedule => {
                    w.reschedule(&key, version, at.unwrap_or_else(|| w.clock.now()))?
                }
                Self::Cancel => {
                    w.cancel(&key, version)?;
                    return Ok(None);
                }
            }
            w.execution(&key).map(Some)
        })
        .await
    }
}

/// A worker's action on an item they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerAction {
    /// Hand it in.
    Submit,
    /// Decline it for good.
    Skip,
    /// Give it back; hidden from the worker for a while.
    GiveBack,
}

impl WorkerAction {
    /// From the URL's last segment.
    pub fn parse(action: &str) -> Result<Self, WebError> {
        match action {
            "submit" => Ok(Self::Submit),
            "skip" => Ok(Self::Skip),
            "give-back" => Ok(Self::GiveBack),
            other => Err(WebError::NotFound(format!(
                "no worker action {other:?}: submit, skip or give-back"
            ))),
        }
    }

    /// Past tense, for the confirmation.
    pub fn done(self) -> &'static str {
        match self {
            Self::Submit => "submitted",
            Self::Skip => "skipped",
            Self::GiveBack => "given back",
        }
    }
}

fn stale(key: &ExecutionKey, version: i64) -> WebError {
    WebError::Conflict(format!(
        "{}/{} changed since version {version} was shown (or is gone); nothing was changed. \
         Reload the page and try again.",
        key.task_name, key.task_instance
    ))
}

/// Parses a time given in a form or the API: RFC 3339 (`2026-01-02T03:04:05Z`), or a
/// `datetime-local` value read as UTC (`2026-01-02T03:04` or with seconds).
pub fn parse_time(value: &str) -> Result<DateTime<Utc>, WebError> {
    let value = value.trim();
    let parsed = DateTime::parse_from_rfc3339(value)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            [
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%dT%H:%M",
                "%Y-%m-%d %H:%M:%S%.f",
                "%Y-%m-%d %H:%M",
            ]
            .iter()
            .find_map(|f| chrono::NaiveDateTime::parse_from_str(value, f).ok())
            .map(|t| t.and_utc())
        });
    parsed
        .filter(|t| (1970..=9999).contains(&chrono::Datelike::year(t)))
        .ok_or_else(|| {
            WebError::BadRequest(format!(
                "{value:?} is not a time: use YYYY-MM-DDThh:mm[:ss] (UTC) or RFC 3339, \
                 years 1970 to 9999"
            ))
        })
}

impl Web {
    /// Pauses or resumes `task` cluster-wide; whether anything changed. Every change is
    /// written to standard error as an audit line (who: `via`, e.g. the client address).
    ///
    /// A task is paused only if it has an execution (a typo must not report success while
    /// the real task runs on), or, with `unknown_confirmed`, a name with no execution yet
    /// that holds no control, bidi or zero-width character (a look-alike of a real name).
    pub(crate) fn pause_or_resume(
        &self,
        task: &str,
        action: TaskAction,
        unknown_confirmed: bool,
        via: &str,
    ) -> Result<bool, WebError> {
        let changed = match action {
            TaskAction::Pause => {
                self.check_pausable(task, unknown_confirmed)?;
                self.client.pause(task, Some(PAUSED_BY))?
            }
            TaskAction::Resume => self.client.resume(task)?,
        };
        audit(&format!(
            "{} task {task:?} in {} ({via}): {}",
            match action {
                TaskAction::Pause => "pause",
                TaskAction::Resume => "resume",
            },
            self.table,
            action.done(changed)
        ));
        Ok(changed)
    }

    /// Whether `task` may be paused: it has an execution (two index seeks, unpicked and
    /// picked, at most one row each), or it is confirmed and its name holds no hidden
    /// character.
    fn check_pausable(&self, task: &str, unknown_confirmed: bool) -> Result<(), WebError> {
        let shown = task
            .chars()
            .map(|c| {
                if crate::links::hidden_char(c) {
                    format!("\\u{{{:04X}}}", u32::from(c))
                } else {
                    c.to_string()
                }
            })
            .collect::<String>();
        for picked in [false, true] {
            let any = self.client.list_scheduled(&ListFilter {
                task_name: Some(task.to_owned()),
                picked: Some(picked),
                limit: Some(1),
                ..ListFilter::default()
            })?;
            if !any.is_empty() {
                return Ok(());
            }
        }
        if unknown_confirmed {
            if task.chars().any(crate::links::hidden_char) {
                return Err(WebError::BadRequest(format!(
                    "{shown:?} holds control, bidi or zero-width characters: it is not paused \
                     without an execution of that name"
                )));
            }
            return Ok(());
        }
        Err(WebError::NotFound(format!(
            "no execution of task {shown:?} in {}: nothing was paused. Check the name; to \
             pause a task that has no execution yet, POST /api/tasks/{{task}}/pause?confirm=unknown",
            self.table
        )))
    }

    /// The executions a bulk action on `task` would change: its failing executions that are
    /// not picked, in hand-out order, at most [`BULK_LIMIT`] (one statement).
    pub(crate) fn bulk_preview(&self, task: &str) -> Result<BulkPreview, WebError> {
        let meta = self.meta();
        let now = meta.now;
        let mut rows: Vec<ExecutionView> = self
            .client
            .list_scheduled(&ListFilter {
                task_name: Some(task.to_owned()),
                picked: Some(false),
                failing_only: true,
                limit: Some(BULK_LIMIT + 1),
            })?
            .into_iter()
            .map(|e| self.view(e, now))
            .collect();
        let more = rows.len() as i64 > BULK_LIMIT;
        rows.truncate(BULK_LIMIT as usize);
        Ok(BulkPreview {
            meta,
            task: task.to_owned(),
            rows,
            more,
            limit: BULK_LIMIT,
        })
    }

    /// Applies a confirmed bulk action to `rows` (as the preview listed them, at most
    /// [`BULK_LIMIT`]): each row is changed only if, at the version confirmed, it is still
    /// failing and not picked (checked on the row read, then written by one statement
    /// guarded by that version), else skipped with the reason; one audit line names every
    /// row changed.
    pub(crate) fn bulk_apply(
        &self,
        task: &str,
        action: BulkAction,
        rows: &[BulkRow],
        at: Option<DateTime<Utc>>,
        via: &str,
    ) -> Result<BulkResult, WebError> {
        if rows.is_empty() {
            return Err(WebError::BadRequest(
                "no executions to change: confirm the rows the preview listed".into(),
            ));
        }
        if rows.len() as i64 > BULK_LIMIT {
            return Err(WebError::BadRequest(format!(
                "{} executions sent; a bulk action changes at most {BULK_LIMIT}",
                rows.len()
            )));
        }
        let at = match action {
            BulkAction::Reschedule => Some(at.ok_or_else(|| {
                WebError::BadRequest("reschedule needs a time (field \"at\")".into())
            })?),
            _ => at,
        };
        let mut changed: Vec<BulkChanged> = Vec::new();
        let mut skipped = Vec::new();
        let now = self.clock.now();
        // Named in the audit line with `{:?}`: a line feed in an instance id stays `\n`.
        let names = |rows: &[BulkChanged]| {
            rows.iter()
                .map(|r| format!("{:?}", r.instance))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for row in rows {
            let key = ExecutionKey::new(task, &row.instance);
            let outcome = self
                .check_at_version(&key, row.version, Expect::FailingUnpicked)
                .and_then(|_| match action {
                    BulkAction::Retry => self.reschedule_at_version(&key, row.version, now),
                    BulkAction::Reschedule => {
                        self.reschedule_at_version(&key, row.version, at.unwrap_or(now))
                    }
                    BulkAction::Cancel => self.cancel_at_version(&key, row.version),
                });
            match outcome {
                Ok(()) => changed.push(BulkChanged {
                    instance: row.instance.clone(),
                    version: row.version,
                }),
                Err(e @ (WebError::Conflict(_) | WebError::NotFound(_))) => {
                    skipped.push(BulkSkipped {
                        instance: row.instance.clone(),
                        reason: e.to_string(),
                    })
                }
                Err(e) => {
                    audit(&format!(
                        "bulk {} of task {task:?} in {} ({via}): {} {} [{}], then failed: {e}",
                        action.as_str(),
                        self.table,
                        changed.len(),
                        action.done(),
                        names(&changed)
                    ));
                    return Err(e);
                }
            }
        }
        audit(&format!(
            "bulk {} of task {task:?} in {} ({via}): {} of {} {} [{}], {} skipped",
            action.as_str(),
            self.table,
            changed.len(),
            rows.len(),
            action.done(),
            names(&changed),
            skipped.len()
        ));
        Ok(BulkResult {
            task: task.to_owned(),
            action,
            done: changed.len(),
            changed,
            skipped,
        })
    }

    /// Reschedules an execution that is not running to `at` (run now: `at` = now), if it is
    /// still at `version`: the row read at `version` must not be picked, and the write is one
    /// statement guarded by `version` (every change of a row, a claim included, bumps its
    /// version), so a row changed between the check and the write is left alone (`409`).
    pub(crate) fn reschedule(
        &self,
        key: &ExecutionKey,
        version: i64,
        at: DateTime<Utc>,
    ) -> Result<(), WebError> {
        self.check_at_version(key, version, Expect::Unpicked)?;
        self.reschedule_at_version(key, version, at)
    }

    /// Cancels (removes) an execution that is not running, if it is still at `version`; as
    /// [`Web::reschedule`], the removal is one statement guarded by `version`.
    pub(crate) fn cancel(&self, key: &ExecutionKey, version: i64) -> Result<(), WebError> {
        self.check_at_version(key, version, Expect::Unpicked)?;
        self.cancel_at_version(key, version)
    }

    /// The write of [`Web::reschedule`]: one `UPDATE ... WHERE <key> AND version = ?`; then,
    /// when the row is due, the backend's wake-up signal (PostgreSQL `NOTIFY`), as
    /// `SchedulerClient::reschedule` sends it.
    fn reschedule_at_version(
        &self,
        key: &ExecutionKey,
        version: i64,
        at: DateTime<Utc>,
    ) -> Result<(), WebError> {
        let at = docket_core::clock::to_micros(at);
        let changes = Changes {
            execution_time: Some(at),
            ..Changes::default()
        };
        if !self
            .client
            .store()
            .execution_update(key, Guard::Version(version), &changes)?
        {
            return Err(stale(key, version));
        }
        if at <= self.clock.now() {
            if let Some(signals) = &self.signals {
                signals.announce();
            }
        }
        Ok(())
    }

    /// The write of [`Web::cancel`]: one `DELETE ... WHERE <key> AND version = ?`.
    fn cancel_at_version(&self, key: &ExecutionKey, version: i64) -> Result<(), WebError> {
        if !self
            .client
            .store()
            .execution_remove(key, Guard::Version(version))?
        {
            return Err(stale(key, version));
        }
        Ok(())
    }

    /// The execution exists, is a scheduler execution, is at `version`, and at that version
    /// is in the state `expect` names. A write guarded by `version` then changes exactly the
    /// row checked here.
    fn check_at_version(
        &self,
        key: &ExecutionKey,
        version: i64,
        expect: Expect,
    ) -> Result<ExecutionView, WebError> {
        let e = self.execution(key)?;
        if e.version != version {
            return Err(stale(key, version));
        }
        if matches!(e.state, State::Running | State::Dead) {
            return Err(WebError::Conflict(format!(
                "{}/{} is {} (picked by {}); only executions that are not running can be \
                 changed",
                key.task_name,
                key.task_instance,
                e.state.as_str(),
                e.picked_by.as_deref().unwrap_or("?")
            )));
        }
        if expect == Expect::FailingUnpicked && e.consecutive_failures <= 0 {
            return Err(WebError::Conflict(format!(
                "{}/{} is not failing: a bulk action changes failing executions only",
                key.task_name, key.task_instance
            )));
        }
        Ok(e)
    }

    /// `next_for`: claims the next item for `worker`; `None` when there is none.
    pub(crate) fn take_next(
        &self,
        task_type: &str,
        worker: &str,
    ) -> Result<Option<ItemView>, WebError> {
        check_worker(worker)?;
        self.check_type_exists(task_type)?;
        let queue = self.queue()?;
        let Some(item) = queue.next_for(worker, task_type)? else {
            return Ok(None);
        };
        let listed = queue
            .item_with_assignments(&item.key, ASSIGNMENT_ROWS)?
            .ok_or_else(|| item_missing(&item.key))?;
        Ok(Some(item_view(listed, true)?))
    }

    /// Submit, skip or give back (hidden from the worker for `hide_for`, default the queue's)
    /// an item `worker` holds, if it is still at `version`.
    pub(crate) fn finish(
        &self,
        key: &ExecutionKey,
        worker: &str,
        action: WorkerAction,
        version: i64,
        hide_for: Option<std::time::Duration>,
    ) -> Result<(), WebError> {
        check_worker(worker)?;
        // `item` finds work-queue items only: a scheduler execution's key is not found.
        let queue = self.queue()?;
        let ListedItem {
            item,
            version: now_version,
            ..
        } = queue
            .item_with_assignments(key, 0)?
            .ok_or_else(|| item_missing(key))?;
        if now_version != version {
            return Err(stale(key, version));
        }
        if item.held_by.as_deref() != Some(worker) {
            return Err(WebError::Conflict(format!(
                "{}/{} is not held by worker {worker:?}{}",
                key.task_name,
                key.task_instance,
                item.held_by
                    .map(|w| format!(" (held by {w:?})"))
                    .unwrap_or_default()
            )));
        }
        match action {
            WorkerAction::Submit => queue.submit(worker, key)?,
            WorkerAction::Skip => queue.skip(worker, key)?,
            WorkerAction::GiveBack => match hide_for {
                None => queue.give_back(worker, key)?,
                Some(hide_for) => {
                    let hide_for = chrono::Duration::from_std(hide_for).map_err(|_| {
                        WebError::BadRequest(format!("hide_for {hide_for:?} is too long"))
                    })?;
                    let until = self
                        .clock
                        .now()
                        .checked_add_signed(hide_for)
                        .ok_or_else(|| {
                            WebError::BadRequest("hide_for ends past the last time".into())
                        })?;
                    queue.give_back_until(worker, key, until)?
                }
            },
        }
        Ok(())
    }
}
