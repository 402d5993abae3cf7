//! CSV intake: one file is one [batch](super::Batch) of work-queue items.
//!
//! The first row is the header. Every data row becomes one item:
//!
//! - its **record order** is its row number among the data rows (1-based);
//! - column `record_date` (optional) gives its **record date**, ISO-8601
//!   `YYYY-MM-DDThh:mm:ss[.sss]` in UTC (a `Z` or an offset is accepted too); an empty cell is a
//!   missing date, which is the batch's start time;
//! - column `id` (optional) gives its **item id**; without it, or when the cell is empty, the id
//!   is `<batch id>/<row>`, where the batch id is a name given by the caller or else the batch's
//!   start time written compactly ([`default_batch_id`], e.g. `20261130T131727.123Z`);
//! - every other column is a **custom attribute** named by its header (which must pass
//!   [`AttributeName::parse`]), as a string; empty cells are omitted, and the values are
//!   converted for the task type's custom order keys by
//!   [`normalize_attributes`](super::normalize_attributes).
//!
//! Column names are matched exactly (`ID` is an attribute). Blank lines are skipped: they are
//! not rows. Any bad row is a [`DocketError::Csv`] naming its physical line in the file (lines
//! end at `\n`; the header is line 1; blank lines and quoted fields spanning lines count every
//! line) and its column. Intake is
//! all-or-nothing: [`WorkQueue::enqueue_csv`] reads, resolves and inserts the file in chunks
//! within one transaction, so memory does not grow with the file and a bad row anywhere
//! leaves nothing inserted. [`CsvItems`] is the streaming reader it uses: an iterator of
//! resolved items that reads one row at a time (and reports how far it has read); collected,
//! it holds a whole file in memory.
//!
//! An item id used twice is found within the last [`RECENT_IDS`] rows by the reader (the error
//! names both lines), and further apart by the database when the second one is inserted (the
//! error names its line; the first is in an earlier chunk, or in the table from an earlier
//! batch). The reader keeps no more than that window.
//!
//! This module only reads cells: every row is resolved by the same [`Intake`] as a typed
//! [`Batch`](super::Batch). It needs the crate feature `csv`.

pub use super::intake::{default_batch_id, MAX_BATCH_NAME_LEN};
use super::{Intake, NewItem, QueueConfig, Record, Rejection, WorkQueue};
use crate::error::{DocketError, Result, StoreError};
use crate::ordering::AttributeName;
use crate::task::MAX_INSTANCE_ID_LEN;
use chrono::{DateTime, Utc};
use serde_json::Value as Json;
use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};

/// The column holding the record date.
pub const RECORD_DATE_COLUMN: &str = "record_date";
/// The column holding the item id.
pub const ID_COLUMN: &str = "id";

/// How many recent rows' item ids (and lines) [`CsvItems`] keeps: duplicates within this
/// window are reported with both lines, and a duplicate the database finds later is reported
/// with its line. At least as many as one multi-row insert carries
/// ([`MAX_ROWS_PER_INSERT`](crate::dialect::queue::MAX_ROWS_PER_INSERT),
/// [`ARRAY_ROWS_PER_INSERT`](crate::dialect::statements::ARRAY_ROWS_PER_INSERT)).
pub const RECENT_IDS: usize = 16_384;
const _: () = assert!(
    RECENT_IDS >= crate::dialect::queue::MAX_ROWS_PER_INSERT
        && RECENT_IDS >= crate::dialect::statements::ARRAY_ROWS_PER_INSERT
);

impl WorkQueue {
    /// Reads a CSV batch started at the clock's now and inserts all its items in one
    /// transaction, streaming ([`WorkQueue::enqueue_items`]). Returns how many were inserted;
    /// a bad row or an existing item id inserts nothing.
    pub fn enqueue_csv<R: Read>(
        &self,
        reader: R,
        task_type: &str,
        max_assignments: i32,
        batch: Option<&str>,
    ) -> Result<u64> {
        let mut items = CsvItems::new(
            reader,
            task_type,
            max_assignments,
            batch,
            self.clock.now(),
            &self.config,
        )?;
        self.enqueue_items(&mut items)
    }

    /// Inserts every item `items` yields in one transaction, reading the file as the chunks
    /// are inserted ([`WorkQueue::insert_stream`]): a bad row, or an item id that exists,
    /// inserts nothing, and is reported as a [`DocketError::Csv`] naming its line.
    pub fn enqueue_items<R: Read>(&self, items: &mut CsvItems<R>) -> Result<u64> {
        let inserted = self.insert_stream(items.by_ref());
        inserted.map_err(|e| items.locate(e))
    }
}

/// What each column of the file is.
#[derive(Debug, Clone, PartialEq)]
enum Column {
    Id,
    RecordDate,
    Attribute(AttributeName),
}

/// A CSV file read as work-queue items: yields one resolved item per data row, reading the
/// file as it goes. The header is read and checked by [`CsvItems::new`]. After the first error
/// it yields nothing more. Item ids are checked for duplicates within the last
/// [`RECENT_IDS`] rows (the database checks the rest), so its memory does not grow with the
/// file.
pub struct CsvItems<R> {
    reader: ::csv::Reader<Tap<R>>,
    tap: Arc<Mutex<TapLog>>,
    names: Vec<String>,
    columns: Vec<Column>,
    intake: Intake,
    record: ::csv::StringRecord,
    recent: RecentIds,
    progress: Option<Progress>,
    done: bool,
}

/// A callback told the rows and bytes read so far, every `every` rows.
struct Progress {
    every: u64,
    report: Box<dyn FnMut(u64, u64) + Send>,
}

/// The item ids of the last [`RECENT_IDS`] rows, with their lines.
#[derive(Debug, Default)]
struct RecentIds {
    lines: HashMap<String, u64>,
    /// (id, line) of the recent rows, oldest first.
    order: VecDeque<(String, u64)>,
    /// Rows recorded so far.
    count: u64,
}

impl RecentIds {
    /// Records `id` at `line`; the line of an earlier row with the same id, if recent.
    fn insert(&mut self, id: &str, line: u64) -> Option<u64> {
        if let Some(first) = self.lines.get(id) {
            return Some(*first);
        }
        if self.order.len() == RECENT_IDS {
            if let Some((oldest, _)) = self.order.pop_front() {
                self.lines.remove(&oldest);
            }
        }
        self.lines.insert(id.to_owned(), line);
        self.order.push_back((id.to_owned(), line));
        self.count += 1;
        None
    }

    /// The line of data row `row` (1-based), if recent.
    fn line_of_row(&self, row: u64) -> Option<u64> {
        let oldest = self.count - self.order.len() as u64 + 1;
        let at = usize::try_from(row.checked_sub(oldest)?).ok()?;
        self.order.get(at).map(|(_, line)| *line)
    }
}

impl<R> std::fmt::Debug for CsvItems<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvItems")
            .field("task_type", &self.intake.task_type())
            .field("batch_id", &self.intake.batch_id())
            .field("columns", &self.names)
            .field("row", &self.intake.numbered())
            .finish_non_exhaustive()
    }
}

fn csv_error(line: u64, column: impl Into<String>, reason: impl Into<String>) -> DocketError {
    DocketError::Csv {
        line,
        column: column.into(),
        reason: reason.into(),
    }
}

impl<R: Read> CsvItems<R> {
    /// Checks the arguments and reads the header. The items come one by one; collect them
    /// for a whole file or the first error (nothing is returned for a file with any bad row).
    ///
    /// `batch` names the batch (default: [`default_batch_id`] of `started`); `started` is the
    /// batch's start time (truncated to milliseconds): every item arrives then, and it is the
    /// record date of rows without one. `config` gives the task type's order, for which
    /// attribute values are normalized.
    pub fn new(
        reader: R,
        task_type: &str,
        max_assignments: i32,
        batch: Option<&str>,
        started: DateTime<Utc>,
        config: &QueueConfig,
    ) -> Result<Self> {
        let intake = Intake::new(
            task_type,
            max_assignments,
            batch,
            started,
            config.order_of(task_type),
        )?;
        let tap = Arc::new(Mutex::new(TapLog::default()));
        let mut reader = ::csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .from_reader(Tap {
                inner: reader,
                log: Arc::clone(&tap),
            });
        let header = reader.headers().map_err(|e| {
            let line = e.position().map_or(1, |p| physical_line(&tap, p));
            let (column, reason) = describe(&e, &[]);
            csv_error(line, column, reason)
        })?;
        let line = header.position().map_or(1, |p| physical_line(&tap, p));
        if header.is_empty() {
            return Err(csv_error(line, "", "the file has no header row"));
        }
        let names: Vec<String> = header.iter().map(str::to_owned).collect();
        let mut columns = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let label = column_label(&names, i);
            if let Some(first) = names[..i].iter().position(|n| n == name) {
                return Err(csv_error(
                    line,
                    label,
                    format!("duplicate column (also column {})", first + 1),
                ));
            }
            columns.push(match name.as_str() {
                ID_COLUMN => Column::Id,
                RECORD_DATE_COLUMN => Column::RecordDate,
                _ => Column::Attribute(
                    AttributeName::parse(name)
                        .map_err(|e| csv_error(line, label, e.to_string()))?,
                ),
            });
        }
        Ok(Self {
            reader,
            tap,
            names,
            columns,
            intake,
            record: ::csv::StringRecord::new(),
            recent: RecentIds::default(),
            progress: None,
            done: false,
        })
    }

    /// The batch id (given, or the default from the start time).
    pub fn batch_id(&self) -> &str {
        self.intake.batch_id()
    }

    /// The batch's start time (to milliseconds).
    pub fn started(&self) -> DateTime<Utc> {
        self.intake.started()
    }

    /// The header's names, in file order.
    pub fn columns(&self) -> &[String] {
        &self.names
    }

    /// Bytes of input read so far (for progress).
    pub fn bytes_read(&self) -> u64 {
        self.reader.position().byte()
    }

    /// Data rows read so far (a row the reader or its record date rejected is not counted).
    pub fn rows_read(&self) -> u64 {
        self.intake.numbered()
    }

    /// Calls `report(rows, bytes)` with the data rows and bytes read so far every `every`
    /// rows (for a progress display while [`WorkQueue::enqueue_items`] reads).
    pub fn on_progress(&mut self, every: u64, report: impl FnMut(u64, u64) + Send + 'static) {
        self.progress = Some(Progress {
            every: every.max(1),
            report: Box::new(report),
        });
    }

    /// The line of a recent row (within the last [`RECENT_IDS`]) with item id `id`.
    pub fn line_of_item(&self, id: &str) -> Option<u64> {
        self.recent.lines.get(id).copied()
    }

    /// `e` as a [`DocketError::Csv`] naming the line, when it is about recent rows of this
    /// file: an item id the database already has (from an earlier batch, or earlier in this
    /// file) is [`StoreError::DuplicateItem`] from the insert; an id that repeats one too far
    /// back for the database to name it is [`StoreError::RepeatedItem`] (a range of rows,
    /// given as lines); a row the database refused by a CHECK constraint is
    /// [`StoreError::RejectedItem`]. Other errors are returned unchanged.
    pub fn locate(&self, e: DocketError) -> DocketError {
        match self.line_and_message(&e) {
            Some((line, message)) => csv_error(line, ID_COLUMN, message),
            None => e,
        }
    }

    /// The line [`CsvItems::locate`] names for `e`, and what it says there.
    fn line_and_message(&self, e: &DocketError) -> Option<(u64, String)> {
        let DocketError::Store(store) = e else {
            return None;
        };
        match store {
            StoreError::RepeatedItem { task, from, to } if *task == self.intake.task_type() => {
                let first = self.recent.line_of_row(*from)?;
                let last = self.recent.line_of_row(*to)?;
                let lines = match first == last {
                    true => format!("the item id on line {first}"),
                    false => format!("an item id on lines {first} to {last}"),
                };
                Some((
                    first,
                    format!(
                        "{lines} repeats one given more than {RECENT_IDS} rows earlier in this \
                         file; nothing was inserted"
                    ),
                ))
            }
            StoreError::DuplicateItem { task, item } if *task == self.intake.task_type() => Some((
                self.line_of_item(item)?,
                format!(
                    "item id {} already exists (enqueued before, or earlier in this file); \
                         nothing was inserted",
                    shorten(item)
                ),
            )),
            StoreError::RejectedItem { task, item, reason } if *task == self.intake.task_type() => {
                Some((
                    self.line_of_item(item)?,
                    format!(
                        "the database refused the row of item {} ({reason}); nothing was \
                         inserted",
                        shorten(item)
                    ),
                ))
            }
            _ => None,
        }
    }

    /// The physical line of a record at `pos` (or where the reader is).
    fn line_of(&self, pos: Option<&::csv::Position>) -> u64 {
        pos.map_or_else(
            || self.reader.position().line(),
            |p| physical_line(&self.tap, p),
        )
    }

    fn next_item(&mut self) -> Result<Option<NewItem>> {
        match self.reader.read_record(&mut self.record) {
            Ok(false) => return Ok(None),
            Ok(true) => {}
            Err(e) => {
                let line = self.line_of(e.position());
                let (column, reason) = describe(&e, &self.names);
                return Err(csv_error(line, column, reason));
            }
        }
        let line = self.line_of(self.record.position());
        self.tap
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .forget_before(self.reader.position().byte());
        let fail = |column: &str, reason: String| csv_error(line, column, reason);
        let mut id = None;
        let mut record = Record::default();
        for (column, cell) in self.columns.iter().zip(self.record.iter()) {
            match column {
                Column::Id if !cell.is_empty() => id = Some(cell.to_owned()),
                Column::RecordDate if !cell.trim().is_empty() => {
                    let t = super::parse_record_date(cell)
                        .map_err(|reason| fail(RECORD_DATE_COLUMN, reason))?;
                    record.record_date = Some(t);
                }
                Column::Attribute(name) if !cell.is_empty() => {
                    let value = Json::String(cell.to_owned());
                    record.attributes.insert(name.as_str().to_owned(), value);
                }
                _ => {}
            }
        }
        record.id = id.unwrap_or_else(|| self.intake.default_id());
        if let Some(first) = self.recent.insert(&record.id, line) {
            return Err(fail(
                ID_COLUMN,
                format!("duplicate item id {:?} (first on line {first})", record.id),
            ));
        }
        match self.intake.resolve(record) {
            Ok(item) => Ok(Some(item)),
            Err(Rejection::Id { id, reason }) => Err(fail(
                ID_COLUMN,
                format!(
                    "item id {} ({} characters): {reason}, at most {MAX_INSTANCE_ID_LEN} characters without control characters",
                    shorten(&id),
                    id.chars().count()
                ),
            )),
            Err(Rejection::Attribute { name, reason, .. }) => Err(fail(&name, reason)),
            Err(other @ Rejection::TooLate { .. }) => Err(fail("", other.to_string())),
        }
    }
}

impl<R: Read> Iterator for CsvItems<R> {
    type Item = Result<NewItem>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_item().transpose();
        if !matches!(next, Some(Ok(_))) {
            self.done = true;
        }
        if let Some(p) = &mut self.progress {
            let rows = self.intake.numbered();
            if self.done || rows.is_multiple_of(p.every) {
                (p.report)(rows, self.reader.position().byte());
            }
        }
        next
    }
}

impl<R: Read> std::iter::FusedIterator for CsvItems<R> {}

/// The input as the CSV reader reads it, with the bytes it has not yet moved past kept aside,
/// so that blank lines it skips can be counted: the reader positions a record where the
/// previous one ended, before any blank lines, which would put errors on the wrong line.
struct Tap<R> {
    inner: R,
    log: Arc<Mutex<TapLog>>,
}

/// The bytes read from `start` on.
#[derive(Debug, Default)]
struct TapLog {
    start: u64,
    bytes: Vec<u8>,
}

impl TapLog {
    /// Drops what lies before byte `offset`, in large steps (so that small records do not
    /// move the read-ahead each time).
    fn forget_before(&mut self, offset: u64) {
        let done = usize::try_from(offset.saturating_sub(self.start))
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        if done >= 64 * 1024 {
            self.bytes.drain(..done);
            self.start += done as u64;
        }
    }
}

impl<R: Read> Read for Tap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bytes
            .extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// The line a record positioned at `pos` really starts on: the reader's line plus the blank
/// lines (only `\r` and `\n`) between `pos` and the record's first byte.
fn physical_line(tap: &Mutex<TapLog>, pos: &::csv::Position) -> u64 {
    let log = tap.lock().unwrap_or_else(PoisonError::into_inner);
    let from = usize::try_from(pos.byte().saturating_sub(log.start)).unwrap_or(usize::MAX);
    let skipped = log.bytes.get(from..).map_or(0, |rest| {
        rest.iter()
            .take_while(|&&b| b == b'\n' || b == b'\r')
            .filter(|&&b| b == b'\n')
            .count()
    });
    pos.line() + skipped as u64
}

/// `text` for a message: at most 40 characters, quoted.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{:?}...", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// The header's name for column `i` (0-based), or its 1-based number when it has none.
fn column_label(names: &[String], i: usize) -> String {
    match names.get(i) {
        Some(name) if !name.is_empty() => name.clone(),
        _ => (i + 1).to_string(),
    }
}

/// The column and reason of a reader error.
fn describe(e: &::csv::Error, names: &[String]) -> (String, String) {
    match e.kind() {
        ::csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            // Fewer fields: the first missing column; more: the first one without a header.
            let column = usize::try_from(*len.min(expected_len)).unwrap_or(usize::MAX);
            (
                column_label(names, column),
                format!("expected {expected_len} fields (as in the header), found {len}"),
            )
        }
        ::csv::ErrorKind::Utf8 { err, .. } => (
            column_label(names, err.field()),
            format!(
                "invalid UTF-8 after byte {} of the field",
                err.valid_up_to()
            ),
        ),
        ::csv::ErrorKind::Io(io) => (String::new(), format!("read failed: {io}")),
        _ => (String::new(), e.to_string()),
    }
}

#[cfg(test)]
mod tests;
