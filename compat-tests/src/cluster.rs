//! The cluster suite (docs/RELIABILITY.md, "Past one database server"): scheduler processes
//! (the `reliab_worker` binary) on the nodes of a three-node MariaDB Galera cluster and on a
//! PostgreSQL primary with a standby behind a libpq multi-host URL, every run counted.
//!
//! The clusters come from `scripts/cluster.sh` (Debian's packages, loopback ports), which
//! prints the variables read here: `DOCKET_GALERA_URLS` (three `mysql://` URLs, one per node),
//! `DOCKET_PG_HA_URL` (`postgres://h1:p1,h2:p2/db?target_session_attrs=read-write`),
//! `DOCKET_PG_HA_SYNC` (`on`: synchronous standby) and `DOCKET_CLUSTER_CTL` (the script, whose
//! `kill`, `restart` and `promote` the cases call). When they are unset the test process runs
//! `scripts/cluster.sh start` itself (as root; it installs what is missing) and a detached
//! watchdog runs `scripts/cluster.sh stop` once the process has gone. If that fails too, every
//! case fails with `NOT RUN:` and the reason; a missing cluster is never a pass.

use crate::backends::{connect, unique_name};
use crate::faults::{duplicates, failures, instances};
use crate::reliability::{remaining, report_of, Cluster, Launch, RELIAB};
use diesel::connection::SimpleConnection;
use diesel::{Connection, MysqlConnection, PgConnection, RunQueryDsl};
use docket_core::{SchedulerClient, Store, StoreConfig};
use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The Galera nodes' URLs, comma-separated (no database).
pub const GALERA_ENV: &str = "DOCKET_GALERA_URLS";
/// The PostgreSQL multi-host URL (database `postgres`).
pub const PG_HA_ENV: &str = "DOCKET_PG_HA_URL";
/// `on` when the PostgreSQL standby is synchronous.
pub const PG_HA_SYNC_ENV: &str = "DOCKET_PG_HA_SYNC";
/// The cluster script (`kill NODE`, `restart NODE`, `promote`).
pub const CTL_ENV: &str = "DOCKET_CLUSTER_CTL";

/// How to get the clusters, for the `NOT RUN` message.
const HOW: &str = "start the clusters with `scripts/cluster.sh run cargo test -p \
                   docket-compat-tests --test cluster` (or `scripts/cluster.sh start` and \
                   `eval \"$(scripts/cluster.sh env)\"`)";

/// The value of `var`: from the environment, else from the clusters this process started
/// ([`started`]); or a `NOT RUN` failure saying why there is none.
fn required(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => v,
        _ => match started() {
            Ok(vars) => vars
                .get(var)
                .cloned()
                .unwrap_or_else(|| panic!("NOT RUN: {var}: scripts/cluster.sh env has none")),
            Err(e) => {
                panic!("NOT RUN: {var} is unset, and starting the clusters failed: {e}; {HOW}")
            }
        },
    }
}

/// The cluster script of this checkout.
fn script() -> String {
    format!("{}/../scripts/cluster.sh", env!("CARGO_MANIFEST_DIR"))
}

/// Starts the clusters once per process (`scripts/cluster.sh start`), with a detached
/// watchdog that stops them when this process is gone; the variables `scripts/cluster.sh env`
/// prints.
fn started() -> Result<&'static HashMap<String, String>, String> {
    static STARTED: OnceLock<Result<HashMap<String, String>, String>> = OnceLock::new();
    STARTED
        .get_or_init(|| {
            let script = script();
            let run = |args: &[&str]| {
                let out = Command::new(&script)
                    .args(args)
                    .output()
                    .map_err(|e| format!("cannot run {script}: {e}"))?;
                if !out.status.success() {
                    let err = String::from_utf8_lossy(&out.stderr);
                    let lines: Vec<&str> = err.lines().collect();
                    return Err(format!(
                        "{script} {args:?}: {}",
                        lines[lines.len().saturating_sub(8)..].join(" | ")
                    ));
                }
                Ok(String::from_utf8_lossy(&out.stdout).into_owned())
            };
            let me = std::process::id().to_string();
            run(&["start", "--owner", &me])?;
            // Stops them once this process is gone, unless a later run has taken them over.
            let watchdog = format!(
                "while kill -0 {me} 2>/dev/null; do sleep 1; done; exec '{script}' stop --if-owner {me}"
            );
            Command::new("sh")
                .args(["-c", &watchdog])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .map_err(|e| format!("cannot start the clusters' watchdog: {e}"))?;
            Ok(run(&["env"])?
                .lines()
                .filter_map(|line| {
                    let (k, v) = line.strip_prefix("export ")?.split_once('=')?;
                    Some((k.to_owned(), v.trim_matches('\'').to_owned()))
                })
                .collect())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// One case at a time: the clusters are shared, and a case kills their nodes.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the cluster script with `args` (kill, restart, promote), failing the case if it fails.
fn ctl(args: &[&str]) {
    ctl_with(args, &[]);
}

/// [`ctl`] with extra environment variables.
fn ctl_with(args: &[&str], env: &[(&str, &str)]) {
    let script = required(CTL_ENV);
    let out = Command::new(&script)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `url` with its database replaced by `database` (query kept).
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let start = base.find("://").map_or(0, |i| i + 3);
    let end = base[start..].find('/').map_or(base.len(), |i| start + i);
    let mut out = format!("{}/{database}", &base[..end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// A database of its own on the Galera cluster (created through node 1; DDL is replicated
/// to every node before it returns), dropped at the end.
struct GaleraDb {
    nodes: Vec<String>,
    database: String,
}

impl GaleraDb {
    fn new() -> Self {
        let nodes: Vec<String> = required(GALERA_ENV)
            .split(',')
            .map(|u| u.trim().to_owned())
            .collect();
        assert_eq!(nodes.len(), 3, "{GALERA_ENV} names three nodes: {nodes:?}");
        let database = unique_name();
        let mut conn = MysqlConnection::establish(&nodes[0])
            .unwrap_or_else(|e| panic!("NOT RUN: cannot connect to {}: {e}; {HOW}", nodes[0]));
        conn.batch_execute(&format!("CREATE DATABASE `{database}`"))
            .unwrap_or_else(|e| panic!("create database {database}: {e}"));
        Self { nodes, database }
    }

    /// Node `i`'s URL of the database.
    fn url(&self, i: usize) -> String {
        with_database(&self.nodes[i], &self.database)
    }

    /// Node `i`'s URL of the database naming the other nodes after it
    /// (`mysql://root@h3,h1,h2/db`): a store on it opens each new connection on the first of
    /// them that answers, so it leaves a node that is down or cut off by itself.
    fn multi_host_url(&self, i: usize) -> String {
        let host = |k: usize| {
            let url = &self.nodes[(i + k) % 3];
            let start = url
                .rfind('@')
                .or(url.find("://").map(|s| s + 2))
                .map_or(0, |s| s + 1);
            let end = url[start..]
                .find(['/', '?'])
                .map_or(url.len(), |e| start + e);
            url[start..end].to_owned()
        };
        let own = self.url(i);
        own.replacen(&host(0), &[host(0), host(1), host(2)].join(","), 1)
    }

    /// Certification conflicts so far, summed over the nodes: transactions that failed
    /// certification at commit, and local transactions aborted by a replicated one
    /// (`wsrep_local_cert_failures + wsrep_local_bf_aborts`; each conflict is counted on the
    /// node whose transaction lost).
    fn conflicts(&self) -> i64 {
        #[derive(diesel::QueryableByName)]
        struct Value {
            #[diesel(sql_type = diesel::sql_types::Text)]
            v: String,
        }
        let mut total = 0;
        for node in &self.nodes {
            let mut conn = MysqlConnection::establish(node)
                .unwrap_or_else(|e| panic!("cannot connect to {node}: {e}"));
            for name in ["WSREP_LOCAL_CERT_FAILURES", "WSREP_LOCAL_BF_ABORTS"] {
                let rows: Vec<Value> = diesel::sql_query(
                    "SELECT VARIABLE_VALUE AS v FROM information_schema.GLOBAL_STATUS \
                     WHERE VARIABLE_NAME = ?",
                )
                .bind::<diesel::sql_types::Text, _>(name)
                .load(&mut conn)
                .unwrap_or_else(|e| panic!("{name} on {node}: {e}"));
                total += rows
                    .first()
                    .and_then(|r| r.v.parse::<i64>().ok())
                    .unwrap_or_else(|| panic!("{name} on {node}: no number"));
            }
        }
        total
    }
}

impl Drop for GaleraDb {
    fn drop(&mut self) {
        if let Ok(mut conn) = MysqlConnection::establish(&self.nodes[0]) {
            let _ = conn.batch_execute(&format!("DROP DATABASE IF EXISTS `{}`", self.database));
        }
    }
}

/// Schedules `n` `reliab` executions through `store`: even ones with priorities 1..=10, odd
/// ones with none (NULL), in batches.
fn schedule(url: &str, backend: &str, n: usize) {
    let store = |priority| connect(backend, url, StoreConfig::with_priority(priority));
    crate::reliability::schedule_through(
        [store(true).expect("store"), store(false).expect("store")],
        n,
        2_000,
    );
}

/// A migrated store on `url`.
fn migrated(backend: &str, url: &str) -> Arc<dyn Store> {
    let store = connect(backend, url, StoreConfig::with_priority(true))
        .unwrap_or_else(|e| panic!("cannot open a store on {url}: {e}"));
    store.migrate(None).expect("migrations apply");
    store
}

/// What one Galera run measured.
#[derive(Debug, Clone, Copy)]
pub struct GaleraRun {
    /// Executions run.
    pub executions: usize,
    /// Seconds from the workers' start to the last execution's removal.
    pub seconds: f64,
    /// Certification conflicts the servers counted during the run.
    pub conflicts: i64,
}

impl GaleraRun {
    /// Executions per second.
    pub fn rate(&self) -> f64 {
        self.executions as f64 / self.seconds
    }

    /// Conflicts per 1,000 executions.
    pub fn conflicts_per_1000(&self) -> f64 {
        self.conflicts as f64 * 1000.0 / self.executions as f64
    }
}

/// One scheduler process per node (`spread`; otherwise all three on node 1), each polling
/// with `polling` (`fetch`, `lock-and-fetch`), priority on or off, `n` executions with
/// handlers that return at once. Asserted: every execution ran exactly once, none was
/// declared dead or fenced, and no poll, claim, heartbeat or outcome write failed (the
/// certification conflicts of a multi-primary cluster are retried as contention, never
/// surfaced). Returns the figures.
pub fn galera_run(exe: &str, polling: &str, priority: bool, n: usize, spread: bool) -> GaleraRun {
    let db = GaleraDb::new();
    let store = migrated("mysql", &db.url(0));
    schedule(&db.url(0), "mysql", n);
    let workers: Vec<_> = (0..3)
        .map(|i| {
            let mut w = Launch::new(&format!("node{}-{polling}", i + 1), polling);
            w.url = Some(db.url(if spread { i } else { 0 }));
            if !priority {
                w.env.push(("RELIAB_PRIORITY".into(), "off".into()));
            }
            w
        })
        .collect();
    let conflicts_before = db.conflicts();
    let started = Instant::now();
    let mut cluster = Cluster::launch("mysql", &db.url(0), exe, &workers, 15_000, 0, None);
    cluster.wait("all executions to complete", || remaining(&*store) == 0);
    let elapsed = started.elapsed();
    for i in 0..workers.len() {
        cluster.stop(i);
    }
    let conflicts = db.conflicts() - conflicts_before;
    let events: Vec<String> = (0..workers.len()).flat_map(|i| cluster.events(i)).collect();
    let dead = instances(&events, "dead").len();
    let lost = instances(&events, "lost").len();
    let runs = cluster.finish();
    let failed = failures(&events);
    let run = GaleraRun {
        executions: n,
        seconds: elapsed.as_secs_f64(),
        conflicts,
    };
    let figures = format!(
        ", {polling}, priority {}, {}; {conflicts} certification conflicts ({:.1} per 1,000); \
         {} failed statements; {dead} declared dead, {lost} fenced",
        if priority { "on" } else { "off" },
        if spread {
            "one process per node"
        } else {
            "every process on node 1"
        },
        run.conflicts_per_1000(),
        failed.len(),
    );
    crate::faults::exactly_once_without_failures(&runs, n, &failed, &figures);
    assert_eq!(
        (dead, lost),
        (0, 0),
        "nothing declared dead or fenced{figures}"
    );
    report_of("galera", "cluster", n, workers.len(), elapsed, &figures);
    run
}

/// Executions per case (`DOCKET_CLUSTER_EXECUTIONS`, default 3,000).
pub fn executions() -> usize {
    std::env::var("DOCKET_CLUSTER_EXECUTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000)
}

/// [`galera_run`] with one process per node.
pub fn galera_exactly_once(exe: &str, polling: &str, priority: bool) {
    let _one = one_at_a_time();
    galera_run(exe, polling, priority, executions(), true);
}

/// Throughput with every write on one node against writes spread over three, side by side
/// (lock-and-fetch, priority on, the same executions), both exactly once; the figures are
/// printed (`galera one node vs three: ...`) for docs/RELIABILITY.md.
pub fn galera_one_node_against_three(exe: &str) {
    let _one = one_at_a_time();
    let n = executions();
    let one = galera_run(exe, "lock-and-fetch", true, n, false);
    let three = galera_run(exe, "lock-and-fetch", true, n, true);
    eprintln!(
        "galera one node vs three (lock-and-fetch, priority on, {n} executions): \
         one node {:.0} executions/s, {:.1} conflicts per 1,000; three nodes {:.0} \
         executions/s, {:.1} conflicts per 1,000",
        one.rate(),
        one.conflicts_per_1000(),
        three.rate(),
        three.conflicts_per_1000()
    );
    assert_eq!(
        one.conflicts, 0,
        "writes on one node meet no certification conflict (row locks see each other)"
    );
}

/// Executions of the node-3 fault cases, and how many more are scheduled after the fault.
const N: usize = 3_000;
const MORE: usize = 600;
/// Node 3's scheduler, the one whose node the fault cases take away.
const VICTIM: usize = 2;

/// The start of the node-3 fault cases: a Galera cluster, one lock-and-fetch scheduler per
/// node running [`N`] executions of 50 ms (dead window 4 s: 1 s x 4), returned once a quarter
/// ran while node 3's scheduler holds executions.
struct NodeThreeRun {
    db: GaleraDb,
    store: Arc<dyn Store>,
    cluster: Cluster,
    started: Instant,
}

impl NodeThreeRun {
    /// Starts the run with scheduler `i` on `url(&db, i)`, heart-beating every `heartbeat_ms`.
    fn start(exe: &str, url: fn(&GaleraDb, usize) -> String, heartbeat_ms: u64) -> Self {
        let db = GaleraDb::new();
        let store = migrated("mysql", &db.url(0));
        schedule(&db.url(0), "mysql", N);
        let workers: Vec<_> = (0..3)
            .map(|i| {
                let mut w = Launch::new(&format!("node{}", i + 1), "lock-and-fetch");
                w.url = Some(url(&db, i));
                w
            })
            .collect();
        let started = Instant::now();
        let cluster = Cluster::launch("mysql", &db.url(0), exe, &workers, heartbeat_ms, 50, None);
        until("a quarter to run while node 3 holds executions", || {
            (0..3).map(|i| cluster.logged(i)).sum::<usize>() >= N / 4
                && !crate::reliability::held_by(&*store, "node3").is_empty()
        });
        Self {
            db,
            store,
            cluster,
            started,
        }
    }

    /// [`NodeThreeRun::start`] on each node's own URL, then `ctl <fault> g3`: the run, when
    /// the fault hit, and what node 3 held then (read through node 1; nothing is revived
    /// before the dead window).
    fn start_then(exe: &str, fault: &str) -> (Self, Instant, Vec<String>) {
        let run = Self::start(exe, GaleraDb::url, 1_000);
        ctl(&[fault, "g3"]);
        let at = Instant::now();
        let held = crate::reliability::held_by(&*run.store, "node3");
        (run, at, held)
    }

    /// Schedules [`MORE`] once node 3 is back ([`schedule_more`]) and stops the schedulers:
    /// how many of those node 3's scheduler ran, how long the whole run took, how many
    /// executions were declared dead, and who ran each execution.
    fn more_then_finish(mut self) -> (usize, Duration, usize, HashMap<String, Vec<String>>) {
        let node3_after = schedule_more(&self.db, &*self.store, &mut self.cluster);
        let elapsed = self.started.elapsed();
        let events: Vec<String> = (0..3).flat_map(|i| self.cluster.events(i)).collect();
        let dead = instances(&events, "dead").len();
        (node3_after, elapsed, dead, self.cluster.finish())
    }
}

/// Schedules [`MORE`] executions once node 3 is back and waits for them; returns how many of
/// them node 3's scheduler ran.
fn schedule_more(db: &GaleraDb, store: &dyn Store, cluster: &mut Cluster) -> usize {
    let node3_before = cluster.logged(VICTIM);
    let client = SchedulerClient::new(
        connect("mysql", &db.url(0), StoreConfig::with_priority(true)).expect("store"),
    )
    .expect("schema migrated");
    client
        .schedule_batch((0..MORE).map(|i| RELIAB.instance(format!("after-{i:04}"))))
        .expect("scheduled after node 3 came back");
    cluster.wait("the executions scheduled after node 3 came back", || {
        remaining(store) == 0
    });
    cluster.logged(VICTIM) - node3_before
}

/// Every execution ran, and one ran twice only if node 3's scheduler had started (`started`)
/// or held (`held`) it at the fault, and at most twice.
fn reruns_only_of_node_three(
    runs: &std::collections::HashMap<String, Vec<String>>,
    twice: &[(&String, &Vec<String>)],
    started: &std::collections::HashSet<String>,
    held: &[String],
    figures: &str,
) {
    assert_eq!(runs.len(), N + MORE, "every execution ran{figures}");
    for (id, by) in twice {
        assert!(
            by.len() == 2
                && (started.contains(*id) || held.contains(*id))
                && by.iter().any(|w| w == "node3"),
            "{id} ran {by:?}: only what node 3 had started or held may run again, once{figures}"
        );
    }
}

/// A Galera node killed (`kill -9` of its server) mid-run and brought back: one scheduler
/// process per node, 3,000 executions of 50 ms, dead window 4 s (1 s x 4). Once a quarter
/// ran and node 3's scheduler holds executions, node 3's server is killed; its scheduler can
/// reach no database, so the others revive what it held after the dead window and finish
/// everything. Then node 3 is restarted (it rejoins by state transfer) and, once node 3's
/// scheduler writes again, 600 more executions are scheduled: node 3's scheduler, still running, takes part again. Asserted:
/// nothing lost; an execution ran twice only if node 3's scheduler had started or held it at
/// the kill (it runs what it had queued, and cannot write the outcome: at-least-once), never
/// more than twice; node 3's scheduler ran some of the executions scheduled after its node
/// came back.
pub fn galera_node_killed_and_back(exe: &str) {
    let _one = one_at_a_time();
    let (mut run, killed, held) = NodeThreeRun::start_then(exe, "kill");
    // What it started up to the kill (it goes on starting what it had queued).
    let before_kill: std::collections::HashSet<String> =
        run.cluster.started(VICTIM).into_iter().collect();
    let store = Arc::clone(&run.store);
    run.cluster.wait("the others to finish everything", || {
        remaining(&*store) == 0
    });
    let finished = killed.elapsed();
    ctl(&["restart", "g3"]);
    let rejoined = killed.elapsed();
    // Its scheduler's statements wait in the pool for a connection while the node is down, and
    // come back once the pool has one again: the first sign is the outcomes it could not write,
    // now fenced (its executions were revived meanwhile) and reported as lost.
    until("node 3's scheduler to write again", || {
        run.cluster
            .events(VICTIM)
            .iter()
            .any(|l| l.starts_with("lost "))
    });
    let back = killed.elapsed();
    let (node3_after, elapsed, dead, runs) = run.more_then_finish();
    let twice = duplicates(&runs);
    let figures = format!(
        "; node 3 held {} at the kill, had started {}; the others finished {:.1} s after the \
         kill; node 3 Synced again {:.1} s after it, its scheduler writing again after {:.1} s; \
         {dead} declared dead, {} ran twice; node 3's scheduler ran {node3_after} of the {MORE} \
         scheduled after",
        held.len(),
        before_kill.len(),
        finished.as_secs_f64(),
        rejoined.as_secs_f64(),
        back.as_secs_f64(),
        twice.len()
    );
    reruns_only_of_node_three(&runs, &twice, &before_kill, &held, &figures);
    assert!(dead > 0, "the kill hit executions node 3 held{figures}");
    assert!(
        node3_after > 0,
        "node 3's scheduler took part again after its node came back{figures}"
    );
    report_of("galera", "node killed", N + MORE, 3, elapsed, &figures);
}

/// How node 3 goes away in [`galera_node_lost_multi_host`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeFault {
    /// `kill -9` of its server (restarted at the end).
    Killed,
    /// Cut off into a non-primary component (`gmcast.isolate`; rejoined at the end).
    CutOff,
}

/// The kill of [`galera_node_killed_and_back`], or the cut of [`galera_node_cut_off`], with
/// every scheduler on a multi-host URL, its own node first (`mysql://root@node3,node1,node2/db`,
/// docs/RELIABILITY.md's recommendation for Galera without a proxy): node 3's scheduler opens
/// its next connections on node 1 (a killed node refuses them; a cut-off one fails the
/// `wsrep_ready` check once it has left the primary component, 3 to 6 s after the cut),
/// writes there the outcomes it could not write on node 3, and keeps its heartbeats. Heartbeat
/// 2 s x 4: a dead window longer than a cut node takes to leave the primary component, during
/// which its writes wait. Asserted: every execution ran exactly once (none twice, none lost),
/// nobody was declared dead, nothing fenced, and node 3's scheduler went on running executions
/// while its node was away.
pub fn galera_node_lost_multi_host(exe: &str, fault: NodeFault) {
    let _one = one_at_a_time();
    // `_db` keeps the database until the end (`..` would drop it here).
    let NodeThreeRun {
        db: _db,
        store,
        mut cluster,
        started,
    } = NodeThreeRun::start(exe, GaleraDb::multi_host_url, 2_000);
    let (away, back, what) = match fault {
        NodeFault::Killed => ("kill", "restart", "node killed, multi-host URL"),
        NodeFault::CutOff => ("isolate", "rejoin", "node cut off, multi-host URL"),
    };
    ctl(&[away, "g3"]);
    let at = Instant::now();
    let node3_at_fault = cluster.logged(VICTIM);
    cluster.wait("every execution to finish", || remaining(&*store) == 0);
    let finished = at.elapsed();
    let node3_during = cluster.logged(VICTIM) - node3_at_fault;
    let elapsed = started.elapsed();
    ctl(&[back, "g3"]);
    let events: Vec<String> = (0..3).flat_map(|i| cluster.events(i)).collect();
    let dead = instances(&events, "dead").len();
    let lost = instances(&events, "lost").len();
    let runs = cluster.finish();
    let twice = duplicates(&runs);
    let figures = format!(
        "; everything finished {:.1} s after the fault; node 3's scheduler ran {node3_during} \
         while its node was away; {dead} declared dead, {lost} fenced, {} ran twice",
        finished.as_secs_f64(),
        twice.len()
    );
    assert_eq!(runs.len(), N, "every execution ran{figures}");
    assert!(
        twice.is_empty(),
        "none ran twice{figures}: {:?}",
        &twice[..twice.len().min(5)]
    );
    assert_eq!(
        (dead, lost),
        (0, 0),
        "nothing revived, nothing fenced{figures}"
    );
    assert!(
        node3_during > 0,
        "node 3's scheduler moved to another node{figures}"
    );
    report_of("galera", what, N, 3, elapsed, &figures);
}

/// A Galera node cut off into a non-primary component (`gmcast.isolate`) for 10 s, longer
/// than the dead window (4 s: 1 s x 4), while one lock-and-fetch scheduler per node runs 3,000
/// executions of 50 ms. Node 3's server stays up but refuses every statement (1047, "WSREP has
/// not yet prepared node for application use"): its scheduler's polls fail and are retried
/// after the polling interval, its heartbeats fail, and the others revive what it held. Then
/// node 3 rejoins (Synced again) and 600 more executions are scheduled. Asserted: nothing
/// lost; an execution ran twice only if node 3's scheduler had started or held it at the cut,
/// and at most twice; node 3's scheduler failed polls while cut off (it noticed) and ran some
/// of the executions scheduled after it rejoined (it resumed by itself).
pub fn galera_node_cut_off(exe: &str) {
    let _one = one_at_a_time();
    let (mut run, cut, held) = NodeThreeRun::start_then(exe, "isolate");
    std::thread::sleep(Duration::from_secs(10));
    // What it started, including what it had queued and started while cut off.
    let before_cut: std::collections::HashSet<String> =
        run.cluster.started(VICTIM).into_iter().collect();
    let failed_polls = run
        .cluster
        .events(VICTIM)
        .iter()
        .filter(|l| l.starts_with("poll-failed"))
        .count();
    ctl(&["rejoin", "g3"]);
    let rejoined = cut.elapsed();
    let store = Arc::clone(&run.store);
    run.cluster.wait("the others to finish everything", || {
        remaining(&*store) == 0
    });
    let (node3_after, elapsed, dead, runs) = run.more_then_finish();
    let twice = duplicates(&runs);
    let figures = format!(
        "; node 3 held {} at the cut, had started {}; {failed_polls} of its polls failed while \
         cut off; Synced again {:.1} s after the cut; {dead} declared dead, {} ran twice; node \
         3's scheduler ran {node3_after} of the {MORE} scheduled after",
        held.len(),
        before_cut.len(),
        rejoined.as_secs_f64(),
        twice.len()
    );
    reruns_only_of_node_three(&runs, &twice, &before_cut, &held, &figures);
    assert!(
        failed_polls > 0,
        "node 3's scheduler noticed the cut{figures}"
    );
    assert!(
        node3_after > 0,
        "node 3's scheduler resumed after its node rejoined{figures}"
    );
    report_of("galera", "node cut off", N + MORE, 3, elapsed, &figures);
}

/// The work queue across nodes: six workers, two on each Galera node, each with a queue on
/// its own node's store, race for 150 items of at most 2 assignments (`next_for`, then
/// `submit`). Asserted: `next_for` and `submit` never fail (their certification conflicts are
/// retried), no item is held by two workers at once (every item handed out was held by the
/// worker it was handed to, one at a time as recorded), and after the race every item has
/// exactly its 2 assignments, by two different workers, both submitted: never more than
/// `max_assignments`, whichever nodes the claims committed on.
pub fn galera_queue_across_nodes() {
    use docket_core::queue::{AssignmentStatus, Batch, QueueConfig, Record};
    use docket_core::{ExecutionKey, WorkQueue};
    use std::collections::HashSet;
    const TASK: &str = "review";
    const N: usize = 150;
    let _one = one_at_a_time();
    let db = GaleraDb::new();
    migrated("mysql", &db.url(0));
    let queues: Vec<WorkQueue> = (0..3)
        .map(|i| {
            let store = connect("mysql", &db.url(i), StoreConfig::with_priority(true))
                .unwrap_or_else(|e| panic!("a store on node {}: {e}", i + 1));
            WorkQueue::new(store, QueueConfig::default()).expect("work-queue schema migrated")
        })
        .collect();
    let ids: Vec<String> = (0..N).map(|i| format!("item-{i:03}")).collect();
    queues[0]
        .enqueue(&Batch {
            task_type: TASK.to_owned(),
            max_assignments: 2,
            records: ids.iter().map(Record::new).collect(),
        })
        .expect("enqueued");
    let conflicts_before = db.conflicts();
    let started = Instant::now();
    let holds = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for w in 0..6 {
            let (q, holds, errors) = (&queues[w % 3], &holds, &errors);
            s.spawn(move || {
                let worker = format!("node{}-w{w}", w % 3 + 1);
                loop {
                    let item = match q.next_for(&worker, TASK) {
                        Ok(Some(item)) => item,
                        Ok(None) => break,
                        Err(e) => {
                            errors
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push(format!("next_for: {e}"));
                            break;
                        }
                    };
                    let ok = item.held_by.as_deref() == Some(worker.as_str())
                        && item.assignments <= item.max_assignments;
                    holds.lock().unwrap_or_else(PoisonError::into_inner).push((
                        item.key.task_instance.clone(),
                        worker.clone(),
                        ok,
                    ));
                    if let Err(e) = q.submit(&worker, &item.key) {
                        errors
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(format!("submit: {e}"));
                        break;
                    }
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let errors = errors.into_inner().unwrap_or_else(PoisonError::into_inner);
    assert!(
        errors.is_empty(),
        "the queue failed under certification conflicts: {errors:?}"
    );
    let mut claims = holds.into_inner().unwrap_or_else(PoisonError::into_inner);
    assert!(
        claims.iter().all(|(_, _, ok)| *ok),
        "an item was handed out not held by its worker, or past its maximum"
    );
    // A worker stops at its first None, which can come while another still holds the last item
    // it could take: drain what is left, worker by worker.
    loop {
        let before = claims.len();
        for w in 0..6 {
            let worker = format!("node{}-w{w}", w % 3 + 1);
            let q = &queues[w % 3];
            while let Some(item) = q.next_for(&worker, TASK).expect("next_for") {
                claims.push((item.key.task_instance.clone(), worker.clone(), true));
                q.submit(&worker, &item.key).expect("submit");
            }
        }
        if claims.len() == before {
            break;
        }
    }
    let conflicts = db.conflicts() - conflicts_before;
    let mut per_item: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (id, worker, _) in &claims {
        assert!(
            per_item.entry(id).or_default().insert(worker),
            "{worker} took {id} twice"
        );
    }
    assert_eq!(claims.len(), 2 * N, "every item taken exactly twice");
    for id in &ids {
        let key = ExecutionKey::new(TASK, id);
        let item = queues[1].item(&key).expect("read").expect("item");
        assert_eq!((item.assignments, item.max_assignments), (2, 2), "{id}");
        let done = queues[2].assignments(&key).expect("read");
        assert_eq!(done.len(), 2, "{id}: {done:?}");
        assert!(
            done.iter().all(|a| a.status == AssignmentStatus::Submitted),
            "{id}"
        );
    }
    eprintln!(
        "galera work queue: {N} items x 2 assignments, 6 workers on 3 nodes, {:.1} s, \
         {conflicts} certification conflicts, 0 errors, none past its maximum",
        elapsed.as_secs_f64()
    );
}

/// PostgreSQL failover: three scheduler processes (lock-and-fetch priority on and off, fetch)
/// on the multi-host URL with `target_session_attrs=read-write`; once a quarter of the
/// executions ran, the primary is killed (`kill -9`) and the standby promoted. Asserted: every
/// execution ran (nothing lost); with a synchronous standby none ran twice; the schedulers
/// reconnected to the new primary by themselves (an execution scheduled after the promotion,
/// through a client opened before the kill, ran); so did their wake-up listeners (once idle,
/// the schedulers poll every 20 s, so only a wake-up from the new primary starts each of three
/// executions scheduled then within 0.5 s); the interruption (kill to the first execution's start) is
/// printed.
pub fn pg_failover(exe: &str) {
    let _one = one_at_a_time();
    let url = required(PG_HA_ENV);
    let sync = required(PG_HA_SYNC_ENV) == "on";
    // A pair whole as asked (an earlier failover left none): made afresh when it is not.
    ctl_with(
        &["start", "pg"],
        &[("DOCKET_PG_SYNC", if sync { "on" } else { "off" })],
    );
    let n = executions();
    let database = unique_name();
    {
        let mut admin = PgConnection::establish(&url)
            .unwrap_or_else(|e| panic!("NOT RUN: cannot connect to {url}: {e}; {HOW}"));
        admin
            .batch_execute(&format!("CREATE DATABASE {database}"))
            .unwrap_or_else(|e| panic!("create database {database}: {e}"));
        // The standby is what the case says it is (a pair left over from an earlier failover
        // has none: `scripts/cluster.sh start pg` makes it afresh).
        #[derive(diesel::QueryableByName)]
        struct State {
            #[diesel(sql_type = diesel::sql_types::Text)]
            s: String,
        }
        let states: Vec<State> =
            diesel::sql_query("SELECT state || ' ' || sync_state AS s FROM pg_stat_replication")
                .load(&mut admin)
                .unwrap_or_else(|e| panic!("pg_stat_replication: {e}"));
        let want = if sync {
            "streaming sync"
        } else {
            "streaming async"
        };
        assert!(
            states.iter().any(|st| st.s == want),
            "NOT RUN: no {want} standby (run `scripts/cluster.sh start pg`); replication: {:?}",
            states.iter().map(|st| &st.s).collect::<Vec<_>>()
        );
    }
    let db_url = with_database(&url, &database);
    let store = migrated("postgres", &db_url);
    schedule(&db_url, "postgres", n);
    let client = SchedulerClient::new(store.clone()).expect("schema migrated");
    let mut off = Launch::new("lock-and-fetch-off", "lock-and-fetch");
    off.env.push(("RELIAB_PRIORITY".into(), "off".into()));
    let mut workers = [
        Launch::new("lock-and-fetch-on", "lock-and-fetch"),
        off,
        Launch::new("fetch-on", "fetch"),
    ];
    // A polling interval far longer than the failover: an idle scheduler waits that long
    // unless its wake-up listener, reconnected to the new primary, wakes it.
    for w in &mut workers {
        w.env
            .push(("RELIAB_POLLING_MS".into(), POLLING_MS.to_string()));
    }
    // Heartbeat 5 s x 4 missed: a 20 s dead window, well past the failover. A claim whose
    // commit reached the standby but whose answer was lost in the kill is held by nobody who
    // knows it: revived after that window and run then, once (counted as declared dead).
    let started = Instant::now();
    let mut cluster = Cluster::launch("postgres", &db_url, exe, &workers, 5_000, 5, None);
    let logged = |c: &Cluster| (0..workers.len()).map(|i| c.logged(i)).sum::<usize>();
    // Scheduled one at a time (a commit each) from now right up to the kill: what a failover can lose of
    // work scheduled just before it. Every one acknowledged must run.
    let stop_late = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let late = {
        let (store, stop) = (store.clone(), stop_late.clone());
        std::thread::spawn(move || {
            let client = SchedulerClient::new(store).expect("schema migrated");
            let mut acknowledged = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let id = format!("late-{:05}", acknowledged.len());
                match client.schedule(RELIAB.instance(id.as_str())) {
                    Ok(_) => acknowledged.push(id),
                    // In flight at the kill: not acknowledged, so not counted.
                    Err(e) => {
                        eprintln!("late scheduling stopped: {e}");
                        break;
                    }
                }
            }
            acknowledged
        })
    };
    until("a quarter of the executions to run", || {
        logged(&cluster) >= n / 4
    });
    let at_kill = logged(&cluster);
    let killed = Instant::now();
    ctl(&["kill", "pg1"]);
    stop_late.store(true, std::sync::atomic::Ordering::SeqCst);
    ctl(&["promote"]);
    let promoted = killed.elapsed();
    let late = late.join().expect("the late scheduler thread");
    // Scheduled through the client opened before the failover: its pool reconnects too.
    let marker = "after-failover";
    let scheduled = retry_for(Duration::from_secs(30), || {
        client.schedule(RELIAB.instance(marker).priority(10))
    });
    until("the execution scheduled after the failover to run", || {
        (0..workers.len()).any(|i| cluster.started(i).iter().any(|s| s == marker))
    });
    let interruption = killed.elapsed();
    cluster.wait("all executions to complete", || remaining(&*store) == 0);
    let elapsed = started.elapsed();
    // Idle now, each scheduler waits its polling interval unless woken: one more execution,
    // scheduled through the new primary, starts at once only if a wake-up listener listens
    // there (it lost its connection in the kill and had to open another).
    // Three times, so that a poll that happens to fall just after one of them (each
    // scheduler polls every 20 s) cannot pass for a wake-up.
    let idle: Vec<String> = (0..3)
        .map(|i| format!("woken-after-failover-{i}"))
        .collect();
    let mut woken = Duration::ZERO;
    for instance in &idle {
        std::thread::sleep(Duration::from_millis(300));
        let asked = Instant::now();
        client
            .schedule(RELIAB.instance(instance.as_str()))
            .expect("scheduled on the new primary");
        until("the execution scheduled while idle to run", || {
            (0..workers.len()).any(|i| cluster.started(i).iter().any(|s| s == instance))
        });
        woken = woken.max(asked.elapsed());
    }
    let events: Vec<String> = (0..workers.len()).flat_map(|i| cluster.events(i)).collect();
    let dead = instances(&events, "dead").len();
    let lost = instances(&events, "lost").len();
    let poll_failures = events
        .iter()
        .filter(|l| l.starts_with("poll-failed"))
        .count();
    let runs: HashMap<String, Vec<String>> = cluster.finish();
    assert!(
        idle.iter().all(|i| runs.contains_key(i)),
        "the executions scheduled while idle ran"
    );
    let twice = duplicates(&runs);
    let figures = format!(
        ", {} standby; killed after {at_kill} runs; promoted {:.1} s after the kill, \
         client reconnected after {:.1} s, first execution on the new primary {:.1} s after the \
         kill; {poll_failures} failed polls during the failover, {dead} declared dead, \
         {lost} fenced, {} ran twice; executions scheduled while idle started within {:.3} \
         s",
        if sync { "synchronous" } else { "asynchronous" },
        promoted.as_secs_f64(),
        scheduled.as_secs_f64(),
        interruption.as_secs_f64(),
        twice.len(),
        woken.as_secs_f64()
    );
    let missing: Vec<String> = (0..n)
        .map(|i| format!("{i:06}"))
        .chain(late.iter().cloned())
        .filter(|id| !runs.contains_key(id))
        .collect();
    let late_lost = missing.iter().filter(|id| id.starts_with("late-")).count();
    let figures = format!(
        "{figures}; {} scheduled one by one up to the kill, {late_lost} of them lost",
        late.len()
    );
    report_of(
        "postgres",
        "failover",
        n + late.len(),
        workers.len(),
        elapsed,
        &figures,
    );
    if sync {
        assert!(
            missing.is_empty(),
            "lost {} executions{figures}: {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        );
        assert!(
            twice.is_empty(),
            "ran more than once{figures}: {:?}",
            &twice[..twice.len().min(5)]
        );
    } else {
        eprintln!(
            "postgres failover (asynchronous standby): {} of the {} acknowledged executions \
             never ran (rows the standby never received), {late_lost} of them among the {} \
             scheduled one by one up to the kill",
            missing.len(),
            n + late.len(),
            late.len()
        );
    }
    assert!(runs.contains_key(marker), "the marker ran{figures}");
    assert!(
        woken < Duration::from_millis(500),
        "an idle scheduler found work on the new primary only by polling (every {POLLING_MS} \
         ms) after {woken:?}, not woken by its listener{figures}"
    );
    if let Ok(mut admin) = PgConnection::establish(&url) {
        let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"));
    }
}

/// Waits until `done` holds, failing the case after 5 minutes.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The failover case's polling interval (see [`pg_failover`]).
const POLLING_MS: u64 = 20_000;

/// Calls `f` until it succeeds or `patience` passes (then fails the case); returns how long it
/// took.
fn retry_for<T, E: std::fmt::Display>(
    patience: Duration,
    mut f: impl FnMut() -> Result<T, E>,
) -> Duration {
    let started = Instant::now();
    loop {
        match f() {
            Ok(_) => return started.elapsed(),
            Err(e) if started.elapsed() >= patience => {
                panic!("still failing after {patience:?}: {e}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_is_replaced_and_query_kept() {
        assert_eq!(
            with_database(
                "postgres://p@h1:1,h2:2/postgres?target_session_attrs=read-write",
                "d"
            ),
            "postgres://p@h1:1,h2:2/d?target_session_attrs=read-write"
        );
        assert_eq!(
            with_database("mysql://root@127.0.0.1:4306", "d"),
            "mysql://root@127.0.0.1:4306/d"
        );
    }
}
