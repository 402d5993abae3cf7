//! Schema: timestamps round-trip exactly; the priority toggle and migration 0002.

use super::{due, ids, WORK};
use crate::harness::{Ctx, Harness, Toggle};
use chrono::{DateTime, TimeZone, Utc};
use docket_core::store::MIGRATION_PRIORITY;
use docket_core::{
    DocketError, ExecutionKey, PollingStrategy, Scheduler, SchedulerClient, StoreConfig, StoreError,
};
use std::sync::Arc;

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
