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
    let params = |limit| DueParams {
        now,
        task_names: &names,
        limit,
    };
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
        let params = DueParams {
            now: Ctx::t0(),
            task_names: &names,
            limit: 50,
        };
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
        let params = DueParams {
            now: Ctx::t0(),
            task_names: &names,
            limit: 25,
        };
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
