//! `docket web` in a real browser: seeds a database (SQLite, then PostgreSQL), starts the
//! `docket` binary on it, drives Debian's chromium through the pages with Node's
//! playwright-core (`web_browser/browser.mjs`: operator actions, a stale page, pausing and
//! resuming tasks, the lag table and `/metrics`, two workers taking and submitting every
//! item), then checks the database and that two schedulers do not claim the paused task.
//!
//! Built only with `--features browser-test`; `scripts/web-browser-test.sh` installs Chromium
//! and playwright-core and runs it. Without them every test fails with `NOT RUN: ...`.
//! PostgreSQL: `DOCKET_WEB_PG_URL` (an admin URL; default `postgres://postgres@127.0.0.1:5432/postgres`);
//! the test creates and drops its own database. Screenshots of the SQLite run go to
//! `DOCKET_SCREENSHOTS` (default: a temporary directory).

use chrono::{DateTime, Duration, TimeZone, Utc};
use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use docket_core::queue::{AssignmentStatus, Batch, Record};
use docket_core::store::{Changes, Guard, PickChange};
use docket_core::{
    ExecutionKey, PollingStrategy, QueueConfig, Scheduler, SchedulerClient, SchedulerConfig, Store,
    StoreConfig, Task, TaskDescriptor, WorkQueue,
};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const EMAIL: TaskDescriptor = TaskDescriptor::new("send-email");
const REPORT: TaskDescriptor = TaskDescriptor::new("nightly-report");
const BILLING: TaskDescriptor = TaskDescriptor::new("billing-sync");
const CACHE: TaskDescriptor = TaskDescriptor::new("cache-warmup");
const TOKEN: &str = "browser-test-token-0123456789";

fn not_run(reason: impl std::fmt::Display) -> ! {
    panic!("NOT RUN: web browser test: {reason}")
}

fn script_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web_browser")
}

/// Chromium and playwright-core, or NOT RUN.
fn browser_tools() -> PathBuf {
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.exists() {
        not_run(format!(
            "no Chromium at {} (scripts/web-browser-test.sh installs Debian's chromium)",
            chromium.display()
        ));
    }
    if !script_dir().join("node_modules/playwright-core").exists() {
        not_run("playwright-core is not installed (scripts/web-browser-test.sh installs it)");
    }
    chromium
}

fn at(now: DateTime<Utc>, minutes: i64) -> DateTime<Utc> {
    now + Duration::minutes(minutes)
}

/// What the pages show: four tasks in every state, and two work-queue task types.
fn seed(on: Arc<dyn Store>, off: Arc<dyn Store>) {
    let now = Utc::now();
    let client = SchedulerClient::new(on.clone()).unwrap();
    let mut n = 0;
    for (count, priority) in [(6, 90), (10, 50), (8, 10)] {
        for _ in 0..count {
            n += 1;
            client
                .schedule(
                    EMAIL
                        .instance(format!("msg-{n:04}"))
                        .priority(priority)
                        .scheduled_to(at(now, -n)),
                )
                .unwrap();
        }
    }
    for (id, priority, minutes) in [
        ("high", 90, -90),
        ("low", 10, -80),
        ("later", 50, 120),
        ("obsolete", 50, 240),
    ] {
        client
            .schedule(
                EMAIL
                    .instance(id)
                    .priority(priority)
                    .scheduled_to(at(now, minutes)),
            )
            .unwrap();
    }
    for i in 1..=5 {
        client
            .schedule(
                EMAIL
                    .instance(format!("digest-{i}"))
                    .scheduled_to(at(now, 60 * 24 * i)),
            )
            .unwrap();
    }
    for (id, by, beat) in [
        ("2026-11-29", "worker-node-1", 0),
        ("2026-11-28", "worker-node-2", -2),
        ("2026-11-27", "worker-node-2", -4),
        ("2026-11-26", "worker-node-3", -47),
    ] {
        client
            .schedule(REPORT.instance(id).priority(90).scheduled_to(at(now, -60)))
            .unwrap();
        let claim = Changes {
            pick: Some(PickChange::Claim {
                by: by.into(),
                at: at(now, beat) - Duration::seconds(20),
            }),
            ..Changes::default()
        };
        assert!(on
            .execution_update(&ExecutionKey::new("nightly-report", id), Guard::Any, &claim)
            .unwrap());
    }
    client
        .schedule(
            REPORT
                .instance("2026-11-30")
                .priority(90)
                .scheduled_to(at(now, 600)),
        )
        .unwrap();
    for (i, failures) in [1, 2, 4, 7].into_iter().enumerate() {
        let id = format!("customer-{}", 1041 + i * 17);
        client
            .schedule(
                BILLING
                    .instance(&id)
                    .scheduled_to(at(now, 5 - 5 * i as i64)),
            )
            .unwrap();
        let failed = Changes {
            last_failure: Some(at(now, -(i as i64) * 7 - 1)),
            consecutive_failures: Some(failures),
            ..Changes::default()
        };
        assert!(on
            .execution_update(&ExecutionKey::new("billing-sync", id), Guard::Any, &failed)
            .unwrap());
    }
    // Written with priority off: NULL priority, the lowest level.
    let plain = SchedulerClient::new(off).unwrap();
    for i in 1..=5 {
        plain
            .schedule(
                CACHE
                    .instance(format!("region-{i}"))
                    .scheduled_to(at(now, -i)),
            )
            .unwrap();
    }

    let queue = WorkQueue::new(on, QueueConfig::default()).unwrap();
    let day = Utc.with_ymd_and_hms(2026, 11, 30, 9, 15, 0).unwrap();
    let record = |id: &str, minute: i64, text: &str| {
        let mut r = Record::new(id);
        r.record_date = Some(day + Duration::minutes(minute));
        r.attributes.insert("text".into(), text.into());
        r.attributes.insert("lang".into(), "en".into());
        r
    };
    queue
        .enqueue(&Batch {
            task_type: "label".into(),
            max_assignments: 2,
            records: vec![
                record("rec1", 0, "The parcel arrived two days late."),
                record("rec2", 0, "Great support, fixed in minutes!"),
                record("rec3", 5, "Refund still not processed."),
            ],
        })
        .unwrap();
    queue
        .enqueue(&Batch {
            task_type: "review".into(),
            max_assignments: 1,
            records: (1..=6)
                .map(|i| record(&format!("doc-{i}"), i, "contract clause"))
                .collect(),
        })
        .unwrap();
}

/// `docket web` on `url`, killed when dropped.
struct Server {
    child: Child,
    base: String,
    _token_dir: tempfile::TempDir,
}

impl Server {
    fn start(url: &str) -> Self {
        let token_dir = tempfile::tempdir().unwrap();
        let token_file = token_dir.path().join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_docket"))
            .args([
                "web",
                "--database-url",
                url,
                "--listen",
                "127.0.0.1:0",
                "--priority",
                // The script first reads the pages as a visitor without the token.
                "--open-reads",
            ])
            .arg("--token-file")
            .arg(&token_file)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let base = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("docket web printed no address: {line:?}"))
            .trim_end_matches('/')
            .to_owned();
        Self {
            child,
            base,
            _token_dir: token_dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Seeds, serves, drives the browser, checks the database.
fn run(backend: &str, url: &str, open: impl Fn(bool) -> Arc<dyn Store>, shots: &Path) {
    let chromium = browser_tools();
    let store = open(true);
    seed(store.clone(), open(false));
    let version_of = |instance: &str| {
        store
            .execution_get(&ExecutionKey::new("send-email", instance))
            .unwrap()
            .unwrap()
            .version
    };
    let high_before = version_of("high");
    let server = Server::start(url);
    let started = Utc::now();
    let status = Command::new("node")
        .arg(script_dir().join("browser.mjs"))
        .args([&server.base, TOKEN])
        .arg(shots)
        .env("CHROMIUM", &chromium)
        .status()
        .unwrap_or_else(|e| not_run(format!("cannot run node: {e}")));
    assert!(
        status.success(),
        "{backend}: the browser steps failed (see above)"
    );
    drop(server);

    // Operator actions: run now, reschedule, cancel; the stale click changed nothing.
    let get = |instance: &str| {
        store
            .execution_get(&ExecutionKey::new("send-email", instance))
            .unwrap()
    };
    let later = get("later").unwrap();
    assert!(
        later.execution_time >= started - Duration::seconds(1)
            && later.execution_time <= Utc::now(),
        "{backend}: run now moved `later` to now: {later:?}"
    );
    assert_eq!(
        get("low").unwrap().execution_time,
        Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap(),
        "{backend}: reschedule"
    );
    assert!(get("obsolete").is_none(), "{backend}: cancel");
    assert_eq!(
        version_of("high"),
        high_before + 1,
        "{backend}: only the API's run-now changed `high`, not the stale page"
    );
    let report = store
        .execution_get(&ExecutionKey::new("nightly-report", "2026-11-29"))
        .unwrap()
        .unwrap();
    assert!(report.picked, "{backend}: a running execution is untouched");

    // Paused from the page: two schedulers (two pools, both strategies) claim nothing of
    // cache-warmup at their next poll but run billing-sync (paused and resumed from the page);
    // once resumed, they run cache-warmup too.
    let client = SchedulerClient::new(store.clone()).unwrap();
    let paused: Vec<_> = client
        .paused()
        .unwrap()
        .into_iter()
        .map(|p| (p.task_name, p.paused_by))
        .collect();
    assert_eq!(
        paused,
        [("cache-warmup".to_owned(), Some("docket web".to_owned()))],
        "{backend}: paused from the page"
    );
    let counted = |d: TaskDescriptor| {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let task = Task::one_time(d, move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        (task, runs)
    };
    let scheduler = |store: Arc<dyn Store>, polling, name: &str| {
        let (cache, cache_runs) = counted(CACHE);
        let (billing, billing_runs) = counted(BILLING);
        let s = Scheduler::builder(store)
            .config(SchedulerConfig {
                polling,
                scheduler_name: name.to_owned(),
                ..SchedulerConfig::default()
            })
            .tasks(vec![cache, billing])
            .build()
            .unwrap();
        (s, cache_runs, billing_runs)
    };
    let (s1, cache1, billing1) = scheduler(open(false), PollingStrategy::lock_and_fetch(), "s1");
    let (s2, cache2, billing2) = scheduler(open(false), PollingStrategy::fetch(), "s2");
    s1.run_due().unwrap();
    s2.run_due().unwrap();
    let runs =
        |a: &AtomicUsize, b: &AtomicUsize| a.load(Ordering::SeqCst) + b.load(Ordering::SeqCst);
    assert_eq!(runs(&cache1, &cache2), 0, "{backend}: paused: not claimed");
    assert_eq!(
        runs(&billing1, &billing2),
        4,
        "{backend}: billing-sync (resumed) runs its 4 executions, all due after the bulk retry"
    );
    assert!(client.resume("cache-warmup").unwrap());
    s2.run_due().unwrap();
    s1.run_due().unwrap();
    assert_eq!(
        runs(&cache1, &cache2),
        5,
        "{backend}: resumed: every due region runs once"
    );

    // Two workers: each item submitted once by alice and once by bob, nothing else.
    let queue = WorkQueue::new(store.clone(), QueueConfig::default()).unwrap();
    for rec in ["rec1", "rec2", "rec3"] {
        let key = ExecutionKey::new("label", rec);
        let mut got: Vec<(String, AssignmentStatus)> = queue
            .assignments(&key)
            .unwrap()
            .into_iter()
            .map(|a| (a.worker, a.status))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            [
                ("alice".to_owned(), AssignmentStatus::Submitted),
                ("bob".to_owned(), AssignmentStatus::Submitted)
            ],
            "{backend}: {rec}"
        );
        let item = queue.item(&key).unwrap().unwrap();
        assert_eq!(
            (item.assignments, item.held_by),
            (2, None),
            "{backend}: {rec}"
        );
    }
    eprintln!("web browser test passed on {backend}");
}

#[test]
fn sqlite_pages_in_a_real_browser() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("web.db").display());
    let migrated = docket_sqlite::connect(&url, StoreConfig::default()).unwrap();
    docket_sqlite::migrate(&migrated, None).unwrap();
    let shots = std::env::var_os("DOCKET_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("screenshots"));
    run(
        "sqlite",
        &url,
        |priority| {
            Arc::new(docket_sqlite::connect(&url, StoreConfig::with_priority(priority)).unwrap())
        },
        &shots,
    );
}

/// A database of its own on the PostgreSQL server, dropped at the end.
struct PgDatabase {
    admin: String,
    name: String,
    url: String,
}

impl PgDatabase {
    fn create() -> Self {
        let admin = std::env::var("DOCKET_WEB_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let name = format!("docket_web_{}", std::process::id());
        let mut conn = PgConnection::establish(&admin)
            .unwrap_or_else(|e| not_run(format!("postgres at {admin}: {e}")));
        // One statement per call: several in one string run as one transaction block.
        conn.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        conn.batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let (server, _) = admin
            .rsplit_once('/')
            .unwrap_or_else(|| not_run(format!("{admin} has no database part")));
        let url = format!("{server}/{name}");
        Self { admin, name, url }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if let Ok(mut conn) = PgConnection::establish(&self.admin) {
            let _ = conn.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

#[test]
fn postgres_pages_in_a_real_browser() {
    let db = PgDatabase::create();
    let migrated = docket_postgres::connect(&db.url, StoreConfig::default()).unwrap();
    docket_postgres::migrate(&migrated, None).unwrap();
    let shots = tempfile::tempdir().unwrap();
    run(
        "postgres",
        &db.url,
        |priority| {
            Arc::new(
                docket_postgres::connect(&db.url, StoreConfig::with_priority(priority)).unwrap(),
            )
        },
        shots.path(),
    );
}
