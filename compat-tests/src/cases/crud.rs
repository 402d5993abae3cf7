//! Create, read, reschedule, cancel; schedule-if-not-exists; all-or-nothing batches.

use super::{strings, Email, EMAIL, WORK};
use crate::harness::{Ctx, Harness, Toggle};
use chrono::Duration;
use docket_core::store::{Changes, Guard, ListFilter, NewExecution, PickChange};
use docket_core::{DocketError, ExecutionKey, ScheduleOutcome};

/// Every field survives a round trip; reschedule keeps, replaces or clears data; cancel removes.
pub fn crud_round_trip(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let at = Ctx::t0() + Duration::minutes(5);
    let mail = Email {
        to: "ada@example.com".into(),
    };
    let outcome = client
        .schedule(
            EMAIL
                .instance("1")
                .data(mail.clone())
                .priority(7)
                .scheduled_to(at),
        )
        .unwrap();
    assert_eq!(outcome, ScheduleOutcome::Scheduled);
    let key = ExecutionKey::new("email", "1");
    let e = client
        .get(&key)
        .unwrap()
        .expect("scheduled execution exists");
    assert_eq!(
        (e.task_name.as_str(), e.task_instance.as_str()),
        ("email", "1")
    );
    assert_eq!(e.execution_time, at);
    assert_eq!(e.data::<Email>().unwrap(), Some(mail.clone()));
    assert!(!e.picked && e.picked_by.is_none() && e.last_heartbeat.is_none());
    assert_eq!((e.consecutive_failures, e.version), (0, 1));
    assert_eq!((e.last_success, e.last_failure), (None, None));
    assert_eq!(e.priority, [None, Some(7)][usize::from(t.on())]);

    client
        .schedule(WORK.instance("no-data").scheduled_to(at))
        .unwrap();
    let plain = client
        .get(&ExecutionKey::new("work", "no-data"))
        .unwrap()
        .unwrap();
    assert_eq!(plain.task_data, None);

    let later = at + Duration::hours(1);
    client.reschedule(&key, later).unwrap();
    let e = client.get(&key).unwrap().unwrap();
    assert_eq!((e.execution_time, e.version), (later, 2));
    assert_eq!(
        e.data::<Email>().unwrap(),
        Some(mail),
        "reschedule without data keeps data"
    );

    client
        .reschedule_with_data(&key, at, Some(b"raw".to_vec()))
        .unwrap();
    let e = client.get(&key).unwrap().unwrap();
    assert_eq!(
        (e.execution_time, e.task_data.as_deref()),
        (at, Some(&b"raw"[..]))
    );

    client.reschedule_with_data(&key, at, None).unwrap();
    assert_eq!(
        client.get(&key).unwrap().unwrap().task_data,
        None,
        "data set to null"
    );

    client.cancel(&key).unwrap();
    assert!(client.get(&key).unwrap().is_none());
    assert!(matches!(
        client.cancel(&key),
        Err(DocketError::NotFound { .. })
    ));
    assert!(matches!(
        client.reschedule(&key, at),
        Err(DocketError::NotFound { .. })
    ));
}

/// Scheduling an existing instance is a no-op unless replacing; running ones are protected.
pub fn schedule_if_not_exists_and_replace(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let at = Ctx::t0();
    let first = EMAIL
        .instance("1")
        .data(Email { to: "first".into() })
        .scheduled_to(at);
    assert_eq!(client.schedule(first).unwrap(), ScheduleOutcome::Scheduled);
    let again = EMAIL.instance("1").data(Email {
        to: "second".into(),
    });
    assert_eq!(
        client.schedule(again).unwrap(),
        ScheduleOutcome::AlreadyExists
    );
    let key = ExecutionKey::new("email", "1");
    let e = client.get(&key).unwrap().unwrap();
    assert_eq!(e.data::<Email>().unwrap().unwrap().to, "first");

    let later = at + Duration::minutes(1);
    let replacement = EMAIL
        .instance("1")
        .data(Email { to: "third".into() })
        .priority(3)
        .scheduled_to(later);
    assert_eq!(
        client.schedule_or_replace(replacement).unwrap(),
        ScheduleOutcome::Replaced
    );
    let e = client.get(&key).unwrap().unwrap();
    assert_eq!(
        (
            e.data::<Email>().unwrap().unwrap().to.as_str(),
            e.execution_time
        ),
        ("third", later)
    );
    assert_eq!(e.priority, [None, Some(3)][usize::from(t.on())]);

    let claim = Changes {
        pick: Some(PickChange::Claim {
            by: "node-a".into(),
            at,
        }),
        ..Changes::default()
    };
    assert!(ctx
        .store
        .execution_update(&key, Guard::Any, &claim)
        .unwrap());
    let running = EMAIL.instance("1").data(Email {
        to: "fourth".into(),
    });
    assert!(matches!(
        client.schedule_or_replace(running),
        Err(DocketError::Running { .. })
    ));
    assert!(matches!(
        client.cancel(&key),
        Err(DocketError::Running { .. })
    ));
    assert!(matches!(
        client.reschedule(&key, at),
        Err(DocketError::Running {
            picked_by: Some(_),
            ..
        })
    ));
}

/// A batch with one bad row writes nothing, whether the row fails validation or the database.
pub fn batch_is_all_or_nothing(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let everything = ListFilter::default();
    let bad_batch = vec![WORK.instance("a"), WORK.instance("b"), WORK.instance("")];
    assert!(matches!(
        client.schedule_batch(bad_batch),
        Err(DocketError::InvalidName { .. })
    ));
    assert!(client.list_scheduled(&everything).unwrap().is_empty());

    // Past validation: the database rejects the third row (instance id longer than its column).
    let row = |id: String| NewExecution {
        task_name: "work".into(),
        task_instance: id,
        task_data: None,
        execution_time: Ctx::t0(),
        priority: Some(1),
        limit_key: None,
    };
    let rows = vec![row("a".into()), row("b".into()), row("x".repeat(400))];
    assert!(ctx.store.execution_insert_batch(&rows).is_err());
    assert!(
        client.list_scheduled(&everything).unwrap().is_empty(),
        "rolled back"
    );

    client.schedule(WORK.instance("b")).unwrap();
    let inserted = client
        .schedule_batch(["a", "b", "c"].map(|id| WORK.instance(id)))
        .unwrap();
    assert_eq!(inserted, 2, "the existing instance is skipped");
    let repeated = client
        .schedule_batch(["d", "d", "e"].map(|id| WORK.instance(id)))
        .unwrap();
    assert_eq!(
        repeated, 2,
        "an instance repeated in the batch is inserted once"
    );
    let listed = client.list_scheduled(&everything).unwrap();
    let mut names = super::ids(&listed);
    names.sort();
    assert_eq!(names, strings(&["a", "b", "c", "d", "e"]));
}

/// Task names and instance ids are data, always bound: quotes, semicolons and comment markers
/// round-trip verbatim and reach no SQL text (control characters are rejected, typed).
pub fn hostile_names_are_data(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let hostile = "x'); DROP TABLE scheduled_tasks; -- /* \" ` \\";
    let task: docket_core::TaskDescriptor =
        docket_core::TaskDescriptor::new("t'; DELETE FROM scheduled_tasks; --");
    assert_eq!(
        client.schedule(task.instance(hostile)).unwrap(),
        ScheduleOutcome::Scheduled
    );
    let key = ExecutionKey::new(task.name(), hostile);
    let e = client.get(&key).unwrap().expect("stored verbatim");
    assert_eq!(
        (e.task_name.as_str(), e.task_instance.as_str()),
        (task.name(), hostile)
    );
    assert_eq!(
        client.list_scheduled(&ListFilter::default()).unwrap().len(),
        1,
        "table intact"
    );
    let control = client.schedule(WORK.instance("bell\u{7}"));
    assert!(matches!(
        control,
        Err(DocketError::InvalidName {
            what: "instance id",
            ..
        })
    ));
    assert_eq!(
        client.list_scheduled(&ListFilter::default()).unwrap().len(),
        1,
        "nothing written"
    );
}
