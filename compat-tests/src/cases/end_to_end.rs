//! A real scheduler: worker threads, polling, the system clock.

use super::{strings, WORK};
use crate::harness::{Ctx, Harness, Need, Toggle};
use chrono::Duration;
use docket_core::store::ListFilter;
use docket_core::{
    PollingStrategy, Schedule, Scheduler, SchedulerClient, SchedulerConfig, SchedulerEvent,
    SystemClock, Task,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

/// Upper bound for anything a running scheduler must do in these tests.
const PATIENCE: StdDuration = StdDuration::from_secs(30);

fn collect(rx: &Receiver<String>, n: usize) -> Vec<String> {
    let deadline = Instant::now() + PATIENCE;
    let mut got = Vec::new();
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(id) => got.push(id),
            Err(_) => panic!(
                "only {} of {n} executions ran within {PATIENCE:?}: {got:?}",
                got.len()
            ),
        }
    }
    got
}

fn run_real_scheduler(ctx: &Ctx, polling: PollingStrategy) {
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let job = Task::one_time(WORK, move |e, _| {
        tx.lock().unwrap().send(e.task_instance.clone()).ok();
        Ok(())
    });
    let beats = Arc::new(AtomicUsize::new(0));
    let (beat_tx, beat_rx) = mpsc::channel();
    let beat_tx = std::sync::Mutex::new(beat_tx);
    let counter = Arc::clone(&beats);
    let beat = Task::recurring(
        "beat",
        Schedule::fixed_delay(std::time::Duration::from_millis(100)).unwrap(),
        move |_, _| {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            beat_tx.lock().unwrap().send(n.to_string()).ok();
            Ok(())
        },
    );
    let scheduler = ctx
        .scheduler("e2e", polling)
        .clock(Arc::new(SystemClock))
        .tasks([job, beat])
        .build()
        .unwrap();
    scheduler.start().unwrap();
    let soon = chrono::Utc::now() + Duration::milliseconds(300);
    let instances = (0..40).map(|i| {
        let instance = WORK.instance(format!("{i:02}")).priority((i % 5) as i16);
        if i % 4 == 0 {
            instance.scheduled_to(soon)
        } else {
            instance
        }
    });
    scheduler.client().schedule_batch(instances).unwrap();
    let mut ran = collect(&rx, 40);
    collect(&beat_rx, 3);
    assert!(scheduler.stop(), "stopped within the max wait");
    ran.sort();
    let expected: Vec<String> = (0..40).map(|i| format!("{i:02}")).collect();
    assert_eq!(ran, expected, "every one-time execution ran exactly once");
    let left = ctx.client().list_scheduled(&ListFilter::default()).unwrap();
    assert_eq!(
        super::ids(&left),
        strings(&["recurring"]),
        "only the recurring execution remains"
    );
    assert!(!left[0].picked, "released at shutdown");
}

/// End to end with fetch-and-lock-on-execute.
pub fn end_to_end_fetch(h: &dyn Harness, t: Toggle) {
    run_real_scheduler(&Ctx::new(h, t), PollingStrategy::fetch());
}

/// End to end with lock-and-fetch.
pub fn end_to_end_lock_and_fetch(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::LockAndFetch);
    run_real_scheduler(&ctx, PollingStrategy::lock_and_fetch());
}

/// Scheduling a due execution through the scheduler's client wakes the poller at once, even
/// with an hour-long polling interval.
pub fn client_wakes_scheduler(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let job = Task::one_time(WORK, move |e, _| {
        tx.lock().unwrap().send(e.task_instance.clone()).ok();
        Ok(())
    });
    let (polled_tx, polled_rx) = mpsc::channel();
    let polled_tx = std::sync::Mutex::new(polled_tx);
    let scheduler: Scheduler = ctx
        .scheduler("waker", PollingStrategy::lock_and_fetch())
        .clock(Arc::new(SystemClock))
        .config(docket_core::SchedulerConfig {
            threads: 2,
            polling: PollingStrategy::lock_and_fetch(),
            polling_interval: StdDuration::from_secs(3600),
            scheduler_name: "waker".into(),
            ..Default::default()
        })
        .task(job)
        .listener(Arc::new(move |e: &SchedulerEvent| {
            if let SchedulerEvent::PollCompleted { .. } = e {
                polled_tx.lock().unwrap().send(()).ok();
            }
        }))
        .build()
        .unwrap();
    scheduler.start().unwrap();
    // Wait for the first (empty) poll, so only a wake-up can find the new execution.
    polled_rx
        .recv_timeout(PATIENCE)
        .expect("the first poll ran");
    scheduler.client().schedule(WORK.instance("now")).unwrap();
    assert_eq!(collect(&rx, 1), strings(&["now"]));
    assert!(scheduler.stop());
}

/// Whether `url` names a server on this machine (or SQLite, in this process): its clock is
/// this machine's.
fn local_server(url: &str) -> bool {
    url.starts_with("sqlite:")
        || url.contains("@127.0.0.1")
        || url.contains("@localhost")
        || url.contains("//127.0.0.1")
        || url.contains("//localhost")
}

/// The scheduler runs on the database server's clock (docs/RELIABILITY.md, "Which clock"):
/// the store reads the server's time; a scheduler on the system clock takes its first sample
/// at its first step and corrects by the offset, which for a server on this machine (the
/// same clock) is exactly zero, so work that a client on the system clock schedules for now
/// runs at once; an injected clock, or `clock_correction: false`, is not corrected at all.
pub fn scheduler_clock_follows_the_server(h: &dyn Harness, toggle: Toggle) {
    let ctx = Ctx::new(h, toggle);
    let before = chrono::Utc::now();
    let server = ctx.store.server_time().expect("the server's clock reads");
    let after = chrono::Utc::now();
    let slack = Duration::seconds(1);
    assert!(
        server >= before - slack && server <= after + slack,
        "the server says {server}, this machine {before} .. {after}"
    );
    // UTC whatever the session's time zone (MySQL's `NOW()` would read 5 hours off here). A
    // fixed offset on MySQL/MariaDB: a named zone needs the server's zone tables loaded.
    let zone = match ctx.store.backend() {
        "mysql" => "-05:00",
        _ => "America/New_York",
    };
    let zoned = ctx.space.store(ctx.config(), Some(zone));
    let zoned = zoned.server_time().expect("the server's clock reads");
    assert!(
        (zoned - chrono::Utc::now()).abs() <= slack + Duration::seconds(1),
        "with the session in {zone} the server says {zoned}"
    );
    let config = |correct: bool| SchedulerConfig {
        scheduler_name: "clock".into(),
        clock_correction: correct,
        ..SchedulerConfig::default()
    };
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let job = Task::one_time(WORK, move |e, _| {
        tx.lock().unwrap().send(e.task_instance.clone()).ok();
        Ok(())
    });
    let corrected = Scheduler::builder(ctx.store.clone())
        .config(config(true))
        .task(job)
        .build()
        .unwrap();
    assert_eq!(
        corrected.clock_offset(),
        Some(Duration::zero()),
        "not sampled yet"
    );
    // A client on the uncorrected system clock schedules work for now; the corrected
    // scheduler's first step samples the server's clock and must find it due.
    let client = SchedulerClient::new(ctx.store.clone()).unwrap();
    client.schedule(WORK.instance("now")).unwrap();
    assert_eq!(
        corrected.run_due().unwrap(),
        1,
        "due now on the server's clock too"
    );
    assert_eq!(rx.try_recv().ok().as_deref(), Some("now"));
    let offset = corrected
        .sync_clock()
        .unwrap()
        .expect("the system clock is corrected");
    assert!(
        offset.abs() <= slack,
        "offset {offset} to a server of this machine's time"
    );
    if local_server(&ctx.space.url()) {
        assert_eq!(
            offset,
            Duration::zero(),
            "the same clock: an offset within the round trip is no offset"
        );
    }
    let uncorrected = Scheduler::builder(ctx.store.clone())
        .config(config(false))
        .build()
        .unwrap();
    assert_eq!(uncorrected.sync_clock().unwrap(), None);
    assert_eq!(uncorrected.clock_offset(), None);
    let injected = ctx
        .scheduler("manual", PollingStrategy::fetch())
        .build()
        .unwrap();
    assert_eq!(
        injected.sync_clock().unwrap(),
        None,
        "an injected clock is used as given"
    );
}
