//! Schema: timestamps round-trip exactly; the priority toggle and migration 0002.

use super::{due, ids, WORK};
use crate::harness::{Ctx, Harness, Toggle};
use chrono::{DateTime, TimeZone, Utc};
use docket_core::store::MIGRATION_PRIORITY;
use docket_core::{
    DocketError, ExecutionKey, PollingStrategy, Scheduler, SchedulerClient, StoreConfig,
    StoreError, Task,
};
use std::sync::{Arc, Mutex};

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("valid literal")
        .with_timezone(&Utc)
}

/// Microseconds, year 2500, both DST boundaries, under a non-UTC session time zone.
pub fn timestamps_round_trip(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let new_york = ctx.space.store(ctx.config(), Some("America/New_York"));
    let client =
        SchedulerClient::with_clock(new_york.clone(), Arc::new(ctx.clock.clone())).unwrap();
    let instants = [
        utc("2026-06-01T12:00:00.123456Z"),
        utc("2500-12-31T23:59:59.999999Z"),
        utc("1970-01-01T00:00:00.000001Z"),
        // Spring forward in New York: 01:59:59.999999 EST, then 03:00 EDT.
        utc("2026-03-08T06:59:59.999999Z"),
        utc("2026-03-08T07:00:00Z"),
        // Fall back: both are 01:30 local time, an hour apart.
        utc("2026-11-01T05:30:00Z"),
        utc("2026-11-01T06:30:00.000001Z"),
    ];
    for (i, at) in instants.iter().enumerate() {
        client
            .schedule(WORK.instance(format!("{i}")).scheduled_to(*at))
            .unwrap();
    }
    for store in [&new_york, &ctx.store] {
        for (i, at) in instants.iter().enumerate() {
            let e = store
                .execution_get(&ExecutionKey::new("work", format!("{i}")))
                .unwrap()
                .unwrap();
            assert_eq!(
                e.execution_time,
                *at,
                "instance {i} via {:?}",
                store.backend()
            );
        }
    }
    let mut expected: Vec<_> = (0..instants.len()).collect();
    expected.sort_by_key(|i| instants[*i]);
    let expected: Vec<String> = expected.iter().map(|i| i.to_string()).collect();
    let far = Utc.with_ymd_and_hms(2600, 1, 1, 0, 0, 0).unwrap();
    assert_eq!(
        ids(&due(&*new_york, far, &["work"])),
        expected,
        "ordered by instant, not local time"
    );
    let before_fall_back = utc("2026-11-01T06:00:00Z");
    let due_then = ids(&due(&*new_york, before_fall_back, &["work"]));
    assert!(due_then.contains(&"5".to_owned()) && !due_then.contains(&"6".to_owned()));
}

/// With only migration 0001: priority off works; priority on fails at start-up naming 0002.
/// After migrating, old rows (NULL priority) keep working with priority on.
pub fn schema_with_only_base_migration(h: &dyn Harness, t: Toggle) {
    let space = h.space();
    let config = StoreConfig::with_priority(t.on());
    space.migrate(&config, Some("0001_base"));
    let store = space.store(config.clone(), None);
    let clock = docket_core::ManualClock::new(Ctx::t0());
    let build = |store| {
        Scheduler::builder(store)
            .clock(Arc::new(clock.clone()))
            .config(docket_core::SchedulerConfig {
                polling: PollingStrategy::lock_and_fetch(),
                ..Default::default()
            })
            .task(super::counting_task(WORK).0)
            .build()
    };
    // A priority-off writer works on the old schema in both suites.
    let old_schema_store = space.store(StoreConfig::with_priority(false), None);
    let old = build(old_schema_store.clone()).expect("priority off needs only 0001_base");
    old.client().schedule(WORK.instance("old")).unwrap();
    match (t, build(store.clone())) {
        (Toggle::Off, Ok(scheduler)) => {
            assert_eq!(scheduler.run_due().unwrap(), 1);
        }
        (Toggle::On, Err(DocketError::Store(StoreError::MissingMigration { name, .. }))) => {
            assert_eq!(name, MIGRATION_PRIORITY);
            let err = SchedulerClient::new(store.clone()).unwrap_err();
            assert!(err.to_string().contains("0002_priority"), "{err}");
            space.migrate(&config, None);
            let upgraded = build(store).expect("builds after migrating");
            upgraded
                .client()
                .schedule(WORK.instance("new").priority(5))
                .unwrap();
            assert_eq!(
                upgraded.run_due().unwrap(),
                2,
                "old NULL-priority rows still run"
            );
        }
        (toggle, other) => panic!("unexpected start-up result with priority {toggle:?}: {other:?}"),
    }
}

/// Every prefix of the migration list from `0002_priority` on is a supported table state: a
/// scheduler (both polling strategies) starts on it and hands out due work in policy order,
/// priority on and off. (MariaDB once passed the start-up check on a table at `0002` and then
/// failed every poll on an index hint naming an index only `0006` creates.)
pub fn scheduler_runs_on_every_migration_prefix(h: &dyn Harness, t: Toggle) {
    let from = h
        .migrations()
        .iter()
        .position(|m| m.name == MIGRATION_PRIORITY)
        .expect("the backend ships 0002_priority");
    for migration in &h.migrations()[from..] {
        for polling in [PollingStrategy::fetch(), PollingStrategy::lock_and_fetch()] {
            let space = h.space();
            let config = StoreConfig::with_priority(t.on());
            space.migrate(&config, Some(migration.name));
            let clock = docket_core::ManualClock::new(Ctx::t0());
            let ran = Arc::new(Mutex::new(Vec::new()));
            let seen = Arc::clone(&ran);
            let task = Task::one_time(WORK, move |e, _| {
                seen.lock().unwrap().push(e.task_instance.clone());
                Ok(())
            });
            let scheduler = Scheduler::builder(space.store(config, None))
                .clock(Arc::new(clock.clone()))
                .config(docket_core::SchedulerConfig {
                    // One worker: `run_due` runs executions in hand-out order.
                    threads: 1,
                    polling,
                    ..Default::default()
                })
                .task(task)
                .build()
                .unwrap_or_else(|e| panic!("{}: starts: {e}", migration.name));
            let client = scheduler.client();
            let minutes_ago = |m| Ctx::t0() - chrono::Duration::minutes(m);
            for (id, priority, at) in [
                ("low-oldest", Some(10), 4),
                // The default priority (MEDIUM, 50), older than `mid`.
                ("default", None, 5),
                ("high-newest", Some(90), 1),
                ("mid", Some(50), 2),
            ] {
                let mut instance = WORK.instance(id).scheduled_to(minutes_ago(at));
                if let Some(p) = priority.filter(|_| t.on()) {
                    instance = instance.priority(p);
                }
                client.schedule(instance).unwrap();
            }
            client
                .schedule(
                    WORK.instance("future")
                        .scheduled_to(Ctx::t0() + chrono::Duration::hours(1)),
                )
                .unwrap();
            let expected = match t {
                Toggle::On => ["high-newest", "default", "mid", "low-oldest"],
                Toggle::Off => ["default", "low-oldest", "mid", "high-newest"],
            };
            assert_eq!(
                scheduler
                    .run_due()
                    .unwrap_or_else(|e| panic!("{}: polls: {e}", migration.name)),
                4,
                "{} {polling:?}",
                migration.name
            );
            assert_eq!(
                *ran.lock().unwrap(),
                expected,
                "{} {polling:?}",
                migration.name
            );
        }
    }
}
