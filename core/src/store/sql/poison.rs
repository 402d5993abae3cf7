//! Poison rows in the SQL store: due rows that cannot be decoded (a NULL where a value is
//! needed, a value out of docket's range, a value the driver cannot read) are decoded row by
//! row and returned apart, and a claim never leaves one claimed (a one-statement claim
//! releases it at once). Holding them back from later polls is the planner's.

use super::*;
use crate::records::PoisonRow;

/// A due row that failed to decode, with the version it had (to release it, fenced).
pub(super) struct Bad {
    pub(super) row: PoisonRow,
    pub(super) version: Option<i64>,
}

/// Decodes rows one by one: the executions that decode, and the rows that do not.
pub(super) fn decode_executions(rows: Vec<Row>) -> (Vec<Execution>, Vec<Bad>) {
    let mut good = Vec::with_capacity(rows.len());
    let mut bad = Vec::new();
    for mut row in rows {
        // Read before decoding takes the cells: a bad row is still named by its key.
        let key = ExecutionKey::new(
            row.lossy_text("task_name").unwrap_or_default(),
            row.lossy_text("task_instance").unwrap_or_default(),
        );
        let version = row.peek_i64("version");
        match Execution::from_row(&mut row) {
            Ok(e) => good.push(e),
            Err(err) => {
                let (column, reason) = match err {
                    StoreError::Decode { column, reason } => (column, reason),
                    other => ("?", other.to_string()),
                };
                bad.push(Bad {
                    row: PoisonRow {
                        key,
                        column,
                        reason,
                    },
                    version,
                });
            }
        }
    }
    (good, bad)
}

impl<C: SqlConnector> SqlStore<C> {
    /// Releases a poison row this store just claimed, fenced by the version it was claimed
    /// with (any version when that is unreadable too).
    pub(super) fn release_poison(&self, bad: &Bad) {
        let guard = bad.version.map_or(Guard::Any, Guard::Version);
        let release = Changes {
            pick: Some(PickChange::Release),
            ..Changes::default()
        };
        let key = &bad.row.key;
        if let Err(err) = self.execute(self.statements.update(key, guard, &release)) {
            tracing::warn!(task = %key.task_name, instance = %key.task_instance, %err,
                "could not release a poison row; dead-execution detection will");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(instance: &str, execution_time: Cell) -> Row {
        crate::store::row::execution_row(instance, execution_time, 7)
    }

    #[test]
    fn a_bad_row_fails_alone_with_its_key_column_and_version() {
        let at = Cell::Timestamp(DateTime::from_timestamp(0, 0).unwrap_or_default());
        let rows = vec![
            row("1", at.clone()),
            row("bad", Cell::Invalid("infinity".into())),
            row("2", at),
        ];
        let (good, bad) = decode_executions(rows);
        assert_eq!(good.len(), 2);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].row.key, ExecutionKey::new("t", "bad"));
        assert_eq!(bad[0].row.column, "execution_time");
        assert!(bad[0].row.reason.contains("infinity"));
        assert_eq!(bad[0].version, Some(7));
    }
}
