//! The reads behind every page: through `SchedulerClient` and `WorkQueue`, each bounded by a
//! limit in its statement; rows docket cannot decode are named in their place.

use super::data::*;
use super::views::*;
use crate::error::WebError;
use crate::state::Web;
use chrono::{DateTime, Utc};
use docket_core::queue::{Item, ItemRead, ItemsQuery, ListedItem, UnreadableItem, MAX_WORKER_LEN};
use docket_core::store::ListFilter;
use docket_core::store::PausedRead;
use docket_core::{DeadPage, Execution, ExecutionKey, LevelLag};
use serde::Deserialize;
use std::collections::{HashMap, HashSet};

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

/// An item as the pages show it; with `list`, its assignments as read (an unknown status
/// shows as `unknown: ...` on its own row).
pub(super) fn item_view(listed: ListedItem, list: bool) -> Result<ItemView, WebError> {
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
pub(super) fn read_view(read: ItemRead, list: bool) -> Result<ItemView, WebError> {
    match read {
        ItemRead::Listed(listed) => item_view(listed, list),
        ItemRead::Unreadable(bad) => Ok(unreadable_view(bad, list)),
    }
}

/// The view of an item whose row cannot be decoded.
pub(super) fn unreadable_view(bad: UnreadableItem, list: bool) -> ItemView {
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

/// Picked executions as the pages show them.
#[derive(Default)]
pub(super) struct Picked {
    running: Vec<ExecutionView>,
    dead: Vec<ExecutionView>,
    dead_total: usize,
    dead_per_task: HashMap<String, i64>,
}

/// The counts of all `rows` together (`scheduled` only when every row has it).
pub(super) fn totals(rows: &[TaskRow]) -> Counts {
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

pub(super) fn type_missing(task_type: &str, table: &str) -> WebError {
    WebError::NotFound(format!("no work-queue task type {task_type:?} in {table}"))
}

pub(super) fn item_missing(key: &ExecutionKey) -> WebError {
    WebError::NotFound(format!(
        "no work-queue item {}/{}",
        key.task_name, key.task_instance
    ))
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
    pub(super) fn names(
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
    pub(super) fn summary(
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

    pub(super) fn split_names(
        &self,
        all: Vec<String>,
    ) -> Result<(Vec<String>, Vec<String>), WebError> {
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

    pub(super) fn view(&self, e: Execution, now: DateTime<Utc>) -> ExecutionView {
        ExecutionView::new(e, now, self.dead_after)
    }

    /// Due executions of `tasks`, by level, and per task, from one due-query reading at most
    /// [`DUE_CAP`] rows in hand-out order ([`docket_core::SchedulerClient::due_counts`]).
    pub(super) fn backlog(
        &self,
        tasks: &[String],
    ) -> Result<(Backlog, HashMap<String, i64>), WebError> {
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
    pub(super) fn picked(
        &self,
        tasks: &HashSet<&String>,
        now: DateTime<Utc>,
    ) -> Result<Picked, WebError> {
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

    pub(super) fn failing(
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
    pub(super) fn rows(
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
        let (limits, limits_total) = self.limits(&mut unreadable)?;
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
            limits,
            limits_total,
            unreadable,
            read_secs: started.elapsed().as_secs_f64(),
        })
    }

    /// [`docket_core::SchedulerClient::lag`], name by name through the store, so that a name
    /// whose rows cannot all be decoded is noted in `unreadable` in its place and the other
    /// names are still read: the first [`NAME_ROWS`] names (one seek each), then per name its
    /// lag ranges up to [`LAG_CAP`] rows.
    pub(super) fn lag_by_name(
        &self,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<docket_core::Lag, WebError> {
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
    pub(super) fn paused_page(
        &self,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<(Vec<PausedView>, usize), WebError> {
        let limit = i64::try_from(NAME_ROWS).unwrap_or(i64::MAX);
        let page = self.client.paused_page(limit)?;
        let views = self.paused_views(page.tasks, unreadable);
        Ok((views, usize::try_from(page.total).unwrap_or(usize::MAX)))
    }

    /// Each limit with what it holds now ([`docket_core::SchedulerClient::limit_usage`]: per
    /// limited task, what runs, its starts in the window and its due executions up to
    /// [`LAG_CAP`]), the first [`NAME_ROWS`] by name, and how many tasks are limited; none
    /// without `0009_limits`. A limit row that cannot be decoded is noted in `unreadable`
    /// under `limits`, and the rest of the page is shown.
    pub(super) fn limits(
        &self,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<(Vec<LimitView>, usize), WebError> {
        let used = self.client.limit_usage(LAG_CAP + 1).map_err(WebError::from);
        let mut used = or_unreadable(used, Vec::new, "limits", unreadable)?;
        used.sort_by(|a, b| a.limit.task_name.cmp(&b.limit.task_name));
        let total = used.len();
        used.truncate(NAME_ROWS);
        let views = used
            .into_iter()
            .map(|u| LimitView::new(u, LAG_CAP))
            .collect();
        Ok((views, total))
    }

    /// Every limit with what it holds now, due executions counted up to `LAG_CAP + 1`; a
    /// limit row that cannot be decoded is noted in `unreadable` under `limits`.
    fn limit_usage(
        &self,
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<Vec<docket_core::LimitUse>, WebError> {
        let used = self.client.limit_usage(LAG_CAP + 1).map_err(WebError::from);
        or_unreadable(used, Vec::new, "limits", unreadable)
    }

    /// Which of `names` are paused (lookups by name); rows that cannot be decoded are listed
    /// as such and noted in `unreadable` under `paused tasks`.
    pub(super) fn paused_among(
        &self,
        names: &[String],
        unreadable: &mut Vec<Unreadable>,
    ) -> Result<Vec<PausedView>, WebError> {
        let read = self.client.paused_among(names)?;
        Ok(self.paused_views(read, unreadable))
    }

    pub(super) fn paused_views(
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
        let limit = self
            .limit_usage(&mut unreadable)?
            .into_iter()
            .find(|u| u.limit.task_name == task)
            .map(|u| LimitView::new(u, LAG_CAP));
        let failing = or_unreadable(
            self.failing(Some(task), now),
            Vec::new,
            "failing executions",
            &mut unreadable,
        )?;
        Ok(TaskPage {
            paused,
            limit,
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

    /// An item `list_for` returned, with its version (one primary-key lookup: the hand-out
    /// list is at most [`WORKER_LIST`] items).
    pub(super) fn with_version(&self, item: Item) -> Result<ItemView, WebError> {
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
    pub(super) fn check_type(&self, task_type: &str) -> Result<i64, WebError> {
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
    pub(super) fn check_type_exists(&self, task_type: &str) -> Result<(), WebError> {
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
    pub(super) fn items_of(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemView>, WebError> {
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
}
