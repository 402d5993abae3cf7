//! What the pages show and the JSON API returns, read through the client and work-queue APIs
//! only (`SchedulerClient`, `WorkQueue`): no store call and no SQL of its own, and every read
//! bounded by a limit in its statement.
//!
//! States of an execution (`docs/WEB.md`): **due** (not picked, execution time passed),
//! **scheduled** (not picked, in the future), **running** (picked, heartbeat fresh), **dead**
//! (picked, heartbeat at least `dead_after` old: the scheduler's default heartbeat interval x
//! missed-heartbeats limit, 5 min x 6 = 30 min), and **failing** (consecutive failures > 0,
//! across the other four).

use crate::error::WebError;
use crate::state::{blocking, AppState, Web};
use chrono::{DateTime, Utc};
use docket_core::queue::{
    Item, ItemRead, ItemsQuery, ListedAssignment, ListedItem, UnreadableItem, MAX_WORKER_LEN,
};
use docket_core::store::PausedRead;
use docket_core::store::{Changes, Guard, ListFilter};
use docket_core::{CappedCount, DeadPage, Execution, ExecutionKey, LevelLag};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

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

/// Rows each lag range is counted up to ([`Web::lag`], `/metrics`).
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
    /// Task names whose rows could not all be read (a value docket cannot decode), each
    /// with why; listed here in place of their lag. Also `paused_unreadable` when the paused
    /// list itself could not be read.
    pub unreadable: Vec<Unreadable>,
    /// Seconds the read took.
    pub read_secs: f64,
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

/// `Ok(read)`, or, when a row could not be decoded, `fallback` with the failure noted in
/// `notes` under `what`; any other failure is returned.
pub(crate) fn or_unreadable<T>(
    read: Result<T, WebError>,
    fallback: impl FnOnce() -> T,
    what: &str,
    notes: &mut Vec<Unreadable>,
) -> Result<T, WebError> {
    match read {
        Err(WebError::Unreadable(reason)) => {
            notes.push(Unreadable {
                what: what.to_owned(),
                reason,
            });
            Ok(fallback())
        }
        other => other,
    }
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

/// Most executions one bulk action lists and changes.
pub const BULK_LIMIT: i64 = 200;

/// An action on every failing execution of a task (confirmed first: see [`Web::bulk_preview`]).
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

/// What `paused_by` records for a pause from the dashboard.
pub const PAUSED_BY: &str = "docket web";

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
    fn new(e: Execution, now: DateTime<Utc>, dead_after: chrono::Duration) -> Self {
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

/// Bytes of task data shown as JSON on an execution's page; longer text is cut there.
pub const DATA_SHOWN: usize = 64 * 1024;
/// Bytes of task data read to tell and show JSON: nothing past them is parsed, whatever the
/// data's size. Data up to this size is checked as a whole to be JSON (without building it
/// in memory); longer data is shown as JSON when these first bytes read as JSON.
pub const DATA_SCANNED: usize = 256 * 1024;
/// Bytes of binary task data shown in hex.
pub const HEX_HEAD: usize = 64;

/// An execution's task data as its page shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DataView {
    /// No data (NULL).
    None,
    /// The data is JSON (or, past [`DATA_SCANNED`] bytes, its first bytes read as JSON):
    /// re-indented from the stored text, keys in stored order, cut at [`DATA_SHOWN`] bytes.
    Json {
        /// Size in bytes.
        bytes: usize,
        /// Pretty-printed (with `truncated`, the first [`DATA_SHOWN`] bytes of it, or of the
        /// first [`DATA_SCANNED`] bytes of the data).
        pretty: String,
        /// Whether `pretty` was cut.
        truncated: bool,
    },
    /// Not JSON: its size and first [`HEX_HEAD`] bytes in hex.
    Binary {
        /// Size in bytes.
        bytes: usize,
        /// The first bytes, two hex digits each, space separated.
        hex_head: String,
        /// What the bytes look like, when known (`Java-serialized object` for db-scheduler's
        /// default serializer).
        looks_like: Option<&'static str>,
    },
}

impl DataView {
    /// How `data` is shown. Reads at most [`DATA_SCANNED`] bytes of it and writes at most
    /// [`DATA_SHOWN`] bytes of text: memory and time are bounded whatever the data holds (a
    /// 20 MB document is neither parsed into a tree nor pretty-printed whole).
    pub fn of(data: Option<&[u8]>) -> Self {
        let Some(data) = data else {
            return DataView::None;
        };
        let head = &data[..data.len().min(DATA_SCANNED)];
        let complete = head.len() == data.len();
        // A whole document is checked by serde_json without building it (`IgnoredAny`); of a
        // longer one only the head is read, by the re-indenter itself.
        let valid = !complete || serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
        if valid {
            if let Some((pretty, cut)) = pretty_json(head, complete, DATA_SHOWN) {
                return DataView::Json {
                    bytes: data.len(),
                    pretty,
                    truncated: cut || !complete,
                };
            }
        }
        let hex_head = data
            .iter()
            .take(HEX_HEAD)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        let looks_like = data
            .starts_with(&docket_core::records::JAVA_SERIALIZATION_MAGIC)
            .then_some("Java-serialized object (db-scheduler's default serializer)");
        DataView::Binary {
            bytes: data.len(),
            hex_head,
            looks_like,
        }
    }
}

/// Text that stops growing at `cap` bytes: what does not fit is dropped and `full` set.
struct Bounded {
    buf: Vec<u8>,
    cap: usize,
    full: bool,
}

impl Bounded {
    fn new(cap: usize) -> Self {
        Self {
            buf: Vec::with_capacity(cap.min(4096)),
            cap,
            full: false,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.full {
            return;
        }
        let room = self.cap - self.buf.len();
        if bytes.len() > room {
            self.buf.extend_from_slice(&bytes[..room]);
            self.full = true;
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn line(&mut self, depth: usize) {
        self.push(b"\n");
        for _ in 0..depth {
            if self.full {
                return;
            }
            self.push(b"  ");
        }
    }

    /// The text, cut back to a whole character.
    fn into_string(self) -> String {
        match String::from_utf8(self.buf) {
            Ok(s) => s,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).unwrap_or_default()
            }
        }
    }
}

/// `input` (JSON text, or with `complete` false the first bytes of it) re-indented as
/// serde_json's pretty printer does (two spaces, `"key": value`), without building a tree:
/// one pass, written into a [`Bounded`] of `cap` bytes; strings are copied with their `\u`
/// escapes of printable characters decoded (so the page shows a bidi override as such). The
/// text and whether it was cut; `None` when `input` does not read as JSON (a stray character,
/// unbalanced brackets, a raw control character in a string, or, when `complete`, an
/// unclosed bracket or string).
fn pretty_json(input: &[u8], complete: bool, cap: usize) -> Option<(String, bool)> {
    let mut out = Bounded::new(cap);
    let mut open: Vec<u8> = Vec::new();
    let mut i = 0;
    let skip_ws = |mut j: usize| {
        while j < input.len() && matches!(input[j], b' ' | b'\t' | b'\n' | b'\r') {
            j += 1;
        }
        j
    };
    i = skip_ws(i);
    if i == input.len() {
        return None;
    }
    while i < input.len() {
        let b = input[i];
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' | b'[' => {
                let close = if b == b'{' { b'}' } else { b']' };
                let next = skip_ws(i + 1);
                if next < input.len() && input[next] == close {
                    out.push(&[b, close]);
                    i = next + 1;
                } else {
                    open.push(close);
                    out.push(&[b]);
                    out.line(open.len());
                    i += 1;
                }
            }
            b'}' | b']' => {
                if open.pop() != Some(b) {
                    return None;
                }
                out.line(open.len());
                out.push(&[b]);
                i += 1;
            }
            b',' => {
                if open.is_empty() {
                    return None;
                }
                out.push(b",");
                out.line(open.len());
                i += 1;
            }
            b':' => {
                if open.last() != Some(&b'}') {
                    return None;
                }
                out.push(b": ");
                i += 1;
            }
            b'"' => match copy_string(input, i, &mut out) {
                Ok(end) => i = end,
                // The head ends inside this string.
                Err(Unread::Cut) if !complete => i = input.len(),
                Err(_) => return None,
            },
            b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' => {
                let start = i;
                while i < input.len()
                    && matches!(input[i], b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
                {
                    i += 1;
                }
                out.push(&input[start..i]);
            }
            _ => return None,
        }
    }
    if complete && !open.is_empty() {
        return None;
    }
    let cut = out.full;
    Some((out.into_string(), cut))
}

/// Why a string was not copied whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unread {
    /// The input ends inside it.
    Cut,
    /// It is not a JSON string (a raw control character, a bad escape).
    Bad,
}

/// Copies the JSON string starting at `input[start]` (`"`) into `out`; the index past its
/// closing quote.
fn copy_string(input: &[u8], start: usize, out: &mut Bounded) -> Result<usize, Unread> {
    out.push(b"\"");
    let mut i = start + 1;
    let mut run = i;
    while i < input.len() {
        match input[i] {
            b'"' => {
                out.push(&input[run..=i]);
                return Ok(i + 1);
            }
            c if c < 0x20 => return Err(Unread::Bad),
            b'\\' => {
                out.push(&input[run..i]);
                let (text, len) = unescape(&input[i..])?;
                match text {
                    Some(c) => {
                        let mut buf = [0u8; 4];
                        out.push(c.encode_utf8(&mut buf).as_bytes());
                    }
                    None => out.push(&input[i..i + len]),
                }
                i += len;
                run = i;
            }
            _ => i += 1,
        }
    }
    out.push(&input[run..]);
    Err(Unread::Cut)
}

/// The escape at the start of `input` (`\n`, `\u00e9`, a surrogate pair): the character to
/// write instead of it, when serde_json would write it raw (a `\u` escape of a printable
/// character, `\/`), else `None` (keep the escape), and the escape's length.
fn unescape(input: &[u8]) -> Result<(Option<char>, usize), Unread> {
    let hex4 = |from: usize| -> Result<u32, Unread> {
        let digits = input.get(from..from + 4).ok_or(Unread::Cut)?;
        std::str::from_utf8(digits)
            .ok()
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or(Unread::Bad)
    };
    match input.get(1).ok_or(Unread::Cut)? {
        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => Ok((None, 2)),
        b'/' => Ok((Some('/'), 2)),
        b'u' => {
            let first = hex4(2)?;
            let (code, len) = if (0xD800..0xDC00).contains(&first) {
                let low = match input.get(6..8) {
                    None => return Err(Unread::Cut),
                    Some(b"\\u") => Some(hex4(8)?),
                    Some(_) => None,
                };
                match low {
                    Some(low) if (0xDC00..0xE000).contains(&low) => {
                        (0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00), 12)
                    }
                    _ => return Ok((None, 6)),
                }
            } else {
                (first, 6)
            };
            let c = char::from_u32(code).filter(|c| !c.is_control() && !matches!(c, '"' | '\\'));
            Ok((c, len))
        }
        _ => Err(Unread::Bad),
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
    fn of(
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

impl Web {
    /// Facts shown on every page.
    pub(crate) fn meta(&self) -> Meta {
        Meta {
            now: self.clock.now(),
            backend: self.backend,
            table: self.table.clone(),
            priority: self.client.config().ordering.priority,
            read_only: self.auth.read_only(),
            dead_after_secs: self.dead_after.num_seconds(),
        }
    }

    /// Scheduler task names (rows that are not work-queue items), and work-queue task types.
    fn names(
        &self,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<(Vec<String>, Vec<String>), WebError> {
        let all: Vec<String> = self
            .summary(unreadable)?
            .0
            .into_iter()
            .map(|s| s.task_name)
            .collect();
        self.split_names(all)
    }

    /// The per-task summary; when a row cannot be decoded, the first [`NAME_ROWS`] task
    /// names (one seek each) with their counts missing, noted in `unreadable`. The flag says
    /// whether the counts were read.
    fn summary(
        &self,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<(Vec<docket_core::store::TaskSummary>, bool), WebError> {
        let read = self.client.summary().map_err(WebError::from);
        let fallback = || None;
        if let Some(summary) =
            or_unreadable(read.map(Some), fallback, "per-task counts", unreadable)?
        {
            return Ok((summary, true));
        }
        let names = self.client.store().execution_names_after(None, NAME_ROWS)?;
        let rows = names
            .into_iter()
            .map(|task_name| docket_core::store::TaskSummary {
                task_name,
                total: 0,
                picked: 0,
                failing: 0,
                next_execution_time: None,
            })
            .collect();
        Ok((rows, false))
    }

    fn split_names(&self, all: Vec<String>) -> Result<(Vec<String>, Vec<String>), WebError> {
        let tasks = self.client.task_names()?;
        let task_set: HashSet<&String> = tasks.iter().collect();
        let types = if self.queue.is_ok() {
            all.iter()
                .filter(|n| !task_set.contains(n))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        Ok((tasks, types))
    }

    fn view(&self, e: Execution, now: DateTime<Utc>) -> ExecutionView {
        ExecutionView::new(e, now, self.dead_after)
    }

    /// Due executions of `tasks`, by level, and per task, from one due-query reading at most
    /// [`DUE_CAP`] rows in hand-out order ([`docket_core::SchedulerClient::due_counts`]).
    fn backlog(&self, tasks: &[String]) -> Result<(Backlog, HashMap<String, i64>), WebError> {
        let by_priority = self.client.config().ordering.priority;
        if tasks.is_empty() {
            // No scheduler task: nothing to count (an empty list would mean every row).
            let backlog = Backlog {
                by_priority,
                levels: Vec::new(),
                cap: DUE_CAP,
                capped: false,
            };
            return Ok((backlog, HashMap::new()));
        }
        let due = self.client.due_counts(tasks, DUE_CAP)?;
        let count = due.per_level.len();
        let backlog = Backlog {
            by_priority,
            levels: due
                .per_level
                .into_iter()
                .enumerate()
                .map(|(i, (priority, n))| Level {
                    priority,
                    due: n,
                    capped: due.capped && i + 1 == count,
                })
                .collect(),
            cap: DUE_CAP,
            capped: due.capped,
        };
        Ok((backlog, due.per_task))
    }

    /// Picked executions of the scheduler tasks: at most [`LIST_LIMIT`] running and dead ones
    /// each, and the dead ones counted per task. The dead ones are the first page of
    /// [`LIST_LIMIT`] rows (by heartbeat) and one count query grouped by task: the cost does
    /// not grow with the number of dead rows.
    fn picked(&self, tasks: &HashSet<&String>, now: DateTime<Utc>) -> Result<Picked, WebError> {
        let older_than = now - self.dead_after;
        let dead_per_task: HashMap<String, i64> = self
            .client
            .dead_counts(older_than)?
            .into_iter()
            .filter(|(task, _)| tasks.contains(task))
            .collect();
        let dead_total = dead_per_task.values().sum::<i64>() as usize;
        // One task (its page): only its rows; else every task's (work-queue items are never
        // picked, so every dead row is a scheduler task's).
        let only = (tasks.len() == 1).then(|| tasks.iter().next().map(|t| t.to_string()));
        let (first_page, _) = self.client.dead_page(&DeadPage {
            task_name: only.flatten(),
            ..DeadPage::first(older_than, LIST_LIMIT)
        })?;
        let dead: Vec<ExecutionView> = first_page
            .into_iter()
            .filter(|e| tasks.contains(&e.task_name))
            .map(|e| self.view(e, now))
            .collect();
        // Dead rows are picked too: read past them, but never more than PICKED_SCAN rows.
        let scan = (LIST_LIMIT + dead_total as i64).min(PICKED_SCAN);
        let mut running: Vec<ExecutionView> = self
            .client
            .list_scheduled(&ListFilter {
                picked: Some(true),
                limit: Some(scan),
                ..ListFilter::default()
            })?
            .into_iter()
            .filter(|e| tasks.contains(&e.task_name))
            .map(|e| self.view(e, now))
            .filter(|v| v.state == State::Running)
            .collect();
        running.truncate(LIST_LIMIT as usize);
        running.sort_by_key(|v| std::cmp::Reverse(v.heartbeat_age_secs));
        Ok(Picked {
            running,
            dead,
            dead_total,
            dead_per_task,
        })
    }

    fn failing(
        &self,
        task: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Vec<ExecutionView>, WebError> {
        Ok(self
            .client
            .list_scheduled(&ListFilter {
                task_name: task.map(str::to_owned),
                failing_only: true,
                limit: Some(LIST_LIMIT),
                ..ListFilter::default()
            })?
            .into_iter()
            .map(|e| self.view(e, now))
            .collect())
    }

    /// Per-task rows. `due`: counted by [`Web::backlog`]; `capped`: whether it stopped
    /// counting (a task's count is then exact only if every unpicked row of it was counted).
    fn rows(
        &self,
        summary: Vec<docket_core::store::TaskSummary>,
        tasks: &HashSet<&String>,
        dead_per_task: &HashMap<String, i64>,
        due: &HashMap<String, i64>,
        capped: bool,
    ) -> Vec<TaskRow> {
        summary
            .into_iter()
            .filter(|s| tasks.contains(&s.task_name))
            .map(|s| {
                let due = due.get(&s.task_name).copied().unwrap_or(0);
                let unpicked = s.total - s.picked;
                let due_capped = capped && due < unpicked;
                let dead = dead_per_task.get(&s.task_name).copied().unwrap_or(0);
                TaskRow {
                    counts: Counts {
                        total: s.total,
                        due,
                        due_capped,
                        scheduled: (!due_capped).then(|| (unpicked - due).max(0)),
                        running: (s.picked - dead).max(0),
                        dead,
                        failing: s.failing,
                    },
                    next_execution_time: s.next_execution_time,
                    unreadable: false,
                    task: s.task_name,
                }
            })
            .collect()
    }

    /// What waits and since when: the first [`NAME_ROWS`] task names (one primary-key seek
    /// each), then per name the lag indexes' ranges up to [`LAG_CAP`] rows
    /// ([`docket_core::SchedulerClient::lag`]), and the dead executions counted per task (one
    /// statement over the dead rows). No scan of the table.
    pub(crate) fn lag(&self, now: DateTime<Utc>) -> Result<LagView, WebError> {
        let started = std::time::Instant::now();
        let mut unreadable = Vec::new();
        let lag = self.lag_by_name(&mut unreadable)?;
        let dead: HashMap<String, i64> = self
            .client
            .dead_counts(now - self.dead_after)?
            .into_iter()
            .collect();
        // Ages from the time the rows were read.
        let read_at = lag.now;
        let age = |t: Option<DateTime<Utc>>| t.map_or(0, |t| (read_at - t).num_seconds().max(0));
        let levels = |levels: &[LevelLag]| -> Vec<LevelAge> {
            levels
                .iter()
                .map(|l| LevelAge {
                    priority: l.priority,
                    oldest: l.oldest,
                    age_secs: age(Some(l.oldest)),
                    count: l.count,
                })
                .collect()
        };
        // The first NAME_ROWS paused tasks (one bounded statement, and a count), and which of
        // the names read below are paused (one lookup by name each, in one statement).
        let (paused, paused_total) = self.paused_page(&mut unreadable)?;
        let lag_names: Vec<String> = lag
            .names
            .iter()
            .filter(|n| !n.queue_type)
            .map(|n| n.name.clone())
            .collect();
        let paused_names: HashSet<String> = self
            .paused_among(&lag_names, &mut unreadable)?
            .into_iter()
            .map(|p| p.task)
            .collect();
        let mut tasks = Vec::new();
        let mut queue_types = Vec::new();
        let names_read = lag.names.len();
        for n in lag.names {
            if n.queue_type {
                queue_types.push(TypeLag {
                    oldest_open_age_secs: age(n.oldest),
                    oldest_open: n.oldest,
                    open: n.waiting.into(),
                    not_arrived: n.scheduled.into(),
                    levels: levels(&n.levels),
                    task_type: n.name,
                });
            } else {
                let dead = dead.get(&n.name).copied().unwrap_or(0);
                tasks.push(TaskLag {
                    oldest_due_age_secs: age(n.oldest),
                    oldest_due: n.oldest,
                    due: n.waiting.into(),
                    scheduled: n.scheduled.into(),
                    running: Capped {
                        count: (n.picked.count - dead).max(0),
                        capped: n.picked.capped,
                    },
                    dead,
                    paused: paused_names.contains(&n.name),
                    levels: levels(&n.levels),
                    task: n.name,
                });
            }
        }
        Ok(LagView {
            cap: lag.cap,
            names_read,
            names_capped: lag.names_capped,
            tasks,
            queue_types,
            paused,
            paused_total,
            unreadable,
            read_secs: started.elapsed().as_secs_f64(),
        })
    }

    /// [`docket_core::SchedulerClient::lag`], name by name through the store, so that a name
    /// whose rows cannot all be decoded is noted in `unreadable` in its place and the other
    /// names are still read: the first [`NAME_ROWS`] names (one seek each), then per name its
    /// lag ranges up to [`LAG_CAP`] rows.
    fn lag_by_name(&self, unreadable: &mut Vec<Unreadable>) -> Result<docket_core::Lag, WebError> {
        let store = self.client.store();
        let now = self.clock.now();
        let mut names = store.execution_names_after(None, NAME_ROWS + 1)?;
        let names_capped = names.len() > NAME_ROWS;
        names.truncate(NAME_ROWS);
        let mut read = Vec::with_capacity(names.len());
        for name in &names {
            let lag = store
                .execution_name_lag(&docket_core::store::LagQuery {
                    name,
                    now,
                    cap: LAG_CAP,
                    items: self.queue.is_ok(),
                })
                .map_err(WebError::from);
            if let Some(lag) = or_unreadable(lag.map(Some), || None, name, unreadable)? {
                read.push(lag);
            }
        }
        Ok(docket_core::Lag {
            now,
            names: read,
            names_capped,
            cap: LAG_CAP,
        })
    }

    /// The first [`NAME_ROWS`] paused tasks by name and how many are paused in all (one
    /// statement bounded by [`NAME_ROWS`] on `<table>_paused`, and a count when it is full;
    /// none without the migration). A row that cannot be decoded is listed as such and noted
    /// in `unreadable` under `paused tasks`.
    fn paused_page(
        &self,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<(Vec<PausedView>, usize), WebError> {
        let limit = i64::try_from(NAME_ROWS).unwrap_or(i64::MAX);
        let page = self.client.paused_page(limit)?;
        let views = self.paused_views(page.tasks, unreadable);
        Ok((views, usize::try_from(page.total).unwrap_or(usize::MAX)))
    }

    /// Which of `names` are paused (lookups by name); rows that cannot be decoded are listed
    /// as such and noted in `unreadable` under `paused tasks`.
    fn paused_among(
        &self,
        names: &[String],
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<Vec<PausedView>, WebError> {
        let read = self.client.paused_among(names)?;
        Ok(self.paused_views(read, unreadable))
    }

    fn paused_views(
        &self,
        read: Vec<PausedRead>,
        unreadable: &mut Vec<Unreadable>,
    ) -> Vec<PausedView> {
        read.into_iter()
            .map(|p| {
                if let PausedRead::Unreadable(u) = &p {
                    let note = Unreadable {
                        what: "paused tasks".to_owned(),
                        reason: format!("{}: {}: {}", u.task_name, u.column, u.reason),
                    };
                    if !unreadable.iter().any(|n| n.reason == note.reason) {
                        unreadable.push(note);
                    }
                }
                PausedView::from(p)
            })
            .collect()
    }

    /// Whether `task` is paused, and since when (one lookup by name).
    pub(crate) fn paused_of(
        &self,
        task: &str,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<Option<PausedView>, WebError> {
        Ok(self
            .paused_among(&[task.to_owned()], unreadable)?
            .into_iter()
            .find(|p| p.task == task))
    }

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

    /// `GET /api/lag`.
    pub(crate) fn lag_page(&self) -> Result<LagPage, WebError> {
        let meta = self.meta();
        let lag = self.lag(meta.now)?;
        Ok(LagPage { meta, lag })
    }

    /// The operator's overview.
    pub(crate) fn overview(&self) -> Result<Overview, WebError> {
        let meta = self.meta();
        let now = meta.now;
        let mut unreadable = Vec::new();
        let (summary, counted) = self.summary(&mut unreadable)?;
        let (tasks, mut queue_types) =
            self.split_names(summary.iter().map(|s| s.task_name.clone()).collect())?;
        let task_set: HashSet<&String> = tasks.iter().collect();
        let picked = or_unreadable(
            self.picked(&task_set, now),
            Picked::default,
            "running and dead executions",
            &mut unreadable,
        )?;
        let failing = or_unreadable(
            self.failing(None, now),
            Vec::new,
            "failing executions",
            &mut unreadable,
        )?
        .into_iter()
        .filter(|e| task_set.contains(&e.task))
        .collect();
        let (backlog, due) = self.backlog(&tasks)?;
        let mut rows = self.rows(
            summary,
            &task_set,
            &picked.dead_per_task,
            &due,
            backlog.capped,
        );
        for row in rows.iter_mut() {
            row.unreadable = !counted;
        }
        let tasks_total = rows.len();
        let totals = totals(&rows);
        rows.truncate(NAME_ROWS);
        let queue_types_total = queue_types.len();
        queue_types.truncate(NAME_ROWS);
        let lag = self.lag(now)?;
        Ok(Overview {
            lag,
            totals,
            tasks: rows,
            tasks_total,
            backlog,
            running: picked.running,
            dead: picked.dead,
            dead_total: picked.dead_total,
            failing,
            queue_types,
            queue_types_total,
            unreadable,
            meta,
        })
    }

    /// One scheduler task's page; `NotFound` when no execution has that task name.
    pub(crate) fn task(&self, task: &str) -> Result<TaskPage, WebError> {
        let meta = self.meta();
        let now = meta.now;
        let mut unreadable = Vec::new();
        let (summary, counted) = self.summary(&mut unreadable)?;
        let (tasks, _) = if counted {
            self.split_names(summary.iter().map(|s| s.task_name.clone()).collect())?
        } else {
            // Past the first names read: every scheduler task name (one statement).
            let tasks = self.client.task_names()?;
            (tasks, Vec::new())
        };
        let summary = if counted {
            summary
        } else {
            vec![docket_core::store::TaskSummary {
                task_name: task.to_owned(),
                total: 0,
                picked: 0,
                failing: 0,
                next_execution_time: None,
            }]
        };
        let Some(name) = tasks.iter().find(|t| *t == task) else {
            return Err(WebError::NotFound(format!(
                "no scheduler task {task:?} in {}",
                self.table
            )));
        };
        let only: HashSet<&String> = std::iter::once(name).collect();
        let picked = or_unreadable(
            self.picked(&only, now),
            Picked::default,
            "running and dead executions",
            &mut unreadable,
        )?;
        let (backlog, due) = self.backlog(std::slice::from_ref(name))?;
        let mut row = self
            .rows(summary, &only, &picked.dead_per_task, &due, backlog.capped)
            .pop()
            .ok_or_else(|| WebError::NotFound(format!("no scheduler task {task:?}")))?;
        row.unreadable = !counted;
        let executions = or_unreadable(
            self.client
                .list_scheduled(&ListFilter {
                    task_name: Some(task.to_owned()),
                    limit: Some(LIST_LIMIT),
                    ..ListFilter::default()
                })
                .map_err(WebError::from),
            Vec::new,
            "this task's executions",
            &mut unreadable,
        )?
        .into_iter()
        .map(|e| self.view(e, now))
        .collect();
        let paused = self.paused_of(task, &mut unreadable)?;
        let failing = or_unreadable(
            self.failing(Some(task), now),
            Vec::new,
            "failing executions",
            &mut unreadable,
        )?;
        Ok(TaskPage {
            paused,
            backlog,
            row,
            executions,
            picked: picked.running.into_iter().chain(picked.dead).collect(),
            dead_total: picked.dead_total,
            failing,
            unreadable,
            meta,
        })
    }

    /// One execution; `NotFound` when there is none (or the key is a work-queue item).
    /// Primary-key lookups only.
    pub(crate) fn execution(&self, key: &ExecutionKey) -> Result<ExecutionView, WebError> {
        let now = self.clock.now();
        let is_item = match &self.queue {
            Ok(queue) => queue.item(key)?.is_some(),
            Err(_) => false,
        };
        match self.client.get(key)? {
            Some(e) if !is_item => Ok(self.view(e, now)),
            _ => Err(WebError::NotFound(format!(
                "no execution {}/{} in {}",
                key.task_name, key.task_instance, self.table
            ))),
        }
    }

    /// One execution with its data and what happens next; `NotFound` as [`Web::execution`].
    /// Primary-key lookups only.
    pub(crate) fn execution_detail(&self, key: &ExecutionKey) -> Result<ExecutionDetail, WebError> {
        let now = self.clock.now();
        let is_item = match &self.queue {
            Ok(queue) => queue.item(key)?.is_some(),
            Err(_) => false,
        };
        match self.client.get(key)? {
            Some(e) if !is_item => {
                let data = DataView::of(e.task_data.as_deref());
                let execution = self.view(e, now);
                let paused = self.paused_of(&key.task_name, &mut Vec::new())?.is_some();
                let next = NextStep::of(&execution, now, self.dead_after, paused);
                Ok(ExecutionDetail {
                    execution,
                    data,
                    next,
                })
            }
            _ => Err(WebError::NotFound(format!(
                "no execution {}/{} in {}",
                key.task_name, key.task_instance, self.table
            ))),
        }
    }

    /// Executions (and items) with this instance id, in `task` or in every task.
    pub(crate) fn search(
        &self,
        task: Option<String>,
        instance: Option<String>,
    ) -> Result<SearchResult, WebError> {
        let meta = self.meta();
        let now = meta.now;
        let mut unreadable = Vec::new();
        let (tasks, types) = self.names(&mut unreadable)?;
        let mut result = SearchResult {
            meta,
            task: task.clone(),
            instance: instance.clone(),
            executions: Vec::new(),
            names_searched: 0,
            names_total: tasks.len() + types.len(),
            items: Vec::new(),
            task_page: None,
            task_type_page: None,
            unreadable,
        };
        let Some(instance) = instance else {
            let Some(task) = task else {
                return Err(WebError::BadRequest(
                    "search needs a task, an instance id, or both".into(),
                ));
            };
            if tasks.contains(&task) {
                result.task_page = Some(task);
            } else if types.contains(&task) {
                result.task_type_page = Some(task);
            } else {
                return Err(WebError::NotFound(format!(
                    "no task or task type {task:?} in {}",
                    self.table
                )));
            }
            return Ok(result);
        };
        // One primary-key lookup per name: at most NAME_ROWS of them.
        let wanted = |name: &&String| task.as_ref().is_none_or(|t| t == *name);
        let names: Vec<(&String, bool)> = tasks
            .iter()
            .filter(wanted)
            .map(|n| (n, false))
            .chain(types.iter().filter(wanted).map(|n| (n, true)))
            .take(NAME_ROWS)
            .collect();
        result.names_searched = names.len();
        if task.is_some() {
            result.names_total = names.len();
        }
        for (name, is_type) in names {
            let key = ExecutionKey::new(name, &instance);
            match (&self.queue, is_type) {
                (_, false) => {
                    let found = or_unreadable(
                        self.client.get(&key).map_err(WebError::from),
                        || None,
                        &format!("{name}/{instance}"),
                        &mut result.unreadable,
                    )?;
                    if let Some(e) = found {
                        result.executions.push(self.view(e, now));
                    }
                }
                (Ok(queue), true) => {
                    let found = queue.items_with_assignments_read(&ItemsQuery {
                        item: Some(&instance),
                        ..ItemsQuery::new(name, 1)
                    })?;
                    for read in found {
                        result.items.push(read_view(read, false)?);
                    }
                }
                (Err(_), true) => {}
            }
        }
        Ok(result)
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

    // ---- work queue ----

    /// An item `list_for` returned, with its version (one primary-key lookup: the hand-out
    /// list is at most [`WORKER_LIST`] items).
    fn with_version(&self, item: Item) -> Result<ItemView, WebError> {
        let version = self
            .client
            .get(&item.key)?
            .map(|e| e.version)
            .ok_or_else(|| item_missing(&item.key))?;
        item_view(
            ListedItem {
                item,
                version,
                assignments: Vec::new(),
                assignments_total: 0,
            },
            false,
        )
    }

    /// The work-queue task types.
    pub(crate) fn queue_page(&self) -> Result<QueuePage, WebError> {
        let meta = self.meta();
        let unavailable = self.queue.as_ref().err().cloned();
        let mut unreadable = Vec::new();
        let (summary, _) = self.summary(&mut unreadable)?;
        let (_, types) = self.split_names(summary.iter().map(|s| s.task_name.clone()).collect())?;
        let types: HashSet<&String> = types.iter().collect();
        let mut rows: Vec<QueueTypeRow> = summary
            .into_iter()
            .filter(|s| types.contains(&s.task_name))
            .map(|s| QueueTypeRow {
                task_type: s.task_name,
                items: s.total,
                first_arrival: s.next_execution_time,
            })
            .collect();
        let types_total = rows.len();
        rows.truncate(NAME_ROWS);
        Ok(QueuePage {
            meta,
            unavailable,
            types: rows,
            types_total,
            unreadable,
        })
    }

    /// The task type exists in the table; returns its item count (reads the summary: a
    /// scan of the table, for the pages that show the count).
    fn check_type(&self, task_type: &str) -> Result<i64, WebError> {
        self.queue()?;
        // Counts missing (a row docket cannot decode) show as 0 on the type's page.
        let (summary, _) = self.summary(&mut Vec::new())?;
        let (_, types) = self.split_names(summary.iter().map(|s| s.task_name.clone()).collect())?;
        if !types.iter().any(|t| t == task_type) {
            return Err(type_missing(task_type, &self.table));
        }
        Ok(summary
            .iter()
            .find(|s| s.task_name == task_type)
            .map_or(0, |s| s.total))
    }

    /// The task type exists: its first row (by execution time) is a work-queue item. Cheaper
    /// than [`Web::check_type`]; used on the worker's paths.
    fn check_type_exists(&self, task_type: &str) -> Result<(), WebError> {
        let first = self
            .queue()?
            .items_with_assignments_read(&ItemsQuery::new(task_type, 1))?;
        if first.is_empty() {
            return Err(type_missing(task_type, &self.table));
        }
        Ok(())
    }

    /// The items `q` selects with their versions (and their first `q.assignments`
    /// assignments, listed when `q.assignments > 0`), in one statement. If an item changes
    /// after it is read, an action from the page is refused as stale (never the reverse).
    fn items_of(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemView>, WebError> {
        self.queue()?
            .items_with_assignments_read(q)?
            .into_iter()
            .map(|read| read_view(read, q.assignments > 0))
            .collect()
    }

    /// A task type's page.
    pub(crate) fn queue_type(
        &self,
        task_type: &str,
        limit: Option<i64>,
    ) -> Result<QueueTypePage, WebError> {
        let limit = limit.unwrap_or(ITEMS_DEFAULT);
        if !(1..=ITEMS_MAX).contains(&limit) {
            return Err(WebError::BadRequest(format!(
                "limit must be between 1 and {ITEMS_MAX}, got {limit}"
            )));
        }
        let total = self.check_type(task_type)?;
        let items = self.items_of(&ItemsQuery {
            assignments: CHIPS,
            ..ItemsQuery::new(task_type, limit)
        })?;
        let mut workers: Vec<&str> = items
            .iter()
            .flat_map(|i| i.assignment_list.iter().flatten())
            .map(|a| a.worker.as_str())
            .collect();
        workers.sort_unstable();
        workers.dedup();
        let queue = self.queue()?;
        let mut unreadable = Vec::new();
        let mut worker_lists = Vec::new();
        for worker in workers.into_iter().take(WORKER_LISTS) {
            // `list_for` decodes every item it orders: one it cannot decode hides this
            // worker's list, named as unreadable; the page is still shown.
            let list = queue
                .list_for(worker, task_type, WORKER_LIST)
                .map_err(WebError::from);
            let what = format!("what {worker} would get next");
            if let Some(items) = or_unreadable(list.map(Some), || None, &what, &mut unreadable)? {
                worker_lists.push(WorkerList {
                    worker: worker.to_owned(),
                    items: items.into_iter().map(|i| i.key.task_instance).collect(),
                });
            }
        }
        Ok(QueueTypePage {
            meta: self.meta(),
            task_type: task_type.to_owned(),
            total,
            items,
            limit,
            worker_lists,
            unreadable,
        })
    }

    /// One item with its assignments.
    pub(crate) fn item(&self, key: &ExecutionKey) -> Result<ItemPage, WebError> {
        let listed = self
            .queue()?
            .item_with_assignments(key, ASSIGNMENT_ROWS)?
            .ok_or_else(|| item_missing(key))?;
        Ok(ItemPage {
            meta: self.meta(),
            item: item_view(listed, true)?,
        })
    }

    /// What `worker` holds and would get next; `also` is an item they may hold (just taken).
    pub(crate) fn worker(
        &self,
        task_type: &str,
        worker: &str,
        also: Option<&str>,
    ) -> Result<WorkerPage, WebError> {
        check_worker(worker)?;
        self.check_type_exists(task_type)?;
        let queue = self.queue()?;
        let mut held = self.items_of(&ItemsQuery {
            held_by: Some(worker),
            ..ItemsQuery::new(task_type, HELD_ROWS)
        })?;
        if let Some(id) = also.filter(|id| !held.iter().any(|i| i.item == *id)) {
            let found = queue.items_with_assignments_read(&ItemsQuery {
                item: Some(id),
                ..ItemsQuery::new(task_type, 1)
            })?;
            // An item that cannot be decoded is not known to be held: not added.
            if let Some(ItemRead::Listed(listed)) = found.into_iter().next() {
                if listed.item.held_by.as_deref() == Some(worker) {
                    held.insert(0, item_view(listed, false)?);
                }
            }
        }
        let mut unreadable = Vec::new();
        // `list_for` decodes every item it orders: one it cannot decode hides the list, which
        // is named as unreadable while the held items are shown.
        let list = or_unreadable(
            queue
                .list_for(worker, task_type, WORKER_LIST)
                .map_err(WebError::from),
            Vec::new,
            "what this worker would get next",
            &mut unreadable,
        )?
        .into_iter()
        .map(|i| self.with_version(i))
        .collect::<Result<_, _>>()?;
        Ok(WorkerPage {
            meta: self.meta(),
            task_type: task_type.to_owned(),
            worker: worker.to_owned(),
            held,
            list,
            hide_for_secs: self.queue_config.hide_for.as_secs(),
            unreadable,
        })
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

/// An item as the pages show it; with `list`, its assignments as read (an unknown status
/// shows as `unknown: ...` on its own row).
fn item_view(listed: ListedItem, list: bool) -> Result<ItemView, WebError> {
    let ListedItem {
        item,
        version,
        assignments,
        assignments_total,
    } = listed;
    let (assignment_list, assignments_total) = if list {
        let shown = assignments.into_iter().map(AssignmentView::from).collect();
        (Some(shown), Some(assignments_total.max(0) as usize))
    } else {
        (None, None)
    };
    Ok(ItemView {
        record: serde_json::to_value(item.record)
            .map_err(|e| WebError::Internal(format!("record key: {e}")))?,
        // Attributes that do not parse (written by SQL or another program) are shown as such
        // on this item alone, not as the whole page's failure.
        attributes: match item.attributes() {
            Ok(map) => serde_json::Value::Object(map),
            Err(e) => serde_json::Value::String(format!("unreadable: {e}")),
        },
        data_bytes: item.data.as_ref().map(Vec::len),
        task_type: item.key.task_name,
        item: item.key.task_instance,
        available_at: Some(item.available_at),
        assignments: item.assignments,
        max_assignments: item.max_assignments,
        held_by: item.held_by,
        version,
        assignment_list,
        assignments_total,
        unreadable: None,
    })
}

/// An item of a list, decoded or not: one whose row cannot be decoded is shown in its place
/// with its id, its version when readable and why.
fn read_view(read: ItemRead, list: bool) -> Result<ItemView, WebError> {
    match read {
        ItemRead::Listed(listed) => item_view(listed, list),
        ItemRead::Unreadable(bad) => Ok(unreadable_view(bad, list)),
    }
}

/// The view of an item whose row cannot be decoded.
fn unreadable_view(bad: UnreadableItem, list: bool) -> ItemView {
    let why = format!("{}: {}", bad.column, bad.reason);
    ItemView {
        record: serde_json::Value::String(format!("unreadable: {why}")),
        attributes: serde_json::Value::Null,
        data_bytes: None,
        task_type: bad.key.task_name,
        item: bad.key.task_instance,
        available_at: None,
        assignments: 0,
        max_assignments: 0,
        held_by: None,
        version: bad.version.unwrap_or(0),
        assignment_list: list.then(Vec::new),
        assignments_total: list.then_some(0),
        unreadable: Some(why),
    }
}

/// What a guarded write needs the row (at the version the caller saw) to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Not picked (single actions).
    Unpicked,
    /// Not picked and failing (bulk actions: the state their confirmation showed).
    FailingUnpicked,
}

/// Picked executions as the pages show them.
#[derive(Default)]
struct Picked {
    running: Vec<ExecutionView>,
    dead: Vec<ExecutionView>,
    dead_total: usize,
    dead_per_task: HashMap<String, i64>,
}

/// The counts of all `rows` together (`scheduled` only when every row has it).
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

fn totals(rows: &[TaskRow]) -> Counts {
    let mut total = Counts::default();
    for t in rows {
        total.total += t.counts.total;
        total.due += t.counts.due;
        total.due_capped |= t.counts.due_capped;
        total.running += t.counts.running;
        total.failing += t.counts.failing;
        total.dead += t.counts.dead;
    }
    total.scheduled = rows.iter().map(|t| t.counts.scheduled).sum::<Option<i64>>();
    total
}

/// `?task=&instance=` of a search.
#[derive(Debug, Default, Deserialize)]
pub struct SearchQuery {
    /// Task name or task type.
    pub task: Option<String>,
    /// Instance or item id.
    pub instance: Option<String>,
}

impl SearchQuery {
    /// Empty fields are absent.
    pub fn normalized(self) -> (Option<String>, Option<String>) {
        let keep = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
        (keep(self.task), keep(self.instance))
    }
}

/// `?limit=` of a task type's page.
#[derive(Debug, Default, Deserialize)]
pub struct LimitQuery {
    /// Items to show.
    pub limit: Option<i64>,
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

/// A worker name as the assignments table stores it.
pub fn check_worker(worker: &str) -> Result<(), WebError> {
    if worker.trim().is_empty() {
        Err(WebError::BadRequest("the worker name is empty".into()))
    } else if worker.chars().count() > MAX_WORKER_LEN {
        Err(WebError::BadRequest(format!(
            "the worker name is longer than {MAX_WORKER_LEN} characters"
        )))
    } else if worker.chars().any(char::is_control) {
        Err(WebError::BadRequest(
            "the worker name contains control characters".into(),
        ))
    } else {
        Ok(())
    }
}

fn stale(key: &ExecutionKey, version: i64) -> WebError {
    WebError::Conflict(format!(
        "{}/{} changed since version {version} was shown (or is gone); nothing was changed. \
         Reload the page and try again.",
        key.task_name, key.task_instance
    ))
}

fn type_missing(task_type: &str, table: &str) -> WebError {
    WebError::NotFound(format!("no work-queue task type {task_type:?} in {table}"))
}

fn item_missing(key: &ExecutionKey) -> WebError {
    WebError::NotFound(format!(
        "no work-queue item {}/{}",
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
