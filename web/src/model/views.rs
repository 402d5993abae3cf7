//! What the pages show and the JSON API returns: the views (serialized as the API's JSON) and
//! the limits they are read with.

use super::data::*;
use crate::error::WebError;
use chrono::{DateTime, Utc};
use docket_core::queue::ListedAssignment;
use docket_core::store::PausedRead;
use docket_core::{CappedCount, Execution};
use serde::{Deserialize, Serialize};

/// Due executions counted per task (and for the backlog chart) before counting stops.
pub const DUE_CAP: i64 = 1000;

/// Rows in the running, dead and failing lists and in a task's execution list.
pub const LIST_LIMIT: i64 = 100;

/// Default and largest number of items on a task type's page.
pub const ITEMS_DEFAULT: i64 = 50;

/// Largest `limit` of a task type's page.
pub const ITEMS_MAX: i64 = 500;

/// Items a worker holds listed on their page.
pub const HELD_ROWS: i64 = 100;

/// Items on a worker's list.
pub const WORKER_LIST: i64 = 20;

/// Workers whose lists a task type's page shows.
pub const WORKER_LISTS: usize = 10;

/// Rows of the task and task-type tables (overview, work-queue page), and task names a search
/// looks an instance up in (one primary-key lookup each).
pub const NAME_ROWS: usize = 200;

/// Picked executions read to find [`LIST_LIMIT`] running ones among the dead.
pub const PICKED_SCAN: i64 = 2000;

/// Assignments shown per item on an item's page; on a task type's page, [`CHIPS`].
pub const ASSIGNMENT_ROWS: i64 = 100;

/// Assignments shown per item in a task type's item table.
pub const CHIPS: i64 = 10;

/// Rows each lag range is counted up to ([`Web::lag`](crate::state::Web::lag), `/metrics`).
pub const LAG_CAP: i64 = DUE_CAP;

/// A count that stops at a cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Capped {
    /// Rows counted (at most the cap).
    pub count: i64,
    /// Counting stopped at the cap: there are more.
    pub capped: bool,
}

impl From<CappedCount> for Capped {
    fn from(c: CappedCount) -> Self {
        Self {
            count: c.count,
            capped: c.capped,
        }
    }
}

/// One priority level's waiting rows of a task or task type.
#[derive(Debug, Clone, Serialize)]
pub struct LevelAge {
    /// The level (null: no priority, or priority off).
    pub priority: Option<i16>,
    /// Its oldest waiting row's time.
    pub oldest: DateTime<Utc>,
    /// Seconds since then.
    pub age_secs: i64,
    /// Its waiting rows counted (among the first [`LAG_CAP`] of the task).
    pub count: i64,
}

/// One scheduler task's lag and counts by state.
#[derive(Debug, Clone, Serialize)]
pub struct TaskLag {
    /// Task name.
    pub task: String,
    /// When its oldest due execution fell due (null: none is due).
    pub oldest_due: Option<DateTime<Utc>>,
    /// Seconds since then (0 when none is due).
    pub oldest_due_age_secs: i64,
    /// Due executions (not picked, execution time passed).
    pub due: Capped,
    /// Scheduled for later (not picked).
    pub scheduled: Capped,
    /// Picked, heartbeat fresh (picked minus dead; capped when picked was).
    pub running: Capped,
    /// Picked, heartbeat older than `dead_after` (all of them).
    pub dead: i64,
    /// Paused cluster-wide: no scheduler claims it.
    pub paused: bool,
    /// Due executions by priority level, highest first (one null level with priority off);
    /// a level whose due rows all lie past the first [`LAG_CAP`] is missing.
    pub levels: Vec<LevelAge>,
}

/// One work-queue task type's lag.
#[derive(Debug, Clone, Serialize)]
pub struct TypeLag {
    /// Task type.
    pub task_type: String,
    /// Arrival of its oldest open item (assignable, arrived; null: none).
    pub oldest_open: Option<DateTime<Utc>>,
    /// Seconds since then (0 when none is open).
    pub oldest_open_age_secs: i64,
    /// Open items.
    pub open: Capped,
    /// Items that have not arrived yet.
    pub not_arrived: Capped,
    /// Open items by priority level, as [`TaskLag::levels`].
    pub levels: Vec<LevelAge>,
}

/// What waits and since when, per task and task type ([`docket_core::SchedulerClient::lag`]).
#[derive(Debug, Clone, Serialize)]
pub struct LagView {
    /// Each count stops at this many rows.
    pub cap: i64,
    /// Task names read (the first [`NAME_ROWS`] by name).
    pub names_read: usize,
    /// Whether the table has more names than were read.
    pub names_capped: bool,
    /// The scheduler tasks.
    pub tasks: Vec<TaskLag>,
    /// The work-queue task types.
    pub queue_types: Vec<TypeLag>,
    /// The paused tasks, by name: the first [`NAME_ROWS`] (see `paused_total`).
    pub paused: Vec<PausedView>,
    /// Paused tasks in all.
    pub paused_total: usize,
    /// Each task's limits (`0009_limits`) with what they hold now, by task name: the first
    /// [`NAME_ROWS`] (see `limits_total`); none without the migration.
    pub limits: Vec<LimitView>,
    /// Limited tasks in all.
    pub limits_total: usize,
    /// Task names whose rows could not all be read (a value docket cannot decode), each
    /// with why; listed here in place of their lag. Also `paused_unreadable` when the paused
    /// list itself could not be read.
    pub unreadable: Vec<Unreadable>,
    /// Seconds the read took.
    pub read_secs: f64,
}

/// At most `count` starts in any window of `per_ms` milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct RateView {
    /// Starts allowed per window.
    pub count: u32,
    /// The window in milliseconds.
    pub per_ms: u64,
    /// The rate as `docket limits set --rate` takes it, e.g. `20/1s`.
    pub text: String,
}

impl From<docket_core::Rate> for RateView {
    fn from(r: docket_core::Rate) -> Self {
        let per_ms = u64::try_from(r.per.as_millis()).unwrap_or(u64::MAX);
        let window = [
            ("d", 86_400_000),
            ("h", 3_600_000),
            ("m", 60_000),
            ("s", 1_000),
        ]
        .into_iter()
        .find(|(_, size)| per_ms >= *size && per_ms.is_multiple_of(*size))
        .map_or_else(
            || format!("{per_ms}ms"),
            |(unit, size)| format!("{}{unit}", per_ms / size),
        );
        Self {
            count: r.count,
            per_ms,
            text: format!("{}/{window}", r.count),
        }
    }
}

/// A task's limits the whole cluster keeps (`0009_limits`), with what they hold now.
#[derive(Debug, Clone, Serialize)]
pub struct LimitView {
    /// Task name.
    pub task: String,
    /// At most this many running at once (null: no such limit).
    pub max_running: Option<u32>,
    /// At most this many starts per window.
    pub rate: Option<RateView>,
    /// At most this many running at once per limit key.
    pub max_running_per_key: Option<u32>,
    /// At most this many starts per key per window.
    pub rate_per_key: Option<RateView>,
    /// Executions of the task picked now.
    pub running: i64,
    /// Keys with at least one execution picked now.
    pub running_keys: i64,
    /// Starts in the last window of the task's rate limit (of the per-key one when the task
    /// has none); 0 without a rate limit.
    pub started_in_window: i64,
    /// Due executions not picked (held back while a limit is full), counted up to
    /// [`LAG_CAP`].
    pub due_waiting: Capped,
}

impl LimitView {
    /// The view of `used`, whose due executions were counted up to `cap + 1`.
    pub(crate) fn new(used: docket_core::LimitUse, cap: i64) -> Self {
        let l = used.limit;
        Self {
            task: l.task_name,
            max_running: l.max_running,
            rate: l.rate.map(RateView::from),
            max_running_per_key: l.max_running_per_key,
            rate_per_key: l.rate_per_key.map(RateView::from),
            running: used.running,
            running_keys: used.running_keys,
            started_in_window: used.started_in_window,
            due_waiting: Capped {
                count: used.due_waiting.min(cap),
                capped: used.due_waiting > cap,
            },
        }
    }
}

/// Something a page could not read because a row holds a value docket cannot decode (written
/// by SQL or another program): what, and why. The rest of the page is shown.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    /// The task name, or the part of the page (`per-task counts`, `paused tasks`, ...).
    pub what: String,
    /// The decoding error (the column and the value's problem).
    pub reason: String,
}

/// A task paused cluster-wide (`0008_paused_tasks`).
#[derive(Debug, Clone, Serialize)]
pub struct PausedView {
    /// Task name.
    pub task: String,
    /// Since when (`None` when its row cannot be decoded).
    pub paused_at: Option<DateTime<Utc>>,
    /// Who paused it, as recorded (`docket web` from the dashboard).
    pub paused_by: Option<String>,
    /// Set when its row holds a value docket cannot decode (a `paused_at` out of range,
    /// written by SQL): the column and why. The task is paused all the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

impl From<PausedRead> for PausedView {
    fn from(p: PausedRead) -> Self {
        match p {
            PausedRead::Paused(p) => Self {
                task: p.task_name,
                paused_at: Some(p.paused_at),
                paused_by: p.paused_by,
                unreadable: None,
            },
            PausedRead::Unreadable(u) => Self {
                unreadable: Some(format!("{}: {}", u.column, u.reason)),
                task: u.task_name,
                paused_at: None,
                paused_by: None,
            },
        }
    }
}

/// Most executions one bulk action lists and changes.
pub const BULK_LIMIT: i64 = 200;

/// An action on every failing execution of a task (confirmed first: see
/// [`Web::bulk_preview`](crate::state::Web::bulk_preview)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BulkAction {
    /// Run again now (reschedule to now; the failure count is kept).
    Retry,
    /// Reschedule to a given time.
    Reschedule,
    /// Remove.
    Cancel,
}

impl BulkAction {
    /// From the URL's last segment or the `action` query value.
    pub fn parse(action: &str) -> Result<Self, WebError> {
        match action {
            "retry" => Ok(Self::Retry),
            "reschedule" => Ok(Self::Reschedule),
            "cancel" => Ok(Self::Cancel),
            other => Err(WebError::NotFound(format!(
                "no bulk action {other:?}: retry, reschedule or cancel"
            ))),
        }
    }

    /// Its name in URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::Reschedule => "reschedule",
            Self::Cancel => "cancel",
        }
    }

    /// Past tense.
    pub fn done(self) -> &'static str {
        match self {
            Self::Retry => "retried",
            Self::Reschedule => "rescheduled",
            Self::Cancel => "cancelled",
        }
    }
}

/// What a bulk action would change: the task's failing executions that are not picked, at
/// most [`BULK_LIMIT`], each with the version the confirmation sends back.
#[derive(Debug, Clone, Serialize)]
pub struct BulkPreview {
    /// Facts.
    pub meta: Meta,
    /// Task name.
    pub task: String,
    /// The executions (failing, not picked, in hand-out order).
    pub rows: Vec<ExecutionView>,
    /// Whether there are more than [`BULK_LIMIT`] (run the action again for the rest).
    pub more: bool,
    /// [`BULK_LIMIT`].
    pub limit: i64,
}

/// One execution a confirmed bulk action is to change, as the preview showed it: its exact
/// instance id (the confirmation page carries the rows as one JSON array, so no character of
/// an id can split or forge a row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkRow {
    /// Instance id.
    pub instance: String,
    /// Its version in the preview.
    pub version: i64,
}

/// One execution a bulk action left alone, and why.
#[derive(Debug, Clone, Serialize)]
pub struct BulkSkipped {
    /// Instance id.
    pub instance: String,
    /// Why (it changed since the preview, is running, is gone).
    pub reason: String,
}

/// One execution a bulk action changed.
#[derive(Debug, Clone, Serialize)]
pub struct BulkChanged {
    /// Instance id.
    pub instance: String,
    /// Its version when it was changed (the one confirmed).
    pub version: i64,
}

/// What a bulk action did.
#[derive(Debug, Clone, Serialize)]
pub struct BulkResult {
    /// Task name.
    pub task: String,
    /// The action.
    pub action: BulkAction,
    /// Executions changed (`changed.len()`).
    pub done: usize,
    /// Every execution changed, by instance id.
    pub changed: Vec<BulkChanged>,
    /// Executions left alone.
    pub skipped: Vec<BulkSkipped>,
}

/// `GET /api/lag`.
#[derive(Debug, Clone, Serialize)]
pub struct LagPage {
    /// Facts.
    pub meta: Meta,
    /// The lag.
    pub lag: LagView,
}

/// The state of one execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Not picked, due.
    Due,
    /// Not picked, in the future.
    Scheduled,
    /// Picked, heartbeat fresh.
    Running,
    /// Picked, heartbeat older than `dead_after`.
    Dead,
}

impl State {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Due => "due",
            State::Scheduled => "scheduled",
            State::Running => "running",
            State::Dead => "dead",
        }
    }
}

/// One execution as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutionView {
    /// Task name.
    pub task: String,
    /// Instance id.
    pub instance: String,
    /// Its state.
    pub state: State,
    /// When it is (was) due.
    pub execution_time: DateTime<Utc>,
    /// Priority (null with priority off or unset).
    pub priority: Option<i16>,
    /// Scheduler that picked it.
    pub picked_by: Option<String>,
    /// Last heartbeat.
    pub last_heartbeat: Option<DateTime<Utc>>,
    /// Seconds since the last heartbeat.
    pub heartbeat_age_secs: Option<i64>,
    /// Last success.
    pub last_success: Option<DateTime<Utc>>,
    /// Last failure.
    pub last_failure: Option<DateTime<Utc>>,
    /// Consecutive failures.
    pub consecutive_failures: i32,
    /// Size of the task data in bytes.
    pub data_bytes: Option<usize>,
    /// Fencing token: actions must send it back.
    pub version: i64,
}

impl ExecutionView {
    pub(super) fn new(e: Execution, now: DateTime<Utc>, dead_after: chrono::Duration) -> Self {
        let age = e.last_heartbeat.map(|h| now - h);
        let state = match (e.picked, age) {
            (true, Some(age)) if age >= dead_after => State::Dead,
            (true, _) => State::Running,
            (false, _) if e.execution_time <= now => State::Due,
            (false, _) => State::Scheduled,
        };
        Self {
            state,
            heartbeat_age_secs: age.map(|a| a.num_seconds()),
            data_bytes: e.task_data.as_ref().map(Vec::len),
            task: e.task_name,
            instance: e.task_instance,
            execution_time: e.execution_time,
            priority: e.priority,
            picked_by: e.picked_by,
            last_heartbeat: e.last_heartbeat,
            last_success: e.last_success,
            last_failure: e.last_failure,
            consecutive_failures: e.consecutive_failures,
            version: e.version,
        }
    }
}

/// What happens next to an execution, by its state.
#[derive(Debug, Clone, Serialize)]
pub struct NextStep {
    /// The state it is in.
    pub state: State,
    /// When the next thing happens: due at (scheduled), due since (due), declared dead at
    /// (running, from its last heartbeat; null without one), dead since (dead).
    pub at: Option<DateTime<Utc>>,
    /// The scheduler holding it (running, dead).
    pub on: Option<String>,
    /// One sentence for people.
    pub text: String,
}

/// One execution's page: its columns, its data and what happens next.
#[derive(Debug, Clone, Serialize)]
pub struct ExecutionDetail {
    /// Its columns.
    #[serde(flatten)]
    pub execution: ExecutionView,
    /// Its data.
    pub data: DataView,
    /// What happens next.
    pub next: NextStep,
}

impl NextStep {
    /// `paused`: the task is paused cluster-wide (no scheduler claims it until resumed).
    pub(super) fn of(
        e: &ExecutionView,
        now: DateTime<Utc>,
        dead_after: chrono::Duration,
        paused: bool,
    ) -> Self {
        let owner = e.picked_by.clone().unwrap_or_else(|| "?".to_owned());
        let retry = if e.consecutive_failures > 0 {
            format!(
                " (retry after {} consecutive failure{})",
                e.consecutive_failures,
                if e.consecutive_failures == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let (at, on, text) = match e.state {
            State::Scheduled | State::Due if paused => (
                Some(e.execution_time),
                None,
                format!(
                    "{} {} UTC{retry}; but the task is paused: no scheduler picks it up until \
                     the task is resumed.",
                    if e.state == State::Due {
                        "Due since"
                    } else {
                        "Due at"
                    },
                    e.execution_time.format("%Y-%m-%d %H:%M:%S")
                ),
            ),
            State::Scheduled => (
                Some(e.execution_time),
                None,
                format!(
                    "Due at {} UTC{retry}; a scheduler will pick it up at its first poll after that.",
                    e.execution_time.format("%Y-%m-%d %H:%M:%S")
                ),
            ),
            State::Due => (
                Some(e.execution_time),
                None,
                format!(
                    "Due since {} UTC ({} s){retry}; a scheduler will pick it up at its next poll.",
                    e.execution_time.format("%Y-%m-%d %H:%M:%S"),
                    (now - e.execution_time).num_seconds().max(0)
                ),
            ),
            State::Running => {
                let dies = e.last_heartbeat.map(|h| h + dead_after);
                let text = match dies {
                    Some(d) => format!(
                        "Running on {owner}; if its heartbeat stops, it is declared dead at {} UTC at the earliest.",
                        d.format("%Y-%m-%d %H:%M:%S")
                    ),
                    None => format!("Running on {owner} (no heartbeat yet)."),
                };
                (dies, Some(owner), text)
            }
            State::Dead => {
                let since = e.last_heartbeat.map(|h| h + dead_after);
                let text = format!(
                    "Dead since {} UTC (picked by {owner}, no heartbeat for {} s): a scheduler will revive it by its dead-execution policy.",
                    since.map_or("?".to_owned(), |s| s.format("%Y-%m-%d %H:%M:%S").to_string()),
                    e.heartbeat_age_secs.unwrap_or(0)
                );
                (since, Some(owner), text)
            }
        };
        NextStep {
            state: e.state,
            at,
            on,
            text,
        }
    }
}

/// Counts of one task by state.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    /// All executions.
    pub total: i64,
    /// Due: counted among the first [`DUE_CAP`] due executions (of all tasks on the overview,
    /// of this task on its page) in hand-out order; see `due_capped`.
    pub due: i64,
    /// Counting stopped before every due execution of this task was seen: at least `due`.
    pub due_capped: bool,
    /// Scheduled for later (null when `due_capped`).
    pub scheduled: Option<i64>,
    /// Running.
    pub running: i64,
    /// Dead.
    pub dead: i64,
    /// With consecutive failures (any state).
    pub failing: i64,
}

/// One task's row of the overview.
#[derive(Debug, Clone, Serialize)]
pub struct TaskRow {
    /// Task name.
    pub task: String,
    /// Counts.
    pub counts: Counts,
    /// Earliest execution time.
    pub next_execution_time: Option<DateTime<Utc>>,
    /// The per-task counts could not be read (a row docket cannot decode): `counts` are
    /// missing, not zero.
    pub unreadable: bool,
}

/// One bar of the backlog chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Level {
    /// Priority (null: no priority).
    pub priority: Option<i16>,
    /// Due executions at this level.
    pub due: i64,
    /// Counting stopped in this level: at least `due`.
    pub capped: bool,
}

/// Due executions by priority level, highest first, NULL last.
#[derive(Debug, Clone, Serialize)]
pub struct Backlog {
    /// Whether levels are priorities (`--priority`); else one level holds everything.
    pub by_priority: bool,
    /// Levels with due executions.
    pub levels: Vec<Level>,
    /// Counting stopped at this many.
    pub cap: i64,
    /// Whether it did (levels below the last one are not shown then).
    pub capped: bool,
}

/// Facts about the dashboard shown on every page.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// The clock's now.
    pub now: DateTime<Utc>,
    /// Backend name.
    pub backend: &'static str,
    /// Table.
    pub table: String,
    /// Whether the priority toggle is on.
    pub priority: bool,
    /// Without a token nothing can be changed.
    pub read_only: bool,
    /// Heartbeat silence after which a picked execution is dead.
    pub dead_after_secs: i64,
}

/// The operator's overview.
#[derive(Debug, Clone, Serialize)]
pub struct Overview {
    /// Facts.
    pub meta: Meta,
    /// Counts of all tasks together.
    pub totals: Counts,
    /// Per task counts (the first [`NAME_ROWS`] tasks by name).
    pub tasks: Vec<TaskRow>,
    /// Scheduler tasks in the table (`tasks` holds at most [`NAME_ROWS`]).
    pub tasks_total: usize,
    /// Due backlog by priority, all tasks.
    pub backlog: Backlog,
    /// Running executions (heartbeat fresh), longest silent first.
    pub running: Vec<ExecutionView>,
    /// Dead executions (at most [`LIST_LIMIT`]).
    pub dead: Vec<ExecutionView>,
    /// Dead executions in all.
    pub dead_total: usize,
    /// Executions whose last run failed (at most [`LIST_LIMIT`]; `totals.failing` in all).
    pub failing: Vec<ExecutionView>,
    /// Work-queue task types in the table (at most [`NAME_ROWS`]).
    pub queue_types: Vec<String>,
    /// Work-queue task types in all.
    pub queue_types_total: usize,
    /// What waits and since when, per task and task type.
    pub lag: LagView,
    /// What could not be read (rows docket cannot decode); the rest is shown.
    pub unreadable: Vec<Unreadable>,
}

/// One task's page.
#[derive(Debug, Clone, Serialize)]
pub struct TaskPage {
    /// Facts.
    pub meta: Meta,
    /// Paused since (null: not paused).
    pub paused: Option<PausedView>,
    /// Its limits with what they hold now (null: not limited).
    pub limit: Option<LimitView>,
    /// Counts.
    pub row: TaskRow,
    /// Its due backlog by priority.
    pub backlog: Backlog,
    /// Its executions in hand-out order (at most [`LIST_LIMIT`]).
    pub executions: Vec<ExecutionView>,
    /// Its running and dead executions (at most [`LIST_LIMIT`] of each).
    pub picked: Vec<ExecutionView>,
    /// Its dead executions in all.
    pub dead_total: usize,
    /// Its failing executions.
    pub failing: Vec<ExecutionView>,
    /// What could not be read (rows docket cannot decode); the rest is shown.
    pub unreadable: Vec<Unreadable>,
}

/// A search's hits.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// Facts.
    pub meta: Meta,
    /// Task asked for.
    pub task: Option<String>,
    /// Instance asked for.
    pub instance: Option<String>,
    /// Executions with that instance id (in that task, or in any of the first [`NAME_ROWS`]
    /// task names).
    pub executions: Vec<ExecutionView>,
    /// Task names and types looked in.
    pub names_searched: usize,
    /// Task names and types in the table (more than `names_searched`: name a task to search
    /// in it).
    pub names_total: usize,
    /// Work-queue items with that id.
    pub items: Vec<ItemView>,
    /// With only a task given: that scheduler task (see its page).
    pub task_page: Option<String>,
    /// With only a task type given: that work-queue task type (see its page).
    pub task_type_page: Option<String>,
    /// What could not be read (rows docket cannot decode); the rest is shown.
    pub unreadable: Vec<Unreadable>,
}

/// One work-queue assignment.
#[derive(Debug, Clone, Serialize)]
pub struct AssignmentView {
    /// The worker.
    pub worker: String,
    /// ACCEPTED, SUBMITTED, ..., or `unknown: <stored text>` for a status this version does
    /// not know (the row is shown, not the error).
    pub status: String,
    /// Its deadline (ACCEPTED: lease end; RETURNED/ABANDONED: hidden until).
    pub deadline: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<ListedAssignment> for AssignmentView {
    fn from(a: ListedAssignment) -> Self {
        Self {
            worker: a.worker,
            status: a.status.to_string(),
            deadline: a.deadline,
            updated_at: a.updated_at,
        }
    }
}

/// One work-queue item.
#[derive(Debug, Clone, Serialize)]
pub struct ItemView {
    /// Task type.
    pub task_type: String,
    /// Item id.
    pub item: String,
    /// `{"hitOrder": 1, "hitOrderDate": "2020-03-11T10:15:55.935"}`, or the string
    /// `unreadable: <column>: <why>` for an item whose row cannot be decoded.
    pub record: serde_json::Value,
    /// When it arrives (arrived); `None` for an item whose row cannot be decoded.
    pub available_at: Option<DateTime<Utc>>,
    /// Counted assignments.
    pub assignments: i32,
    /// Most counted assignments.
    pub max_assignments: i32,
    /// Worker holding it now.
    pub held_by: Option<String>,
    /// Custom attributes: an object, or the string `unreadable: <why>` when the stored text
    /// is not a JSON object.
    pub attributes: serde_json::Value,
    /// Size of the payload in bytes.
    pub data_bytes: Option<usize>,
    /// Fencing token: worker actions must send it back.
    pub version: i64,
    /// Its assignments (only where listed; at most [`ASSIGNMENT_ROWS`], or [`CHIPS`] on a
    /// task type's page).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignment_list: Option<Vec<AssignmentView>>,
    /// Its assignments in all (where listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignments_total: Option<usize>,
    /// Set when the item's row holds a value docket cannot decode (a NULL `record_date`
    /// written by SQL): the column and why. The item is listed in its place with its id and
    /// version only; its other fields are empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// Work-queue task types with their counts.
#[derive(Debug, Clone, Serialize)]
pub struct QueuePage {
    /// Facts.
    pub meta: Meta,
    /// Why there is no work queue, if there is none.
    pub unavailable: Option<String>,
    /// Task types (at most [`NAME_ROWS`]).
    pub types: Vec<QueueTypeRow>,
    /// Task types in all.
    pub types_total: usize,
    /// What could not be read (rows docket cannot decode); the rest is shown.
    pub unreadable: Vec<Unreadable>,
}

/// One task type.
#[derive(Debug, Clone, Serialize)]
pub struct QueueTypeRow {
    /// Task type.
    pub task_type: String,
    /// Items.
    pub items: i64,
    /// Earliest arrival.
    pub first_arrival: Option<DateTime<Utc>>,
}

/// A task type's page.
#[derive(Debug, Clone, Serialize)]
pub struct QueueTypePage {
    /// Facts.
    pub meta: Meta,
    /// Task type.
    pub task_type: String,
    /// Items in the type.
    pub total: i64,
    /// The first `limit` items by arrival, each with its assignments.
    pub items: Vec<ItemView>,
    /// The limit asked for.
    pub limit: i64,
    /// What each worker with an assignment among `items` would get next (at most
    /// [`WORKER_LISTS`] workers, [`WORKER_LIST`] items each).
    pub worker_lists: Vec<WorkerList>,
    /// What could not be read (rows docket cannot decode); the rest is shown.
    pub unreadable: Vec<Unreadable>,
}

/// The ids of the items a worker would get next, in order.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerList {
    /// The worker.
    pub worker: String,
    /// Item ids, in hand-out order.
    pub items: Vec<String>,
}

/// One item's page.
#[derive(Debug, Clone, Serialize)]
pub struct ItemPage {
    /// Facts.
    pub meta: Meta,
    /// The item with its assignments.
    pub item: ItemView,
}

/// What a worker sees.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerPage {
    /// Facts.
    pub meta: Meta,
    /// Task type.
    pub task_type: String,
    /// The worker.
    pub worker: String,
    /// Items this worker holds (the first [`HELD_ROWS`] by arrival, plus the one asked for).
    pub held: Vec<ItemView>,
    /// What `next_for` would hand them, in order (`list_for`, at most [`WORKER_LIST`]).
    pub list: Vec<ItemView>,
    /// Seconds a returned item stays hidden from the worker by default.
    pub hide_for_secs: u64,
    /// What could not be read (rows docket cannot decode); the rest is shown.
    pub unreadable: Vec<Unreadable>,
}
