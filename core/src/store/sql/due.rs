//! The SQL store's due-queries and claims, one statement (or one claiming transaction) per
//! call, at one priority level: what the planner's polls are made of ([`DueSource`]).

use super::poison::{decode_executions, Bad};
use super::*;
use crate::dialect::{Levels, LockAndFetch};
use crate::ordering::PrimaryOrder;
use crate::planner::{Decoded, DueSource, Probe};
use crate::records::{Due, Limited};

impl<C: SqlConnector> DueSource for SqlStore<C> {
    fn levels_below(&self, below: Option<i16>) -> Result<Vec<i16>, StoreError> {
        let stmt = self.statements.priority_levels(below);
        // `MAX` over no rows is one NULL row: no level below.
        let levels = decode_all(self.rows(&stmt)?, |r| r.opt_i16("level"))?;
        Ok(levels.into_iter().flatten().collect())
    }

    fn lists_all_levels(&self) -> bool {
        self.statements.levels_listed() == Levels::All
    }

    fn due_rows(&self, due: &Due<'_>) -> Result<Decoded, StoreError> {
        Ok(decoded(decode_executions(
            self.rows(&self.statements.due(due))?,
        )))
    }

    fn claim_rows(&self, due: &Due<'_>, picked_by: &str) -> Result<Decoded, StoreError> {
        let Some(style) = self.connector.dialect().capabilities().lock_and_fetch else {
            return Err(StoreError::Unsupported {
                backend: self.connector.dialect().name(),
                capability: "lock-and-fetch",
            });
        };
        // Where the table holds limits, task by task.
        let by_task = Due {
            by_task: due.by_task || self.claim_by_task(due)?,
            ..*due
        };
        let due = &by_task;
        let (rows, bad) = match style {
            LockAndFetch::UpdateReturning => {
                let claim = self.statements.lock_and_fetch(due, picked_by);
                let (rows, bad) = decode_executions(self.rows(&claim)?);
                // A loop, not a closure: releasing runs a statement of its own.
                for b in &bad {
                    self.release_poison(b);
                }
                (rows, bad)
            }
            LockAndFetch::SelectThenUpdate => self.select_then_claim(due, picked_by)?,
        };
        Ok(decoded((rows, bad)))
    }

    fn first_due(&self, probe: &Due<'_>) -> Result<Probe, StoreError> {
        self.probe(&self.statements.due(probe))
    }

    fn next_due(&self, level: Level, now: DateTime<Utc>) -> Result<Probe, StoreError> {
        self.probe(&self.statements.next_at_level(level, now))
    }
}

/// Most tasks a claim reads task by task ([`Due::by_task`]: one index range each); past
/// them, it reads the one range of all due rows.
const MAX_TASKS_BY_TASK: usize = 8;

/// Decoded rows, the poison ones by key and column.
fn decoded((rows, bad): (Vec<Execution>, Vec<Bad>)) -> Decoded {
    Decoded {
        rows,
        poison: bad.into_iter().map(|b| b.row).collect(),
    }
}

impl<C: SqlConnector> SqlStore<C> {
    /// Whether the ordinary claim `due` reads task by task ([`Due::by_task`]): where the
    /// table holds limits (a limited task's held-back due rows lie in the one range of due
    /// rows, which the claim would read through on every poll to leave them out), its
    /// dialect claims by task, the due rows are in time order (priority off, no custom
    /// order) and the tasks are few. Each task's rows are read only when it is neither
    /// limited nor paused at the time of the statement, so a limit set or cleared a moment
    /// ago holds whatever the cache says; the cache only says whether to read by task.
    pub(super) fn claim_by_task(&self, due: &Due<'_>) -> Result<bool, StoreError> {
        let policy = &self.config.ordering;
        let eligible = self.connector.dialect().capabilities().claims_by_task
            && !policy.priority
            && policy.primary == PrimaryOrder::ExecutionTime
            && due.limited == Limited::LeftOut
            && due.task_names.len() <= MAX_TASKS_BY_TASK;
        Ok(eligible && !self.cached_limits()?.is_empty())
    }

    /// The `execution_time` of the first row `stmt` returns; only the time is read.
    fn probe(&self, stmt: &Rendered) -> Result<Probe, StoreError> {
        Ok(match self.rows(stmt)?.into_iter().next() {
            None => Probe::Empty,
            Some(mut row) => row
                .timestamp("execution_time")
                .map_or(Probe::Unreadable, Probe::At),
        })
    }

    /// Locks due rows (skipping rows others hold) and claims those that decode, in one
    /// transaction; rows that do not decode (poison rows) are returned apart, never claimed.
    fn select_then_claim(
        &self,
        due: &Due<'_>,
        picked_by: &str,
    ) -> Result<(Vec<Execution>, Vec<poison::Bad>), StoreError> {
        let select = self.statements.due_for_update(due);
        self.connector.in_transaction(&mut |s| {
            let (mut rows, bad) = decode_executions(s.query(&select)?);
            if rows.is_empty() {
                return Ok((rows, bad));
            }
            let keys: Vec<_> = rows.iter().map(Execution::key).collect();
            let mut claimed = 0;
            for chunk in keys.chunks(self.connector.dialect().syntax().max_key_terms.max(1)) {
                claimed += s.execute(&self.statements.claim_keys(chunk, picked_by, due.now))?;
            }
            if claimed != rows.len() as u64 {
                return Err(StoreError::conflict(format!(
                    "claimed {claimed} of {} locked rows",
                    rows.len()
                )));
            }
            for row in &mut rows {
                row.picked = true;
                row.picked_by = Some(picked_by.to_owned());
                row.last_heartbeat = Some(due.now);
                row.version += 1;
            }
            Ok((rows, bad))
        })
    }
}
