//! Poison rows: due rows that cannot be decoded (a NULL where a value is needed, a value out
//! of docket's range, a value the driver cannot read). They never block a poll or the other
//! rows: the store decodes row by row and claims only rows that decode (or releases a bad row
//! at once when its claim was one statement); the planner leaves bad rows out of later
//! due-queries for [`POISON_HOLD_BACK_MS`] (at most [`MAX_HELD_BACK`] keys) and reports each
//! once per hold-back ([`crate::ExecutionStore::execution_poisoned`]).

use super::{guard, Planner};
use crate::records::{ExecutionKey, PoisonRow};
use chrono::{DateTime, Utc};

/// How long (by the clock passed in [`DueParams::now`](crate::records::DueParams::now)) a store leaves a poison row out of its
/// due-queries before it reads it again (and reports it again, unless it was fixed).
pub const POISON_HOLD_BACK_MS: i64 = 10 * 60 * 1_000;

/// Most poison rows a store holds back at once; the oldest is read again first. Each adds two
/// binds to the due-queries.
pub const MAX_HELD_BACK: usize = 100;

/// The keys held back and the reports not yet taken.
#[derive(Debug, Default)]
pub(super) struct Quarantine {
    held: Vec<(ExecutionKey, DateTime<Utc>)>,
    reports: Vec<PoisonRow>,
}

impl Quarantine {
    /// The keys held back at `now` (expired ones are dropped).
    pub(super) fn held_back(&mut self, now: DateTime<Utc>) -> Vec<ExecutionKey> {
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

impl Planner {
    /// Holds `rows` back and queues their reports.
    pub fn hold_back(&self, rows: Vec<PoisonRow>, now: DateTime<Utc>) {
        if !rows.is_empty() {
            guard(&self.quarantine).hold(rows, now);
        }
    }

    /// The poison rows found since the last call.
    pub fn poisoned(&self) -> Vec<PoisonRow> {
        std::mem::take(&mut guard(&self.quarantine).reports)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poison(instance: &str) -> PoisonRow {
        PoisonRow {
            key: ExecutionKey::new("t", instance),
            column: "execution_time",
            reason: "x".into(),
        }
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
