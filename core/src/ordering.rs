//! The ordering policy: in which order eligible (due, unclaimed) rows are handed out.
//!
//! The policy is data. Dialects render it as `ORDER BY` ([`crate::dialect`]); the engine uses
//! [`OrderingPolicy::compare`] to keep the same order for rows a backend returns unordered
//! (for example `UPDATE ... RETURNING`).

use crate::store::Execution;
use std::cmp::Ordering;

/// The primary ordering, applied after priority (when enabled).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PrimaryOrder {
    /// `execution_time` ascending: the scheduler default.
    #[default]
    ExecutionTime,
}

/// Priority toggle in front of a primary order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrderingPolicy {
    /// When true, `priority` descending comes first, NULL priority ranking below every value.
    /// When false, no statement reads or writes the `priority` column.
    pub priority: bool,
    /// The order after priority.
    pub primary: PrimaryOrder,
}

impl OrderingPolicy {
    /// Execution time only, priority off (the default).
    pub fn execution_time() -> Self {
        Self::default()
    }

    /// Priority descending, then execution time.
    pub fn priority_then_execution_time() -> Self {
        Self {
            priority: true,
            primary: PrimaryOrder::ExecutionTime,
        }
    }

    /// Compares two executions in hand-out order (`Less` = handed out first).
    pub fn compare(&self, a: &Execution, b: &Execution) -> Ordering {
        let by_priority = if self.priority {
            // Some(_) > None, so NULL sorts last when reversed.
            b.priority.cmp(&a.priority)
        } else {
            Ordering::Equal
        };
        by_priority.then_with(|| match self.primary {
            PrimaryOrder::ExecutionTime => a.execution_time.cmp(&b.execution_time),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Execution;
    use chrono::{TimeZone, Utc};

    fn exec(priority: Option<i16>, secs: i64) -> Execution {
        let mut e = Execution::new(
            "t",
            &format!("{priority:?}-{secs}"),
            Utc.timestamp_opt(secs, 0).unwrap(),
        );
        e.priority = priority;
        e
    }

    #[test]
    fn priority_desc_nulls_last_then_time() {
        let mut rows = [
            exec(None, 1),
            exec(Some(1), 2),
            exec(Some(3), 5),
            exec(Some(3), 4),
        ];
        let policy = OrderingPolicy::priority_then_execution_time();
        rows.sort_by(|a, b| policy.compare(a, b));
        let order: Vec<_> = rows
            .iter()
            .map(|e| (e.priority, e.execution_time.timestamp()))
            .collect();
        assert_eq!(
            order,
            vec![(Some(3), 4), (Some(3), 5), (Some(1), 2), (None, 1)]
        );
        rows.sort_by(|a, b| OrderingPolicy::execution_time().compare(a, b));
        assert_eq!(rows[0].priority, None);
    }
}
