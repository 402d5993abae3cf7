//! What a scheduler reports besides executions: poison rows its polls skipped and failed
//! polls, each through the log, a [`SchedulerEvent`] and a metric.

use super::engine::Engine;
use crate::error::StoreError;
use crate::listener::SchedulerEvent;
use tracing::error;

impl Engine {
    fn tell(&self, event: &SchedulerEvent) {
        for l in &self.listeners {
            l.on_event(event);
        }
    }

    /// Reports the poison rows the store skipped since the last poll (the store has logged
    /// each when it found it): `docket_poison_rows_total{task}` and
    /// [`SchedulerEvent::PoisonRow`].
    pub(crate) fn report_poison(&self) {
        for row in self.store.execution_poisoned() {
            metrics::counter!("docket_poison_rows_total", "task" => row.key.task_name.clone())
                .increment(1);
            self.tell(&SchedulerEvent::PoisonRow {
                key: row.key,
                column: row.column,
                reason: row.reason,
            });
        }
    }

    /// Reports a failed poll of a started scheduler: `docket_poll_failures_total` and
    /// [`SchedulerEvent::PollFailed`].
    pub(crate) fn report_poll_failure(&self, err: &StoreError) {
        error!(%err, "poll failed; retrying after the polling interval");
        metrics::counter!("docket_poll_failures_total").increment(1);
        self.tell(&SchedulerEvent::PollFailed {
            error: err.to_string(),
        });
    }
}
