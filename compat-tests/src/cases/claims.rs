//! Claims: optimistic (fetch-and-lock-on-execute) and skip-locked (lock-and-fetch), alone and
//! under concurrent claimers.

use super::{ids, strings, WORK};
use crate::harness::{Ctx, Harness, Need, Toggle};
use chrono::Duration;
use docket_core::store::{Changes, Completion, DueParams, Guard, PickChange};
use docket_core::{ExecutionKey, Store};
use std::collections::HashSet;

/// A claim is an update conditioned on the version read; the second claimer loses.
pub fn fetch_claim_is_optimistic(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let now = Ctx::t0();
    ctx.client()
        .schedule(WORK.instance("1").scheduled_to(now))
        .unwrap();
    let candidate = super::due(&*ctx.store, now, &["work"]).remove(0);
    let claim = |by: &str| Changes {
        pick: Some(PickChange::Claim {
            by: by.into(),
            at: now,
        }),
        ..Changes::default()
    };
    let key = candidate.key();
    let guard = Guard::Version(candidate.version);
    assert!(ctx
        .store
        .execution_update(&key, guard, &claim("a"))
        .unwrap());
    assert!(
        !ctx.store
            .execution_update(&key, guard, &claim("b"))
            .unwrap(),
        "stale version loses"
    );
    let e = ctx.store.execution_get(&key).unwrap().unwrap();
    assert!(e.picked);
    assert_eq!(e.picked_by.as_deref(), Some("a"));
    assert_eq!(
        (e.version, e.last_heartbeat),
        (candidate.version + 1, Some(now))
    );
}

/// A heartbeat batch answers for each execution: one still held at its version gets the
/// heartbeat; one completed meanwhile and one claimed again since (a new version) answer
/// `false`, and the others in the chunk still get theirs (the chunk changed fewer rows than
/// it named: its reach is read back, not rewritten row by row).
pub fn heartbeat_batch_answers_each_execution(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let now = Ctx::t0();
    for id in ["a", "b", "c", "d"] {
        ctx.client()
            .schedule(WORK.instance(id).scheduled_to(now))
            .unwrap();
    }
    let claim = |by: &str| Changes {
        pick: Some(PickChange::Claim {
            by: by.into(),
            at: now,
        }),
        ..Changes::default()
    };
    let mut held = Vec::new();
    for e in super::due(&*ctx.store, now, &["work"]) {
        let key = e.key();
        assert!(ctx
            .store
            .execution_update(&key, Guard::Version(e.version), &claim("s1"))
            .unwrap());
        held.push((key, e.version + 1));
    }
    held.sort();
    let (b, c) = (&held[1], &held[2]);
    assert!(ctx
        .store
        .execution_remove(&b.0, Guard::Version(b.1))
        .unwrap());
    assert!(ctx
        .store
        .execution_update(&c.0, Guard::Version(c.1), &claim("s2"))
        .unwrap());
    let later = now + Duration::seconds(30);
    let answers: Vec<bool> = ctx
        .store
        .execution_heartbeat_batch(&held, later)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(answers, [true, false, false, true]);
    for (key, _) in [&held[0], &held[3]] {
        let e = ctx.store.execution_get(key).unwrap().unwrap();
        assert_eq!(e.last_heartbeat, Some(later), "{key:?}");
    }
    let e = ctx.store.execution_get(&c.0).unwrap().unwrap();
    assert_eq!(
        (e.picked_by.as_deref(), e.last_heartbeat),
        (Some("s2"), Some(now))
    );
}

/// Lock-and-fetch claims a batch in policy order and marks it picked by the claimer.
pub fn lock_and_fetch_claims_in_order(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::LockAndFetch);
    let client = ctx.client();
    let now = Ctx::t0();
    for i in 0..5i16 {
        let at = now - Duration::seconds(i64::from(i));
        client
            .schedule(WORK.instance(format!("e{i}")).priority(i).scheduled_to(at))
            .unwrap();
    }
    // Priority on: highest first (e4, e3, ...); off: oldest first, which is the same here.
    let names = strings(&["work"]);
    let params = |limit| DueParams::new(now, &names, limit);
    let first = ctx
        .store
        .execution_lock_and_fetch_due(&params(3), "s1")
        .unwrap();
    assert_eq!(ids(&first), strings(&["e4", "e3", "e2"]));
    for e in &first {
        assert!(e.picked);
        assert_eq!(
            (e.picked_by.as_deref(), e.version, e.last_heartbeat),
            (Some("s1"), 2, Some(now))
        );
    }
    let rest = ctx
        .store
        .execution_lock_and_fetch_due(&params(10), "s2")
        .unwrap();
    assert_eq!(ids(&rest), strings(&["e1", "e0"]));
    assert!(ctx
        .store
        .execution_lock_and_fetch_due(&params(10), "s3")
        .unwrap()
        .is_empty());
    let stored = ctx
        .store
        .execution_get(&ExecutionKey::new("work", "e0"))
        .unwrap()
        .unwrap();
    assert_eq!(stored.picked_by.as_deref(), Some("s2"));
}

const CLAIMERS: usize = 8;
const EXECUTIONS: usize = 2000;

/// Runs `claim_batch` on 8 threads until it returns `None` (nothing due) and checks that every
/// execution was claimed exactly once.
fn claim_concurrently(
    ctx: &Ctx,
    claim_batch: impl Fn(&dyn Store, &str) -> Option<Vec<ExecutionKey>> + Sync,
) {
    let now = Ctx::t0();
    let instances = (0..EXECUTIONS).map(|i| {
        let at = now - Duration::milliseconds(i as i64);
        WORK.instance(format!("{i:05}"))
            .priority((i % 10) as i16)
            .scheduled_to(at)
    });
    assert_eq!(
        ctx.client().schedule_batch(instances).unwrap(),
        EXECUTIONS as u64
    );
    let per_claimer: Vec<Vec<ExecutionKey>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLAIMERS)
            .map(|c| {
                let claim_batch = &claim_batch;
                let store = &*ctx.store;
                scope.spawn(move || {
                    let me = format!("claimer-{c}");
                    let mut mine = Vec::new();
                    loop {
                        match claim_batch(store, &me) {
                            Some(batch) => mine.extend(batch),
                            None => return mine,
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("claimer thread"))
            .collect()
    });
    let all: Vec<_> = per_claimer.iter().flatten().collect();
    let unique: HashSet<_> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "an execution was claimed twice");
    assert_eq!(all.len(), EXECUTIONS, "every execution was claimed once");
    let busy = per_claimer.iter().filter(|c| !c.is_empty()).count();
    assert!(
        busy >= 2,
        "claims were spread over {busy} claimer(s): not a concurrency test"
    );
}

/// 8 threads selecting candidates and claiming each by version never claim one twice.
pub fn concurrent_fetch_claimers_never_double_claim(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let names = strings(&["work"]);
    claim_concurrently(&ctx, |store, me| {
        let params = DueParams::new(Ctx::t0(), &names, 50);
        let candidates = store.execution_fetch_due(&params).unwrap();
        if candidates.is_empty() {
            return None;
        }
        let claim = Changes {
            pick: Some(PickChange::Claim {
                by: me.into(),
                at: Ctx::t0(),
            }),
            ..Changes::default()
        };
        // Losing a race is fine: the winner holds that row and the loop fetches again.
        let won = candidates
            .into_iter()
            .filter(|c| {
                store
                    .execution_update(&c.key(), Guard::Version(c.version), &claim)
                    .unwrap()
            })
            .map(|c| c.key())
            .collect();
        Some(won)
    });
}

/// 8 threads claiming batches with skip-locked never claim one twice.
pub fn concurrent_lock_and_fetch_claimers_never_double_claim(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    ctx.require(Need::LockAndFetch);
    let names = strings(&["work"]);
    claim_concurrently(&ctx, |store, me| {
        let params = DueParams::new(Ctx::t0(), &names, 25);
        let claimed: Vec<_> = store
            .execution_lock_and_fetch_due(&params, me)
            .unwrap()
            .iter()
            .map(|e| e.key())
            .collect();
        // Skip-locked can return nothing while others hold rows; stop only when none is due.
        if claimed.is_empty() && store.execution_fetch_due(&params).unwrap().is_empty() {
            return None;
        }
        Some(claimed)
    });
}

/// Batched completion writes each outcome only if its execution still has the version the
/// scheduler holds, and says which were written: a removal and a reschedule of held
/// executions go through, a removal of one changed since (revived elsewhere) changes nothing
/// and is reported `false`, on every backend (the batch is retried row by row when its count
/// falls short).
pub fn complete_batch_is_fenced_per_execution(h: &dyn Harness, t: Toggle) {
    let ctx = Ctx::new(h, t);
    let now = Ctx::t0();
    let client = ctx.client();
    for id in ["done", "again", "revived"] {
        client
            .schedule(WORK.instance(id).scheduled_to(now))
            .unwrap();
    }
    let claim = Changes {
        pick: Some(PickChange::Claim {
            by: "s1".into(),
            at: now,
        }),
        ..Changes::default()
    };
    let held: Vec<_> = super::due(&*ctx.store, now, &["work"])
        .into_iter()
        .map(|e| {
            let (key, version) = (e.key(), e.version);
            assert!(ctx
                .store
                .execution_update(&key, Guard::Version(version), &claim)
                .unwrap());
            (key, version + 1)
        })
        .collect();
    let version_of = |id: &str| {
        held.iter()
            .find(|(k, _)| k.task_instance == id)
            .map(|(_, v)| *v)
            .unwrap()
    };
    // Someone else changes "revived" (a revival bumps the version).
    let revived = ExecutionKey::new("work", "revived");
    assert!(ctx
        .store
        .execution_update(&revived, Guard::Any, &Changes::default())
        .unwrap());
    let later = now + Duration::minutes(5);
    let batch = [
        Completion {
            key: ExecutionKey::new("work", "done"),
            version: version_of("done"),
            update: None,
        },
        Completion {
            key: ExecutionKey::new("work", "again"),
            version: version_of("again"),
            update: Some(Changes {
                pick: Some(PickChange::Release),
                execution_time: Some(later),
                last_success: Some(now),
                consecutive_failures: Some(0),
                ..Changes::default()
            }),
        },
        Completion {
            key: revived.clone(),
            version: version_of("revived"),
            update: None,
        },
    ];
    assert_eq!(
        ctx.store.execution_complete_batch(&batch).unwrap(),
        vec![true, true, false]
    );
    let get = |id: &str| {
        ctx.store
            .execution_get(&ExecutionKey::new("work", id))
            .unwrap()
    };
    assert!(get("done").is_none(), "removed");
    let again = get("again").expect("rescheduled, not removed");
    assert_eq!(
        (again.picked, again.execution_time, again.last_success),
        (false, later, Some(now))
    );
    assert_eq!(again.version, version_of("again") + 1);
    assert!(get("revived").is_some(), "fenced out: left alone");
    // All fenced out: nothing written, all reported.
    let stale = [Completion {
        key: revived,
        version: version_of("revived"),
        update: None,
    }];
    assert_eq!(
        ctx.store.execution_complete_batch(&stale).unwrap(),
        vec![false]
    );
}

/// Pausing a task cluster-wide (`0008_paused_tasks`): no scheduler claims its executions from
/// its next poll on, under either polling strategy and through another store (another
/// process), while other tasks run; resuming lets every scheduler claim them again.
pub fn paused_task_is_not_claimed_and_resumed_one_is(h: &dyn Harness, t: Toggle) {
    use super::counting_task;
    use docket_core::store::ListFilter;
    use docket_core::{Clock, PollingStrategy, Scheduler, SchedulerConfig, TaskDescriptor};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    const REPORT: TaskDescriptor = TaskDescriptor::new("report");
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    for i in 0..3 {
        client.schedule(WORK.instance(format!("w{i}"))).unwrap();
        client.schedule(REPORT.instance(format!("r{i}"))).unwrap();
    }
    let (work, work_runs) = counting_task(WORK);
    let (report, report_runs) = counting_task(REPORT);
    let s1 = ctx.build(
        "s1",
        PollingStrategy::lock_and_fetch(),
        vec![work.clone(), report.clone()],
    );
    // Another process: its own pool on the same table, the fetch strategy.
    let other = ctx.space.store(ctx.config(), None);
    let s2 = Scheduler::builder(other.clone())
        .clock(Arc::new(ctx.clock.clone()))
        .config(SchedulerConfig {
            threads: 4,
            polling: PollingStrategy::fetch(),
            scheduler_name: "s2".to_owned(),
            ..SchedulerConfig::default()
        })
        .tasks(vec![work, report])
        .build()
        .expect("scheduler builds");

    assert!(client.pause("work", Some("compat")).unwrap());
    assert!(!client.pause("work", None).unwrap(), "paused already");
    let paused = client.paused().unwrap();
    assert_eq!(paused.len(), 1);
    assert_eq!(
        (paused[0].task_name.as_str(), paused[0].paused_by.as_deref()),
        ("work", Some("compat"))
    );
    assert_eq!(paused[0].paused_at, ctx.clock.now());

    assert_eq!(
        s2.run_due().unwrap(),
        3,
        "the other process runs the reports"
    );
    assert_eq!(s1.run_due().unwrap(), 0, "nothing but paused work is due");
    assert_eq!(s2.run_due().unwrap(), 0);
    assert_eq!(report_runs.load(Ordering::SeqCst), 3);
    assert_eq!(work_runs.load(Ordering::SeqCst), 0, "paused: never claimed");
    let waiting = ctx
        .store
        .execution_list(&ListFilter {
            task_name: Some("work".into()),
            ..ListFilter::default()
        })
        .unwrap();
    assert_eq!(waiting.len(), 3);
    assert!(waiting.iter().all(|e| !e.picked), "left unclaimed");

    assert!(client.resume("work").unwrap());
    assert!(!client.resume("work").unwrap(), "not paused any more");
    assert!(client.paused().unwrap().is_empty());
    // A resumed task is work arriving at levels the planner may have found empty while it was
    // paused: like any new work there, it is seen once the level cache's bound has passed.
    let past_level_cache =
        std::time::Duration::from_millis(docket_core::planner::LEVEL_CACHE_TTL_MS as u64 + 1);
    ctx.clock.advance(past_level_cache);
    assert_eq!(
        s2.run_due().unwrap(),
        3,
        "resumed: the other process claims it again"
    );
    assert_eq!(work_runs.load(Ordering::SeqCst), 3);

    // Pausing every task a scheduler has leaves it nothing to claim (not every task).
    client.schedule(WORK.instance("w9")).unwrap();
    client.schedule(REPORT.instance("r9")).unwrap();
    assert!(client.pause("work", None).unwrap());
    assert!(client.pause("report", None).unwrap());
    assert_eq!(s1.run_due().unwrap(), 0);
    assert!(client.resume("report").unwrap());
    ctx.clock.advance(past_level_cache);
    assert_eq!(
        s1.run_due().unwrap(),
        1,
        "lock-and-fetch claims the resumed task only"
    );
    assert_eq!(work_runs.load(Ordering::SeqCst), 3);
    assert!(client.pause("", None).is_err(), "task names are validated");
}

/// The paused tasks are read in bounded pages (`paused_page`: the first `limit` by name, a
/// `LIMIT` bound in the statement, and the count in all) and by name (`paused_among`, more
/// names than one statement binds), on every backend.
pub fn paused_tasks_are_read_in_bounded_pages(h: &dyn Harness, t: Toggle) {
    use docket_core::store::PausedRead;
    use docket_core::Clock;
    let ctx = Ctx::new(h, t);
    let client = ctx.client();
    assert_eq!(client.paused_page(10).unwrap().total, 0);
    let names: Vec<String> = (0..25).map(|i| format!("gone-{i:03}")).collect();
    // Paused in reverse order: the page is by name, not by insertion.
    for name in names.iter().rev() {
        assert!(ctx
            .store
            .paused_set(name, ctx.clock.now(), Some("compat"))
            .unwrap());
    }
    let page = client.paused_page(10).unwrap();
    let read: Vec<&str> = page.tasks.iter().map(PausedRead::task_name).collect();
    assert_eq!(
        read,
        names[..10].iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(page.total, 25, "the count in all, past the page");
    assert!(
        matches!(&page.tasks[0], PausedRead::Paused(p) if p.paused_by.as_deref() == Some("compat"))
    );
    let all = client.paused_page(100).unwrap();
    assert_eq!((all.tasks.len(), all.total), (25, 25));
    assert!(client.paused_page(0).is_err());
    // 150 names asked (two statements), 13 of them paused, unknown ones left out.
    let mut asked: Vec<String> = (0..150).map(|i| format!("other-{i:03}")).collect();
    asked.extend(names.iter().step_by(2).cloned());
    let among = client.paused_among(&asked).unwrap();
    let found: Vec<&str> = among.iter().map(PausedRead::task_name).collect();
    let expected: Vec<&str> = names.iter().step_by(2).map(String::as_str).collect();
    assert_eq!(found, expected);
    assert!(client.paused_among(&[]).unwrap().is_empty());
}
