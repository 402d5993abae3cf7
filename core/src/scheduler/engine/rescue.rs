//! Dead detection (the rescuer): executions of known tasks whose heartbeat is older than the
//! dead window are revived or cancelled, page by page, except those running here.

use super::{chrono, Engine, DEAD_PAGE};
use crate::error::StoreError;
use crate::listener::SchedulerEvent;
use crate::records::{Changes, DeadPage, Execution};
use crate::task::DeadExecutionPolicy;
use chrono::{DateTime, Utc};
use tracing::warn;

impl Engine {
    /// Revives (or cancels) executions of known tasks whose heartbeat is older than the dead
    /// window. Returns how many were handled.
    pub fn detect_dead(&self) -> Result<usize, StoreError> {
        self.ensure_synced()?;
        let now = self.clock.now();
        let older_than = now - chrono(self.config.dead_after());
        let mut handled = 0;
        // Page by page (each page one bounded statement), every page after the last row of
        // the one before: rows left alone (unknown tasks, poison rows) never hide the rows
        // behind them, and every dead row is seen once per pass.
        let mut page = DeadPage::first(older_than, DEAD_PAGE);
        loop {
            let (rows, next) = self.store.execution_dead_page(&page)?;
            handled += self.handle_dead(rows, now)?;
            match next {
                Some(after) => page.after = Some(after),
                None => break,
            }
        }
        Ok(handled)
    }

    /// Whether `e`, which looks dead, is running here at its version: then it is alive by
    /// definition (this scheduler's heartbeat round was late, e.g. on an overloaded host), so it
    /// gets its heartbeat now instead of being revived and run twice. Counted in
    /// `docket_late_heartbeats_total`.
    fn still_ours(&self, e: &Execution, now: DateTime<Utc>) -> bool {
        let key = e.key();
        if e.picked_by.as_deref() != Some(self.config.scheduler_name.as_str())
            || self.running().get(&key) != Some(&e.version)
        {
            return false;
        }
        warn!(task = %e.task_name, instance = %e.task_instance,
            "an execution running here looked dead (a late heartbeat round); heartbeat sent");
        metrics::counter!("docket_late_heartbeats_total").increment(1);
        matches!(
            self.store.execution_heartbeat(&key, e.version, now),
            Ok(true)
        )
    }

    /// Revives or cancels the dead `rows` of known tasks; returns how many were handled.
    fn handle_dead(&self, rows: Vec<Execution>, now: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut handled = 0;
        for e in rows {
            let Some(task) = self.tasks.get(&e.task_name) else {
                continue; // unknown task: left alone, reported by check_unresolved
            };
            if self.still_ours(&e, now) {
                continue;
            }
            let revive_at = match task.dead {
                DeadExecutionPolicy::Revive => Some(now),
                DeadExecutionPolicy::Cancel => None,
            };
            let failure = Changes {
                last_failure: Some(now),
                consecutive_failures: Some(e.consecutive_failures.saturating_add(1)),
                ..Changes::default()
            };
            let changed = self.release_or_remove(&e, revive_at, failure)?;
            if changed {
                warn!(task = %e.task_name, instance = %e.task_instance, picked_by = ?e.picked_by,
                    policy = ?task.dead, "dead execution handled");
                metrics::counter!("docket_dead_executions_total", "task" => e.task_name.clone())
                    .increment(1);
                self.emit(SchedulerEvent::DeadExecution(e));
                handled += 1;
            }
        }
        Ok(handled)
    }
}
