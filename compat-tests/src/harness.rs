//! What a backend provides to the suite, and the per-test context built on it.

use chrono::{DateTime, TimeZone, Utc};
use docket_core::scheduler::SchedulerBuilder;
use docket_core::{
    ManualClock, PollingStrategy, Scheduler, SchedulerClient, SchedulerConfig, Store, StoreConfig,
    Task,
};
use std::sync::Arc;
use std::time::Duration;

/// The priority toggle a suite instance runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    /// Priority off: no statement touches the `priority` column.
    Off,
    /// Priority on.
    On,
}

impl Toggle {
    /// True when on.
    pub fn on(self) -> bool {
        self == Toggle::On
    }
}

/// A backend under test: hands out isolated spaces (own schema or database per test).
pub trait Harness: Sync {
    /// Backend name as in test names and `NOT RUN` messages.
    fn name(&self) -> &'static str;
    /// A fresh, empty space. Panics with `NOT RUN: <backend>: <reason>` when no server can be
    /// had, so the test fails loudly instead of passing.
    fn space(&self) -> Box<dyn Space>;
}

/// One isolated space on a server; dropping it removes it.
pub trait Space: Send + Sync {
    /// A store on this space. `session_time_zone` sets the connections' session time zone.
    fn store(&self, config: StoreConfig, session_time_zone: Option<&str>) -> Arc<dyn Store>;
    /// Applies migrations for `config.table` up to `up_to` (all when `None`).
    fn migrate(&self, config: &StoreConfig, up_to: Option<&str>);
    /// A connection URL that selects this space, for other processes (see
    /// [`crate::backends::connect`]).
    fn url(&self) -> String;
}

/// Panics with the suite's `NOT RUN` marker.
pub fn not_run(backend: &str, reason: impl std::fmt::Display) -> ! {
    panic!("NOT RUN: {backend}: {reason}")
}

/// What a case needs beyond the scheduler's basics; asked of the backend's
/// [`Capabilities`](docket_core::dialect::Capabilities), never of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The work queue.
    WorkQueue,
    /// Lock-and-fetch polling.
    LockAndFetch,
}

/// The running test's name (`postgres::priority_on::basic_flow`): the test harness names each
/// test's thread so.
fn case_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("this case")
        .to_owned()
}

/// Per-test context: a migrated space, a store with the toggle, and a manual clock.
pub struct Ctx {
    /// The space (kept alive for the test).
    pub space: Box<dyn Space>,
    /// The toggle.
    pub toggle: Toggle,
    /// The store (all migrations applied).
    pub store: Arc<dyn Store>,
    /// A manual clock at [`Ctx::t0`].
    pub clock: ManualClock,
}

impl Ctx {
    /// A space with every migration applied.
    pub fn new(harness: &dyn Harness, toggle: Toggle) -> Self {
        let space = harness.space();
        let config = StoreConfig::with_priority(toggle.on());
        space.migrate(&config, None);
        let store = space.store(config, None);
        Self {
            space,
            toggle,
            store,
            clock: ManualClock::new(Self::t0()),
        }
    }

    /// Fails the case loudly with `NOT RUN: <backend>/<case>: ...` when the backend cannot do
    /// what it needs: a case a backend cannot run is never a pass.
    pub fn require(&self, need: Need) {
        let caps = self.store.capabilities();
        let (has, what) = match need {
            Need::WorkQueue => (caps.work_queue, "the work queue"),
            Need::LockAndFetch => (caps.lock_and_fetch.is_some(), "lock-and-fetch"),
        };
        if !has {
            not_run(
                &format!("{}/{}", self.store.backend(), case_name()),
                format!("the backend does not support {what}"),
            );
        }
    }

    /// The manual clock's start: 2026-06-01T12:00:00Z.
    pub fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
            .single()
            .expect("valid literal")
    }

    /// The store's configuration.
    pub fn config(&self) -> StoreConfig {
        StoreConfig::with_priority(self.toggle.on())
    }

    /// A standalone client on the manual clock.
    pub fn client(&self) -> SchedulerClient {
        SchedulerClient::with_clock(self.store.clone(), Arc::new(self.clock.clone()))
            .expect("schema is migrated")
    }

    /// A scheduler builder on the manual clock with small, test-friendly settings.
    pub fn scheduler(&self, name: &str, polling: PollingStrategy) -> SchedulerBuilder {
        Scheduler::builder(self.store.clone())
            .clock(Arc::new(self.clock.clone()))
            .config(SchedulerConfig {
                threads: 4,
                polling,
                scheduler_name: name.to_owned(),
                heartbeat_interval: Duration::from_secs(60),
                polling_interval: Duration::from_millis(50),
                shutdown_max_wait: Duration::from_secs(30),
                ..SchedulerConfig::default()
            })
    }

    /// Builds a scheduler with the given tasks.
    pub fn build(&self, name: &str, polling: PollingStrategy, tasks: Vec<Task>) -> Scheduler {
        self.scheduler(name, polling)
            .tasks(tasks)
            .build()
            .expect("scheduler builds")
    }
}
