//! Rows as sessions return them, and their decoding into records, written once for every
//! backend.
//!
//! A session turns each column of a result row into a [`Cell`] by the type the driver reports
//! (an integer, text, bytes, a timestamp, ...) and names it as the statement does. The decoders
//! here read cells by column name (case-insensitively: Oracle reports names in upper case) and
//! accept the few representations the backends differ in: booleans stored as integers,
//! `DECIMAL` sums, text that arrives as bytes, and timestamps stored as integer microseconds
//! since the Unix epoch (docket's SQLite encoding).

use crate::error::StoreError;
use crate::records::{
    Assignment, AssignmentStatus, Execution, ExecutionKey, Item, RecordKey, TaskSummary,
};
use chrono::{DateTime, Utc};

/// One column value of a result row.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Cell {
    /// SQL NULL.
    #[default]
    Null,
    /// Any integer type.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// An exact number as decimal text (e.g. MySQL's `SUM`).
    Decimal(String),
    /// Text.
    Text(String),
    /// Bytes.
    Bytes(Vec<u8>),
    /// A boolean.
    Bool(bool),
    /// An instant (zone-less database times are read as UTC).
    Timestamp(DateTime<Utc>),
    /// A value the driver returned but the session could not read (e.g. PostgreSQL's
    /// `-infinity`, MySQL's zero date), with the driver's reason. Reading it is a
    /// [`StoreError::Decode`] naming the column, so one such value fails its row only.
    Invalid(String),
}

/// One result row: named cells in select-list order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    cells: Vec<(String, Cell)>,
}

impl Row {
    /// A row of `(column name, value)` pairs.
    pub fn new(cells: Vec<(String, Cell)>) -> Self {
        Self { cells }
    }

    /// The cells, in select-list order.
    pub fn cells(&self) -> &[(String, Cell)] {
        &self.cells
    }

    /// Whether the row has a column of this name.
    pub fn has(&self, column: &str) -> bool {
        self.position(column).is_some()
    }

    fn position(&self, column: &str) -> Option<usize> {
        self.cells
            .iter()
            .position(|(name, _)| name.eq_ignore_ascii_case(column))
    }

    /// Takes a column's value out of the row (a missing column is an error).
    pub fn take(&mut self, column: &'static str) -> Result<Cell, StoreError> {
        let at = self
            .position(column)
            .ok_or_else(|| decode(column, "the result has no such column"))?;
        match std::mem::take(&mut self.cells[at].1) {
            Cell::Invalid(reason) => Err(decode(column, format!("unreadable value: {reason}"))),
            cell => Ok(cell),
        }
    }

    /// An integer column's value without taking it (`None` unless it holds an integer).
    pub fn peek_i64(&self, column: &str) -> Option<i64> {
        match &self.cells[self.position(column)?].1 {
            Cell::Int(v) => Some(*v),
            Cell::Decimal(s) | Cell::Text(s) => parse_integer(s),
            _ => None,
        }
    }

    /// A column as text for a report, whatever it holds (`None` when missing or NULL): keys of
    /// rows that fail to decode are still named.
    pub fn lossy_text(&self, column: &str) -> Option<String> {
        match &self.cells[self.position(column)?].1 {
            Cell::Null | Cell::Invalid(_) => None,
            Cell::Text(s) | Cell::Decimal(s) => Some(s.clone()),
            Cell::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Cell::Int(v) => Some(v.to_string()),
            other => Some(format!("{other:?}")),
        }
    }

    /// A nullable text column.
    pub fn opt_text(&mut self, column: &'static str) -> Result<Option<String>, StoreError> {
        match self.take(column)? {
            Cell::Null => Ok(None),
            Cell::Text(s) | Cell::Decimal(s) => Ok(Some(s)),
            Cell::Bytes(b) => String::from_utf8(b)
                .map(Some)
                .map_err(|e| decode(column, format!("not UTF-8 text: {e}"))),
            other => Err(unexpected(column, "text", &other)),
        }
    }

    /// A text column.
    pub fn text(&mut self, column: &'static str) -> Result<String, StoreError> {
        self.opt_text(column)?.ok_or_else(|| null(column))
    }

    /// A nullable binary column.
    pub fn opt_bytes(&mut self, column: &'static str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.take(column)? {
            Cell::Null => Ok(None),
            Cell::Bytes(b) => Ok(Some(b)),
            Cell::Text(s) => Ok(Some(s.into_bytes())),
            other => Err(unexpected(column, "bytes", &other)),
        }
    }

    /// A nullable integer column.
    pub fn opt_i64(&mut self, column: &'static str) -> Result<Option<i64>, StoreError> {
        integer(column, self.take(column)?)
    }

    /// An integer column.
    pub fn i64(&mut self, column: &'static str) -> Result<i64, StoreError> {
        self.opt_i64(column)?.ok_or_else(|| null(column))
    }

    /// An integer column that must fit an `i32`.
    pub fn i32(&mut self, column: &'static str) -> Result<i32, StoreError> {
        narrow(column, self.i64(column)?)
    }

    /// A nullable integer column that must fit an `i16`.
    pub fn opt_i16(&mut self, column: &'static str) -> Result<Option<i16>, StoreError> {
        self.opt_i64(column)?.map(|v| narrow(column, v)).transpose()
    }

    /// A boolean column (also stored as an integer 0/1).
    pub fn bool(&mut self, column: &'static str) -> Result<bool, StoreError> {
        match self.take(column)? {
            Cell::Bool(b) => Ok(b),
            other => match integer(column, other)?.ok_or_else(|| null(column))? {
                0 => Ok(false),
                1 => Ok(true),
                v => Err(decode(column, format!("{v} is not a boolean"))),
            },
        }
    }

    /// A nullable timestamp column.
    pub fn opt_timestamp(
        &mut self,
        column: &'static str,
    ) -> Result<Option<DateTime<Utc>>, StoreError> {
        match self.take(column)? {
            Cell::Null => Ok(None),
            Cell::Timestamp(t) => Ok(Some(t)),
            // docket's integer encoding (SQLite): microseconds since the Unix epoch.
            Cell::Int(micros) => DateTime::from_timestamp_micros(micros)
                .map(Some)
                .ok_or_else(|| {
                    decode(
                        column,
                        format!("{micros} microseconds since the epoch is out of range"),
                    )
                }),
            other => Err(unexpected(column, "a timestamp", &other)),
        }
    }

    /// The key columns `task_name` and `task_instance`.
    pub fn key(&mut self) -> Result<ExecutionKey, StoreError> {
        Ok(ExecutionKey::new(
            self.text("task_name")?,
            self.text("task_instance")?,
        ))
    }

    /// A timestamp column.
    pub fn timestamp(&mut self, column: &'static str) -> Result<DateTime<Utc>, StoreError> {
        self.opt_timestamp(column)?.ok_or_else(|| null(column))
    }
}

fn integer(column: &'static str, cell: Cell) -> Result<Option<i64>, StoreError> {
    match cell {
        Cell::Null => Ok(None),
        Cell::Int(v) => Ok(Some(v)),
        Cell::Bool(b) => Ok(Some(i64::from(b))),
        Cell::Decimal(s) | Cell::Text(s) => parse_integer(&s)
            .map(Some)
            .ok_or_else(|| decode(column, format!("{s:?} is not an integer"))),
        Cell::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
        other => Err(unexpected(column, "an integer", &other)),
    }
}

fn parse_integer(s: &str) -> Option<i64> {
    let s = s.trim();
    // DECIMAL text of a whole number may carry a zero fraction ("12.0000").
    let whole = match s.split_once('.') {
        Some((w, frac)) if frac.bytes().all(|b| b == b'0') => w,
        Some(_) => return None,
        None => s,
    };
    whole.parse().ok()
}

fn narrow<T: TryFrom<i64>>(column: &'static str, v: i64) -> Result<T, StoreError> {
    T::try_from(v).map_err(|_| decode(column, format!("{v} is out of range")))
}

fn decode(column: &'static str, reason: impl Into<String>) -> StoreError {
    StoreError::Decode {
        column,
        reason: reason.into(),
    }
}

fn null(column: &'static str) -> StoreError {
    decode(column, "NULL in a column that needs a value")
}

fn unexpected(column: &'static str, wanted: &str, got: &Cell) -> StoreError {
    decode(column, format!("expected {wanted}, got {got:?}"))
}

/// Decodes rows with `f`; the first failure fails the whole result.
pub fn decode_all<T>(
    rows: Vec<Row>,
    f: impl Fn(&mut Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    rows.into_iter().map(|mut r| f(&mut r)).collect()
}

impl Execution {
    /// Decodes a row of the executions table. `priority` is read when the row has it;
    /// a NULL `consecutive_failures` (as db-scheduler writes it) reads as 0.
    pub fn from_row(row: &mut Row) -> Result<Self, StoreError> {
        Ok(Execution {
            task_name: row.text("task_name")?,
            task_instance: row.text("task_instance")?,
            task_data: row.opt_bytes("task_data")?,
            execution_time: row.timestamp("execution_time")?,
            picked: row.bool("picked")?,
            picked_by: row.opt_text("picked_by")?,
            last_success: row.opt_timestamp("last_success")?,
            last_failure: row.opt_timestamp("last_failure")?,
            consecutive_failures: row
                .opt_i64("consecutive_failures")?
                .map_or(Ok(0), |v| narrow("consecutive_failures", v))?,
            last_heartbeat: row.opt_timestamp("last_heartbeat")?,
            version: row.i64("version")?,
            priority: if row.has("priority") {
                row.opt_i16("priority")?
            } else {
                None
            },
        })
    }
}

impl TaskSummary {
    /// Decodes a row of the summary statement.
    pub fn from_row(row: &mut Row) -> Result<Self, StoreError> {
        Ok(TaskSummary {
            task_name: row.text("task_name")?,
            total: row.opt_i64("total")?.unwrap_or(0),
            picked: row.opt_i64("picked")?.unwrap_or(0),
            failing: row.opt_i64("failing")?.unwrap_or(0),
            next_execution_time: row.opt_timestamp("next_execution_time")?,
        })
    }
}

impl Item {
    /// Decodes a row of [`ITEM_COLUMNS`](crate::dialect::queue::ITEM_COLUMNS).
    pub fn from_row(row: &mut Row) -> Result<Self, StoreError> {
        Ok(Item {
            key: row.key()?,
            data: row.opt_bytes("task_data")?,
            available_at: row.timestamp("execution_time")?,
            record: RecordKey {
                date: row.timestamp("record_date")?,
                order: row.i64("record_order")?,
            },
            custom_attributes: row.opt_text("custom_attributes")?,
            max_assignments: row.i32("max_assignments")?,
            assignments: row.i32("assignments")?,
            held_by: row.opt_text("held_by")?,
        })
    }
}

impl Assignment {
    /// Decodes a row of [`ASSIGNMENT_COLUMNS`](crate::dialect::queue::ASSIGNMENT_COLUMNS)
    /// and `updated_at`.
    pub fn from_row(row: &mut Row) -> Result<Self, StoreError> {
        Ok(Assignment {
            key: row.key()?,
            worker: row.text("worker")?,
            status: AssignmentStatus::decode(&row.text("status")?)?,
            deadline: row.timestamp("deadline")?,
            updated_at: row.timestamp("updated_at")?,
        })
    }
}

/// A row of task `t` as db-scheduler writes it (`consecutive_failures` NULL), for tests.
#[cfg(test)]
pub(crate) fn execution_row(instance: &str, execution_time: Cell, version: i64) -> Row {
    let cells = [
        ("task_name", Cell::Text("t".into())),
        ("task_instance", Cell::Text(instance.into())),
        ("task_data", Cell::Null),
        ("execution_time", execution_time),
        ("picked", Cell::Bool(false)),
        ("picked_by", Cell::Null),
        ("last_success", Cell::Null),
        ("last_failure", Cell::Null),
        ("consecutive_failures", Cell::Null),
        ("last_heartbeat", Cell::Null),
        ("version", Cell::Int(version)),
    ];
    Row::new(cells.into_iter().map(|(n, c)| (n.to_owned(), c)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: Vec<(&str, Cell)>) -> Row {
        Row::new(cells.into_iter().map(|(n, c)| (n.to_owned(), c)).collect())
    }

    #[test]
    fn cells_decode_across_representations() {
        let mut r = row(vec![
            ("PICKED", Cell::Int(1)),
            ("total", Cell::Decimal("12.000".into())),
            ("name", Cell::Bytes(b"abc".to_vec())),
            ("at", Cell::Int(1_000_001)),
            ("level", Cell::Int(70_000)),
        ]);
        assert!(r.bool("picked").unwrap());
        assert_eq!(r.i64("total").unwrap(), 12);
        assert_eq!(r.text("name").unwrap(), "abc");
        assert_eq!(
            r.timestamp("at").unwrap(),
            DateTime::from_timestamp_micros(1_000_001).unwrap()
        );
        assert!(matches!(
            r.opt_i16("level"),
            Err(StoreError::Decode {
                column: "level",
                ..
            })
        ));
        assert!(matches!(r.text("missing"), Err(StoreError::Decode { .. })));
    }

    #[test]
    fn bad_values_are_decode_errors() {
        let mut r = row(vec![
            ("a", Cell::Decimal("1.5".into())),
            ("b", Cell::Int(2)),
            ("c", Cell::Null),
            ("d", Cell::Bytes(vec![0xff])),
        ]);
        assert!(r.i64("a").is_err());
        assert!(r.bool("b").is_err());
        assert!(r.text("c").is_err());
        assert!(r.opt_text("d").is_err());
    }

    #[test]
    fn an_unreadable_value_fails_only_its_column() {
        let mut r = row(vec![
            ("at", Cell::Invalid("-infinity is out of range".into())),
            ("n", Cell::Int(3)),
        ]);
        assert_eq!(r.lossy_text("at"), None);
        assert_eq!(r.peek_i64("n"), Some(3));
        match r.timestamp("at") {
            Err(StoreError::Decode { column, reason }) => {
                assert_eq!(column, "at");
                assert!(reason.contains("-infinity"), "{reason}");
            }
            other => panic!("expected a decode error, got {other:?}"),
        }
        assert_eq!(r.i64("n").unwrap(), 3);
    }

    #[test]
    fn null_consecutive_failures_reads_as_zero() {
        let t = Cell::Timestamp(DateTime::from_timestamp(0, 0).unwrap());
        let mut r = execution_row("1", t, 3);
        let e = Execution::from_row(&mut r).unwrap();
        assert_eq!(
            (e.consecutive_failures, e.version, e.priority),
            (0, 3, None)
        );
    }
}
