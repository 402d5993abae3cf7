//! MySQL/MariaDB bulk intake ([`FileLoad`]): `LOAD DATA LOCAL INFILE` of a tab-separated file
//! into a temporary staging table. The client library reads the file and streams it to the
//! server; no value passes through SQL text. The format: fields separated by a tab, lines by a
//! newline, `\` escaping a tab, newline, carriage return, NUL or backslash in a value, `\N`
//! for NULL, read as `CHARACTER SET binary` so no byte is converted. The terminators are
//! written as hex literals, which read the same whatever the session's `sql_mode`.

use crate::dialect::MysqlDialect;
use chrono::{Datelike, Timelike};
use docket_core::dialect::{FileLoad, SqlWriter, Value};
use docket_core::TableName;
use std::io::Write;

impl FileLoad for MysqlDialect {
    fn write_row(&self, out: &mut Vec<u8>, values: &[Value]) {
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                out.push(b'\t');
            }
            write_value(out, value);
        }
        out.push(b'\n');
    }

    fn load(&self, w: &mut SqlWriter<'_>, table: &TableName, columns: &[&str], path: &str) -> bool {
        // The statement cannot take a bind for the file name: only a path of plain
        // characters (no quote, no backslash) is written, between quotes.
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-');
        if path.is_empty() || !path.chars().all(plain) {
            return false;
        }
        w.push("LOAD DATA LOCAL INFILE '")
            .push(path)
            .push("' INTO TABLE ")
            .table(table)
            .push(" CHARACTER SET binary FIELDS TERMINATED BY X'09' ESCAPED BY X'5C'")
            .push(" LINES TERMINATED BY X'0A' (")
            .push(&columns.join(", "))
            .push(")");
        true
    }

    /// Columns typed as the table's (no conversion when published), keyed as the table is: a
    /// `LOCAL` load skips a line whose key an earlier line has (as `IGNORE` would), which the
    /// intake sees as fewer rows loaded than written. The publishing insert then never carries
    /// a repeated key, which it must not under [`FileLoad::publish_settings`].
    fn create_staging(
        &self,
        w: &mut SqlWriter<'_>,
        staging: &TableName,
        table: &TableName,
        columns: &[&str],
    ) {
        w.push("CREATE TEMPORARY TABLE ")
            .table(staging)
            .push(" (PRIMARY KEY (task_name, task_instance)) ENGINE = InnoDB")
            .push(" AS SELECT CAST(0 AS SIGNED) AS seq, ")
            .push(&columns.join(", "))
            .push(" FROM ")
            .table(table)
            .push(" WHERE 1 = 0");
    }

    fn drop_staging(&self, w: &mut SqlWriter<'_>, staging: &TableName) {
        w.push("DROP TEMPORARY TABLE IF EXISTS ").table(staging);
    }

    /// MariaDB 10.6+ inserts into an empty table in bulk (secondary indexes built by sorting,
    /// one undo record, the table locked until commit) when a statement runs with both checks
    /// off: 1M items published in 13 s instead of 22 s (docs/BENCHMARKS.md). Into a table with
    /// rows, InnoDB still checks the primary key of every row (docket's tables have no other
    /// unique index, nor foreign keys). Into an empty one, a key repeated within the statement
    /// is not reported: MariaDB 10.11 then rolls the statement back in silence, which the
    /// keyed staging table rules out. The session's own values come back after the insert.
    fn publish_settings(&self) -> Option<(&'static str, &'static str)> {
        Some((
            "SET @docket_unique_checks = @@unique_checks, \
             @docket_foreign_key_checks = @@foreign_key_checks, \
             unique_checks = 0, foreign_key_checks = 0",
            "SET unique_checks = @docket_unique_checks, \
             foreign_key_checks = @docket_foreign_key_checks",
        ))
    }
}

/// One value in the file's format; timestamps as the UTC wall-clock `DATETIME(6)` text docket
/// stores. Arrays are never written by the item intake (NULL). Numbers and times are written
/// straight into `out` (no text allocated per value: this runs for every cell of a batch).
fn write_value(out: &mut Vec<u8>, value: &Value) {
    // `write!` into a Vec cannot fail.
    match value {
        Value::Text(Some(v)) => escape(out, v.as_bytes()),
        Value::Bytes(Some(v)) => escape(out, v),
        Value::Timestamp(Some(t)) => {
            let _ = write!(
                out,
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                t.timestamp_subsec_micros().min(999_999)
            );
        }
        Value::SmallInt(Some(v)) => {
            let _ = write!(out, "{v}");
        }
        Value::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Value::BigInt(v) => {
            let _ = write!(out, "{v}");
        }
        Value::Bool(v) => out.push(if *v { b'1' } else { b'0' }),
        Value::Text(None)
        | Value::Bytes(None)
        | Value::Timestamp(None)
        | Value::SmallInt(None)
        | Value::Array(_) => out.extend_from_slice(b"\\N"),
    }
}

fn escape(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0 => out.extend_from_slice(b"\\0"),
            _ => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn rows_escape_every_separator_and_write_null_as_backslash_n() {
        let t = chrono::Utc
            .with_ymd_and_hms(2026, 12, 1, 10, 0, 0)
            .single()
            .expect("a valid time");
        let mut out = Vec::new();
        MysqlDialect::MARIADB.write_row(
            &mut out,
            &[
                Value::BigInt(7),
                Value::from("a\tb\nc\\d\re"),
                Value::Bytes(Some(vec![0, b'\\', b'N'])),
                Value::Text(None),
                Value::from(t),
                Value::Bool(true),
                Value::SmallInt(Some(-3)),
            ],
        );
        assert_eq!(
            out,
            b"7\ta\\tb\\nc\\\\d\\re\t\\0\\\\N\t\\N\t2026-12-01 10:00:00.000000\t1\t-3\n".to_vec()
        );
    }

    #[test]
    fn load_takes_only_plain_paths() {
        let table = TableName::parse("jobs").expect("valid");
        let mut w = SqlWriter::new(&MysqlDialect::MARIADB);
        assert!(MysqlDialect::MARIADB.load(&mut w, &table, &["seq", "a"], "/tmp/x-1.tsv"));
        assert_eq!(
            w.finish().sql,
            "LOAD DATA LOCAL INFILE '/tmp/x-1.tsv' INTO TABLE `jobs` CHARACTER SET binary \
             FIELDS TERMINATED BY X'09' ESCAPED BY X'5C' LINES TERMINATED BY X'0A' (seq, a)"
        );
        for bad in ["", "/tmp/it's", "C:\\tmp\\x", "/tmp/a b"] {
            let mut w = SqlWriter::new(&MysqlDialect::MARIADB);
            assert!(
                !MysqlDialect::MARIADB.load(&mut w, &table, &["a"], bad),
                "{bad}"
            );
            assert_eq!(w.finish().sql, "");
        }
    }
}
