//! Execution lifecycle with a manual clock: heartbeats, dead detection and fencing, recurring
//! tasks, failures, retries and unknown tasks.

use super::{counting_task, strings, Email, EMAIL, WORK};
use crate::harness::{Ctx, Harness, Toggle, REJECTED};
use chrono::Duration;
use docket_core::store::{Changes, DueParams, Guard, ListFilter, PickChange};
use docket_core::task::Retry;
use docket_core::{
    Clock, ExecutionKey, FailurePolicy, PollingStrategy, Schedule, Scheduler, SchedulerEvent,
    TableName, Task, TaskDescriptor, TaskError,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

fn claim_as(ctx: &Ctx, key: &ExecutionKey, by: &str) {
    let claim = Changes {
        pick: Some(PickChange::Claim {
            by: by.into(),
            at: ctx.clock.now(),
        }),
        ..Changes::default()
    };
    assert!(ctx
        .store
        .execution_update(key, Guard::Unpicked, &claim)
        .unwrap());
}

/// A scheduler never revives an execution it is running itself, however late its own
/// heartbeat: dead detection finds the row older than the dead window (as an overloaded host's
/// late heartbeat round leaves it) and heart-beats it instead, so it runs once.
pub fn own_running_execution_is_not_revived(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let task = Task::one_time(WORK, move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        let _ = started_tx.send(());
        let _ = release_rx.lock().expect("one handler").recv();
        Ok(())
    });
    let scheduler = ctx.build("s1", PollingStrategy::fetch(), vec![task]);
    ctx.client().schedule(WORK.instance("1")).unwrap();
    let key = ExecutionKey::new("work", "1");
    // The asserts come after the handler is released, so a failure cannot leave it waiting.
    let (revived, row, now, ran) = std::thread::scope(|s| {
        let runner = s.spawn(|| scheduler.run_due());
        started_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the handler started within 60 s");
        // Past the dead window (heartbeat 60 s x 6 missed) with no heartbeat round.
        ctx.clock.advance(std::time::Duration::from_secs(7 * 60));
        let revived = scheduler.detect_dead();
        let row = ctx.store.execution_get(&key);
        release_tx.send(()).expect("release");
        // Gone, so a second run (after a revival) does not wait.
        drop(release_tx);
        let ran = runner.join().expect("runner");
        (revived, row, ctx.clock.now(), ran)
    });
    assert_eq!(revived.unwrap(), 0, "not revived");
    let e = row.unwrap().expect("the row");
    assert!(e.picked, "still picked");
    assert_eq!(e.picked_by.as_deref(), Some("s1"));
    assert_eq!(e.last_heartbeat, Some(now), "heart-beaten instead");
    assert_eq!(ran.unwrap(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "ran once");
    assert!(ctx.store.execution_get(&key).unwrap().is_none(), "done");
}

/// Heartbeats keep a picked execution alive; silence past the dead window revives it.
pub fn heartbeat_and_dead_detection(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let (task, runs) = counting_task(WORK);
    let scheduler = ctx.build("s1", PollingStrategy::fetch(), vec![task]);
    ctx.client().schedule(WORK.instance("1")).unwrap();
    let key = ExecutionKey::new("work", "1");
    claim_as(&ctx, &key, "ghost");
    let version = ctx.store.execution_get(&key).unwrap().unwrap().version;

    // Dead window: heartbeat 60 s x 6 missed = 6 minutes.
    ctx.clock.advance(std::time::Duration::from_secs(5 * 60));
    assert_eq!(scheduler.detect_dead().unwrap(), 0, "within the window");
    let beat_at = ctx.clock.now();
    assert!(ctx
        .store
        .execution_heartbeat(&key, version, beat_at)
        .unwrap());
    assert!(
        !ctx.store
            .execution_heartbeat(&key, version + 1, beat_at)
            .unwrap(),
        "wrong version"
    );
    let e = ctx.store.execution_get(&key).unwrap().unwrap();
    assert_eq!(
        (e.last_heartbeat, e.version),
        (Some(beat_at), version),
        "heartbeat does not bump version"
    );

    ctx.clock.advance(std::time::Duration::from_secs(5 * 60));
    assert_eq!(
        scheduler.detect_dead().unwrap(),
        0,
        "the heartbeat reset the window"
    );
    ctx.clock.advance(std::time::Duration::from_secs(2 * 60));
    assert_eq!(scheduler.detect_dead().unwrap(), 1);
    let now = ctx.clock.now();
    let e = ctx.store.execution_get(&key).unwrap().unwrap();
    assert!(!e.picked && e.picked_by.is_none() && e.last_heartbeat.is_none());
    assert_eq!(
        (e.execution_time, e.last_failure, e.consecutive_failures),
        (now, Some(now), 1)
    );
    assert_eq!(scheduler.run_due().unwrap(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(
        ctx.store.execution_get(&key).unwrap().is_none(),
        "completed one-time execution is removed"
    );
}

/// A scheduler whose `work` handler hangs: it says `started`, then waits for `release`.
pub(super) struct Hanging {
    /// The scheduler.
    pub scheduler: Scheduler,
    /// One message per handler start.
    pub started: mpsc::Receiver<()>,
    /// Lets one handler return.
    pub release: mpsc::Sender<()>,
    /// Instances its `LostExecution` events named (fenced outcomes).
    pub lost: Arc<Mutex<Vec<String>>>,
}

/// A [`Hanging`] scheduler called `name`.
pub(super) fn hanging(ctx: &Ctx, name: &str, polling: PollingStrategy) -> Hanging {
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let slow = Task::one_time(WORK, move |_, _| {
        started_tx.send(()).ok();
        release_rx.lock().unwrap().recv().ok();
        Ok(())
    });
    let lost = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&lost);
    let scheduler = ctx
        .scheduler(name, polling)
        .task(slow)
        .listener(Arc::new(move |e: &SchedulerEvent| {
            if let SchedulerEvent::LostExecution(x) = e {
                seen.lock().unwrap().push(x.task_instance.clone());
            }
        }))
        .build()
        .unwrap();
    Hanging {
        scheduler,
        started,
        release,
        lost,
    }
}

/// A heartbeat that one execution's row refuses (a trigger fails its update) still reaches
/// the executions after it, and the failure is reported: otherwise one stuck row would let
/// every other running execution look dead and run twice.
pub fn failed_heartbeat_spares_the_others(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let Hanging {
        scheduler,
        started,
        release,
        lost,
    } = hanging(&ctx, "s1", PollingStrategy::fetch());
    // "a" sorts first among the running keys, so it is tried before the others.
    let ids = ["a", "b", "c", "d"];
    for id in ids {
        ctx.client().schedule(WORK.instance(id)).unwrap();
    }
    // Four worker threads: all four run at once.
    scheduler.start().unwrap();
    for _ in ids {
        started
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the execution starts within 60 s");
    }
    // Once all are claimed (the trigger would refuse the claim of "a" too).
    let ddl = ctx.space.reject_updates(&TableName::default(), "a");
    ctx.space
        .foreign()
        .transaction(&mut |s| ddl.iter().try_for_each(|sql| s.execute_unprepared(sql)))
        .expect("the trigger is created");
    ctx.clock.advance(std::time::Duration::from_secs(60));
    let err = scheduler
        .heartbeat()
        .expect_err("the rejected heartbeat is reported");
    assert!(err.to_string().contains(REJECTED), "{err}");
    for id in ids {
        let e = ctx.store.execution_get(&ExecutionKey::new("work", id));
        let beat = e.unwrap().and_then(|e| e.last_heartbeat);
        assert_eq!(beat == Some(ctx.clock.now()), id != "a", "{id}: {beat:?}");
    }
    for _ in ids {
        release.send(()).unwrap();
    }
    assert!(scheduler.stop(), "stopped within the max wait");
    assert!(
        lost.lock().unwrap().is_empty(),
        "every outcome was recorded"
    );
    for id in ids {
        let left = ctx.store.execution_get(&ExecutionKey::new("work", id));
        assert!(left.unwrap().is_none(), "{id} ran once and was removed");
    }
}

/// A revived execution's first owner cannot record its outcome over the new claim.
pub fn revived_execution_fences_old_owner(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let Hanging {
        scheduler: old,
        started: started_rx,
        release: release_tx,
        lost,
    } = hanging(&ctx, "old", PollingStrategy::lock_and_fetch());
    let (task, _) = counting_task(WORK);
    let rescuer = ctx.build("new", PollingStrategy::fetch(), vec![task]);
    ctx.client().schedule(WORK.instance("1")).unwrap();
    let key = ExecutionKey::new("work", "1");
    std::thread::scope(|s| {
        let running = s.spawn(|| old.run_due().unwrap());
        // Bounded: a poll that fails ends that thread without starting the execution.
        started_rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the old owner starts the execution within 60 s (did its poll fail?)");
        // The old owner heart-beats while it runs...
        ctx.clock.advance(std::time::Duration::from_secs(60));
        old.heartbeat().unwrap();
        let e = ctx.store.execution_get(&key).unwrap().unwrap();
        assert_eq!(e.last_heartbeat, Some(ctx.clock.now()));
        // ...then goes silent past the dead window; another scheduler revives the execution
        // and a new owner claims it.
        ctx.clock.advance(std::time::Duration::from_secs(7 * 60));
        assert_eq!(rescuer.detect_dead().unwrap(), 1);
        let names = strings(&["work"]);
        let due = DueParams::new(ctx.clock.now(), &names, 1);
        assert_eq!(
            ctx.store
                .execution_lock_and_fetch_due(&due, "new")
                .unwrap()
                .len(),
            1
        );
        release_tx.send(()).unwrap();
        assert_eq!(running.join().unwrap(), 1);
    });
    assert_eq!(
        *lost.lock().unwrap(),
        strings(&["1"]),
        "old owner's completion was rejected"
    );
    let e = ctx
        .store
        .execution_get(&key)
        .unwrap()
        .expect("not removed by the old owner");
    assert_eq!(
        (e.picked, e.picked_by.as_deref()),
        (true, Some("new")),
        "the new claim stands"
    );
    assert_eq!(e.consecutive_failures, 1);
    old.heartbeat()
        .expect("a scheduler with nothing running heart-beats nothing");
}

/// A recurring task is created once however many schedulers start, and runs on its schedule.
pub fn recurring_runs_repeatedly_and_exists_once(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let runs = Arc::new(AtomicUsize::new(0));
    let make = |runs: Arc<AtomicUsize>| {
        vec![
            Task::recurring(
                "tick",
                Schedule::fixed_delay(std::time::Duration::from_secs(60)).unwrap(),
                move |_, _| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
            ),
            Task::recurring("report", Schedule::cron("*/5 * * * *").unwrap(), |_, _| {
                Ok(())
            }),
        ]
    };
    let s1 = ctx.build("s1", PollingStrategy::fetch(), make(Arc::clone(&runs)));
    let s2 = ctx.build(
        "s2",
        PollingStrategy::lock_and_fetch(),
        make(Arc::clone(&runs)),
    );
    s1.create_recurring().unwrap();
    s2.create_recurring().unwrap();
    let rows = ctx.client().list_scheduled(&ListFilter::default()).unwrap();
    assert_eq!(rows.len(), 2, "one execution per recurring task: {rows:?}");
    let t0 = Ctx::t0();
    let tick = ExecutionKey::new("tick", "recurring");
    let report = ctx
        .store
        .execution_get(&ExecutionKey::new("report", "recurring"))
        .unwrap()
        .unwrap();
    assert_eq!(
        report.execution_time,
        t0 + Duration::minutes(5),
        "cron */5 from 12:00"
    );
    let first = ctx.store.execution_get(&tick).unwrap().unwrap();
    assert_eq!(first.execution_time, t0 + Duration::seconds(60));
    assert_eq!(
        first.priority,
        [None, Some(90)][usize::from(t.on())],
        "recurring default HIGH"
    );

    ctx.clock.advance(std::time::Duration::from_secs(60));
    assert_eq!(s1.run_due().unwrap(), 1);
    let e = ctx.store.execution_get(&tick).unwrap().unwrap();
    let now = ctx.clock.now();
    assert_eq!(
        (e.execution_time, e.last_success, e.picked),
        (now + Duration::seconds(60), Some(now), false)
    );
    ctx.clock.advance(std::time::Duration::from_secs(60));
    assert_eq!(s2.run_due().unwrap(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        ctx.client()
            .list_scheduled(&ListFilter::default())
            .unwrap()
            .len(),
        2
    );
}

/// Exponential backoff between retries; after max retries a one-time task gives up.
pub fn retry_backoff_and_max_retries(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let attempts = Arc::new(AtomicUsize::new(0));
    let gave_up = Arc::new(AtomicUsize::new(0));
    let (a, g) = (Arc::clone(&attempts), Arc::clone(&gave_up));
    const FLAKY: TaskDescriptor = TaskDescriptor::new("flaky");
    let flaky = Task::one_time(FLAKY, move |_, _| {
        a.fetch_add(1, Ordering::SeqCst);
        Err(TaskError::new("boom"))
    })
    .on_failure(FailurePolicy::exponential(std::time::Duration::from_secs(10), 2.0).max_retries(2))
    .on_give_up(move |_| {
        g.fetch_add(1, Ordering::SeqCst);
    });
    let plain = Task::one_time(WORK, |_, _| Err(TaskError::new("always")));
    let scheduler = ctx.build("s1", PollingStrategy::fetch(), vec![flaky, plain]);
    let client = scheduler.client();
    client.schedule(FLAKY.instance("1")).unwrap();
    client.schedule(WORK.instance("1")).unwrap();
    let key = ExecutionKey::new("flaky", "1");

    assert_eq!(scheduler.run_due().unwrap(), 2);
    let now = ctx.clock.now();
    let e = ctx.store.execution_get(&key).unwrap().unwrap();
    assert_eq!(
        (e.consecutive_failures, e.execution_time, e.last_failure),
        (1, now + Duration::seconds(10), Some(now))
    );
    let default = ctx
        .store
        .execution_get(&ExecutionKey::new("work", "1"))
        .unwrap()
        .unwrap();
    assert_eq!(
        default.execution_time,
        now + Duration::minutes(5),
        "default: retry in 5 minutes"
    );
    assert_eq!(
        scheduler.run_due().unwrap(),
        0,
        "not due before the backoff"
    );

    ctx.clock.advance(std::time::Duration::from_secs(10));
    assert_eq!(scheduler.run_due().unwrap(), 1);
    let e = ctx.store.execution_get(&key).unwrap().unwrap();
    assert_eq!(
        (e.consecutive_failures, e.execution_time),
        (2, ctx.clock.now() + Duration::seconds(20))
    );

    ctx.clock.advance(std::time::Duration::from_secs(20));
    assert_eq!(scheduler.run_due().unwrap(), 1);
    assert!(
        ctx.store.execution_get(&key).unwrap().is_none(),
        "gave up after 2 retries"
    );
    assert_eq!(
        (
            attempts.load(Ordering::SeqCst),
            gave_up.load(Ordering::SeqCst)
        ),
        (3, 1)
    );
}

/// A panicking handler is a failure: retried later, and the scheduler keeps running.
pub fn panicking_handler_is_a_failure(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    const PANICS: TaskDescriptor = TaskDescriptor::new("panics");
    let panics = Task::one_time(PANICS, |_, _| panic!("handler bug")).on_failure(FailurePolicy {
        retry: Retry::Fixed(std::time::Duration::from_secs(30)),
        max_retries: None,
    });
    let (work, runs) = counting_task(WORK);
    let scheduler = ctx.build("s1", PollingStrategy::lock_and_fetch(), vec![panics, work]);
    let client = scheduler.client();
    client
        .schedule(
            PANICS
                .instance("1")
                .scheduled_to(Ctx::t0() - Duration::seconds(1)),
        )
        .unwrap();
    client.schedule(WORK.instance("1")).unwrap();
    assert_eq!(scheduler.run_due().unwrap(), 2);
    let e = ctx
        .store
        .execution_get(&ExecutionKey::new("panics", "1"))
        .unwrap()
        .unwrap();
    assert_eq!((e.consecutive_failures, e.picked), (1, false));
    assert_eq!(e.execution_time, ctx.clock.now() + Duration::seconds(30));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// Data that does not deserialize fails that execution only.
pub fn undeserializable_data_fails_only_that_execution(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let delivered = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&delivered);
    let email = Task::one_time(EMAIL, move |e, _| {
        let mail: Email = e.data()?.ok_or_else(|| TaskError::new("no data"))?;
        sink.lock().unwrap().push(mail.to);
        Ok(())
    });
    let scheduler = ctx.build("s1", PollingStrategy::fetch(), vec![email]);
    let client = scheduler.client();
    client
        .schedule(EMAIL.instance("good").data(Email { to: "ok".into() }))
        .unwrap();
    client
        .schedule(EMAIL.instance("bad").raw_data(b"{not json".to_vec()))
        .unwrap();
    assert_eq!(scheduler.run_due().unwrap(), 2);
    assert_eq!(*delivered.lock().unwrap(), strings(&["ok"]));
    assert!(ctx
        .store
        .execution_get(&ExecutionKey::new("email", "good"))
        .unwrap()
        .is_none());
    let bad = ctx
        .store
        .execution_get(&ExecutionKey::new("email", "bad"))
        .unwrap()
        .unwrap();
    assert_eq!(bad.consecutive_failures, 1);
}

/// Rows of tasks nobody registered are not picked, are reported, and are deleted when old.
pub fn unknown_tasks_are_left_alone(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    const GHOST: TaskDescriptor = TaskDescriptor::new("ghost");
    ctx.client().schedule(GHOST.instance("1")).unwrap();
    let (work, runs) = counting_task(WORK);
    let scheduler = ctx.build("s1", PollingStrategy::lock_and_fetch(), vec![work]);
    scheduler.client().schedule(WORK.instance("1")).unwrap();
    assert!(matches!(
        scheduler.client().schedule(GHOST.instance("2")),
        Err(docket_core::DocketError::UnknownTask(_))
    ));
    assert_eq!(scheduler.run_due().unwrap(), 1);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let ghost = ExecutionKey::new("ghost", "1");
    assert!(
        !ctx.store.execution_get(&ghost).unwrap().unwrap().picked,
        "left alone"
    );
    assert_eq!(scheduler.check_unresolved().unwrap(), strings(&["ghost"]));
    assert!(
        ctx.store.execution_get(&ghost).unwrap().is_some(),
        "young rows are kept"
    );
    ctx.clock
        .advance(std::time::Duration::from_secs(15 * 86_400));
    scheduler.check_unresolved().unwrap();
    assert!(
        ctx.store.execution_get(&ghost).unwrap().is_none(),
        "deleted after 14 days"
    );
}

/// Summary per task and the failing list.
pub fn summary_and_failing_list(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let failing = Task::one_time(EMAIL, |_, _| Err(TaskError::new("smtp down")));
    let scheduler = ctx.build(
        "s1",
        PollingStrategy::fetch(),
        vec![failing, counting_task(WORK).0],
    );
    let client = scheduler.client();
    let later = Ctx::t0() + Duration::hours(1);
    for id in ["1", "2", "3"] {
        client
            .schedule(WORK.instance(id).scheduled_to(later))
            .unwrap();
    }
    client
        .schedule(EMAIL.instance("x").data(Email { to: "x".into() }))
        .unwrap();
    assert_eq!(scheduler.run_due().unwrap(), 1);
    let summary = client.summary().unwrap();
    let rows: Vec<_> = summary
        .iter()
        .map(|s| (s.task_name.as_str(), s.total, s.picked, s.failing))
        .collect();
    assert_eq!(rows, vec![("email", 1, 0, 1), ("work", 3, 0, 0)]);
    assert_eq!(summary[1].next_execution_time, Some(later));
    let failing = client.list_failing().unwrap();
    assert_eq!(super::ids(&failing), strings(&["x"]));
}

/// The dead executions are read a bounded page at a time: walking the pages reads every dead
/// row once, in heartbeat order (ties by key), and they are counted per task; the scheduler's
/// dead detection handles every dead row of its tasks while an unknown task's is left alone.
pub fn dead_executions_are_paged(h: &dyn Harness, t: Toggle) {
    use docket_core::DeadPage;
    let ctx = Ctx::new(h, t);
    const GHOST: docket_core::TaskDescriptor<()> = TaskDescriptor::new("ghost");
    let client = ctx.client();
    let mut expected = Vec::new();
    for i in 0..7 {
        let id = format!("{i}");
        client.schedule(WORK.instance(&id)).unwrap();
        let key = ExecutionKey::new("work", &id);
        claim_as(&ctx, &key, "gone");
        expected.push(key);
        // Pairs share a heartbeat: the key breaks the tie.
        if i % 2 == 1 {
            ctx.clock.advance(std::time::Duration::from_secs(1));
        }
    }
    client.schedule(GHOST.instance("0")).unwrap();
    claim_as(&ctx, &ExecutionKey::new("ghost", "0"), "gone");
    expected.push(ExecutionKey::new("ghost", "0"));
    expected.sort_by_key(|k| {
        let e = ctx.store.execution_get(k).unwrap().unwrap();
        (
            e.last_heartbeat,
            k.task_name.clone(),
            k.task_instance.clone(),
        )
    });
    ctx.clock.advance(std::time::Duration::from_secs(60 * 60));
    let older_than = ctx.clock.now() - Duration::minutes(30);

    assert_eq!(
        client.dead_counts(older_than).unwrap(),
        [("ghost".to_owned(), 1), ("work".to_owned(), 7)]
    );
    let mut page = DeadPage::first(older_than, 3);
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let (rows, next) = client.dead_page(&page).unwrap();
        assert!(rows.len() <= 3);
        pages += 1;
        seen.extend(rows.into_iter().map(|e| e.key()));
        match next {
            Some(after) => page.after = Some(after),
            None => break,
        }
    }
    assert_eq!(seen, expected, "every dead row once, in order");
    assert!(pages >= 3);
    let ghost_only = DeadPage {
        task_name: Some("ghost".into()),
        ..DeadPage::first(older_than, 3)
    };
    let (rows, next) = client.dead_page(&ghost_only).unwrap();
    assert_eq!((rows.len(), next), (1, None), "one task's rows only");
    assert!(client.dead_page(&DeadPage::first(older_than, 0)).is_err());

    let (work, _runs) = counting_task(WORK);
    let scheduler = ctx.build("s1", PollingStrategy::fetch(), vec![work]);
    assert_eq!(scheduler.detect_dead().unwrap(), 7);
    assert_eq!(
        client.dead_counts(older_than).unwrap(),
        [("ghost".to_owned(), 1)],
        "the unknown task's row is left alone"
    );
}

/// More dead rows of an unknown task than one page of the scheduler's dead detection holds,
/// all older than a known task's dead row: the detection reads past them (page after page)
/// and handles the known one; it is never hidden behind rows it leaves alone.
pub fn dead_detection_reads_past_rows_it_leaves_alone(h: &dyn Harness, t: Toggle) {
    const GHOST: docket_core::TaskDescriptor<()> = TaskDescriptor::new("ghost");
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    let n = 600; // more than the detection's page (500)
    client
        .schedule_batch((0..n).map(|i| GHOST.instance(format!("{i:04}"))))
        .unwrap();
    let claimed = ctx
        .store
        .execution_lock_and_fetch_due(
            &DueParams::new(ctx.clock.now(), &["ghost".to_owned()], 1000),
            "gone",
        )
        .unwrap();
    assert_eq!(claimed.len(), n);
    ctx.clock.advance(std::time::Duration::from_secs(1));
    client.schedule(WORK.instance("late")).unwrap();
    claim_as(&ctx, &ExecutionKey::new("work", "late"), "gone");
    ctx.clock.advance(std::time::Duration::from_secs(60 * 60));

    let (work, _runs) = counting_task(WORK);
    let scheduler = ctx.build("s1", PollingStrategy::fetch(), vec![work]);
    assert_eq!(
        scheduler.detect_dead().unwrap(),
        1,
        "the known row behind them"
    );
    let e = ctx
        .store
        .execution_get(&ExecutionKey::new("work", "late"))
        .unwrap()
        .unwrap();
    assert!(!e.picked, "revived");
    let older_than = ctx.clock.now() - Duration::minutes(30);
    assert_eq!(
        client.dead_counts(older_than).unwrap(),
        [("ghost".to_owned(), n as i64)]
    );
}
