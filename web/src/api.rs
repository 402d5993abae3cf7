//! The JSON API: one route under `/api/` behind every page (`docs/WEB.md`). Reads are open;
//! writes need `Authorization: Bearer <token>` and the row's `version`.

use crate::error::{ApiError, WebError};
use crate::limit::ClientIp;
use crate::model::{
    parse_time, BulkAction, BulkPreview, BulkResult, BulkRow, ExecAction, ExecutionDetail,
    ExecutionView, ItemPage, ItemView, LagPage, LimitQuery, Overview, PausedView, QueuePage,
    QueueTypePage, SearchQuery, SearchResult, TaskAction, TaskPage, WorkerAction, WorkerPage,
};
use crate::state::{blocking, blocking_row, AppState};
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::Json;
use docket_core::ExecutionKey;
use serde::{Deserialize, Serialize};

type ApiResult<T> = Result<Json<T>, ApiError>;

/// Body of an execution action.
#[derive(Debug, Deserialize)]
pub struct ActionBody {
    /// The version the caller saw.
    pub version: i64,
    /// New time (reschedule only): RFC 3339, or `YYYY-MM-DDThh:mm[:ss]` as UTC.
    pub at: Option<String>,
}

/// Body of a worker action.
#[derive(Debug, Deserialize)]
pub struct WorkerBody {
    /// The version the worker saw.
    pub version: i64,
    /// Give back only: seconds the item stays hidden from the worker (default: the queue's).
    pub hide_for_secs: Option<u64>,
}

/// What an action did.
#[derive(Debug, Serialize)]
pub struct Done<T> {
    /// `rescheduled`, `cancelled`, `taken`, `submitted`, ...
    pub done: &'static str,
    /// The row afterwards (null when it is gone or nothing was taken).
    pub row: Option<T>,
}

fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, WebError> {
    q.map(|Query(q)| q)
        .map_err(|e| WebError::BadRequest(format!("malformed query: {}", e.body_text())))
}

fn body<T>(b: Result<Json<T>, JsonRejection>) -> Result<T, WebError> {
    b.map(|Json(b)| b)
        .map_err(|e| WebError::BadRequest(format!("malformed JSON body: {}", e.body_text())))
}

/// `GET /api/overview`.
pub async fn overview(State(web): State<AppState>) -> ApiResult<Overview> {
    Ok(Json(blocking(&web, |w| w.overview()).await?))
}

/// `GET /api/lag`.
pub async fn lag(State(web): State<AppState>) -> ApiResult<LagPage> {
    Ok(Json(blocking(&web, |w| w.lag_page()).await?))
}

/// `POST /api/tasks/{task}/{pause|resume}` (no body): pauses or resumes the task cluster-wide;
/// `done` says whether anything changed (`paused already`, `not paused`), `row` is the pause
/// afterwards (null when not paused). A task with no execution is paused only with
/// `?confirm=unknown` (never a name with hidden characters): `404` otherwise.
pub async fn task_action(
    State(web): State<AppState>,
    Path((task, action)): Path<(String, String)>,
    headers: HeaderMap,
    ClientIp(client): ClientIp,
    q: Result<Query<ConfirmQuery>, QueryRejection>,
) -> ApiResult<Done<PausedView>> {
    let action = TaskAction::parse(&action)?;
    web.auth.check_bearer(&headers, client)?;
    let unknown_confirmed = match query(q)?.confirm.as_deref() {
        None => false,
        Some("unknown") => true,
        Some(other) => {
            return Err(WebError::BadRequest(format!(
                "confirm={other:?}: the only confirmation is confirm=unknown"
            ))
            .into())
        }
    };
    let via = format!(
        "API, from {}",
        client.map_or("an unknown address".to_owned(), |ip| ip.to_string())
    );
    let (changed, row) = blocking(&web, move |w| {
        let changed = w.pause_or_resume(&task, action, unknown_confirmed, &via)?;
        let row = w.paused_of(&task, &mut Vec::new())?;
        Ok((changed, row))
    })
    .await?;
    Ok(Json(Done {
        done: action.done(changed),
        row,
    }))
}

/// `?confirm=unknown` of a pause: pause a task that has no execution yet.
#[derive(Debug, Default, Deserialize)]
pub struct ConfirmQuery {
    /// `unknown`: the caller knows no execution has this name yet.
    pub confirm: Option<String>,
}

/// Body of a confirmed bulk action.
#[derive(Debug, Deserialize)]
pub struct BulkBody {
    /// The executions to change, as `GET /api/tasks/{task}/bulk` listed them.
    pub rows: Vec<BulkRow>,
    /// New time (reschedule only): RFC 3339, or `YYYY-MM-DDThh:mm[:ss]` as UTC.
    pub at: Option<String>,
}

/// `GET /api/tasks/{task}/bulk`: what a bulk action would change (the confirmation step).
pub async fn bulk_preview(
    State(web): State<AppState>,
    Path(task): Path<String>,
) -> ApiResult<BulkPreview> {
    Ok(Json(blocking(&web, move |w| w.bulk_preview(&task)).await?))
}

/// `POST /api/tasks/{task}/bulk/{retry|reschedule|cancel}` with `{"rows": [...], "at": ...}`.
pub async fn bulk_apply(
    State(web): State<AppState>,
    Path((task, action)): Path<(String, String)>,
    headers: HeaderMap,
    ClientIp(client): ClientIp,
    b: Result<Json<BulkBody>, JsonRejection>,
) -> ApiResult<BulkResult> {
    let action = BulkAction::parse(&action)?;
    web.auth.check_bearer(&headers, client)?;
    let b = body(b)?;
    let at = b.at.as_deref().map(parse_time).transpose()?;
    let via = format!(
        "API, from {}",
        client.map_or("an unknown address".to_owned(), |ip| ip.to_string())
    );
    Ok(Json(
        blocking(&web, move |w| {
            w.bulk_apply(&task, action, &b.rows, at, &via)
        })
        .await?,
    ))
}

/// `GET /api/tasks/{task}`.
pub async fn task(State(web): State<AppState>, Path(task): Path<String>) -> ApiResult<TaskPage> {
    Ok(Json(blocking(&web, move |w| w.task(&task)).await?))
}

/// `GET /api/search?task=&instance=`.
pub async fn search(
    State(web): State<AppState>,
    q: Result<Query<SearchQuery>, QueryRejection>,
) -> ApiResult<SearchResult> {
    let (task, instance) = query(q)?.normalized();
    Ok(Json(
        blocking(&web, move |w| w.search(task, instance)).await?,
    ))
}

/// `GET /api/executions/{task}/{instance}`.
pub async fn execution(
    State(web): State<AppState>,
    Path((task, instance)): Path<(String, String)>,
) -> ApiResult<ExecutionDetail> {
    let key = ExecutionKey::new(task, instance);
    Ok(Json(
        blocking_row(&web, move |w| w.execution_detail(&key)).await?,
    ))
}

/// `POST /api/executions/{task}/{instance}/{run-now|reschedule|cancel}` with
/// `{"version": N, "at": "..."}`.
pub async fn execution_action(
    State(web): State<AppState>,
    Path((task, instance, action)): Path<(String, String, String)>,
    headers: HeaderMap,
    ClientIp(client): ClientIp,
    b: Result<Json<ActionBody>, JsonRejection>,
) -> ApiResult<Done<ExecutionView>> {
    let action = ExecAction::parse(&action)?;
    web.auth.check_bearer(&headers, client)?;
    let b = body(b)?;
    let key = ExecutionKey::new(task, instance);
    let row = action.apply(&web, key, b.version, b.at.as_deref()).await?;
    Ok(Json(Done {
        done: action.done(),
        row,
    }))
}

/// `GET /api/queue`.
pub async fn queue(State(web): State<AppState>) -> ApiResult<QueuePage> {
    Ok(Json(blocking(&web, |w| w.queue_page()).await?))
}

/// `GET /api/queue/{task_type}?limit=N`.
pub async fn queue_type(
    State(web): State<AppState>,
    Path(task_type): Path<String>,
    q: Result<Query<LimitQuery>, QueryRejection>,
) -> ApiResult<QueueTypePage> {
    let limit = query(q)?.limit;
    Ok(Json(
        blocking(&web, move |w| w.queue_type(&task_type, limit)).await?,
    ))
}

/// `GET /api/queue/{task_type}/items/{item}`.
pub async fn item(
    State(web): State<AppState>,
    Path((task_type, item)): Path<(String, String)>,
) -> ApiResult<ItemPage> {
    let key = ExecutionKey::new(task_type, item);
    Ok(Json(blocking(&web, move |w| w.item(&key)).await?))
}

/// `GET /api/queue/{task_type}/workers/{worker}`.
pub async fn worker(
    State(web): State<AppState>,
    Path((task_type, worker)): Path<(String, String)>,
) -> ApiResult<WorkerPage> {
    Ok(Json(
        blocking(&web, move |w| w.worker(&task_type, &worker, None)).await?,
    ))
}

/// `POST /api/queue/{task_type}/workers/{worker}/next`: takes the next item.
pub async fn worker_next(
    State(web): State<AppState>,
    Path((task_type, worker)): Path<(String, String)>,
    headers: HeaderMap,
    ClientIp(client): ClientIp,
) -> ApiResult<Done<ItemView>> {
    web.auth.check_bearer(&headers, client)?;
    let row = blocking(&web, move |w| w.take_next(&task_type, &worker)).await?;
    Ok(Json(Done {
        done: if row.is_some() {
            "taken"
        } else {
            "nothing to take"
        },
        row,
    }))
}

/// `POST /api/queue/{task_type}/workers/{worker}/items/{item}/{submit|skip|give-back}` with
/// `{"version": N, "hide_for_secs": S}`.
pub async fn worker_action(
    State(web): State<AppState>,
    Path((task_type, worker, item, action)): Path<(String, String, String, String)>,
    headers: HeaderMap,
    ClientIp(client): ClientIp,
    b: Result<Json<WorkerBody>, JsonRejection>,
) -> ApiResult<Done<ItemView>> {
    let action = WorkerAction::parse(&action)?;
    web.auth.check_bearer(&headers, client)?;
    let b = body(b)?;
    let key = ExecutionKey::new(task_type, item);
    let hide_for = b.hide_for_secs.map(std::time::Duration::from_secs);
    let row = blocking(&web, move |w| {
        w.finish(&key, &worker, action, b.version, hide_for)?;
        Ok(w.item(&key)?.item)
    })
    .await?;
    Ok(Json(Done {
        done: action.done(),
        row: Some(row),
    }))
}
