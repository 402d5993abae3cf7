//! Server-rendered HTML (maud escapes every value it interpolates; the only unescaped
//! insertions are the stylesheet and the chart, which carry no user text).

use crate::auth::local_path;
use crate::chart::backlog_svg;
use crate::error::{HtmlError, WebError};
use crate::limit::ClientIp;
use crate::links::{hidden_char, seg, BasePath};
use crate::model::{
    check_worker, parse_time, AssignmentView, BulkAction, BulkRow, Capped, Counts, DataView,
    ExecAction, ExecutionView, ItemView, LagView, LevelAge, LimitQuery, LimitView, Meta,
    PausedView, SearchQuery, State as ExecState, TaskAction, Unreadable, WorkerAction, BULK_LIMIT,
    DATA_SHOWN, HELD_ROWS, HEX_HEAD, LIST_LIMIT,
};
use crate::state::{blocking, blocking_row, AppState, Web};
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use chrono::{DateTime, Utc};
use docket_core::ExecutionKey;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::Deserialize;

type PageResult = Result<Markup, HtmlError>;

const CSS: &str = include_str!("style.css");

/// `GET /style.css`.
pub async fn stylesheet() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        CSS,
    )
}

/// Percent-encodes a query value.
fn qv(value: &str) -> String {
    seg(value)
}

fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

/// `3 h 12 min`, `4 min 5 s`, `45 s`, `30 min` (zero parts left out).
fn span(secs: i64) -> String {
    let s = secs.unsigned_abs();
    let two = |big: u64, big_unit: &str, small: u64, small_unit: &str| {
        if small == 0 {
            format!("{big} {big_unit}")
        } else {
            format!("{big} {big_unit} {small} {small_unit}")
        }
    };
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => two(s / 60, "min", s % 60, "s"),
        3600..=86_399 => two(s / 3600, "h", (s % 3600) / 60, "min"),
        _ => two(s / 86_400, "d", (s % 86_400) / 3600, "h"),
    }
}

/// `in 5 min 3 s` or `12 s ago`.
fn relative(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let secs = (t - now).num_seconds();
    if secs > 0 {
        format!("in {}", span(secs))
    } else {
        format!("{} ago", span(secs))
    }
}

fn when(t: DateTime<Utc>, now: DateTime<Utc>) -> Markup {
    html! { time datetime=(t.to_rfc3339()) title=(format!("{} UTC", time(t))) { (relative(t, now)) } }
}

fn opt_when(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Markup {
    match t {
        Some(t) => when(t, now),
        None => html! { span.muted { "—" } },
    }
}

/// `value` with every [`hidden_char`] written as a visible `\u{202E}`-style escape.
fn visible(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if hidden_char(c) {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// A value from the database or the request as page text: escaped by maud, hidden characters
/// made [`visible`], and isolated in `<bdi>` so a right-to-left name cannot reorder the text
/// around it.
fn shown(value: &str) -> Markup {
    html! { bdi { (visible(value)) } }
}

/// Who is looking: decides whether action forms are shown.
struct Viewer {
    read_only: bool,
    /// Why, when read-only.
    read_only_reason: &'static str,
    /// The application authenticates: no sign-in, no sign-out.
    trusted: bool,
    signed_in: bool,
    /// Where the router is mounted.
    base: BasePath,
    /// The session's CSRF value; none for visitors who are not signed in.
    csrf: Option<String>,
}

impl Viewer {
    fn of(web: &Web, headers: &HeaderMap) -> Self {
        let csrf = web.auth.session_csrf(headers);
        Self {
            read_only: web.auth.read_only(),
            read_only_reason: web.auth.read_only_reason(),
            trusted: web.auth.trusted(),
            base: web.base.clone(),
            signed_in: csrf.is_some(),
            csrf,
        }
    }

    fn can_act(&self) -> bool {
        !self.read_only && self.signed_in
    }

    fn csrf_field(&self) -> Markup {
        html! { input type="hidden" name="csrf" value=(self.csrf.as_deref().unwrap_or("")); }
    }

    /// What stands in for the action forms when they are not shown.
    fn no_actions(&self, next: &str, what: &str) -> Markup {
        html! {
            @if self.read_only && self.trusted {
                p.note { "Read-only: " (self.read_only_reason) ", so nothing can " (what) " here." }
            } @else if self.read_only {
                p.note { "Read-only: this dashboard was started without " code { "--token-file" } ", so nothing can " (what) " here." }
            } @else if !self.signed_in && !self.trusted {
                p.note { a href=(self.base.login(next)) { "Sign in with the token" } " to " (what) "." }
            }
        }
    }
}

fn layout(
    b: &BasePath,
    title: &str,
    section: &str,
    viewer: Option<&Viewer>,
    meta: Option<&Meta>,
    body: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (visible(title)) " · docket" }
                link rel="stylesheet" href=(b.at("/style.css"));
            }
            body {
                header.top {
                    a.brand href=(b.root()) { span.logo { "▤" } "docket" }
                    nav {
                        a href=(b.root()) class=@if section == "tasks" { "active" } { "Scheduler" }
                        a href=(b.at("/queue")) class=@if section == "queue" { "active" } { "Work queue" }
                    }
                    form.search method="get" action=(b.at("/search")) {
                        input type="search" name="instance" placeholder="Find an instance or item id" aria-label="Instance or item id";
                        button type="submit" { "Search" }
                    }
                    div.who {
                        @match viewer {
                            Some(v) if v.read_only => { span.pill.muted { "read-only" } }
                            Some(v) if v.trusted => {}
                            Some(v) if v.signed_in => {
                                form method="post" action=(b.at("/logout")) {
                                    (v.csrf_field())
                                    span.pill.ok { "signed in" }
                                    button.link type="submit" { "Sign out" }
                                }
                            }
                            Some(_) => { a.pill href=(b.at("/login")) { "Sign in" } }
                            None => {}
                        }
                    }
                }
                main { (body) }
                @if let Some(m) = meta {
                    footer {
                        "Table " code { (m.table) } " on " (m.backend)
                        " · priority " (if m.priority { "on" } else { "off" })
                        " · dead after " (span(m.dead_after_secs)) " without heartbeat"
                        " · rendered " (time(m.now)) " UTC"
                    }
                }
            }
        }
    }
}

/// What a failed request's page shows; put in the response's extensions by
/// [`HtmlError`]'s `IntoResponse` (which does not know the base path) and rendered by
/// [`render_error_page`].
#[derive(Debug, Clone)]
pub struct ErrorPage {
    status: StatusCode,
    title: &'static str,
    message: String,
}

/// Renders the page of a response that carries an [`ErrorPage`] (every [`HtmlError`]), with
/// the router's base path in its links.
pub async fn render_error_page(State(web): State<AppState>, req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    if let Some(page) = res.extensions_mut().remove::<ErrorPage>() {
        *res.body_mut() = axum::body::Body::new(error_page(&web.base, &page).into_string());
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/html; charset=utf-8"),
        );
    }
    res
}

/// The page of a failed request.
fn error_page(b: &BasePath, e: &ErrorPage) -> Markup {
    let status = e.status;
    layout(
        b,
        e.title,
        "",
        None,
        None,
        html! {
            section.card.error {
                p.code { (status.as_u16()) }
                h1 { (e.title) }
                p.message { (shown(&e.message)) }
                p { a href=(b.root()) { "Back to the overview" } }
            }
        },
    )
}

/// Any unknown path: a JSON answer under `/api/`, a page elsewhere.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    let e = WebError::NotFound("there is no such page".into());
    if uri.path() == "/api" || uri.path().starts_with("/api/") {
        crate::error::ApiError(e).into_response()
    } else {
        HtmlError(e).into_response()
    }
}

/// "Showing `shown` of `total` `what`" when a list was cut, with a hint where to look.
fn more(shown: usize, total: usize, what: &str, hint: &str) -> Markup {
    html! {
        @if shown < total {
            p.note.more { "Showing " (shown) " of " (total) " " (what) ": " (hint) "." }
        }
    }
}

fn flash(done: Option<&str>) -> Markup {
    let known = [
        "run now",
        "rescheduled",
        "cancelled",
        "taken",
        "submitted",
        "skipped",
        "given back",
        "nothing to take",
        "signed out",
        "paused",
        "paused already",
        "resumed",
        "not paused",
    ];
    match done.and_then(|d| known.iter().find(|k| **k == d)) {
        Some(d) => html! { p.flash role="status" { "Done: " (d) "." } },
        None => html! {},
    }
}

fn state_badge(state: ExecState) -> Markup {
    html! { span class=(format!("badge state-{}", state.as_str())) { (state.as_str()) } }
}

fn count_cell(n: i64, class: &str) -> Markup {
    // One class attribute: `td.num class=(...)` would write two, and browsers drop the second.
    html! { td class=(format!("num {}", if n > 0 { class } else { "zero" })) { (n) } }
}

fn stat_cards(c: &Counts) -> Markup {
    let due = if c.due_capped {
        format!("≥ {}", c.due)
    } else {
        c.due.to_string()
    };
    let scheduled = c.scheduled.map_or("—".to_owned(), |n| n.to_string());
    html! {
        div.stats {
            div.stat.due { span.n { (due) } span.l { "due" } }
            div.stat.scheduled { span.n { (scheduled) } span.l { "scheduled" } }
            div.stat.running { span.n { (c.running) } span.l { "running" } }
            div.stat.failing { span.n { (c.failing) } span.l { "failing" } }
            div.stat.dead { span.n { (c.dead) } span.l { "dead" } }
        }
    }
}

fn backlog_card(backlog: &crate::model::Backlog, scope: &str) -> Markup {
    html! {
        section.card {
            h2 { "Due backlog by priority level" span.sub { (scope) } }
            (PreEscaped(backlog_svg(backlog)))
            @if backlog.capped {
                p.note { "Counting stops at " (backlog.cap) " due executions: the last level shown has at least its count, lower levels are not shown." }
            }
            @if !backlog.by_priority {
                p.note { "Priority is off (start with " code { "--priority" } " to see one bar per level)." }
            }
        }
    }
}

/// Text with line breaks kept and every other [`hidden_char`] made visible (pretty JSON:
/// serde_json escapes control characters inside strings, but not bidi overrides).
fn visible_lines(text: &str) -> String {
    text.split('\n').map(visible).collect::<Vec<_>>().join("\n")
}

fn data_card(data: &DataView) -> Markup {
    html! {
        section.card #data {
            h2 { "Data" }
            @match data {
                DataView::None => p.empty { "No data." },
                DataView::Json { bytes, pretty, truncated } => {
                    p.sub { "JSON, " (bytes) " bytes" @if *truncated { "; the first " (DATA_SHOWN) " bytes of it pretty-printed" } }
                    pre.data { (visible_lines(pretty)) }
                },
                DataView::Binary { bytes, hex_head, looks_like } => {
                    p.sub { "Not JSON: " (bytes) " bytes" @if let Some(l) = looks_like { " · " (l) } }
                    p { "First " (HEX_HEAD.min(*bytes)) " bytes:" }
                    pre.data.mono { (hex_head) }
                },
            }
        }
    }
}

/// What could not be read because a row holds a value docket cannot decode, each in its place
/// (nothing when all was read).
fn unreadable_card(notes: &[Unreadable]) -> Markup {
    html! {
        @if !notes.is_empty() {
            div.unreadable role="alert" {
                p { strong { "Unreadable rows: " } "a row holds a value docket cannot read (written by SQL or another program); what it hides is missing below, not zero. Fix or delete the row with SQL." }
                ul { @for n in notes { li { (shown(&n.what)) ": " (visible(&n.reason)) } } }
            }
        }
    }
}

/// Pause or resume the task cluster-wide, with what it means.
fn pause_card(
    task: &str,
    paused: Option<&PausedView>,
    viewer: &Viewer,
    now: DateTime<Utc>,
) -> Markup {
    let b = &viewer.base;
    let here = b.task(task);
    html! {
        section #pause class=(if paused.is_some() { "card alert" } else { "card" }) {
            @match paused {
                Some(p) => {
                    h2 { "Paused" }
                    p { "No scheduler claims this task's executions (due ones wait). Paused "
                        @match (p.paused_at, &p.unreadable) {
                            (Some(at), _) => (when(at, now)),
                            (None, Some(why)) => span.unreadable { "at a time docket cannot read (" (visible(why)) ")" },
                            (None, None) => "",
                        }
                        @if let Some(by) = &p.paused_by { " by " (shown(by)) } "." }
                    @if viewer.can_act() {
                        form method="post" action=(format!("{here}/resume")) {
                            (viewer.csrf_field())
                            button.primary type="submit" { "Resume task" }
                        }
                    }
                },
                None => {
                    h2 { "Running normally" }
                    p.note { "Pausing stops every scheduler on this table from claiming the task's executions from its next poll on; running ones finish." }
                    @if viewer.can_act() {
                        form method="post" action=(format!("{here}/pause")) {
                            (viewer.csrf_field())
                            button.danger type="submit" { "Pause task" }
                        }
                    }
                },
            }
            @if !viewer.can_act() { (viewer.no_actions(&here, "pause or resume it")) }
        }
    }
}

fn capped(c: Capped) -> String {
    if c.capped {
        format!("≥ {}", c.count)
    } else {
        c.count.to_string()
    }
}

/// The age of a task's (or type's) oldest waiting row, with its time as a tooltip.
fn age_cell(at: Option<DateTime<Utc>>, secs: i64) -> Markup {
    match at {
        Some(t) => html! {
            td class=(if secs > 0 { "num due" } else { "num zero" }) {
                time datetime=(t.to_rfc3339()) title=(format!("since {} UTC", time(t))) { (span(secs)) }
            }
        },
        None => html! { td.num.zero { "—" } },
    }
}

/// Per level: `p90 5 min · p10 8 min` (the oldest row's age per level).
fn level_ages(levels: &[LevelAge], by_priority: bool) -> Markup {
    html! {
        @if !by_priority || levels.is_empty() {
            span.muted { "—" }
        } @else {
            @for (i, l) in levels.iter().enumerate() {
                @if i > 0 { " · " }
                span.mono { @match l.priority { Some(p) => { "p" (p) }, None => "none" } } " " (span(l.age_secs))
            }
        }
    }
}

fn lag_card(b: &BasePath, lag: &LagView, by_priority: bool) -> Markup {
    html! {
        section.card #lag {
            h2 { "Lag" span.sub { "oldest due execution and oldest open item; also at " a href=(b.at("/metrics")) { "/metrics" } } }
            @if lag.tasks.is_empty() && lag.queue_types.is_empty() {
                p.empty { "Nothing in this table." }
            } @else {
                table {
                    thead { tr { th { "Task" } th.num { "Oldest due" } th { "By priority" } th.num { "Due" } th.num { "Scheduled" } th.num { "Running" } th.num { "Dead" } } }
                    tbody {
                        @for t in &lag.tasks {
                            tr {
                                td {
                                    a href=(b.task(&t.task)) { (shown(&t.task)) }
                                    @if t.paused { " " span.badge.paused { "paused" } }
                                    @if lag.limits.iter().any(|l| l.task == t.task) { " " a.badge.limited href="#limits" { "limited" } }
                                }
                                (age_cell(t.oldest_due, t.oldest_due_age_secs))
                                td { (level_ages(&t.levels, by_priority)) }
                                td.num { (capped(t.due)) }
                                td.num { (capped(t.scheduled)) }
                                td.num { (capped(t.running)) }
                                (count_cell(t.dead, "bad"))
                            }
                        }
                    }
                }
                @if !lag.queue_types.is_empty() {
                    table {
                        thead { tr { th { "Task type" } th.num { "Oldest open item" } th { "By priority" } th.num { "Open" } th.num { "Not arrived" } } }
                        tbody {
                            @for t in &lag.queue_types {
                                tr {
                                    td { a href=(b.task_type(&t.task_type)) { (shown(&t.task_type)) } }
                                    (age_cell(t.oldest_open, t.oldest_open_age_secs))
                                    td { (level_ages(&t.levels, by_priority)) }
                                    td.num { (capped(t.open)) }
                                    td.num { (capped(t.not_arrived)) }
                                }
                            }
                        }
                    }
                }
                p.note { "Counts stop at " (lag.cap) " (shown as ≥). " @if lag.names_capped { "Only the first " (lag.names_read) " task names are shown." } }
                (unreadable_card(&lag.unreadable))
            }
        }
    }
}

/// A limit's bound, or a dash when the task has none of this kind.
fn bound(n: Option<u32>) -> Markup {
    html! { @match n { Some(n) => (n), None => span.muted { "—" } } }
}

fn rate_bound(r: Option<&crate::model::RateView>) -> Markup {
    html! { @match r { Some(r) => span.mono { (r.text) }, None => span.muted { "—" } } }
}

/// The limits the whole cluster keeps, each with what it holds now (read-only: set and clear
/// them with `docket limits` or `SchedulerClient::set_limit`).
fn limits_card(b: &BasePath, limits: &[LimitView], total: usize) -> Markup {
    html! {
        @if !limits.is_empty() {
            section.card #limits {
                h2 { "Limits" span.sub { "kept across every scheduler; set with " code { "docket limits set" } } }
                table {
                    thead { tr {
                        th { "Task" } th.num { "Max running" } th.num { "Rate" } th.num { "Per key" } th.num { "Rate per key" }
                        th.num { "Running" } th.num { "Keys running" } th.num { "Starts in window" } th.num { "Due waiting" }
                    } }
                    tbody {
                        @for l in limits {
                            tr {
                                td { a href=(b.task(&l.task)) { (shown(&l.task)) } }
                                td.num { (bound(l.max_running)) }
                                td.num { (rate_bound(l.rate.as_ref())) }
                                td.num { (bound(l.max_running_per_key)) }
                                td.num { (rate_bound(l.rate_per_key.as_ref())) }
                                td.num { (l.running) }
                                td.num { (l.running_keys) }
                                td.num { (l.started_in_window) }
                                td.num { (capped(l.due_waiting)) }
                            }
                        }
                    }
                }
                p.note { "Due waiting: due executions not picked yet; while a limit is full they are held back, in order, not failed." }
                (more(limits.len(), total, "limited tasks", "`docket limits list` lists them all"))
            }
        }
    }
}

fn executions_table(
    b: &BasePath,
    rows: &[ExecutionView],
    now: DateTime<Utc>,
    empty: &str,
) -> Markup {
    html! {
        @if rows.is_empty() {
            p.empty { (empty) }
        } @else {
            table {
                thead { tr { th { "Task" } th { "Instance" } th { "State" } th { "Due" } th { "Priority" } th.num { "Failures" } } }
                tbody {
                    @for e in rows {
                        tr {
                            td { a href=(b.task(&e.task)) { (shown(&e.task)) } }
                            td { a.mono href=(b.execution(&e.task, &e.instance)) { (shown(&e.instance)) } }
                            td { (state_badge(e.state)) }
                            td { (when(e.execution_time, now)) }
                            td { @match e.priority { Some(p) => (p), None => span.muted { "—" } } }
                            td.num { (e.consecutive_failures) }
                        }
                    }
                }
            }
        }
    }
}

fn picked_table(b: &BasePath, rows: &[ExecutionView], empty: &str) -> Markup {
    html! {
        @if rows.is_empty() {
            p.empty { (empty) }
        } @else {
            table {
                thead { tr { th { "Task" } th { "Instance" } th { "Owner" } th { "Heartbeat age" } th { "State" } } }
                tbody {
                    @for e in rows {
                        tr {
                            td { a href=(b.task(&e.task)) { (shown(&e.task)) } }
                            td { a.mono href=(b.execution(&e.task, &e.instance)) { (shown(&e.instance)) } }
                            td.mono { (shown(e.picked_by.as_deref().unwrap_or("?"))) }
                            td { @match e.heartbeat_age_secs { Some(a) => (span(a)), None => span.muted { "no heartbeat" } } }
                            td { (state_badge(e.state)) }
                        }
                    }
                }
            }
        }
    }
}

fn failing_table(b: &BasePath, rows: &[ExecutionView], now: DateTime<Utc>) -> Markup {
    html! {
        @if rows.is_empty() {
            p.empty { "No execution is failing." }
        } @else {
            table {
                thead { tr { th { "Task" } th { "Instance" } th.num { "Failures" } th { "Last failure" } th { "Last success" } th { "Next try" } } }
                tbody {
                    @for e in rows {
                        tr {
                            td { a href=(b.task(&e.task)) { (shown(&e.task)) } }
                            td { a.mono href=(b.execution(&e.task, &e.instance)) { (shown(&e.instance)) } }
                            td.num.bad { (e.consecutive_failures) }
                            td { (opt_when(e.last_failure, now)) }
                            td { (opt_when(e.last_success, now)) }
                            td { (when(e.execution_time, now)) }
                        }
                    }
                }
            }
        }
    }
}

fn html_query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, WebError> {
    q.map(|Query(q)| q)
        .map_err(|e| WebError::BadRequest(format!("malformed query: {}", e.body_text())))
}

fn html_form<T>(f: Result<Form<T>, FormRejection>) -> Result<T, WebError> {
    f.map(|Form(f)| f)
        .map_err(|e| WebError::BadRequest(format!("malformed form: {}", e.body_text())))
}

/// `?done=` after an action.
#[derive(Debug, Default, Deserialize)]
pub struct DoneQuery {
    done: Option<String>,
    /// Worker page: an item just taken.
    taken: Option<String>,
}

/// `GET /`: the operator's overview.
pub async fn overview(
    State(web): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<DoneQuery>, QueryRejection>,
) -> PageResult {
    let b = &web.base;
    let q = html_query(q)?;
    let o = blocking(&web, |w| w.overview()).await?;
    let viewer = Viewer::of(&web, &headers);
    let now = o.meta.now;
    let body = html! {
        div.title {
            h1 { "Scheduler" }
            p.sub { (o.tasks_total) " tasks · " (o.totals.total) " executions" }
        }
        (flash(q.done.as_deref()))
        (unreadable_card(&o.unreadable))
        (stat_cards(&o.totals))
        div.grid {
            section.card.wide {
                h2 { "Tasks" span.sub { "counts by state" } }
                @if o.tasks.is_empty() {
                    p.empty { "No scheduled executions in this table." }
                } @else {
                    table {
                        thead { tr { th { "Task" } th.num { "Due" } th.num { "Scheduled" } th.num { "Running" } th.num { "Failing" } th.num { "Dead" } th { "Next execution" } } }
                        tbody {
                            @for t in &o.tasks {
                                tr {
                                    td { a href=(b.task(&t.task)) { (shown(&t.task)) } }
                                    @if t.unreadable {
                                        td.num.unreadable colspan="5" { "unreadable" }
                                    } @else if t.counts.due_capped {
                                        td.num.due { "≥ " (t.counts.due) }
                                    } @else {
                                        (count_cell(t.counts.due, "due"))
                                    }
                                    @if !t.unreadable {
                                        td.num { (t.counts.scheduled.map_or("—".to_owned(), |n| n.to_string())) }
                                        (count_cell(t.counts.running, "running"))
                                        (count_cell(t.counts.failing, "bad"))
                                        (count_cell(t.counts.dead, "bad"))
                                    }
                                    td { (opt_when(t.next_execution_time, now)) }
                                }
                            }
                        }
                    }
                    (more(o.tasks.len(), o.tasks_total, "tasks", "find one by name with the search"))
                }
            }
            (backlog_card(&o.backlog, "all tasks"))
        }
        (lag_card(b, &o.lag, o.meta.priority))
        (limits_card(b, &o.lag.limits, o.lag.limits_total))
        section.card {
            h2 { "Running" span.sub { "picked, heartbeat within " (span(o.meta.dead_after_secs)) } }
            (picked_table(b, &o.running, "Nothing is running."))
        }
        @if !o.dead.is_empty() {
            section.card.alert {
                h2 { "Dead" span.sub { "picked, no heartbeat for " (span(o.meta.dead_after_secs)) " or more: a scheduler will revive them" } }
                (picked_table(b, &o.dead, ""))
                (more(o.dead.len(), o.dead_total, "dead executions", "open a task for its own"))
            }
        }
        section.card {
            h2 { "Failing" span.sub { "last run failed (at most " (LIST_LIMIT) ")" } }
            (failing_table(b, &o.failing, now))
        }
        @if !o.queue_types.is_empty() {
            section.card {
                h2 { "Work queue" }
                p { "Task types in this table: "
                    @for (i, t) in o.queue_types.iter().enumerate() {
                        @if i > 0 { ", " }
                        a href=(b.task_type(t)) { (shown(t)) }
                    }
                }
                (more(o.queue_types.len(), o.queue_types_total, "task types", "see the work queue page"))
            }
        }
        (viewer.no_actions(&b.root(), "run, reschedule or cancel executions"))
    };
    Ok(layout(
        b,
        "Scheduler",
        "tasks",
        Some(&viewer),
        Some(&o.meta),
        body,
    ))
}

/// `GET /tasks/{task}`.
pub async fn task(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path(task): Path<String>,
    q: Result<Query<DoneQuery>, QueryRejection>,
) -> PageResult {
    let b = &web.base;
    let q = html_query(q)?;
    let t = blocking(&web, move |w| w.task(&task)).await?;
    let viewer = Viewer::of(&web, &headers);
    let now = t.meta.now;
    let body = html! {
        p.crumbs { a href=(b.root()) { "Scheduler" } " / " }
        div.title {
            h1 { (shown(&t.row.task)) }
            @if t.paused.is_some() { span.badge.paused { "paused" } }
            @if t.limit.is_some() { a.badge.limited href="#limits" { "limited" } }
            p.sub { (t.row.counts.total) " executions" }
        }
        (flash(q.done.as_deref()))
        (unreadable_card(&t.unreadable))
        (pause_card(&t.row.task, t.paused.as_ref(), &viewer, now))
        (limits_card(b, t.limit.as_slice(), usize::from(t.limit.is_some())))
        (stat_cards(&t.row.counts))
        div.grid {
            section.card.wide {
                h2 { "Executions" span.sub { "in hand-out order, first " (LIST_LIMIT) } }
                form.inline method="get" action=(b.at("/search")) {
                    input type="hidden" name="task" value=(t.row.task);
                    input type="search" name="instance" placeholder="Instance id" aria-label="Instance id" required;
                    button type="submit" { "Find" }
                }
                (executions_table(b, &t.executions, now, "No executions."))
            }
            (backlog_card(&t.backlog, &t.row.task))
        }
        section.card {
            h2 { "Running and dead" }
            (picked_table(b, &t.picked, "Nothing of this task is running."))
            @if t.dead_total > LIST_LIMIT as usize {
                p.note { "Showing the first " (LIST_LIMIT) " of " (t.dead_total) " dead executions." }
            }
        }
        section.card {
            h2 { "Failing" }
            (failing_table(b, &t.failing, now))
            @if !t.failing.is_empty() && viewer.can_act() {
                p.actions {
                    "All failing executions that are not running (confirmed first, at most " (BULK_LIMIT) "): "
                    @for a in [BulkAction::Retry, BulkAction::Reschedule, BulkAction::Cancel] {
                        a.button href=(format!("{}/bulk?action={}", b.task(&t.row.task), a.as_str())) { (a.as_str()) } " "
                    }
                }
            }
        }
    };
    Ok(layout(
        b,
        &t.row.task,
        "tasks",
        Some(&viewer),
        Some(&t.meta),
        body,
    ))
}

/// `GET /executions/{task}/{instance}`.
pub async fn execution(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task, instance)): Path<(String, String)>,
    q: Result<Query<DoneQuery>, QueryRejection>,
) -> PageResult {
    let b = &web.base;
    let q = html_query(q)?;
    let key = ExecutionKey::new(task, instance);
    let (detail, meta) =
        blocking_row(&web, move |w| Ok((w.execution_detail(&key)?, w.meta()))).await?;
    let e = &detail.execution;
    let viewer = Viewer::of(&web, &headers);
    let now = meta.now;
    let here = b.execution(&e.task, &e.instance);
    let picked = matches!(e.state, ExecState::Running | ExecState::Dead);
    let body = html! {
        p.crumbs { a href=(b.root()) { "Scheduler" } " / " a href=(b.task(&e.task)) { (shown(&e.task)) } " / " }
        div.title { h1.mono { (shown(&e.instance)) } (state_badge(e.state)) }
        (flash(q.done.as_deref()))
        div.grid {
            section.card {
                h2 { "Execution" }
                dl {
                    dt { "Task" } dd { a href=(b.task(&e.task)) { (shown(&e.task)) } }
                    dt { "Instance" } dd.mono { (shown(&e.instance)) }
                    dt { "Execution time" } dd { (time(e.execution_time)) " UTC · " (when(e.execution_time, now)) }
                    dt { "Priority" } dd { @match e.priority { Some(p) => (p), None => span.muted { "—" } } }
                    dt { "Picked by" } dd.mono { (shown(e.picked_by.as_deref().unwrap_or("—"))) }
                    dt { "Last heartbeat" } dd { (opt_when(e.last_heartbeat, now)) }
                    dt { "Last success" } dd { (opt_when(e.last_success, now)) }
                    dt { "Last failure" } dd { (opt_when(e.last_failure, now)) }
                    dt { "Consecutive failures" } dd { (e.consecutive_failures) }
                    dt { "Data" } dd { @match e.data_bytes { Some(n) => { (n) " bytes" }, None => span.muted { "none" } } }
                    dt { "Version" } dd.mono { (e.version) }
                }
            }
            section.card #next {
                h2 { "Next" }
                p { (visible(&detail.next.text)) }
                @if let Some(at) = detail.next.at { p.sub { (when(at, now)) } }
            }
            section.card {
                h2 { "Actions" }
                @if picked {
                    p.note { "It is " (e.state.as_str()) ": a running execution cannot be changed here." @if e.state == ExecState::Dead { " A scheduler revives dead executions by itself." } }
                } @else if viewer.can_act() {
                    div.actions {
                        form method="post" action=(format!("{here}/run-now")) {
                            (viewer.csrf_field())
                            input type="hidden" name="version" value=(e.version);
                            button.primary type="submit" { "Run now" }
                        }
                        form method="post" action=(format!("{here}/reschedule")) {
                            (viewer.csrf_field())
                            input type="hidden" name="version" value=(e.version);
                            label { "New time (UTC) "
                                input type="datetime-local" name="at" step="1" required value=(e.execution_time.format("%Y-%m-%dT%H:%M:%S").to_string());
                            }
                            button type="submit" { "Reschedule" }
                        }
                        form method="post" action=(format!("{here}/cancel")) {
                            (viewer.csrf_field())
                            input type="hidden" name="version" value=(e.version);
                            button.danger type="submit" { "Cancel execution" }
                        }
                    }
                } @else {
                    (viewer.no_actions(&here, "run, reschedule or cancel it"))
                }
            }
        }
        (data_card(&detail.data))
    };
    Ok(layout(
        b,
        &e.instance,
        "tasks",
        Some(&viewer),
        Some(&meta),
        body,
    ))
}

/// `?action=` of the bulk confirmation page.
#[derive(Debug, Deserialize)]
pub struct BulkQuery {
    action: String,
}

/// `GET /tasks/{task}/bulk?action=retry|reschedule|cancel`: the confirmation page, listing the
/// executions the action would change.
pub async fn bulk_preview(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path(task): Path<String>,
    q: Result<Query<BulkQuery>, QueryRejection>,
) -> PageResult {
    let b = &web.base;
    let action = BulkAction::parse(&html_query(q)?.action)?;
    let p = blocking(&web, move |w| w.bulk_preview(&task)).await?;
    let viewer = Viewer::of(&web, &headers);
    let now = p.meta.now;
    let here = b.task(&p.task);
    // Exact keys: the rows as one JSON array (a line feed or any other character of an
    // instance id is escaped inside its JSON string, so it cannot split or forge a row).
    let rows = serde_json::to_string(
        &p.rows
            .iter()
            .map(|e| BulkRow {
                instance: e.instance.clone(),
                version: e.version,
            })
            .collect::<Vec<_>>(),
    )
    .map_err(|e| WebError::Internal(format!("bulk rows: {e}")))?;
    let body = html! {
        p.crumbs { a href=(b.root()) { "Scheduler" } " / " a href=(here) { (shown(&p.task)) } " / " }
        div.title { h1 { "Confirm: " (action.as_str()) " failing executions" } }
        section.card.alert #bulk {
            @if p.rows.is_empty() {
                p.empty { "No failing execution of this task is waiting: nothing to " (action.as_str()) "." }
            } @else {
                p { "This will " strong { (action.as_str()) } " these " (p.rows.len()) " failing executions of " (shown(&p.task)) " that are not running"
                    @if p.more { " (the first " (p.limit) "; run it again for the rest)" } ". "
                    "A row that changes before you confirm is left alone." }
                @if viewer.can_act() {
                    form method="post" action=(format!("{here}/bulk/{}", action.as_str())) {
                        (viewer.csrf_field())
                        input type="hidden" name="rows" value=(rows);
                        @if action == BulkAction::Reschedule {
                            label { "New time (UTC) " input type="datetime-local" name="at" step="1" required; }
                        }
                        button.danger type="submit" { "Confirm: " (action.as_str()) " " (p.rows.len()) " executions" }
                        " " a href=(here) { "Back" }
                    }
                } @else {
                    (viewer.no_actions(&here, "change executions"))
                }
                (failing_table(b, &p.rows, now))
            }
        }
    };
    Ok(layout(
        b,
        &p.task,
        "tasks",
        Some(&viewer),
        Some(&p.meta),
        body,
    ))
}

/// Fields of a confirmed bulk action form.
#[derive(Debug, Deserialize)]
pub struct BulkForm {
    csrf: String,
    /// `[{"instance": ..., "version": N}, ...]`, as the confirmation page listed them.
    rows: String,
    at: Option<String>,
}

/// `POST /tasks/{task}/bulk/{retry|reschedule|cancel}`: applies the confirmed action and shows
/// what it did.
pub async fn bulk_apply(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task, action)): Path<(String, String)>,
    ClientIp(client): ClientIp,
    f: Result<Form<BulkForm>, FormRejection>,
) -> PageResult {
    let b = &web.base;
    web.auth.check_origin(&headers)?;
    let action = BulkAction::parse(&action)?;
    let f = html_form(f)?;
    web.auth.check_form(&headers, &f.csrf)?;
    let rows = parse_bulk_rows(&f.rows)?;
    let at = match f.at.as_deref() {
        Some(at) if !at.is_empty() => Some(parse_time(at)?),
        _ => None,
    };
    let via = format!(
        "page, from {}",
        client.map_or("an unknown address".to_owned(), |ip| ip.to_string())
    );
    let name = task.clone();
    let (r, meta) = blocking(&web, move |w| {
        Ok((w.bulk_apply(&name, action, &rows, at, &via)?, w.meta()))
    })
    .await?;
    let viewer = Viewer::of(&web, &headers);
    let here = b.task(&task);
    let body = html! {
        p.crumbs { a href=(b.root()) { "Scheduler" } " / " a href=(here) { (shown(&task)) } " / " }
        div.title { h1 { "Bulk " (action.as_str()) } }
        p.flash role="status" { "Done: " (r.done) " " (action.done()) "." }
        @if !r.changed.is_empty() {
            section.card #changed {
                h2 { (r.changed.len()) " " (action.done()) }
                table {
                    thead { tr { th { "Instance" } th { "Version confirmed" } } }
                    tbody { @for c in &r.changed { tr { td.mono { (shown(&c.instance)) } td { (c.version) } } } }
                }
            }
        }
        @if !r.skipped.is_empty() {
            section.card #skipped {
                h2 { (r.skipped.len()) " left alone" }
                table {
                    thead { tr { th { "Instance" } th { "Why" } } }
                    tbody { @for s in &r.skipped { tr { td.mono { (shown(&s.instance)) } td { (visible(&s.reason)) } } } }
                }
            }
        }
        p { a href=(here) { "Back to " (shown(&task)) } }
    };
    Ok(layout(
        b,
        "Bulk action",
        "tasks",
        Some(&viewer),
        Some(&meta),
        body,
    ))
}

/// The confirmation page's hidden field: the rows as a JSON array of `{instance, version}`.
fn parse_bulk_rows(text: &str) -> Result<Vec<BulkRow>, WebError> {
    serde_json::from_str(text).map_err(|e| {
        WebError::BadRequest(format!(
            "malformed rows: expected the confirmation page's JSON list ({e})"
        ))
    })
}

/// Fields of a task action form (pause, resume).
#[derive(Debug, Deserialize)]
pub struct TaskForm {
    csrf: String,
}

/// `POST /tasks/{task}/{pause|resume}`: pauses or resumes the task cluster-wide.
pub async fn task_action(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task, action)): Path<(String, String)>,
    ClientIp(client): ClientIp,
    f: Result<Form<TaskForm>, FormRejection>,
) -> Result<Response, HtmlError> {
    let b = &web.base;
    web.auth.check_origin(&headers)?;
    let action = TaskAction::parse(&action)?;
    let f = html_form(f)?;
    web.auth.check_form(&headers, &f.csrf)?;
    let via = format!(
        "page, from {}",
        client.map_or("an unknown address".to_owned(), |ip| ip.to_string())
    );
    let name = task.clone();
    let changed = blocking(&web, move |w| w.pause_or_resume(&name, action, false, &via)).await?;
    let to = format!("{}?done={}", b.task(&task), qv(action.done(changed)));
    Ok(Redirect::to(&to).into_response())
}

/// Fields of an execution action form.
#[derive(Debug, Deserialize)]
pub struct ActionForm {
    csrf: String,
    version: i64,
    at: Option<String>,
}

/// `POST /executions/{task}/{instance}/{run-now|reschedule|cancel}`.
pub async fn execution_action(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task, instance, action)): Path<(String, String, String)>,
    f: Result<Form<ActionForm>, FormRejection>,
) -> Result<Response, HtmlError> {
    let b = &web.base;
    web.auth.check_origin(&headers)?;
    let action = ExecAction::parse(&action)?;
    let f = html_form(f)?;
    web.auth.check_form(&headers, &f.csrf)?;
    let key = ExecutionKey::new(&task, &instance);
    action.apply(&web, key, f.version, f.at.as_deref()).await?;
    let to = match action {
        ExecAction::Cancel => format!("{}?done=cancelled", b.task(&task)),
        _ => format!(
            "{}?done={}",
            b.execution(&task, &instance),
            qv(action.done())
        ),
    };
    Ok(Redirect::to(&to).into_response())
}

/// `GET /search?task=&instance=`.
pub async fn search(
    State(web): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<SearchQuery>, QueryRejection>,
) -> Result<Response, HtmlError> {
    let b = &web.base;
    let (task, instance) = html_query(q)?.normalized();
    let r = blocking(&web, move |w| w.search(task, instance)).await?;
    if let Some(task) = &r.task_page {
        return Ok(Redirect::to(&b.task(task)).into_response());
    }
    if let Some(task_type) = &r.task_type_page {
        return Ok(Redirect::to(&b.task_type(task_type)).into_response());
    }
    let viewer = Viewer::of(&web, &headers);
    let now = r.meta.now;
    let hits = r.executions.len() + r.items.len();
    let body = html! {
        div.title { h1 { "Search" } }
        (unreadable_card(&r.unreadable))
        section.card {
            form.inline method="get" action=(b.at("/search")) {
                input type="text" name="task" placeholder="Task or task type (any)" value=(r.task.as_deref().unwrap_or("")) aria-label="Task";
                input type="search" name="instance" placeholder="Instance or item id" value=(r.instance.as_deref().unwrap_or("")) aria-label="Instance";
                button type="submit" { "Search" }
            }
            p.sub { (hits) " found for instance " code { (shown(r.instance.as_deref().unwrap_or(""))) }
                @if let Some(t) = &r.task { " in " code { (shown(t)) } } }
            (more(r.names_searched, r.names_total, "task names searched", "give a task to search in it"))
            @if !r.executions.is_empty() {
                h2 { "Executions" }
                (executions_table(b, &r.executions, now, ""))
            }
            @if !r.items.is_empty() {
                h2 { "Work-queue items" }
                (items_table(b, &r.items, false))
            }
        }
    };
    Ok(layout(b, "Search", "", Some(&viewer), Some(&r.meta), body).into_response())
}

fn record(item: &ItemView) -> String {
    item.record.to_string()
}

/// When an item arrived (empty for an item whose row cannot be decoded).
fn arrived(item: &ItemView) -> String {
    item.available_at.map(time).unwrap_or_default()
}

/// Custom attributes as a small table (strings unquoted, other values as JSON).
fn attributes(item: &ItemView) -> Markup {
    html! {
        @if let Some(why) = item.attributes.as_str() {
            p.unreadable { (visible(why)) }
        }
        @if let Some(map) = item.attributes.as_object().filter(|m| !m.is_empty()) {
            dl.attrs {
                @for (name, value) in map {
                    dt { (shown(name)) }
                    dd { @match value.as_str() { Some(s) => (shown(s)), None => (shown(&value.to_string())) } }
                }
            }
        }
    }
}

/// The chip class of an assignment status; `unknown: ...` (a status this version does not
/// know) gets the warning style.
fn status_class(status: &str) -> String {
    if status.starts_with("unknown") {
        "chip bad".to_owned()
    } else {
        format!("chip st-{}", status.to_ascii_lowercase())
    }
}

fn assignment_chips(list: &[AssignmentView]) -> Markup {
    html! {
        @for a in list {
            span class=(status_class(&a.status)) title=(format!("deadline {} UTC", time(a.deadline))) {
                (shown(&a.worker)) " " b { (a.status) }
            }
        }
    }
}

fn items_table(b: &BasePath, items: &[ItemView], assignments: bool) -> Markup {
    html! {
        table {
            thead { tr {
                th { "Item" } th { "Record key" } th { "Arrived" } th.num { "Assignments" } th { "Held by" }
                @if assignments { th { "Assignment status" } }
            } }
            tbody {
                @for i in items {
                    tr {
                        td { a.mono href=(b.item(&i.task_type, &i.item)) { (shown(&i.item)) } }
                        @if let Some(why) = &i.unreadable {
                            td.unreadable colspan=(if assignments { 5 } else { 4 }) { "unreadable: " (visible(why)) }
                        } @else {
                        td { code { (shown(&record(i))) } }
                        td { (arrived(i)) }
                        td.num { (i.assignments) " / " (i.max_assignments) }
                        td.mono { (shown(i.held_by.as_deref().unwrap_or("—"))) }
                        @if assignments { td {
                            @let list = i.assignment_list.as_deref().unwrap_or(&[]);
                            (assignment_chips(list))
                            @let total = i.assignments_total.unwrap_or(0);
                            @if list.len() < total { a href=(b.item(&i.task_type, &i.item)) { "+" (total - list.len()) " more" } }
                        } }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /queue`.
pub async fn queue(State(web): State<AppState>, headers: HeaderMap) -> PageResult {
    let b = &web.base;
    let p = blocking(&web, |w| w.queue_page()).await?;
    let viewer = Viewer::of(&web, &headers);
    let now = p.meta.now;
    let body = html! {
        div.title { h1 { "Work queue" } p.sub { "items worked by people, per task type" } }
        (unreadable_card(&p.unreadable))
        section.card {
            @if let Some(reason) = &p.unavailable {
                p.empty { "No work queue on this table: " (shown(reason)) }
            } @else if p.types.is_empty() {
                p.empty { "No work-queue items in this table yet (" code { "docket enqueue" } " adds some)." }
            } @else {
                table {
                    thead { tr { th { "Task type" } th.num { "Items" } th { "First arrival" } th { "Worker view" } } }
                    tbody {
                        @for t in &p.types {
                            tr {
                                td { a href=(b.task_type(&t.task_type)) { (shown(&t.task_type)) } }
                                td.num { (t.items) }
                                td { (opt_when(t.first_arrival, now)) }
                                td {
                                    form.inline method="get" action=(format!("{}/workers", b.task_type(&t.task_type))) {
                                        input type="text" name="worker" placeholder="worker name" required aria-label="Worker";
                                        button type="submit" { "Open" }
                                    }
                                }
                            }
                        }
                    }
                    (more(p.types.len(), p.types_total, "task types", "search for one by name"))
                }
            }
        }
    };
    Ok(layout(
        b,
        "Work queue",
        "queue",
        Some(&viewer),
        Some(&p.meta),
        body,
    ))
}

/// `GET /queue/{task_type}?limit=N`.
pub async fn queue_type(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path(task_type): Path<String>,
    q: Result<Query<LimitQuery>, QueryRejection>,
) -> PageResult {
    let b = &web.base;
    let limit = html_query(q)?.limit;
    let p = blocking(&web, move |w| w.queue_type(&task_type, limit)).await?;
    let viewer = Viewer::of(&web, &headers);
    let body = html! {
        p.crumbs { a href=(b.at("/queue")) { "Work queue" } " / " }
        div.title { h1 { (shown(&p.task_type)) } p.sub { (p.total) " items" } }
        (unreadable_card(&p.unreadable))
        section.card {
            form.inline method="get" action=(format!("{}/workers", b.task_type(&p.task_type))) {
                label { "What does a worker see? " input type="text" name="worker" placeholder="worker name" required; }
                button.primary type="submit" { "Open worker page" }
            }
        }
        @if !p.worker_lists.is_empty() {
            section.card {
                h2 { "What each worker sees" span.sub { "the items " code { "next_for" } " would hand them, in order" } }
                table {
                    thead { tr { th { "Worker" } th { "Sees" } } }
                    tbody {
                        @for w in &p.worker_lists {
                            tr {
                                td { a.mono href=(b.worker(&p.task_type, &w.worker)) { (shown(&w.worker)) } }
                                td.mono {
                                    @if w.items.is_empty() { span.muted { "nothing" } }
                                    @for (n, item) in w.items.iter().enumerate() {
                                        @if n > 0 { ", " }
                                        a href=(b.item(&p.task_type, item)) { (shown(item)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section.card {
            h2 { "Items" span.sub { "first " (p.items.len()) " of " (p.total) " by arrival" } }
            @if p.items.is_empty() { p.empty { "No items." } } @else { (items_table(b, &p.items, true)) }
            @if (p.items.len() as i64) < p.total {
                p.note { a href=(format!("{}?limit={}", b.task_type(&p.task_type), crate::model::ITEMS_MAX)) { "Show up to " (crate::model::ITEMS_MAX) } }
            }
        }
    };
    Ok(layout(
        b,
        &p.task_type,
        "queue",
        Some(&viewer),
        Some(&p.meta),
        body,
    ))
}

/// `GET /queue/{task_type}/items/{item}`.
pub async fn item(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task_type, item)): Path<(String, String)>,
) -> PageResult {
    let b = &web.base;
    let key = ExecutionKey::new(task_type, item);
    let p = blocking(&web, move |w| w.item(&key)).await?;
    let viewer = Viewer::of(&web, &headers);
    let i = &p.item;
    let body = html! {
        p.crumbs { a href=(b.at("/queue")) { "Work queue" } " / " a href=(b.task_type(&i.task_type)) { (shown(&i.task_type)) } " / " }
        div.title { h1.mono { (shown(&i.item)) } }
        div.grid {
            section.card {
                h2 { "Item" }
                dl {
                    dt { "Record key" } dd { code { (shown(&record(i))) } }
                    dt { "Arrived" } dd { (arrived(i)) " UTC" }
                    dt { "Assignments" } dd { (i.assignments) " of " (i.max_assignments) }
                    dt { "Held by" } dd.mono { (shown(i.held_by.as_deref().unwrap_or("—"))) }
                    dt { "Attributes" } dd { @if i.attributes.as_object().is_some_and(|m| m.is_empty()) { span.muted { "none" } } @else { (attributes(i)) } }
                    dt { "Payload" } dd { @match i.data_bytes { Some(n) => { (n) " bytes" }, None => span.muted { "none" } } }
                    dt { "Version" } dd.mono { (i.version) }
                }
            }
            section.card {
                h2 { "Assignments" }
                @let list = i.assignment_list.as_deref().unwrap_or(&[]);
                @if list.is_empty() { p.empty { "Nobody has worked on it yet." } } @else {
                    table {
                        thead { tr { th { "Worker" } th { "Status" } th { "Deadline" } th { "Updated" } } }
                        tbody {
                            @for a in list {
                                tr {
                                    td { a.mono href=(b.worker(&i.task_type, &a.worker)) { (shown(&a.worker)) } }
                                    td { span class=(status_class(&a.status)) { b { (a.status) } } }
                                    td { (time(a.deadline)) " UTC" }
                                    td { (time(a.updated_at)) " UTC" }
                                }
                            }
                        }
                    }
                    (more(list.len(), i.assignments_total.unwrap_or(0), "assignments", "the rest are not shown"))
                }
            }
        }
    };
    Ok(layout(
        b,
        &i.item,
        "queue",
        Some(&viewer),
        Some(&p.meta),
        body,
    ))
}

/// `?worker=` of the worker lookup form.
#[derive(Debug, Deserialize)]
pub struct WorkerQuery {
    worker: String,
}

/// `GET /queue/{task_type}/workers?worker=W`: to the worker's page.
pub async fn worker_lookup(
    State(web): State<AppState>,
    Path(task_type): Path<String>,
    q: Result<Query<WorkerQuery>, QueryRejection>,
) -> Result<Redirect, HtmlError> {
    let b = &web.base;
    let worker = html_query(q)?.worker;
    let worker = worker.trim();
    check_worker(worker)?;
    Ok(Redirect::to(&b.worker(&task_type, worker)))
}

/// `GET /queue/{task_type}/workers/{worker}`: the worker page.
pub async fn worker(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task_type, worker)): Path<(String, String)>,
    q: Result<Query<DoneQuery>, QueryRejection>,
) -> PageResult {
    let b = &web.base;
    let q = html_query(q)?;
    let taken = q.taken.clone();
    let p = blocking(&web, move |w| {
        w.worker(&task_type, &worker, taken.as_deref())
    })
    .await?;
    let viewer = Viewer::of(&web, &headers);
    let here = b.worker(&p.task_type, &p.worker);
    let hide_choices: [(u64, &str); 4] = [
        (300, "5 min"),
        (1800, "30 min"),
        (7200, "2 h"),
        (86_400, "1 day"),
    ];
    let body = html! {
        p.crumbs { a href=(b.at("/queue")) { "Work queue" } " / " a href=(b.task_type(&p.task_type)) { (shown(&p.task_type)) } " / worker" }
        div.title { h1 { "Worker " span.mono { (shown(&p.worker)) } } p.sub { "task type " (shown(&p.task_type)) } }
        (flash(q.done.as_deref()))
        (unreadable_card(&p.unreadable))
        section.card.worker {
            h2 { "Your items" span.sub { "held by you" } }
            @if p.held.is_empty() {
                p.empty { "You hold no item." }
            }
            @for i in &p.held {
                article.held data-item=(i.item) {
                    div.head {
                        span.mono.big { (shown(&i.item)) }
                        code { (shown(&record(i))) }
                        @if i.unreadable.is_none() {
                            span.muted { "assignment " (i.assignments) " of " (i.max_assignments) }
                        }
                    }
                    (attributes(i))
                    @if viewer.can_act() && i.unreadable.is_none() {
                        @let act = format!("{here}/items/{}", seg(&i.item));
                        div.actions {
                            form method="post" action=(format!("{act}/submit")) {
                                (viewer.csrf_field())
                                input type="hidden" name="version" value=(i.version);
                                button.primary type="submit" { "Submit" }
                            }
                            form method="post" action=(format!("{act}/skip")) {
                                (viewer.csrf_field())
                                input type="hidden" name="version" value=(i.version);
                                button type="submit" { "Skip" }
                            }
                            form method="post" action=(format!("{act}/give-back")) {
                                (viewer.csrf_field())
                                input type="hidden" name="version" value=(i.version);
                                label { "hide from me for "
                                    select name="hide_for_secs" {
                                        @for (secs, label) in hide_choices {
                                            option value=(secs) selected[secs == p.hide_for_secs] { (label) }
                                        }
                                        @if !hide_choices.iter().any(|(s, _)| *s == p.hide_for_secs) {
                                            option value=(p.hide_for_secs) selected { (span(p.hide_for_secs as i64)) }
                                        }
                                    }
                                }
                                button type="submit" { "Give back" }
                            }
                        }
                    }
                }
            }
            @if viewer.can_act() {
                form.take method="post" action=(format!("{here}/next")) {
                    (viewer.csrf_field())
                    button.primary.big type="submit" { "Take next item" }
                }
            } @else {
                (viewer.no_actions(&here, "take, submit, skip or give back items"))
            }
            p.note { "At most " (HELD_ROWS) " held items are listed, by arrival." }
        }
        section.card {
            h2 { "What you would get next" span.sub { "in hand-out order, without claiming" } }
            @if p.list.is_empty() {
                p.empty { "Nothing for you right now." }
            } @else {
                table.list {
                    thead { tr { th.num { "#" } th { "Item" } th { "Record key" } th { "Arrived" } th.num { "Assignments" } } }
                    tbody {
                        @for (n, i) in p.list.iter().enumerate() {
                            tr {
                                td.num { (n + 1) }
                                td { a.mono href=(b.item(&i.task_type, &i.item)) { (shown(&i.item)) } }
                                td { code { (shown(&record(i))) } }
                                td { (arrived(i)) }
                                td.num { (i.assignments) " / " (i.max_assignments) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(layout(
        b,
        &format!("Worker {}", p.worker),
        "queue",
        Some(&viewer),
        Some(&p.meta),
        body,
    ))
}

/// A form with only the CSRF field.
#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// `POST /queue/{task_type}/workers/{worker}/next`: takes the next item.
pub async fn worker_next(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task_type, worker)): Path<(String, String)>,
    f: Result<Form<CsrfForm>, FormRejection>,
) -> Result<Redirect, HtmlError> {
    let b = &web.base;
    web.auth.check_origin(&headers)?;
    let f = html_form(f)?;
    web.auth.check_form(&headers, &f.csrf)?;
    let here = b.worker(&task_type, &worker);
    let taken = blocking(&web, move |w| w.take_next(&task_type, &worker)).await?;
    Ok(Redirect::to(&match taken {
        Some(i) => format!("{here}?done=taken&taken={}", qv(&i.item)),
        None => format!("{here}?done={}", qv("nothing to take")),
    }))
}

/// Fields of a worker action form.
#[derive(Debug, Deserialize)]
pub struct WorkerForm {
    csrf: String,
    version: i64,
    hide_for_secs: Option<u64>,
}

/// `POST /queue/{task_type}/workers/{worker}/items/{item}/{submit|skip|give-back}`.
pub async fn worker_action(
    State(web): State<AppState>,
    headers: HeaderMap,
    Path((task_type, worker, item, action)): Path<(String, String, String, String)>,
    f: Result<Form<WorkerForm>, FormRejection>,
) -> Result<Redirect, HtmlError> {
    let b = &web.base;
    web.auth.check_origin(&headers)?;
    let action = WorkerAction::parse(&action)?;
    let f = html_form(f)?;
    web.auth.check_form(&headers, &f.csrf)?;
    let here = b.worker(&task_type, &worker);
    let key = ExecutionKey::new(task_type, item);
    let hide_for = f.hide_for_secs.map(std::time::Duration::from_secs);
    blocking(&web, move |w| {
        w.finish(&key, &worker, action, f.version, hide_for)
    })
    .await?;
    Ok(Redirect::to(&format!("{here}?done={}", qv(action.done()))))
}

/// `?next=` of the sign-in page.
#[derive(Debug, Default, Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

/// `GET /login`: the form, with a per-visitor CSRF value also set as a cookie.
pub async fn login_form(
    State(web): State<AppState>,
    headers: HeaderMap,
    q: Result<Query<NextQuery>, QueryRejection>,
) -> Result<Response, HtmlError> {
    let b = &web.base;
    let next = local_path(html_query(q)?.next.as_deref(), &web.base.root());
    let viewer = Viewer::of(&web, &headers);
    let form = if viewer.read_only {
        None
    } else {
        Some(web.auth.login_form()?)
    };
    let body = html! {
        section.card.narrow {
            h1 { "Sign in" }
            @if let Some((csrf, _)) = &form {
                p { "Run now, reschedule, cancel and the worker actions need the token given to " code { "docket web --token-file" } "." }
                form.stack method="post" action=(b.at("/login")) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="next" value=(next);
                    label { "Token " input type="password" name="token" autocomplete="current-password" required autofocus; }
                    button.primary type="submit" { "Sign in" }
                }
            } @else {
                p.note { "This dashboard is read-only: it was started without " code { "--token-file" } "." }
            }
        }
    };
    let page = layout(b, "Sign in", "", Some(&viewer), None, body);
    Ok(match form {
        Some((_, cookie)) => ([(header::SET_COOKIE, cookie)], page).into_response(),
        None => page.into_response(),
    })
}

/// Fields of the sign-in form.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    csrf: String,
    token: String,
    next: Option<String>,
}

/// `POST /login`: checks the token and starts a session.
pub async fn login(
    State(web): State<AppState>,
    headers: HeaderMap,
    ClientIp(client): ClientIp,
    f: Result<Form<LoginForm>, FormRejection>,
) -> Result<Response, HtmlError> {
    web.auth.check_origin(&headers)?;
    let f = html_form(f)?;
    web.auth.check_login_form(&headers, &f.csrf)?;
    web.auth.check_token(&f.token, client)?;
    let to = local_path(f.next.as_deref(), &web.base.root());
    let mut res = Redirect::to(&to).into_response();
    let cookie = web.auth.sign_in()?;
    set_cookie(&mut res, &cookie)?;
    Ok(res)
}

/// `POST /logout`: ends the session (its cookie no longer works) and clears the cookie.
pub async fn logout(
    State(web): State<AppState>,
    headers: HeaderMap,
    f: Result<Form<CsrfForm>, FormRejection>,
) -> Result<Response, HtmlError> {
    web.auth.check_origin(&headers)?;
    let f = html_form(f)?;
    web.auth.check_logout(&headers, &f.csrf)?;
    web.auth.sign_out(&headers);
    let mut res = Redirect::to(&format!("{}?done=signed%20out", web.base.root())).into_response();
    set_cookie(&mut res, &web.auth.clear_cookie())?;
    Ok(res)
}

fn set_cookie(res: &mut Response, cookie: &str) -> Result<(), WebError> {
    let value = header::HeaderValue::from_str(cookie)
        .map_err(|e| WebError::Internal(format!("cookie header: {e}")))?;
    res.headers_mut().append(header::SET_COOKIE, value);
    Ok(())
}

impl IntoResponse for HtmlError {
    fn into_response(self) -> Response {
        let page = ErrorPage {
            status: self.0.status(),
            title: self.0.title(),
            message: self.0.to_string(),
        };
        let mut res = (page.status, page.message.clone()).into_response();
        res.extensions_mut().insert(page);
        self.0.with_retry_after(res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_as_durations() {
        assert_eq!(span(5), "5 s");
        assert_eq!(span(-125), "2 min 5 s");
        assert_eq!(span(7260), "2 h 1 min");
        assert_eq!(span(90_000), "1 d 1 h");
        assert_eq!(span(1800), "30 min");
        assert_eq!(span(86_400), "1 d");
    }

    #[test]
    fn only_known_flash_messages_are_shown() {
        assert!(flash(Some("submitted")).into_string().contains("submitted"));
        assert!(flash(Some("<script>")).into_string().is_empty());
    }
}
