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
//! resolved items that reads one row at a time (and reports how far it has read);
//! [`read_batch`] collects a whole file in memory.
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

/// Reads a whole CSV file into resolved items of one batch (see the [module docs](self)), or
/// the first error; nothing is returned for a file with any bad row.
///
/// `batch` names the batch (default: [`default_batch_id`] of `started`); `started` is the
/// batch's start time (truncated to milliseconds): every item arrives then, and it is the
/// record date of rows without one. `config` gives the task type's order, for which attribute
/// values are normalized.
pub fn read_batch<R: Read>(
    reader: R,
    task_type: &str,
    max_assignments: i32,
    batch: Option<&str>,
    started: DateTime<Utc>,
    config: &QueueConfig,
) -> Result<Vec<NewItem>> {
    CsvItems::new(reader, task_type, max_assignments, batch, started, config)?.collect()
}

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

/// The streaming form of [`read_batch`]: yields one resolved item per data row, reading the
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
    /// Checks the arguments and reads the header (see [`read_batch`] for the arguments).
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
        match e {
            DocketError::Store(StoreError::RepeatedItem { task, from, to })
                if task == self.intake.task_type() =>
            {
                match (self.recent.line_of_row(from), self.recent.line_of_row(to)) {
                    (Some(first), Some(last)) => {
                        let lines = match first == last {
                            true => format!("the item id on line {first}"),
                            false => format!("an item id on lines {first} to {last}"),
                        };
                        csv_error(
                            first,
                            ID_COLUMN,
                            format!(
                                "{lines} repeats one given more than {RECENT_IDS} rows earlier \
                                 in this file; nothing was inserted"
                            ),
                        )
                    }
                    _ => DocketError::Store(StoreError::RepeatedItem { task, from, to }),
                }
            }
            DocketError::Store(StoreError::DuplicateItem { task, item })
                if task == self.intake.task_type() =>
            {
                match self.line_of_item(&item) {
                    Some(line) => csv_error(
                        line,
                        ID_COLUMN,
                        format!(
                            "item id {} already exists (enqueued before, or earlier in this \
                             file); nothing was inserted",
                            shorten(&item)
                        ),
                    ),
                    None => DocketError::Store(StoreError::DuplicateItem { task, item }),
                }
            }
            DocketError::Store(StoreError::RejectedItem { task, item, reason })
                if task == self.intake.task_type() =>
            {
                match self.line_of_item(&item) {
                    Some(line) => csv_error(
                        line,
                        ID_COLUMN,
                        format!(
                            "the database refused the row of item {} ({reason}); nothing was \
                             inserted",
                            shorten(&item)
                        ),
                    ),
                    None => DocketError::Store(StoreError::RejectedItem { task, item, reason }),
                }
            }
            other => other,
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
            if self.done || rows % p.every == 0 {
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
mod tests {
    use super::*;
    use crate::ordering::{CustomKey, Direction, KeyType, PrimaryOrder};
    use crate::queue::intake::tests::started;
    use crate::queue::to_millis;
    use chrono::TimeZone;
    use proptest::prelude::*;
    use serde_json::Map;

    fn read(text: &str) -> Result<Vec<NewItem>> {
        read_batch(
            text.as_bytes(),
            "label",
            2,
            None,
            started(),
            &QueueConfig::default(),
        )
    }

    fn at(s: &str) -> DateTime<Utc> {
        super::super::parse_record_date(s).unwrap()
    }

    fn attrs(item: &NewItem) -> Map<String, Json> {
        item.custom_attributes
            .as_deref()
            .map(|t| serde_json::from_str(t).unwrap())
            .unwrap_or_default()
    }

    /// The stored custom attributes (JSON text) of each item read.
    fn stored(items: Result<Vec<NewItem>>) -> Vec<Option<String>> {
        items
            .unwrap()
            .into_iter()
            .map(|i| i.custom_attributes)
            .collect()
    }

    /// `Some(json)` as [`stored`] returns it.
    fn json(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    /// The (line, column) of a CSV error, or a panic naming what came instead.
    fn csv_err(r: Result<Vec<NewItem>>) -> (u64, String, String) {
        match r {
            Err(DocketError::Csv {
                line,
                column,
                reason,
            }) => (line, column, reason),
            other => panic!("expected a CSV error, got {other:?}"),
        }
    }

    #[test]
    fn dates_present_and_missing() {
        let items = read(
            "record_date,text\n\
             2020-03-11T10:15:55.935,a\n\
             ,b\n\
             2020-03-11T10:15:55,c\n\
             2020-03-11T10:15:55Z,d\n\
             \x20 ,e\n",
        )
        .unwrap();
        let millis = to_millis(started());
        let got: Vec<_> = items
            .iter()
            .map(|i| (i.key.task_instance.as_str(), i.record.order, i.record.date))
            .collect();
        assert_eq!(
            got,
            vec![
                ("20261130T131727.123Z/1", 1, at("2020-03-11T10:15:55.935")),
                ("20261130T131727.123Z/2", 2, millis),
                ("20261130T131727.123Z/3", 3, at("2020-03-11T10:15:55")),
                ("20261130T131727.123Z/4", 4, at("2020-03-11T10:15:55")),
                ("20261130T131727.123Z/5", 5, millis),
            ]
        );
        for item in &items {
            assert_eq!(item.key.task_name, "label");
            assert_eq!(item.available_at, millis);
            assert_eq!(item.max_assignments, 2);
            assert_eq!(item.priority, None);
            assert_eq!(item.data, None);
            assert_eq!(attrs(item).len(), 1, "record_date is not an attribute");
        }
    }

    #[test]
    fn malformed_dates_name_line_and_column() {
        for bad in [
            "2020-13-01T00:00:00",
            "2020-03-11",
            "yesterday",
            "11/03/2020",
        ] {
            let (line, column, reason) = csv_err(read(&format!("text,record_date\na,\nb,{bad}\n")));
            assert_eq!((line, column.as_str()), (3, "record_date"), "{bad}");
            assert!(reason.contains("YYYY-MM-DDThh:mm:ss"), "{reason}");
        }
        let err = read("text,record_date\na,nope\n").unwrap_err().to_string();
        assert!(
            err.starts_with("CSV line 2, column \"record_date\": "),
            "{err}"
        );
    }

    #[test]
    fn empty_cells_are_omitted() {
        assert_eq!(
            stored(read("a,b,c\n1,,3\n,,\n\"\",x,\n")),
            [json(r#"{"a":"1","c":"3"}"#), None, json(r#"{"b":"x"}"#)]
        );
        // Values are kept verbatim: spaces included, numbers as strings (FIFO order).
        assert_eq!(
            stored(read("a,b\n 1 ,2.50\n")),
            [json(r#"{"a":" 1 ","b":"2.50"}"#)]
        );
    }

    #[test]
    fn quoted_fields_keep_commas_newlines_and_line_numbers() {
        let text = "text,record_date\n\
                    \"a, with comma\",\n\
                    \"two\nlines\",2020-01-01T00:00:00\n\
                    \"say \"\"hi\"\"\",\n\
                    \"three\nlines\r\nhere\",\n\
                    last,bad-date\n";
        let (line, column, _) = csv_err(read(text));
        assert_eq!((line, column.as_str()), (9, "record_date"));
        let good = text.replace("bad-date", "");
        let items = read(&good).unwrap();
        let texts: Vec<_> = items
            .iter()
            .map(|i| attrs(i)["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            texts,
            [
                "a, with comma",
                "two\nlines",
                "say \"hi\"",
                "three\nlines\r\nhere",
                "last"
            ]
        );
        let orders: Vec<_> = items.iter().map(|i| i.record.order).collect();
        assert_eq!(orders, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn blank_lines_are_skipped_but_counted() {
        let text = "text\n\na\n\nb\n\n";
        let items = read(text).unwrap();
        let ids: Vec<_> = items.iter().map(|i| i.record.order).collect();
        assert_eq!(ids, [1, 2]);
        let (line, column, _) = csv_err(read("text,record_date\n\na,\n\nb,x\n"));
        assert_eq!((line, column.as_str()), (5, "record_date"));
    }

    #[test]
    fn line_numbers_hold_in_large_files() {
        // Past the reader's buffer and the tap's 64 KiB window, blank lines and CRLF included.
        let mut text = String::from("\r\n\ntext,record_date\r\n");
        let mut line = 4;
        for i in 0..20_000 {
            if i % 7 == 0 {
                text.push_str("\r\n\n");
                line += 2;
            }
            text.push_str(&format!("\"row\n{i}\",\r\n"));
            line += 2;
        }
        text.push_str("\n\nlast,2020-02-30T00:00:00\n");
        line += 2;
        let (got, column, _) = csv_err(read(&text));
        assert_eq!((got, column.as_str()), (line, "record_date"));
        let (got, column, _) = csv_err(read(&text.replace("\"row\n19999\",", "x")));
        assert_eq!(column, "record_date", "one field short: the missing column");
        assert_eq!(got, line - 4);
        let items = read(&text.replace("2020-02-30", "2020-02-29")).unwrap();
        assert_eq!(items.len(), 20_001);
        assert_eq!(items[20_000].record.order, 20_001);
    }

    #[test]
    fn bad_header_names_are_named() {
        for (header, column) in [
            ("a,\"b'c\"", "b'c"),
            ("a,\"b\"\"c\"", "b\"c"),
            ("a,b;drop table x", "b;drop table x"),
            ("a--b,c", "a--b"),
            ("a,1b", "1b"),
            ("a, b", " b"),
            ("a,b.c", "b.c"),
        ] {
            let (line, got, reason) = csv_err(read(&format!("{header}\n1,2\n")));
            assert_eq!((line, got.as_str()), (1, column), "{header}");
            assert!(reason.contains("invalid attribute name"), "{reason}");
        }
        let (line, column, reason) = csv_err(read("a,,b\n1,2,3\n"));
        assert_eq!((line, column.as_str()), (1, "2"));
        assert!(reason.contains("empty"), "{reason}");
        let (line, column, reason) = csv_err(read("a,b,a\n1,2,3\n"));
        assert_eq!((line, column.as_str()), (1, "a"));
        assert!(
            reason.contains("duplicate column (also column 1)"),
            "{reason}"
        );
        let (line, _, reason) = csv_err(read(""));
        assert_eq!(line, 1);
        assert!(reason.contains("no header"), "{reason}");
        // A UTF-8 byte-order mark is not part of the first name.
        assert_eq!(
            stored(read("\u{feff}a,b\n1,2\n")),
            [json(r#"{"a":"1","b":"2"}"#)]
        );
    }

    #[test]
    fn wrong_field_counts_name_the_column() {
        let (line, column, reason) = csv_err(read("a,b,c\n1,2,3\n1,2\n"));
        assert_eq!((line, column.as_str()), (3, "c"));
        assert!(reason.contains("expected 3 fields"), "{reason}");
        assert!(reason.contains("found 2"), "{reason}");
        let (line, column, reason) = csv_err(read("a,b\n1,2\n\"x\ny\",2\n1,2,3\n"));
        assert_eq!((line, column.as_str()), (5, "3"));
        assert!(reason.contains("found 3"), "{reason}");
    }

    #[test]
    fn invalid_utf8_names_line_and_column() {
        let mut bytes = b"a,b\n1,2\n3,x".to_vec();
        bytes.extend([0xff, 0xfe, b'\n']);
        let r = read_batch(
            &bytes[..],
            "label",
            1,
            None,
            started(),
            &QueueConfig::default(),
        );
        let (line, column, reason) = csv_err(r);
        assert_eq!((line, column.as_str()), (3, "b"));
        assert!(reason.contains("UTF-8"), "{reason}");
    }

    #[test]
    fn id_column_overrides_the_item_id() {
        let items = read_batch(
            "id,text\nfirst,a\n,b\nthird,c\n".as_bytes(),
            "label",
            1,
            Some("monday"),
            started(),
            &QueueConfig::default(),
        )
        .unwrap();
        let ids: Vec<_> = items.iter().map(|i| i.key.task_instance.as_str()).collect();
        assert_eq!(ids, ["first", "monday/2", "third"]);
        assert!(items.iter().all(|i| !attrs(i).contains_key("id")));

        let (line, column, reason) = csv_err(read("id,text\nx,a\ny,b\nx,c\n"));
        assert_eq!((line, column.as_str()), (4, "id"));
        assert!(reason.contains("first on line 2"), "{reason}");
        let long = "x".repeat(MAX_INSTANCE_ID_LEN + 1);
        let (line, column, reason) = csv_err(read(&format!("text,id\na,ok\nb,{long}\n")));
        assert_eq!((line, column.as_str()), (3, "id"));
        assert!(reason.contains("too long"), "{reason}");
    }

    #[test]
    fn arguments_are_checked_before_reading() {
        let config = QueueConfig::default();
        let r = read_batch("a\n1\n".as_bytes(), "t", 0, None, started(), &config);
        assert!(
            matches!(&r, Err(DocketError::InvalidConfig(m)) if m.contains("at least 1")),
            "{r:?}"
        );
        let r = read_batch("a\n1\n".as_bytes(), "", 1, None, started(), &config);
        assert!(matches!(r, Err(DocketError::InvalidName { .. })), "{r:?}");
        let long = "b".repeat(MAX_BATCH_NAME_LEN + 1);
        let r = read_batch("a\n1\n".as_bytes(), "t", 1, Some(&long), started(), &config);
        assert!(matches!(r, Err(DocketError::InvalidName { .. })), "{r:?}");
    }

    #[test]
    fn custom_keys_are_normalized_or_rejected() {
        let mut config = QueueConfig::default();
        config.orders.insert(
            "label".to_owned(),
            PrimaryOrder::Custom(vec![
                CustomKey::new("score", KeyType::Number, Direction::Desc).unwrap(),
                CustomKey::new("due", KeyType::Timestamp, Direction::Asc).unwrap(),
            ]),
        );
        let read = |text: &str| read_batch(text.as_bytes(), "label", 1, None, started(), &config);
        assert_eq!(
            stored(read("score,due,note\n12,2020-01-01T00:00:00,x\n1.5,,\n")),
            [
                json(r#"{"due":"2020-01-01T00:00:00.000000Z","note":"x","score":12}"#),
                json(r#"{"score":1.5}"#)
            ]
        );
        let (line, column, reason) = csv_err(read("note,score\nx,1\ny,many\n"));
        assert_eq!((line, column.as_str()), (3, "score"));
        assert!(reason.contains("not a number"), "{reason}");
        let (line, column, _) = csv_err(read("due\n\n\nsoon\n"));
        assert_eq!((line, column.as_str()), (4, "due"));
    }

    #[test]
    fn streaming_reports_progress_and_stops_after_an_error() {
        let text = "a\n1\n2\n\"\n\"\n";
        let mut items = CsvItems::new(
            text.as_bytes(),
            "label",
            1,
            Some("b"),
            started(),
            &QueueConfig::default(),
        )
        .unwrap();
        assert_eq!(items.columns(), ["a"]);
        assert_eq!(items.batch_id(), "b");
        assert_eq!(items.started(), to_millis(started()));
        assert_eq!(items.next().unwrap().unwrap().key.task_instance, "b/1");
        assert_eq!(items.bytes_read(), 4);
        assert_eq!(items.by_ref().count(), 2);
        assert_eq!(items.rows_read(), 3);
        assert_eq!(items.bytes_read(), text.len() as u64);

        let mut bad = CsvItems::new(
            "a,b\n1\n1,2\n".as_bytes(),
            "label",
            1,
            None,
            started(),
            &QueueConfig::default(),
        )
        .unwrap();
        assert!(bad.next().unwrap().is_err());
        assert!(bad.next().is_none(), "fused after the first error");
    }

    #[test]
    fn duplicate_ids_are_found_within_the_window_and_located_beyond_it() {
        let rows = RECENT_IDS + 10;
        let mut text = String::from("id,a\n");
        for i in 1..=rows {
            text.push_str(&format!("r{i},x\n"));
        }
        // Far apart: the reader has forgotten the first one (the database finds it).
        let far = format!("{text}r1,x\n");
        let items = read(&far).unwrap();
        assert_eq!(items.len(), rows + 1);
        // Near: both lines named.
        let near = format!("{text}r{rows},x\n");
        let (line, column, reason) = csv_err(read(&near));
        assert_eq!((line, column.as_str()), (rows as u64 + 2, "id"));
        assert!(
            reason.contains(&format!("first on line {}", rows + 1)),
            "{reason}"
        );

        // A duplicate the database reports is placed on its line, if recent.
        let mut items = CsvItems::new(
            text.as_bytes(),
            "label",
            1,
            None,
            started(),
            &QueueConfig::default(),
        )
        .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        items.on_progress(5000, move |rows, bytes| {
            log.lock().unwrap().push((rows, bytes));
        });
        assert_eq!(items.by_ref().count(), rows);
        let reports = seen.lock().unwrap().clone();
        assert_eq!(reports.len(), rows / 5000 + 1, "{reports:?}");
        assert_eq!(reports[0].0, 5000);
        assert_eq!(reports.last(), Some(&(rows as u64, text.len() as u64)));
        // An error placed on the file's last line, in the id column, saying `needle`.
        let on_last_line = |e: DocketError, needle: &str| match e {
            DocketError::Csv {
                line,
                column,
                reason,
            } => {
                assert_eq!((line, column.as_str()), (rows as u64 + 1, "id"));
                assert!(reason.contains(needle), "{reason}");
            }
            other => panic!("{other:?}"),
        };
        let duplicate = |item: &str, task: &str| {
            DocketError::Store(StoreError::DuplicateItem {
                task: task.to_owned(),
                item: item.to_owned(),
            })
        };
        on_last_line(
            items.locate(duplicate(&format!("r{rows}"), "label")),
            "already exists",
        );
        // Forgotten, or of another task type: unchanged.
        for (item, task) in [("r1", "label"), ("r20", "other")] {
            assert!(matches!(
                items.locate(duplicate(item, task)),
                DocketError::Store(StoreError::DuplicateItem { .. })
            ));
        }
        assert_eq!(items.line_of_item("r20"), Some(21));
        // A row the database's JSON check refused: placed on its line, if recent.
        let rejected = |item: &str| {
            DocketError::Store(StoreError::RejectedItem {
                task: "label".to_owned(),
                item: item.to_owned(),
                reason: "check constraint violated".to_owned(),
            })
        };
        on_last_line(
            items.locate(rejected(&format!("r{rows}"))),
            "refused the row",
        );
        assert!(matches!(
            items.locate(rejected("r1")),
            DocketError::Store(StoreError::RejectedItem { .. })
        ));
        // A repeat the database could not name: the range of rows, as lines.
        let repeated = DocketError::Store(StoreError::RepeatedItem {
            task: "label".to_owned(),
            from: rows as u64 - 9,
            to: rows as u64,
        });
        match items.locate(repeated) {
            DocketError::Csv {
                line,
                column,
                reason,
            } => {
                assert_eq!((line, column.as_str()), (rows as u64 - 8, "id"));
                let range = format!("lines {} to {}", rows - 8, rows + 1);
                assert!(reason.contains(&range), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let forgotten = DocketError::Store(StoreError::RepeatedItem {
            task: "label".to_owned(),
            from: 1,
            to: 10,
        });
        assert!(matches!(
            items.locate(forgotten),
            DocketError::Store(StoreError::RepeatedItem { .. })
        ));
    }

    /// A valid attribute name other than the reserved columns.
    fn attribute_name() -> impl Strategy<Value = String> {
        "[A-Za-z_][A-Za-z0-9_]{0,12}"
            .prop_filter("reserved", |n| n != ID_COLUMN && n != RECORD_DATE_COLUMN)
    }

    /// A cell: anything, including the characters CSV quotes.
    fn cell() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[a-z ,\"\n\r;']{0,8}",
            any::<String>().prop_map(|s| s.chars().take(12).collect()),
        ]
    }

    /// Millisecond instants between 1970 and 2100.
    fn date() -> impl Strategy<Value = Option<DateTime<Utc>>> {
        proptest::option::of(
            (0i64..4_102_444_800_000).prop_map(|ms| Utc.timestamp_millis_opt(ms).unwrap()),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn well_formed_files_round_trip(
            (names, rows) in proptest::collection::hash_set(attribute_name(), 1..5)
                .prop_flat_map(|names| {
                    let names: Vec<String> = names.into_iter().collect();
                    let width = names.len();
                    (
                        Just(names),
                        proptest::collection::vec(
                            (proptest::collection::vec(cell(), width), date(), 0..3usize),
                            0..20,
                        ),
                    )
                }),
            dates_first in any::<bool>(),
            crlf in any::<bool>(),
            bad_row in any::<proptest::sample::Index>(),
        ) {
            let mut header: Vec<&str> = names.iter().map(String::as_str).collect();
            let date_at = if dates_first { 0 } else { header.len() };
            header.insert(date_at, RECORD_DATE_COLUMN);
            let rendered: Vec<Vec<String>> = rows
                .iter()
                .map(|(cells, date, _)| {
                    let mut record = cells.clone();
                    let date = date.map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3f").to_string());
                    record.insert(date_at, date.unwrap_or_default());
                    record
                })
                .collect();
            // Header, then each row after 0-2 blank lines; `lines` is each row's first line.
            let file = |bad: Option<usize>| {
                let terminator = if crlf {
                    ::csv::Terminator::CRLF
                } else {
                    ::csv::Terminator::Any(b'\n')
                };
                let blank: &[u8] = if crlf { b"\r\n" } else { b"\n" };
                let render = |record: &[String]| {
                    let mut out = ::csv::WriterBuilder::new()
                        .terminator(terminator)
                        .from_writer(Vec::new());
                    out.write_record(record).unwrap();
                    out.into_inner().unwrap()
                };
                let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
                let mut bytes = render(&header);
                let mut lines = Vec::new();
                for (j, (record, (_, _, blanks))) in rendered.iter().zip(&rows).enumerate() {
                    bytes.extend(blank.repeat(*blanks));
                    lines.push(1 + bytes.iter().filter(|&&b| b == b'\n').count() as u64);
                    let mut record = record.clone();
                    if bad == Some(j) {
                        record[date_at] = "not a date".to_owned();
                    }
                    bytes.extend(render(&record));
                }
                (bytes, lines)
            };
            let (bytes, lines) = file(None);
            let items = read_batch(&bytes[..], "t", 1, None, started(), &QueueConfig::default())
                .unwrap();
            prop_assert_eq!(items.len(), rows.len());
            for (i, (item, (cells, date, _))) in items.iter().zip(&rows).enumerate() {
                prop_assert_eq!(item.record.order, i as i64 + 1);
                prop_assert_eq!(item.record.date, date.unwrap_or(to_millis(started())));
                let expected: Map<String, Json> = names
                    .iter()
                    .zip(cells)
                    .filter(|(_, c)| !c.is_empty())
                    .map(|(n, c)| (n.clone(), Json::String(c.clone())))
                    .collect();
                prop_assert_eq!(attrs(item), expected);
            }
            // The same file with one bad date: the error names that row's physical line.
            if !rows.is_empty() {
                let k = bad_row.index(rows.len());
                let (bytes, _) = file(Some(k));
                let r = read_batch(&bytes[..], "t", 1, None, started(), &QueueConfig::default());
                match r {
                    Err(DocketError::Csv { line, column, .. }) => {
                        prop_assert_eq!(line, lines[k]);
                        prop_assert_eq!(column, RECORD_DATE_COLUMN);
                    }
                    other => prop_assert!(false, "expected a CSV error, got {:?}", other),
                }
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            check_typed(read_batch(&bytes[..], "t", 1, None, started(), &custom_config()));
        }

        #[test]
        fn arbitrary_csvish_text_never_panics(
            text in "(id|record_date|score|a|b|[,\"\n\r;' -]|[0-9T:.Z]|x){0,80}"
        ) {
            check_typed(read_batch(text.as_bytes(), "t", 1, None, started(), &custom_config()));
            check_typed(read_batch(text.as_bytes(), "t", 1, None, started(), &QueueConfig::default()));
        }

        #[test]
        fn attribute_names_never_panic_and_match_the_grammar(name in any::<String>()) {
            let expected = is_attribute_name(&name);
            prop_assert_eq!(AttributeName::parse(&name).is_ok(), expected, "{:?}", name);
        }

        #[test]
        fn attribute_names_of_the_grammar_are_accepted(
            name in "[A-Za-z_][A-Za-z0-9_]{0,63}",
            tail in "[A-Za-z0-9_]{1,8}",
        ) {
            let parsed = AttributeName::parse(&name).unwrap();
            prop_assert_eq!(parsed.as_str(), name.as_str());
            // One character past 64 is too long.
            let long = format!("{name}{}", tail.repeat(64));
            prop_assert!(AttributeName::parse(&long[..65]).is_err());
        }

        #[test]
        fn attribute_names_near_the_grammar(name in "[A-Za-z0-9_;'\". \\-/*$é]{0,70}") {
            let expected = is_attribute_name(&name);
            prop_assert_eq!(AttributeName::parse(&name).is_ok(), expected, "{:?}", name);
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_]{0,63}`, by hand.
    fn is_attribute_name(name: &str) -> bool {
        let b = name.as_bytes();
        !b.is_empty()
            && b.len() <= 64
            && (b[0].is_ascii_alphabetic() || b[0] == b'_')
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
    }

    fn custom_config() -> QueueConfig {
        let mut config = QueueConfig::default();
        config.orders.insert(
            "t".to_owned(),
            PrimaryOrder::Custom(vec![
                CustomKey::new("score", KeyType::Number, Direction::Asc).unwrap(),
                CustomKey::new("a", KeyType::Timestamp, Direction::Asc).unwrap(),
                CustomKey::new("b", KeyType::Text, Direction::Asc).unwrap(),
            ]),
        );
        config
    }

    /// Ok, or a CSV error with a line (the arguments themselves are valid).
    fn check_typed(r: Result<Vec<NewItem>>) {
        match r {
            Ok(items) => {
                for (i, item) in items.iter().enumerate() {
                    assert_eq!(item.record.order, i as i64 + 1);
                }
            }
            Err(DocketError::Csv { line, .. }) => assert!(line >= 1),
            Err(other) => panic!("untyped error {other:?}"),
        }
    }
}
