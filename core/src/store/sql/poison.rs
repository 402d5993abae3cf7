//! Poison rows: due rows that cannot be decoded (a NULL where a value is needed, a value out
//! of docket's range, a value the driver cannot read). They never block a poll or the other
//! rows: the due-queries decode row by row, claim only rows that decode (lock-and-fetch
//! releases a bad row at once when its claim was one statement), and leave bad rows out of
//! later due-queries for [`POISON_HOLD_BACK_MS`] (at most [`MAX_HELD_BACK`] keys). Each row is
//! reported once per hold-back through [`ExecutionStore::execution_poisoned`].

use super::*;
use crate::records::PoisonRow;

/// How long (by the clock passed in [`DueParams::now`]) a store leaves a poison row out of its
/// due-queries before it reads it again (and reports it again, unless it was fixed).
pub const POISON_HOLD_BACK_MS: i64 = 10 * 60 * 1_000;

/// Most poison rows a store holds back at once; the oldest is read again first. Each adds two
/// binds to the due-queries.
pub const MAX_HELD_BACK: usize = 100;

/// Rounds of due-query a poll spends refilling its batch after it found poison rows.
const POISON_ROUNDS: usize = 4;

/// The keys held back and the reports not yet taken.
#[derive(Debug, Default)]
pub(super) struct Quarantine {
    held: Vec<(ExecutionKey, DateTime<Utc>)>,
    reports: Vec<PoisonRow>,
}

impl Quarantine {
    /// The keys held back at `now` (expired ones are dropped).
    fn held_back(&mut self, now: DateTime<Utc>) -> Vec<ExecutionKey> {
        self.held.retain(|(_, until)| now < *until);
        self.held.iter().map(|(k, _)| k.clone()).collect()
    }

    fn is_held(&self, key: &ExecutionKey, now: DateTime<Utc>) -> bool {
        self.held.iter().any(|(k, until)| k == key && now < *until)
    }

    /// Holds `rows` back until `now` + [`POISON_HOLD_BACK_MS`] and queues their reports
    /// (each at most once while it is held).
    fn hold(&mut self, rows: Vec<PoisonRow>, now: DateTime<Utc>) {
        let until = now + chrono::Duration::milliseconds(POISON_HOLD_BACK_MS);
        for row in rows {
            if self.is_held(&row.key, now) {
                continue;
            }
            tracing::warn!(task = %row.key.task_name, instance = %row.key.task_instance,
                column = row.column, reason = %row.reason,
                "poison row: cannot decode it; skipped and held back");
            self.held.retain(|(k, _)| *k != row.key);
            self.held.push((row.key.clone(), until));
            if self.held.len() > MAX_HELD_BACK {
                self.held.remove(0);
            }
            self.reports.push(row);
            if self.reports.len() > MAX_HELD_BACK {
                self.reports.remove(0);
            }
        }
    }
}

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
    fn quarantine(&self) -> MutexGuard<'_, Quarantine> {
        // Held-back keys and pending reports: a panic elsewhere cannot leave them wrong.
        self.poison
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds the rows of `bad` back and queues their reports.
    pub(super) fn hold_back(&self, bad: Vec<Bad>, now: DateTime<Utc>) {
        if !bad.is_empty() {
            self.quarantine()
                .hold(bad.into_iter().map(|b| b.row).collect(), now);
        }
    }

    /// The poison rows found since the last call.
    pub(super) fn take_poison_reports(&self) -> Vec<PoisonRow> {
        std::mem::take(&mut self.quarantine().reports)
    }

    /// Fills up to `limit` rows with `round(exclude, room)` (one due-query that leaves out the
    /// held-back keys and the rows already taken), again while a round finds poison rows and
    /// fills its room: the good rows behind poison rows are handed out in the same poll.
    fn without_poison(
        &self,
        now: DateTime<Utc>,
        limit: i64,
        mut round: impl FnMut(&[ExecutionKey], i64) -> Result<(Vec<Execution>, Vec<Bad>), StoreError>,
    ) -> Result<Vec<Execution>, StoreError> {
        let mut rows: Vec<Execution> = Vec::new();
        for _ in 0..POISON_ROUNDS {
            let room = limit - rows.len() as i64;
            if room <= 0 {
                break;
            }
            // Fetch-and-lock-on-execute leaves the rows it read due: a refill must not read
            // them again.
            let mut exclude = self.quarantine().held_back(now);
            exclude.extend(rows.iter().map(Execution::key));
            let (good, bad) = round(&exclude, room)?;
            let more = !bad.is_empty() && (good.len() + bad.len()) as i64 >= room;
            rows.extend(good);
            self.hold_back(bad, now);
            if !more {
                break;
            }
        }
        Ok(rows)
    }

    /// `p` at `level` for `room` rows, leaving out `exclude`.
    fn due_of<'a>(
        p: &'a DueParams<'_>,
        level: Level,
        room: i64,
        due_by: DateTime<Utc>,
        exclude: &'a [ExecutionKey],
    ) -> Due<'a> {
        Due {
            exclude,
            due_by,
            ..Due::new(level, p.now, p.task_names, room)
        }
    }

    /// Due, unpicked executions (fetch-and-lock-on-execute), poison rows skipped.
    pub(super) fn fetch_due_sound(&self, p: &DueParams<'_>) -> Result<Vec<Execution>, StoreError> {
        self.by_level(p, false, |level, limit, due_by| {
            self.without_poison(p.now, limit, |exclude, room| {
                let due = Self::due_of(p, level, room, due_by, exclude);
                Ok(decode_executions(
                    self.rows(&self.statements.due_excluding(&due))?,
                ))
            })
        })
    }

    /// Claims due executions (lock-and-fetch), poison rows skipped and never left claimed:
    /// a select-then-update claim decodes inside its transaction and claims only the rows
    /// that decode; a one-statement claim releases a bad row at once.
    pub(super) fn lock_and_fetch_sound(
        &self,
        style: LockAndFetch,
        p: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError> {
        self.by_level(p, true, |level, limit, due_by| {
            self.without_poison(p.now, limit, |exclude, room| {
                let due = Self::due_of(p, level, room, due_by, exclude);
                match style {
                    LockAndFetch::UpdateReturning | LockAndFetch::CteUpdateOutput => {
                        let claim = self.statements.lock_and_fetch_excluding(&due, picked_by);
                        let (good, bad) = decode_executions(self.rows(&claim)?);
                        bad.iter().for_each(|b| self.release_poison(b));
                        Ok((good, bad))
                    }
                    LockAndFetch::SelectThenUpdate => self.select_then_claim(&due, picked_by),
                }
            })
        })
    }

    /// Releases a poison row this store just claimed, fenced by the version it was claimed
    /// with (any version when that is unreadable too).
    fn release_poison(&self, bad: &Bad) {
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

    fn poison(instance: &str) -> PoisonRow {
        PoisonRow {
            key: ExecutionKey::new("t", instance),
            column: "execution_time",
            reason: "x".into(),
        }
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

    #[test]
    fn held_back_keys_expire_are_bounded_and_reported_once() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap_or_default();
        let mut q = Quarantine::default();
        q.hold(vec![poison("a")], now);
        q.hold(vec![poison("a")], now + chrono::Duration::seconds(1));
        assert_eq!(q.reports.len(), 1, "reported once while held");
        assert_eq!(q.held_back(now).len(), 1);
        let later = now + chrono::Duration::milliseconds(POISON_HOLD_BACK_MS);
        assert!(
            q.held_back(later).is_empty(),
            "read again after the hold-back"
        );
        q.hold(
            (0..MAX_HELD_BACK + 5)
                .map(|i| poison(&i.to_string()))
                .collect(),
            later,
        );
        assert_eq!(q.held_back(later).len(), MAX_HELD_BACK);
        assert_eq!(q.reports.len(), MAX_HELD_BACK);
        assert!(
            !q.is_held(&ExecutionKey::new("t", "0"), later),
            "oldest dropped"
        );
    }
}
