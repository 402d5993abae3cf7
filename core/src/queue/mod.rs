//! The work queue: items of a task type worked by people, in a precise order (SPEC section 5).
//!
//! Items are rows of a docket table (migrations `0003_ordering` and `0004_work_queue`): the task
//! name is the task type, the instance id the item id, `execution_time` the time the item
//! arrives. Each (item, worker) pair has at most one assignment, in a second table
//! `<table>_assignments`. [`WorkQueue::next_for`] claims the first eligible item in policy order
//! in one transaction; submit, skip, return and abandon release it.

mod intake;
pub use intake::{default_batch_id, validate_worker, Intake, Rejection, MAX_BATCH_NAME_LEN};

#[cfg(feature = "csv")]
pub mod csv;

use crate::clock::{Clock, SystemClock};
use crate::error::{DocketError, Result, StoreError};
use crate::ordering::{CustomKey, KeyType, PrimaryOrder, PriorityMode};
use crate::store::{attach, ExecutionKey, QueueStore};
use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Longest worker name (`VARCHAR(128)`).
pub const MAX_WORKER_LEN: usize = 128;

pub use crate::migrate::{MIGRATION_ORDERING, MIGRATION_WORK_QUEUE};
pub use crate::records::{
    format_record_date, parse_record_date, Assignment, AssignmentStatus, Finish, Finishing,
    ForWorker, IndexChange, Item, ItemCount, ItemRead, ItemsQuery, ListedAssignment, ListedItem,
    NewItem, RecordKey, StatusRead, UnreadableItem,
};

/// One record of a [`Batch`], before resolution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// Item id (unique within the task type).
    pub id: String,
    /// Payload.
    pub data: Option<Vec<u8>>,
    /// Arrival delay after the batch start (default: none, it arrives with the batch).
    pub arrives_after: Option<Duration>,
    /// Record date; missing: the start time of the batch.
    pub record_date: Option<DateTime<Utc>>,
    /// Custom attributes.
    pub attributes: Map<String, Json>,
    /// Priority.
    pub priority: Option<i16>,
}

impl Record {
    /// A record with an id and nothing else.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }
}

/// Records arriving together: the record order is the position in `records` (1-based), a
/// missing record date is the batch's start time.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// Task type.
    pub task_type: String,
    /// Max assignments of every item (>= 1).
    pub max_assignments: i32,
    /// The records, in order.
    pub records: Vec<Record>,
}

/// Work-queue settings.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueConfig {
    /// How long a worker holds an accepted item before it may be abandoned.
    pub lease: Duration,
    /// How long a returned or abandoned item stays hidden from its worker.
    pub hide_for: Duration,
    /// Primary order per task type; [`PrimaryOrder::Fifo`] when absent.
    pub orders: HashMap<String, PrimaryOrder>,
    /// How `next_for` shares hand-outs among priority levels, per task type (only with the
    /// store's priority on); the store's [`OrderingPolicy::mode`](crate::OrderingPolicy) when
    /// absent. See [`PriorityMode`] and docs/DESIGN.md, "Priority modes".
    pub modes: HashMap<String, PriorityMode>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30 * 60),
            hide_for: Duration::from_secs(30 * 60),
            orders: HashMap::new(),
            modes: HashMap::new(),
        }
    }
}

impl QueueConfig {
    /// The primary order of `task_type`.
    pub fn order_of(&self, task_type: &str) -> PrimaryOrder {
        self.orders
            .get(task_type)
            .cloned()
            .unwrap_or(PrimaryOrder::Fifo)
    }
}

/// The work-queue API over a [`QueueStore`]. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WorkQueue {
    store: Arc<dyn QueueStore>,
    clock: Arc<dyn Clock>,
    config: Arc<QueueConfig>,
}

/// The latest instant docket stores: the end of year 9999 (MySQL's `DATETIME` range; the
/// other backends go further, but every backend must accept the same values).
fn max_time() -> DateTime<Utc> {
    chrono::TimeZone::with_ymd_and_hms(&Utc, 9999, 12, 31, 23, 59, 59)
        .single()
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// A per-assignment deadline must be storable on every backend (years 1000 to 9999).
fn check_deadline(until: DateTime<Utc>) -> Result<()> {
    let min = chrono::TimeZone::with_ymd_and_hms(&Utc, 1000, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    if until > max_time() || until < min {
        return Err(DocketError::InvalidConfig(format!(
            "deadline {until} is outside the storable times {min} to {}",
            max_time()
        )));
    }
    Ok(())
}

/// `t + d`, or `None` past [`max_time`].
fn after(t: DateTime<Utc>, d: Duration) -> Option<DateTime<Utc>> {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| t.checked_add_signed(d))
        .filter(|t| *t <= max_time())
}

/// Longest lease or hide period accepted.
const MAX_PERIOD: Duration = Duration::from_secs(100 * 366 * 24 * 3600);

fn queue_error(key: &ExecutionKey, reason: String) -> DocketError {
    DocketError::Queue {
        task: key.task_name.clone(),
        item: key.task_instance.clone(),
        reason,
    }
}

impl WorkQueue {
    /// A queue on `store` with the system clock; fails with a missing-migration error naming
    /// `0004_work_queue` when the table lacks the work-queue schema.
    pub fn new(store: Arc<dyn QueueStore>, config: QueueConfig) -> Result<Self> {
        Self::with_clock(store, Arc::new(SystemClock), config)
    }

    /// As [`WorkQueue::new`], with an injected clock.
    pub fn with_clock(
        store: Arc<dyn QueueStore>,
        clock: Arc<dyn Clock>,
        config: QueueConfig,
    ) -> Result<Self> {
        for (name, period) in [("lease", config.lease), ("hide_for", config.hide_for)] {
            if period > MAX_PERIOD {
                return Err(DocketError::InvalidConfig(format!(
                    "{name} must be at most 100 years, got {period:?}"
                )));
            }
        }
        let store = attach(store)?;
        Ok(Self {
            store,
            clock,
            config: Arc::new(config),
        })
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn QueueStore> {
        &self.store
    }

    /// The settings.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Resolves a batch at the clock's now (see [`WorkQueue::resolve_at`]).
    pub fn resolve(&self, batch: &Batch) -> Result<Vec<NewItem>> {
        self.resolve_at(batch, self.clock.now())
    }

    /// Turns a batch started at `started` into rows with an [`Intake`]: record order = position
    /// (1-based), missing record date = `started` (to milliseconds, the precision of the JSON
    /// form), attributes normalized for the task type's custom keys. Any invalid record is an
    /// error naming it; nothing is resolved then.
    pub fn resolve_at(&self, batch: &Batch, started: DateTime<Utc>) -> Result<Vec<NewItem>> {
        let mut intake = Intake::new(
            &batch.task_type,
            batch.max_assignments,
            None,
            started,
            self.config.order_of(&batch.task_type),
        )?;
        batch
            .records
            .iter()
            .map(|r| Ok(intake.resolve(r.clone())?))
            .collect()
    }

    /// Enqueues a batch in one transaction: all records or none. Returns how many were
    /// inserted; an item id that exists fails the whole batch. The records are resolved as
    /// they are inserted, in chunks ([`WorkQueue::insert_stream`]): no second copy of the batch
    /// is made.
    pub fn enqueue(&self, batch: &Batch) -> Result<u64> {
        let mut intake = Intake::new(
            &batch.task_type,
            batch.max_assignments,
            None,
            self.clock.now(),
            self.config.order_of(&batch.task_type),
        )?;
        let inserted =
            self.insert_stream(batch.records.iter().map(|r| Ok(intake.resolve(r.clone())?)));
        inserted
            .map_err(|e| name_repeated(e, batch.records.len(), |i| batch.records[i].id.as_str()))
    }

    /// Inserts resolved rows in one transaction (all or none), after checking each as
    /// [`WorkQueue::resolve_at`] would have made it (ids, `max_assignments`, attributes as a
    /// JSON object without NUL characters, times within year 9999).
    pub fn insert(&self, rows: &[NewItem]) -> Result<u64> {
        let inserted = self.insert_stream(rows.iter().map(|row| {
            check_row(row)?;
            Ok(row.clone())
        }));
        inserted.map_err(|e| name_repeated(e, rows.len(), |i| rows[i].key.task_instance.as_str()))
    }

    /// Inserts the rows `rows` yields in one transaction, all or none, reading them as it
    /// goes: a chunk at a time, one multi-row insert per chunk (see
    /// [`QueueStore::item_insert_stream`]), so memory does not grow with the input. The first
    /// error `rows` yields is returned as it is, and nothing is inserted; so is an id that
    /// exists ([`StoreError::DuplicateItem`]). The rows are taken as resolved: use it with
    /// an [`Intake`] (or `csv::CsvItems`, feature `csv`).
    pub fn insert_stream(&self, rows: impl Iterator<Item = Result<NewItem>>) -> Result<u64> {
        let mut rows = rows;
        match self.store.item_insert_stream(&mut rows) {
            Ok(n) => {
                // Committed: tell whoever listens on the table (items are due on arrival).
                if n > 0 {
                    if let Some(signals) = self.store.wake_signals() {
                        signals.announce();
                    }
                }
                Ok(n)
            }
            Err(StoreError::Input(e)) => Err(*e),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates the index that serves `task_type`'s custom order in `next_for` and `list_for`
    /// (see [`crate::dialect::order_index`]), unless it exists: without it, every call sorts
    /// the type's open, arrived items. Building it reads the whole table; on PostgreSQL and
    /// SQLite it blocks writes to the table meanwhile. A FIFO task type needs none (its index
    /// ships with migration `0004_work_queue`): that is [`DocketError::InvalidConfig`].
    pub fn create_order_index(&self, task_type: &str) -> Result<IndexChange> {
        let keys = self.custom_keys(task_type)?;
        Ok(self.store.order_index_create(&keys)?)
    }

    /// Drops the index of `task_type`'s custom order (and its generated columns), if it
    /// exists. The order keeps working, by sorting.
    pub fn drop_order_index(&self, task_type: &str) -> Result<IndexChange> {
        let keys = self.custom_keys(task_type)?;
        Ok(self.store.order_index_drop(&keys)?)
    }

    /// The name of the index of `task_type`'s custom order, and whether it exists.
    pub fn order_index(&self, task_type: &str) -> Result<(String, bool)> {
        let keys = self.custom_keys(task_type)?;
        Ok(self.store.order_index_exists(&keys)?)
    }

    fn custom_keys(&self, task_type: &str) -> Result<Vec<CustomKey>> {
        crate::task::validate_key(task_type, "0")?;
        match self.config.order_of(task_type) {
            PrimaryOrder::Custom(keys) if !keys.is_empty() => Ok(keys),
            _ => Err(DocketError::InvalidConfig(format!(
                "task type {task_type:?} has no custom order (FIFO is served by the index of \
                 migration 0004_work_queue); configure its keys (QueueConfig::orders)"
            ))),
        }
    }

    /// Claims the first item of `task_type` that `worker` may work, in policy order, and
    /// records an ACCEPTED assignment with deadline now + lease. Concurrent callers never get
    /// the same item; no item exceeds its `max_assignments`.
    pub fn next_for(&self, worker: &str, task_type: &str) -> Result<Option<Item>> {
        let deadline = self.later(self.clock.now(), self.config.lease)?;
        self.next_for_until(worker, task_type, deadline)
    }

    /// [`WorkQueue::next_for`] with this assignment's own abandon deadline instead of now +
    /// the queue-wide `lease`: [`WorkQueue::abandon_expired`] abandons it once `until` has
    /// passed. A deadline in the past makes the assignment expired at once.
    pub fn next_for_until(
        &self,
        worker: &str,
        task_type: &str,
        until: DateTime<Utc>,
    ) -> Result<Option<Item>> {
        self.for_worker(worker, task_type, |store, q| {
            check_deadline(until)?;
            Ok(store.item_next_for(q, until)?)
        })
    }

    /// The items `worker` would get from [`WorkQueue::next_for`], in order, without claiming.
    /// In the weighted and aging modes the listing keeps the strict order (higher level
    /// first): which level `next_for` serves next depends on what was handed out before.
    pub fn list_for(&self, worker: &str, task_type: &str, limit: i64) -> Result<Vec<Item>> {
        self.for_worker(worker, task_type, |store, q| {
            if limit < 0 {
                return Err(DocketError::InvalidConfig(format!(
                    "limit must not be negative, got {limit}"
                )));
            }
            Ok(store.item_list_for(q, limit)?)
        })
    }

    /// The priority mode of `task_type`: its own ([`QueueConfig::modes`]) or the store's.
    pub fn mode_of(&self, task_type: &str) -> PriorityMode {
        self.config
            .modes
            .get(task_type)
            .cloned()
            .unwrap_or_else(|| self.store.config().ordering.mode.clone())
    }

    /// Validates `worker` and `task_type`, then runs `f` (which checks its own arguments first)
    /// with what `worker` sees of the type now (its primary order, the clock's now): the query
    /// of `next_for` and `list_for`.
    fn for_worker<T>(
        &self,
        worker: &str,
        task_type: &str,
        f: impl FnOnce(&dyn QueueStore, &ForWorker<'_>) -> Result<T>,
    ) -> Result<T> {
        crate::task::validate_key(task_type, "0")?;
        validate_worker(worker)?;
        let order = self.config.order_of(task_type);
        let mode = self.mode_of(task_type);
        let q = ForWorker {
            mode: &mode,
            ..ForWorker::new(worker, task_type, &order, self.clock.now())
        };
        f(&*self.store, &q)
    }

    /// `worker` hands in `item`.
    pub fn submit(&self, worker: &str, item: &ExecutionKey) -> Result<()> {
        self.finish(worker, item, Finish::Submit)
    }

    /// `worker` declines `item` for good.
    pub fn skip(&self, worker: &str, item: &ExecutionKey) -> Result<()> {
        self.finish(worker, item, Finish::Skip)
    }

    /// `worker` gives `item` back; it is hidden from them for `hide_for`.
    pub fn give_back(&self, worker: &str, item: &ExecutionKey) -> Result<()> {
        self.finish(worker, item, Finish::Return)
    }

    /// `worker` gives `item` back; it is hidden from them until `until` (this assignment's own
    /// deadline, instead of the queue-wide `hide_for`).
    pub fn give_back_until(
        &self,
        worker: &str,
        item: &ExecutionKey,
        until: DateTime<Utc>,
    ) -> Result<()> {
        check_deadline(until)?;
        self.finish_until(worker, item, Finish::Return, until)
    }

    fn finish(&self, worker: &str, item: &ExecutionKey, how: Finish) -> Result<()> {
        let until = self.later(self.clock.now(), self.config.hide_for)?;
        self.finish_until(worker, item, how, until)
    }

    fn finish_until(
        &self,
        worker: &str,
        item: &ExecutionKey,
        how: Finish,
        hidden_until: DateTime<Utc>,
    ) -> Result<()> {
        let f = Finishing {
            key: item,
            worker,
            how,
            now: self.clock.now(),
            hidden_until,
        };
        if self.store.assignment_finish(&f)? {
            Ok(())
        } else {
            Err(queue_error(
                item,
                format!("worker {worker:?} holds no accepted assignment on it"),
            ))
        }
    }

    /// Abandons every ACCEPTED assignment whose deadline has passed, releasing its item.
    /// Returns how many were abandoned.
    pub fn abandon_expired(&self) -> Result<u64> {
        let now = self.clock.now();
        let hidden_until = self.later(now, self.config.hide_for)?;
        let mut abandoned = 0;
        for a in self.store.assignment_expired(now)? {
            let f = Finishing {
                key: &a.key,
                worker: &a.worker,
                how: Finish::Abandon,
                now,
                hidden_until,
            };
            if self.store.assignment_finish(&f)? {
                abandoned += 1;
            }
        }
        Ok(abandoned)
    }

    /// Raises `max_assignments` of `item` by `n` (adjudication "2+1").
    pub fn extend(&self, item: &ExecutionKey, n: i32) -> Result<()> {
        if n < 1 {
            return Err(DocketError::InvalidConfig(format!(
                "extend by at least 1, got {n}"
            )));
        }
        if self.store.item_extend(item, n)? {
            Ok(())
        } else {
            Err(queue_error(item, "no such work-queue item".to_owned()))
        }
    }

    /// `now + period`, as a typed error when past year 9999.
    fn later(&self, now: DateTime<Utc>, period: Duration) -> Result<DateTime<Utc>> {
        after(now, period).ok_or_else(|| {
            DocketError::InvalidConfig(format!("{now} + {period:?} is past year 9999"))
        })
    }

    /// One item.
    pub fn item(&self, item: &ExecutionKey) -> Result<Option<Item>> {
        Ok(self.store.item_get(item)?)
    }

    /// The assignments of an item, by worker. Fails on a status this version does not know
    /// ([`StoreError::Decode`]); [`WorkQueue::items_with_assignments`] reads such rows as
    /// [`StatusRead::Unknown`] instead.
    pub fn assignments(&self, item: &ExecutionKey) -> Result<Vec<Assignment>> {
        Ok(self.store.assignment_list(item)?)
    }

    /// The items `q` selects (at most `q.limit`, by arrival), each with its row version, its
    /// first `q.assignments` assignments by worker and their count, read in one statement
    /// whatever the size of the table. An assignment whose status this version does not know
    /// is listed as [`StatusRead::Unknown`]; the other rows are read as usual. An item whose
    /// row holds a value docket cannot decode fails the read ([`StoreError::Decode`]); see
    /// [`WorkQueue::items_with_assignments_read`] to list it in its place instead.
    pub fn items_with_assignments(&self, q: &ItemsQuery<'_>) -> Result<Vec<ListedItem>> {
        self.items_with_assignments_read(q)?
            .into_iter()
            .map(|read| match read {
                ItemRead::Listed(listed) => Ok(listed),
                ItemRead::Unreadable(bad) => Err(bad.to_error().into()),
            })
            .collect()
    }

    /// [`WorkQueue::items_with_assignments`], with each item whose row holds a value docket
    /// cannot decode (a NULL `record_date`, a time out of range: written by SQL or another
    /// program) returned as [`ItemRead::Unreadable`] in its place, so one bad row does not
    /// hide the others.
    pub fn items_with_assignments_read(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemRead>> {
        if q.limit < 1 || q.assignments < 0 {
            return Err(DocketError::InvalidConfig(format!(
                "items_with_assignments: limit must be at least 1 (got {}) and assignments at \
                 least 0 (got {})",
                q.limit, q.assignments
            )));
        }
        Ok(self.store.item_list_assigned(q)?)
    }

    /// One item with its row version and its first `assignments` assignments (see
    /// [`WorkQueue::items_with_assignments`]); `None` when there is no such item.
    pub fn item_with_assignments(
        &self,
        item: &ExecutionKey,
        assignments: i64,
    ) -> Result<Option<ListedItem>> {
        Ok(self
            .items_with_assignments(&ItemsQuery {
                item: Some(&item.task_instance),
                assignments,
                ..ItemsQuery::new(&item.task_name, 1)
            })?
            .pop())
    }
}

/// A [`StoreError::RepeatedItem`] of a batch held in memory (`len` records, ids by position)
/// as the [`StoreError::DuplicateItem`] it is: the record of the range whose id an earlier
/// record has, the earliest such. Reads the batch once, keeping only the range's ids. Other
/// errors are returned unchanged.
fn name_repeated<'a>(e: DocketError, len: usize, id: impl Fn(usize) -> &'a str) -> DocketError {
    let DocketError::Store(StoreError::RepeatedItem { task, from, to }) = e else {
        return e;
    };
    let start = usize::try_from(from.saturating_sub(1)).map_or(len, |i| i.min(len));
    let end = usize::try_from(to).map_or(len, |i| i.min(len));
    let mut first_at: HashMap<&str, usize> = HashMap::new();
    for i in start..end {
        first_at.entry(id(i)).or_insert(i);
    }
    let repeated = (0..start)
        .filter_map(|i| first_at.get(id(i)).copied())
        .min();
    match repeated {
        Some(i) => DocketError::Store(StoreError::DuplicateItem {
            task,
            item: id(i).to_owned(),
        }),
        None => DocketError::Store(StoreError::RepeatedItem { task, from, to }),
    }
}

/// Checks a resolved row (see [`WorkQueue::insert`]).
fn check_row(row: &NewItem) -> Result<()> {
    let invalid = |reason: String| DocketError::InvalidItem {
        item: row.key.task_instance.clone(),
        reason,
    };
    crate::task::validate_key(&row.key.task_name, &row.key.task_instance)?;
    if row.max_assignments < 1 {
        return Err(invalid(format!(
            "max_assignments must be at least 1, got {}",
            row.max_assignments
        )));
    }
    if let Some(text) = &row.custom_attributes {
        match serde_json::from_str::<Json>(text) {
            Ok(value @ Json::Object(_)) if has_nul(&value) => {
                return Err(invalid("attributes contain a NUL character".into()))
            }
            Ok(Json::Object(_)) => {}
            _ => return Err(invalid("custom_attributes is not a JSON object".into())),
        }
    }
    let years = chrono::Datelike::year(&row.record.date);
    if !(1000..=9999).contains(&years) || row.available_at > max_time() {
        return Err(invalid("dates must lie in the years 1000 to 9999".into()));
    }
    Ok(())
}

/// Whether a JSON value holds U+0000 in a string or key (PostgreSQL's `jsonb` refuses it, so
/// it would break custom ordering there only).
fn has_nul(value: &Json) -> bool {
    match value {
        Json::String(s) => s.contains('\0'),
        Json::Array(items) => items.iter().any(has_nul),
        Json::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || has_nul(v)),
        _ => false,
    }
}

/// Truncates to whole milliseconds (record dates travel as ISO-8601 with milliseconds).
pub fn to_millis(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(TimeDelta::milliseconds(1)).unwrap_or(t)
}

/// Normalizes attributes for the custom keys of `order`, so every backend compares them the
/// same way in SQL: text keys become JSON strings, number keys JSON numbers (numeric strings
/// are converted), timestamp keys UTC strings `YYYY-MM-DDThh:mm:ss.ffffffZ` (text order = time
/// order). JSON `null` is dropped (missing). On failure returns the attribute and the reason.
pub fn normalize_attributes(
    order: &PrimaryOrder,
    attributes: &mut Map<String, Json>,
) -> std::result::Result<(), (String, String)> {
    attributes.retain(|_, v| !v.is_null());
    if let Some((name, _)) = attributes
        .iter()
        .find(|(k, v)| k.contains('\0') || has_nul(v))
    {
        return Err((name.clone(), "contains a NUL character".to_owned()));
    }
    let PrimaryOrder::Custom(keys) = order else {
        return Ok(());
    };
    for key in keys {
        let name = key.attribute.as_str();
        let Some(value) = attributes.get_mut(name) else {
            continue;
        };
        let fail = |reason: &str| (name.to_owned(), reason.to_owned());
        *value = match (key.kind, &*value) {
            (KeyType::Text, Json::String(_)) => continue,
            (KeyType::Text, Json::Number(n)) => Json::String(n.to_string()),
            (KeyType::Text, Json::Bool(b)) => Json::String(b.to_string()),
            (KeyType::Number, Json::Number(_)) => continue,
            (KeyType::Number, Json::String(s)) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(serde_json::Number::from_f64)
                .map(|n| match s.trim().parse::<i64>() {
                    Ok(i) => Json::from(i),
                    Err(_) => Json::Number(n),
                })
                .ok_or_else(|| fail("not a number"))?,
            (KeyType::Timestamp, Json::String(s)) => {
                let t = parse_record_date(s).map_err(|e| fail(&e))?;
                Json::String(t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
            }
            (KeyType::Text, _) => return Err(fail("not a text value")),
            (KeyType::Number, _) => return Err(fail("not a number")),
            (KeyType::Timestamp, _) => return Err(fail("not a timestamp string")),
        };
    }
    Ok(())
}
