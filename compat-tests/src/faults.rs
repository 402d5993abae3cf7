//! The fault cases of the reliability suite: a paused process, contention, a network partition,
//! a slow link, skewed clocks. Real `reliab_worker` processes against real servers; every run
//! counted. Instantiated per server backend by [`crate::faults_suite!`]; the cases that need a
//! privilege or a tool fail with `NOT RUN:` and the reason when it is missing.

use crate::harness::{not_run, Harness, Space};
use crate::netfault::{Latency, Netns, Relay};
use crate::reliability::{held_by, remaining, report_of, Cluster, Launch, RELIAB, THREADS};
use docket_core::store::ListFilter;
use docket_core::{Execution, SchedulerClient, Store, StoreConfig};
use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A new space migrated with priority on, and a store on it.
fn migrated(h: &dyn Harness) -> (Box<dyn Space>, Arc<dyn Store>) {
    let space = h.space();
    space.migrate(&StoreConfig::with_priority(true), None);
    let store = space.store(StoreConfig::with_priority(true), None);
    (space, store)
}

/// [`migrated`], with one execution scheduled for each of `n` [`ids`].
fn scheduled(h: &dyn Harness, n: usize) -> (Box<dyn Space>, Vec<String>, Arc<dyn Store>) {
    let (space, store) = migrated(h);
    let ids = ids(n);
    schedule_ids(&*space, &ids);
    (space, ids, store)
}

/// Schedules one `reliab` execution per id, due now, priorities 1..=10.
fn schedule_ids(space: &dyn Space, ids: &[String]) {
    let client = SchedulerClient::new(space.store(StoreConfig::with_priority(true), None))
        .expect("schema migrated");
    for chunk in ids.chunks(5_000) {
        let instances = chunk
            .iter()
            .enumerate()
            .map(|(i, id)| RELIAB.instance(id.clone()).priority((i % 10) as i16 + 1));
        client.schedule_batch(instances).expect("batch scheduled");
    }
}

/// Every row of the table (empty while the database is unreachable).
fn rows(store: &dyn Store) -> Vec<Execution> {
    store
        .execution_list(&ListFilter::default())
        .unwrap_or_default()
}

/// What a write to a row would change, one line per row, sorted: compared before and after a
/// fenced process resumes.
fn snapshot(store: &dyn Store) -> Vec<String> {
    let mut lines: Vec<String> = rows(store)
        .into_iter()
        .map(|e| {
            format!(
                "{} v{} picked={} by={:?} at={} failures={} last_failure={:?} \
                 last_success={:?} heartbeat={:?}",
                e.task_instance,
                e.version,
                e.picked,
                e.picked_by,
                e.execution_time,
                e.consecutive_failures,
                e.last_failure,
                e.last_success,
                e.last_heartbeat
            )
        })
        .collect();
    lines.sort();
    lines
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}

/// `N` ids, every tenth `fail-...` (its handler fails; retried 5 minutes later).
fn ids(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i % 10 == 0 {
                format!("fail-{i:06}")
            } else {
                format!("{i:06}")
            }
        })
        .collect()
}

/// Whether the cluster is done with `ids`: every succeeding one removed, every failing one
/// failed and rescheduled (unpicked, due minutes from now).
fn settled(store: &dyn Store, ids: &[String]) -> bool {
    let failing = ids.iter().filter(|i| i.starts_with("fail-")).count();
    let soon = chrono::Utc::now() + chrono::Duration::seconds(60);
    let rows = rows(store);
    rows.len() == failing
        && rows
            .iter()
            .all(|e| e.task_instance.starts_with("fail-") && !e.picked && e.execution_time > soon)
}

/// Every one of `n` executions ran exactly once, and no statement failed (`failed`: the
/// workers' failed-statement lines); `figures` end each message.
pub(crate) fn exactly_once_without_failures(
    runs: &HashMap<String, Vec<String>>,
    n: usize,
    failed: &[&String],
    figures: &str,
) {
    assert_eq!(runs.len(), n, "every execution ran{figures}");
    let twice = duplicates(runs);
    assert!(
        twice.is_empty(),
        "ran more than once{figures}: {:?}",
        &twice[..twice.len().min(5)]
    );
    assert!(
        failed.is_empty(),
        "statements failed{figures}; first: {:?}",
        &failed[..failed.len().min(3)]
    );
}

/// Instances that ran more than once, with their runners.
pub(crate) fn duplicates(runs: &HashMap<String, Vec<String>>) -> Vec<(&String, &Vec<String>)> {
    let mut twice: Vec<_> = runs.iter().filter(|(_, w)| w.len() > 1).collect();
    twice.sort();
    twice
}

/// The instances of `events` lines starting with `kind ` (`lost`, `dead`, `failed`).
pub(crate) fn instances<'a>(events: &'a [String], kind: &str) -> Vec<&'a str> {
    events
        .iter()
        .filter_map(|line| line.strip_prefix(kind)?.strip_prefix(' '))
        .collect()
}

/// Fault 1: one of three scheduler processes is paused (`SIGSTOP`) while it holds more executions
/// than it has threads (some running, some claimed and queued for a worker) and stays paused
/// well past the dead window (heartbeat 1 s x 4 missed). The others revive what it held and run
/// it; then it resumes (`SIGCONT`). Shown: nothing is lost; only executions the paused process
/// held ran twice (once by it before the pause, once by a survivor); every write the resumed
/// process attempted was fenced (the table is exactly as the survivors left it: versions,
/// failure counts, heartbeats, due times); it reported each held execution as
/// `LostExecution`; and it started none of the executions it had queued but not started
/// before the pause.
pub fn paused_process_is_fenced(h: &dyn Harness, exe: &str) {
    const N: usize = 600;
    let (space, ids, store) = scheduled(h, N);
    let started = Instant::now();
    let workers = [
        Launch::new("victim", "lock-and-fetch"),
        Launch::new("worker-1", "fetch"),
        Launch::new("worker-2", "lock-and-fetch"),
    ];
    let mut cluster = Cluster::launch(h.name(), &space.url(), exe, &workers, 1_000, 200, None);
    cluster.wait(
        "the victim to hold more executions than it has threads",
        || held_by(&*store, "victim").len() > THREADS,
    );
    signal(cluster.pid(0), "STOP");
    // Statements the victim had sent before the pause land first.
    std::thread::sleep(Duration::from_millis(500));
    let paused_at = Instant::now();
    let held: BTreeSet<String> = held_by(&*store, "victim").into_iter().collect();
    let ran_before: Vec<String> = cluster.started(0);
    let queued: BTreeSet<&String> = held.iter().filter(|i| !ran_before.contains(i)).collect();
    assert!(
        !held.is_empty(),
        "the paused victim held nothing: the test proved nothing"
    );
    cluster.wait(
        "the survivors to revive and finish everything while the victim is paused",
        || held_by(&*store, "victim").is_empty() && settled(&*store, &ids),
    );
    let paused_for = paused_at.elapsed();
    let before = snapshot(&*store);
    signal(cluster.pid(0), "CONT");
    // Long enough for its running handlers (200 ms) to end, its queue to drain and several
    // heartbeat rounds (1 s) to be sent.
    std::thread::sleep(Duration::from_secs(4));
    cluster.stop(0);
    let ran_after: Vec<String> = cluster.started(0).split_off(ran_before.len());
    let events = cluster.events(0);
    let after = snapshot(&*store);
    let elapsed = started.elapsed();
    let runs = cluster.finish();

    assert_eq!(runs.len(), N, "every execution ran at least once");
    let twice = duplicates(&runs);
    for (instance, workers) in &twice {
        assert!(
            held.contains(*instance),
            "{instance} ran twice but the paused victim did not hold it: {workers:?}"
        );
        let by_survivors = workers.iter().filter(|w| *w != "victim").count();
        assert_eq!(by_survivors, 1, "{instance}: {workers:?}");
    }
    for instance in &held {
        let by_survivors = runs[instance].iter().filter(|w| *w != "victim").count();
        assert_eq!(
            by_survivors, 1,
            "{instance}, held by the paused victim, was not revived and run once by a survivor"
        );
    }
    let diff: Vec<_> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b != a)
        .take(3)
        .collect();
    assert!(
        before.len() == after.len() && diff.is_empty(),
        "the resumed victim changed rows it had lost (fencing failed): {} rows before, {} \
         after; first differences {diff:?}",
        before.len(),
        after.len()
    );
    let lost: BTreeSet<&str> = instances(&events, "lost").into_iter().collect();
    let unnoticed: Vec<_> = held.iter().filter(|i| !lost.contains(i.as_str())).collect();
    let rejected_heartbeats = events
        .iter()
        .filter(|l| l.contains("heartbeat rejected"))
        .count();
    let rerun_started = twice.iter().filter(|(i, _)| !queued.contains(i)).count();
    let figures = format!(
        ", victim paused {:.1} s holding {} ({} queued, not started); {} ran twice: \
         {rerun_started} started by the victim before the pause and run again by a survivor, \
         {} queued ones run by a survivor and again by the resumed victim; after resuming: \
         {} LostExecution events, {} fenced heartbeats logged, {} executions started",
        paused_for.as_secs_f64(),
        held.len(),
        queued.len(),
        twice.len(),
        twice.len() - rerun_started,
        lost.len(),
        rejected_heartbeats,
        ran_after.len()
    );
    assert!(
        unnoticed.is_empty(),
        "the resumed victim never reported these lost executions{figures}: {unnoticed:?}"
    );
    assert!(
        ran_after.is_empty(),
        "the resumed victim started executions it had lost while paused (claimed and queued \
         before the pause, revived and run elsewhere since){figures}: {:?}",
        &ran_after[..ran_after.len().min(10)]
    );
    report_of(h.name(), "paused process", N, 3, elapsed, &figures);
}

/// Lines of `events` that record a failed statement: failed polls, claims, heartbeats and
/// outcome writes (anything the scheduler logged as an error, and the warnings that carry one).
pub(crate) fn failures(events: &[String]) -> Vec<&String> {
    events
        .iter()
        .filter(|l| {
            l.starts_with("poll-failed")
                || l.starts_with("ERROR")
                || (l.starts_with("WARN") && l.contains(" err="))
        })
        .collect()
}

/// Fault 2: normal contention: 4 processes x 10 threads lock-and-fetch 20,000 executions (or
/// `DOCKET_CONTENTION_EXECUTIONS`) (half with a
/// priority, half NULL) with handlers that return at once, as priority-on (or -off)
/// schedulers. Every execution runs once, and no statement fails: no poll, claim, heartbeat or
/// outcome write hits a deadlock, a lock wait timeout or a serialization failure (counted from
/// the schedulers' `PollFailed` events and logged errors).
pub fn contention_without_failures(h: &dyn Harness, exe: &str, priority: bool) {
    // `DOCKET_CONTENTION_EXECUTIONS` runs more (a longer search for rare deadlocks).
    let n: usize = std::env::var("DOCKET_CONTENTION_EXECUTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let (space, store) = migrated(h);
    crate::reliability::schedule(&*space, n);
    let started = Instant::now();
    let workers: Vec<_> = (0..crate::reliability::WORKERS)
        .map(|i| {
            let mut w = Launch::new(&format!("worker-{i}"), "lock-and-fetch");
            if !priority {
                w.env.push(("RELIAB_PRIORITY".into(), "off".into()));
            }
            w
        })
        .collect();
    let mut cluster = Cluster::launch(h.name(), &space.url(), exe, &workers, 15_000, 0, None);
    cluster.wait("all executions to complete", || remaining(&*store) == 0);
    let elapsed = started.elapsed();
    for i in 0..workers.len() {
        cluster.stop(i);
    }
    let events: Vec<String> = (0..workers.len()).flat_map(|i| cluster.events(i)).collect();
    let dead = instances(&events, "dead").len();
    let lost = instances(&events, "lost").len();
    let runs = cluster.finish();
    let failed = failures(&events);
    let deadlocks = failed
        .iter()
        .filter(|l| l.contains("Deadlock") || l.contains("deadlock"))
        .count();
    let lock_waits = failed
        .iter()
        .filter(|l| l.contains("Lock wait timeout"))
        .count();
    let serialization = failed
        .iter()
        .filter(|l| l.contains("serializ") || l.contains("40001"))
        .count();
    let polls = failed
        .iter()
        .filter(|l| l.starts_with("poll-failed"))
        .count();
    let figures = format!(
        ", lock-and-fetch, priority {}; {} failed statements ({polls} polls; {deadlocks} \
         deadlocks, {lock_waits} lock wait timeouts, {serialization} serialization failures); \
         {dead} declared dead, {lost} fenced",
        if priority { "on" } else { "off" },
        failed.len()
    );
    exactly_once_without_failures(&runs, n, &failed, &figures);
    report_of(h.name(), "contention", n, workers.len(), elapsed, &figures);
}

/// A pause holds across processes: two running scheduler processes (lock-and-fetch and
/// fetch, priority on) claim nothing of a paused task from the poll after the pause on, though
/// its executions are due, and run every one of them, once, after it is resumed.
pub fn pause_holds_across_processes(h: &dyn Harness, exe: &str) {
    let (space, store) = migrated(h);
    let client = SchedulerClient::new(store.clone()).expect("schema migrated");
    let started = Instant::now();
    let workers = [
        Launch::new("worker-0", "lock-and-fetch"),
        Launch::new("worker-1", "fetch"),
    ];
    let mut cluster = Cluster::launch(h.name(), &space.url(), exe, &workers, 1_000, 0, None);
    let named = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i:04}")).collect()
    };
    // Both are polling: a first batch runs.
    let warm = named("warm", 20);
    schedule_ids(&*space, &warm);
    cluster.wait("the first batch to run", || remaining(&*store) == 0);
    assert!(client.pause(RELIAB.name(), Some("faults")).expect("paused"));
    let held = named("held", 200);
    schedule_ids(&*space, &held);
    // Several polls of both: the short poll waits at most 1 s; on PostgreSQL the schedule's
    // wake-up makes them poll at once.
    std::thread::sleep(Duration::from_secs(3));
    let ran_while_paused: Vec<String> = (0..workers.len())
        .flat_map(|i| cluster.started(i))
        .filter(|i| i.starts_with("held-"))
        .collect();
    assert!(
        ran_while_paused.is_empty(),
        "{} executions of the paused task ran: {:?}",
        ran_while_paused.len(),
        &ran_while_paused[..ran_while_paused.len().min(5)]
    );
    assert_eq!(
        remaining(&*store),
        held.len() as i64,
        "nothing claimed while paused"
    );
    assert!(client.resume(RELIAB.name()).expect("resumed"));
    cluster.wait("the held executions to run once resumed", || {
        remaining(&*store) == 0
    });
    for i in 0..workers.len() {
        cluster.stop(i);
    }
    let runs = cluster.finish();
    assert_eq!(runs.len(), warm.len() + held.len(), "every execution ran");
    let twice = duplicates(&runs);
    assert!(twice.is_empty(), "ran more than once: {twice:?}");
    let figures = ", paused for 3 s: 0 of 200 due executions claimed; all ran once resumed";
    report_of(
        h.name(),
        "pause",
        runs.len(),
        workers.len(),
        started.elapsed(),
        figures,
    );
}

/// Every `kind` event of every worker of `cluster` (`n` workers), as `(worker, instance)`.
fn all_events(cluster: &Cluster, n: usize, kind: &str) -> Vec<(String, String)> {
    (0..n)
        .flat_map(|i| {
            let events = cluster.events(i);
            instances(&events, kind)
                .into_iter()
                .map(|e| (cluster.name(i).to_owned(), e.to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Fault 3: a network partition between one of three scheduler processes and the database: the
/// process runs in a network namespace of its own, reaching the server through a relay on the
/// host end of a veth pair, and every packet between them is dropped (not refused) for
/// `down`, then let through again. Heartbeats every 3 s, 4 missed: a 12 s dead window.
///
/// Shorter than the dead window (3 s; TCP's retransmission backoff delays recovery by a few
/// seconds more): nothing is lost, nothing runs twice, no execution is declared dead and no
/// write is fenced. Longer (20 s): the others revive what the cut-off process held; nothing is
/// lost; an execution runs twice only if the cut-off process held it (at-least-once), and the
/// outcomes it writes once the link is back are fenced and reported as `LostExecution`.
pub fn partition(h: &dyn Harness, exe: &str, down: Duration) {
    const N: usize = 3_000;
    const HEARTBEAT_MS: u64 = 3_000;
    let dead_window = Duration::from_millis(HEARTBEAT_MS * 4);
    let (space, ids, store) = scheduled(h, N);
    let url = space.url();
    let target = Relay::target_of(&url)
        .unwrap_or_else(|| not_run(h.name(), "the server is not on 127.0.0.1"));
    let ns = Netns::create().unwrap_or_else(|e| not_run(h.name(), e));
    let relay = Relay::start(IpAddr::V4(ns.host_ip), target, None);
    let started = Instant::now();
    let mut victim = Launch::new("victim", "lock-and-fetch");
    victim.wrapper = ns.wrapper();
    victim.url = Some(relay.url_for(&url, target));
    // Handlers of a second: the victim still holds what it claimed when the cut begins (with
    // the others' 20 ms, a loaded machine let it run and write all of it while the cut was
    // being set up, and the case proved nothing: CI, MariaDB, 2026-12-06).
    victim.env.push(("RELIAB_WORK_MS".into(), "1000".into()));
    let workers = [
        victim,
        Launch::new("worker-1", "fetch"),
        Launch::new("worker-2", "lock-and-fetch"),
    ];
    let mut cluster = Cluster::launch(h.name(), &url, exe, &workers, HEARTBEAT_MS, 20, None);
    cluster.wait(
        "the victim to hold more executions than it has threads",
        || held_by(&*store, "victim").len() > THREADS,
    );
    ns.partition();
    std::thread::sleep(Duration::from_millis(300));
    let held: BTreeSet<String> = held_by(&*store, "victim").into_iter().collect();
    std::thread::sleep(down);
    ns.heal();
    cluster.wait("everything to be done after the partition", || {
        held_by(&*store, "victim").is_empty() && settled(&*store, &ids)
    });
    let elapsed = started.elapsed();
    for i in 0..workers.len() {
        cluster.stop(i);
    }
    let dead = all_events(&cluster, workers.len(), "dead");
    let lost = all_events(&cluster, workers.len(), "lost");
    let runs = cluster.finish();
    assert_eq!(runs.len(), N, "every execution ran at least once");
    let twice = duplicates(&runs);
    let figures = format!(
        ", victim cut off {:.0} s (dead window {:.0} s) holding {}; {} revived, {} ran twice, \
         {} outcomes fenced (LostExecution)",
        down.as_secs_f64(),
        dead_window.as_secs_f64(),
        held.len(),
        dead.len(),
        twice.len(),
        lost.len()
    );
    if down < dead_window {
        assert!(
            dead.is_empty() && lost.is_empty() && twice.is_empty(),
            "a partition shorter than the dead window revived, fenced or re-ran executions\
             {figures}: {:?}",
            &twice[..twice.len().min(5)]
        );
    } else {
        assert!(
            !dead.is_empty(),
            "nothing the cut-off victim held was revived: the test proved nothing{figures}"
        );
        // What the victim held: what the table showed 300 ms into the cut, and what the victim
        // reports lost afterwards. On MySQL/MariaDB a claim is a transaction of several
        // statements; one under way at the cut commits only when the link is back (its rows
        // were invisible to the snapshot), and those rows, already past the dead window, are
        // revived and reported lost by the victim, which never starts them.
        let held: BTreeSet<&str> = held
            .iter()
            .map(String::as_str)
            .chain(
                lost.iter()
                    .filter(|(w, _)| w == "victim")
                    .map(|(_, i)| i.as_str()),
            )
            .collect();
        for (instance, workers) in &twice {
            assert!(
                held.contains(instance.as_str()),
                "{instance} ran twice but the cut-off victim did not hold it{figures}: {workers:?}"
            );
            let by_survivors = workers.iter().filter(|w| *w != "victim").count();
            assert_eq!(by_survivors, 1, "{instance}: {workers:?}");
        }
        for (_, instance) in &dead {
            assert!(
                held.contains(instance.as_str()),
                "{instance} was revived but the cut-off victim did not hold it{figures}"
            );
        }
    }
    drop(relay);
    drop(ns);
    report_of(h.name(), "partition", N, workers.len(), elapsed, &figures);
}

/// Fault 4: a slow link: one of two scheduler processes reaches the database through a relay that
/// delays everything it sends by 100 ms +- 50 ms (what `tc netem delay 100ms 50ms` on its link
/// would do; this machine's kernel has no netem, so the relay adds it). Heartbeats every 1 s,
/// 4 missed. Its throughput drops, and nothing else changes: no execution is declared dead,
/// no outcome is fenced, nothing is lost or runs twice.
pub fn slow_link(h: &dyn Harness, exe: &str) {
    const N: usize = 1_500;
    let (space, ids, store) = scheduled(h, N);
    let url = space.url();
    let target = Relay::target_of(&url)
        .unwrap_or_else(|| not_run(h.name(), "the server is not on 127.0.0.1"));
    let latency = Latency {
        base: Duration::from_millis(100),
        jitter: Duration::from_millis(50),
    };
    let relay = Relay::start(IpAddr::V4(Ipv4Addr::LOCALHOST), target, Some(latency));
    let started = Instant::now();
    let mut slow = Launch::new("slow", "lock-and-fetch");
    slow.url = Some(relay.url_for(&url, target));
    // The slow process first, so that it holds executions (claimed and queued) while the fast
    // one competes: its heartbeats then cross the slow link for a whole run.
    let mut slow = Cluster::launch(h.name(), &url, exe, &[slow], 1_000, 100, None);
    slow.wait("the slow process to hold executions", || {
        held_by(&*store, "slow").len() > THREADS
    });
    let mut fast = Cluster::launch(
        h.name(),
        &url,
        exe,
        &[Launch::new("fast", "fetch")],
        1_000,
        100,
        None,
    );
    fast.wait("everything to be done", || settled(&*store, &ids));
    let elapsed = started.elapsed();
    slow.stop(0);
    fast.stop(0);
    let mut dead = all_events(&slow, 1, "dead");
    dead.extend(all_events(&fast, 1, "dead"));
    let mut lost = all_events(&slow, 1, "lost");
    lost.extend(all_events(&fast, 1, "lost"));
    let slow_ran = slow.started(0).len();
    let fast_ran = fast.started(0).len();
    let mut runs = slow.finish();
    for (instance, workers) in fast.finish() {
        runs.entry(instance).or_default().extend(workers);
    }
    let twice = duplicates(&runs);
    let figures = format!(
        ", slow link 100 ms +- 50 ms: the slow process ran {slow_ran}, the fast one {fast_ran}; \
         {} declared dead, {} fenced, {} ran twice",
        dead.len(),
        lost.len(),
        twice.len()
    );
    assert_eq!(runs.len(), N, "every execution ran{figures}");
    assert!(
        dead.is_empty() && lost.is_empty() && twice.is_empty(),
        "the slow link caused false deaths{figures}; first revived: {:?}",
        &dead[..dead.len().min(5)]
    );
    drop(relay);
    report_of(h.name(), "slow link", N, 2, elapsed, &figures);
}

/// Where Debian's `libfaketime` puts the multi-threaded preload library.
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// A worker whose wall clock is `offset` (libfaketime syntax: `+600`, `-1`) seconds off; its
/// monotonic clock (sleeps, timeouts) stays true.
fn skewed(name: &str, polling: &str, offset: &str) -> Launch {
    let mut w = Launch::new(name, polling);
    w.env = vec![
        ("LD_PRELOAD".into(), LIBFAKETIME.into()),
        ("FAKETIME".into(), offset.into()),
        ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
    ];
    w
}

/// Fault 5: skewed clocks. Three scheduler processes: one with a true clock, one `skew` ahead,
/// one `skew` behind (libfaketime). Heartbeats every 1 s, 4 missed: a 4 s dead window. 600
/// executions were due 15 minutes ago (so that every node finds them due) and 50 are due 5
/// minutes from now. Every time docket writes or compares comes from the scheduler's clock
/// corrected by the database server's (`SchedulerConfig::clock_correction`: each node reads
/// the server's time at start and every heartbeat round), so a node's skew, however large,
/// leaves only the sampling error (half a round trip). Shown: no execution is declared dead,
/// nothing runs twice, nothing is lost, none of the later executions runs before its time, and
/// a skew beyond a quarter of the dead window was noticed (each skewed node logged the clock
/// warning). `RELIAB_CLOCK_CORRECTION=off` in the environment runs the workers uncorrected
/// (how the test fails without the fix).
pub fn clock_skew(h: &dyn Harness, exe: &str, skew_secs: u32) {
    const N: usize = 600;
    const LATER: usize = 50;
    if !std::path::Path::new(LIBFAKETIME).is_file() {
        not_run(
            h.name(),
            format!("{LIBFAKETIME} is missing (Debian package libfaketime)"),
        );
    }
    let space = h.space();
    space.migrate(&StoreConfig::with_priority(true), None);
    let client = SchedulerClient::new(space.store(StoreConfig::with_priority(true), None))
        .expect("schema migrated");
    let now = chrono::Utc::now();
    let due = (0..N).map(|i| {
        RELIAB
            .instance(format!("{i:06}"))
            .scheduled_to(now - chrono::Duration::minutes(15))
    });
    client.schedule_batch(due).expect("scheduled");
    let later = (0..LATER).map(|i| {
        RELIAB
            .instance(format!("later-{i:03}"))
            .scheduled_to(now + chrono::Duration::minutes(5))
    });
    client.schedule_batch(later).expect("scheduled");
    let store = space.store(StoreConfig::with_priority(true), None);
    let started = Instant::now();
    let workers = [
        Launch::new("true-clock", "lock-and-fetch"),
        skewed("ahead", "fetch", &format!("+{skew_secs}")),
        skewed("behind", "lock-and-fetch", &format!("-{skew_secs}")),
    ];
    let mut cluster = Cluster::launch(h.name(), &space.url(), exe, &workers, 1_000, 300, None);
    cluster.wait("every due execution to be done", || {
        store
            .execution_list(&ListFilter::default())
            .is_ok_and(|rows| {
                rows.iter()
                    .all(|e| e.task_instance.starts_with("later-") && !e.picked)
            })
    });
    // Two more dead windows: time for a false death to show.
    std::thread::sleep(Duration::from_secs(8));
    let elapsed = started.elapsed();
    for i in 0..workers.len() {
        cluster.stop(i);
    }
    let dead = all_events(&cluster, workers.len(), "dead");
    let mut revivers: Vec<&str> = dead.iter().map(|(w, _)| w.as_str()).collect();
    revivers.dedup();
    // The skewed nodes' warnings that their clock is far from the server's.
    let warned: Vec<usize> = (0..workers.len())
        .map(|i| {
            cluster
                .events(i)
                .iter()
                .filter(|l| l.starts_with("WARN") && l.contains("far from the database server"))
                .count()
        })
        .collect();
    let runs = cluster.finish();
    let early: Vec<_> = runs
        .iter()
        .filter(|(i, _)| i.starts_with("later-"))
        .collect();
    let twice = duplicates(&runs);
    let figures = format!(
        ", clocks {skew_secs} s ahead and behind, dead window 4 s: {} declared dead (by {revivers:?}), \
         {} ran twice, {} of {LATER} due in 5 minutes ran early; clock warnings per node \
         (true, ahead, behind) {warned:?}",
        dead.len(),
        twice.len(),
        early.len()
    );
    assert_eq!(
        runs.len() - early.len(),
        N,
        "every due execution ran{figures}"
    );
    assert!(
        dead.is_empty() && twice.is_empty(),
        "a skewed node declared healthy peers dead{figures}; first: {:?}",
        &dead[..dead.len().min(5)]
    );
    assert!(
        early.is_empty(),
        "a node ran work before its time{figures}: {:?}",
        &early[..early.len().min(5)]
    );
    // A quarter of the 4 s dead window: beyond it each skewed node warns, the true one never.
    let corrected = std::env::var("RELIAB_CLOCK_CORRECTION").map_or(true, |v| v != "off");
    if skew_secs > 1 && corrected {
        assert!(
            warned[0] == 0 && warned[1] > 0 && warned[2] > 0,
            "only the skewed nodes warn about their clocks{figures}"
        );
    }
    report_of(h.name(), "clock skew", N, workers.len(), elapsed, &figures);
}

/// Stops the server for `down`, then starts it again (the server module's `outage`).
pub type Outage = fn(Duration) -> Result<(), crate::servers::NotRun>;

/// Fault 6c: a store's pool opened before a server restart serves statements again once the
/// server is back. Four threads fill the pool with connections; the server is stopped for 2 s
/// and started again; then one read every 100 ms for 6 s. A connection the restart closed may
/// fail the statement that finds it so, once: the pool must drop it, so within as many reads
/// as the pool held connections the reads succeed, and from the first success on every one
/// does.
pub fn pool_recovers_after_restart(h: &dyn Harness, outage: Outage) {
    const FILLERS: usize = 4;
    let _one_outage_at_a_time = crate::reliability::one_outage_at_a_time();
    let (_space, store) = migrated(h);
    let read = || store.execution_list(&ListFilter::default()).map(|_| ());
    std::thread::scope(|s| {
        for _ in 0..FILLERS {
            s.spawn(|| {
                for _ in 0..20 {
                    read().expect("reads before the restart");
                }
            });
        }
    });
    outage(Duration::from_secs(2)).unwrap_or_else(|e| not_run(h.name(), e));
    let mut first_error = None;
    let reads: Vec<bool> = (0..60)
        .map(|_| {
            let result = read();
            if let Err(e) = &result {
                first_error.get_or_insert_with(|| e.to_string());
            }
            std::thread::sleep(Duration::from_millis(100));
            result.is_ok()
        })
        .collect();
    let first_ok = reads.iter().position(|ok| *ok).unwrap_or_else(|| {
        panic!("no read succeeded within 6 s of the restart ({first_error:?}): {reads:?}")
    });
    assert!(
        first_ok <= 12,
        "{first_ok} reads failed after the restart, more than the pool's connections: {reads:?}"
    );
    assert!(
        reads[first_ok..].iter().all(|ok| *ok),
        "a closed connection was handed out again after a read had succeeded: {reads:?}"
    );
    println!(
        "reliability {} pool after a restart: {first_ok} reads failed, then {} of {} succeeded",
        h.name(),
        reads.len() - first_ok,
        reads.len() - first_ok
    );
}

/// Fault 6a: the database server is stopped for 10 s, longer than the dead window (heartbeat
/// 1 s x 4 missed), mid-run, then started again on the same port; three processes (one
/// fetching, two lock-and-fetch), every tenth execution failing (retried 5 minutes later).
/// When the server is back every scheduler finds the others' heartbeats (and its own) older
/// than the dead window, and outcomes that could not be written within half of it were given
/// up: executions held across the outage are revived and may run again. Shown: nothing is
/// lost, and every execution that ran twice had been declared dead (at-least-once; none ran
/// twice without a revival).
pub fn outage_longer_than_dead_window(h: &dyn Harness, exe: &str, outage: Outage) {
    const N: usize = 3_000;
    const DOWN_FOR: Duration = Duration::from_secs(10);
    let _one_outage_at_a_time = crate::reliability::one_outage_at_a_time();
    let (space, ids, store) = scheduled(h, N);
    let started = Instant::now();
    let workers = [
        Launch::new("worker-0", "fetch"),
        Launch::new("worker-1", "lock-and-fetch"),
        Launch::new("worker-2", "lock-and-fetch"),
    ];
    let mut cluster = Cluster::launch(h.name(), &space.url(), exe, &workers, 1_000, 50, None);
    let picked = ListFilter {
        picked: Some(true),
        ..ListFilter::default()
    };
    let mut held = 0;
    cluster.wait("a quarter done, executions held", || {
        held = store.execution_list(&picked).map_or(0, |rows| rows.len());
        remaining(&*store) <= (N as i64) * 3 / 4 && held > 0
    });
    outage(DOWN_FOR).unwrap_or_else(|e| not_run(h.name(), e));
    // A fresh store to watch with: on PostgreSQL the one opened before the restart kept
    // failing with "no connection to the server" (its pool did not replace the connection;
    // docs/RELIABILITY.md, "Found").
    let store = space.store(StoreConfig::with_priority(true), None);
    let mut state = String::new();
    let finished = cluster.wait_within(
        "everything to be done after the outage",
        Duration::from_secs(90),
        || {
            let done = settled(&*store, &ids);
            if !done {
                state = match store.execution_list(&ListFilter::default()) {
                    Ok(rows) => format!(
                        "{} rows, {} picked, first unsettled {:?}",
                        rows.len(),
                        rows.iter().filter(|e| e.picked).count(),
                        rows.iter()
                            .find(|e| !e.task_instance.starts_with("fail-") || e.picked)
                    ),
                    Err(e) => format!("the test's own store fails: {e}"),
                };
            }
            done
        },
    );
    assert!(finished, "not done 90 s after the outage: {state}");
    let elapsed = started.elapsed();
    for i in 0..workers.len() {
        cluster.stop(i);
    }
    let dead: BTreeSet<String> = all_events(&cluster, workers.len(), "dead")
        .into_iter()
        .map(|(_, i)| i)
        .collect();
    let lost = all_events(&cluster, workers.len(), "lost").len();
    let runs = cluster.finish();
    let twice = duplicates(&runs);
    let figures = format!(
        ", server down {} s (dead window 4 s) with {held} executions held; {} revived, {} ran \
         twice, {lost} outcomes fenced",
        DOWN_FOR.as_secs(),
        dead.len(),
        twice.len()
    );
    assert_eq!(runs.len(), N, "every execution ran at least once{figures}");
    for (instance, workers) in &twice {
        assert!(
            dead.contains(*instance),
            "{instance} ran twice without being declared dead{figures}: {workers:?}"
        );
    }
    report_of(
        h.name(),
        "outage > dead window",
        N,
        workers.len(),
        elapsed,
        &figures,
    );
}

/// Fault 6b: the server restarts (down 2 s) while completion batches are pending: each process
/// writes its outcomes only every 500 ms, in one batch. The dead window (heartbeat 8 s x 4) is
/// far longer than the outage. So that the restart meets pending outcomes every time, not by
/// chance, the processes are paused (`SIGSTOP`) a quarter of the way, the server is stopped,
/// and they resume once it is down: the executions they had claimed and queued run, and their
/// outcomes' first write fails. Shown: the schedulers keep the outcomes that could not be
/// written and write them once the server is back (counted from their "could not record
/// outcomes" warnings; at least one batch must have failed, else the restart hit nothing);
/// nothing is lost and nothing runs twice.
pub fn restart_with_completions_in_flight(h: &dyn Harness, exe: &str, outage: Outage) {
    const N: usize = 5_000;
    const DOWN_FOR: Duration = Duration::from_secs(2);
    let _one_outage_at_a_time = crate::reliability::one_outage_at_a_time();
    let (space, store) = migrated(h);
    let server = Relay::target_of(&space.url())
        .unwrap_or_else(|| not_run(h.name(), "the server is not on 127.0.0.1"));
    crate::reliability::schedule(&*space, N);
    let started = Instant::now();
    let workers = [
        Launch::new("worker-0", "fetch"),
        Launch::new("worker-1", "lock-and-fetch"),
        Launch::new("worker-2", "lock-and-fetch"),
    ];
    let mut cluster = Cluster::launch(h.name(), &space.url(), exe, &workers, 8_000, 20, Some(500));
    // Several queued beyond the running ones: a process that had only one or two queued could
    // run them down between this check and its SIGSTOP on a loaded machine (one CI run had
    // nothing left to run while the server was down).
    cluster.wait("a quarter done and executions queued", || {
        remaining(&*store) <= (N as i64) * 3 / 4
            && workers[1..]
                .iter()
                .any(|w| held_by(&*store, &w.name).len() > THREADS + 5)
    });
    for i in 0..workers.len() {
        signal(cluster.pid(i), "STOP");
    }
    let restart = std::thread::spawn(move || outage(DOWN_FOR));
    // Down: the server refuses connections (the store's pool would wait for one instead).
    cluster.wait("the server to be down", || {
        std::net::TcpStream::connect_timeout(&server, Duration::from_millis(200)).is_err()
    });
    let logged = |c: &Cluster| (0..workers.len()).map(|i| c.logged(i)).sum::<usize>();
    let before = logged(&cluster);
    for i in 0..workers.len() {
        signal(cluster.pid(i), "CONT");
    }
    match restart.join() {
        Ok(result) => result.unwrap_or_else(|e| not_run(h.name(), e)),
        Err(panic) => std::panic::resume_unwind(panic),
    }
    // Started while the server was down: their outcomes could only be written after it.
    let ran_while_down = logged(&cluster) - before;
    cluster.wait("everything to be done after the restart", || {
        remaining(&*store) == 0
    });
    let elapsed = started.elapsed();
    for i in 0..workers.len() {
        cluster.stop(i);
    }
    let events: Vec<String> = (0..workers.len()).flat_map(|i| cluster.events(i)).collect();
    let retried = events
        .iter()
        .filter(|l| l.contains("could not record outcomes"))
        .count();
    let given_up = events
        .iter()
        .filter(|l| l.contains("could not record the outcome;"))
        .count();
    let dead = instances(&events, "dead").len();
    let runs = cluster.finish();
    let twice = duplicates(&runs);
    let figures = format!(
        ", server down {} s, outcomes batched every 500 ms: {ran_while_down} executions ran \
         while it was down, {retried} batch writes failed and were retried, {given_up} outcomes \
         given up, {dead} revived, {} ran twice",
        DOWN_FOR.as_secs(),
        twice.len()
    );
    assert_eq!(runs.len(), N, "every execution ran{figures}");
    assert!(
        twice.is_empty() && dead == 0,
        "ran more than once{figures}: {:?}",
        &twice[..twice.len().min(5)]
    );
    // Outcomes crossed the restart: a batch write failed (PostgreSQL: the pool's connections
    // are closed and fail at once), or executions ran while the server was down (MySQL: the
    // pool checks each connection out and waits for a new one, so the write waits instead).
    assert!(
        retried > 0 || ran_while_down > 0,
        "no outcome was pending across the restart: the test proved nothing{figures}"
    );
    report_of(
        h.name(),
        "restart with completions in flight",
        N,
        workers.len(),
        elapsed,
        &figures,
    );
}

/// Instantiates the fault cases for one harness; `$exe` is the worker binary
/// (`env!("CARGO_BIN_EXE_reliab_worker")`); `$_outage` is unused (see
/// [`server_suites!`](crate::server_suites)).
#[macro_export]
macro_rules! faults_suite {
    ($harness:expr, $exe:expr, $_outage:expr) => {
        #[test]
        fn paused_process_is_fenced() {
            $crate::faults::paused_process_is_fenced(&$harness, $exe);
        }
        #[test]
        fn contention_lock_and_fetch_priority_on() {
            $crate::faults::contention_without_failures(&$harness, $exe, true);
        }
        #[test]
        fn contention_lock_and_fetch_priority_off() {
            $crate::faults::contention_without_failures(&$harness, $exe, false);
        }
        #[test]
        fn partition_shorter_than_dead_window() {
            $crate::faults::partition(&$harness, $exe, std::time::Duration::from_secs(3));
        }
        #[test]
        fn partition_longer_than_dead_window() {
            $crate::faults::partition(&$harness, $exe, std::time::Duration::from_secs(20));
        }
        #[test]
        fn pause_holds_across_processes() {
            $crate::faults::pause_holds_across_processes(&$harness, $exe);
        }
        #[test]
        fn clock_skew_within_tolerance() {
            $crate::faults::clock_skew(&$harness, $exe, 1);
        }
        #[test]
        fn clock_skew_of_10_minutes() {
            $crate::faults::clock_skew(&$harness, $exe, 600);
        }
        #[test]
        fn slow_link() {
            $crate::faults::slow_link(&$harness, $exe);
        }
    };
}

/// Instantiates the outage case for one harness; `$outage` is the server module's `outage`
/// function. It stops the test process's server, so keep it out of test binaries whose other
/// tests use that server (`tests/outage.rs`).
#[macro_export]
macro_rules! outage_suite {
    ($harness:expr, $exe:expr, $outage:expr) => {
        #[test]
        fn outage_is_survived() {
            $crate::reliability::outage_is_survived(&$harness, $exe, $outage);
        }
        #[test]
        fn pool_recovers_after_restart() {
            $crate::faults::pool_recovers_after_restart(&$harness, $outage);
        }
        #[test]
        fn outage_longer_than_dead_window() {
            $crate::faults::outage_longer_than_dead_window(&$harness, $exe, $outage);
        }
        #[test]
        fn restart_with_completions_in_flight() {
            $crate::faults::restart_with_completions_in_flight(&$harness, $exe, $outage);
        }
    };
}
