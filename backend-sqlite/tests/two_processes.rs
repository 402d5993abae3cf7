//! Two (here: four) processes claiming from one database file never claim one execution twice.
//!
//! The test re-runs its own binary as the child processes: when [`CHILD_ENV`] is set, the same
//! test function plays a claimer instead of the parent. Each child alternates the two polling
//! strategies, batch by batch: lock-and-fetch (`UPDATE ... RETURNING` under SQLite's write
//! lock) and fetch-and-lock-on-execute (select, then a version-guarded update per candidate).
//! All wait on stdin for one "go" so that they overlap.

use chrono::{DateTime, Duration, TimeZone, Utc};
use docket_core::store::{Changes, DueParams, Guard, NewExecution, PickChange};
use docket_core::{ExecutionStore, StoreConfig};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

/// Set in a child: `<name> <database file> <output file>`.
const CHILD_ENV: &str = "SQLITE_TWO_PROCESSES_CHILD";
const TEST_NAME: &str = "two_processes_never_claim_one_execution_twice";
const EXECUTIONS: usize = 3000;
const BATCH: i64 = 10;
const CHILDREN: usize = 4;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
}

fn config() -> StoreConfig {
    StoreConfig::with_priority(true)
}

#[test]
fn two_processes_never_claim_one_execution_twice() {
    match std::env::var(CHILD_ENV) {
        Ok(args) => child(&args),
        Err(_) => parent(),
    }
}

fn parent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let url = format!("sqlite://{}", db.display());
    let store = docket_sqlite::connect(&url, config()).unwrap();
    docket_sqlite::migrate(&store, None).unwrap();
    let rows: Vec<_> = (0..EXECUTIONS)
        .map(|i| NewExecution {
            task_name: "work".into(),
            task_instance: format!("{i:05}"),
            task_data: None,
            execution_time: t0() - Duration::milliseconds(i as i64),
            priority: Some((i % 10) as i16),
            limit_key: None,
        })
        .collect();
    assert_eq!(
        store.execution_insert_batch(&rows).unwrap(),
        EXECUTIONS as u64
    );

    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<_> = (0..CHILDREN)
        .map(|i| {
            let name = format!("child-{i}");
            let out = dir.path().join(format!("{name}.txt"));
            let child = Command::new(&exe)
                .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
                .env(
                    CHILD_ENV,
                    format!("{name} {} {}", db.display(), out.display()),
                )
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            (name, out, child)
        })
        .collect();
    // Start them together: each blocks on stdin until here.
    for (_, _, child) in &mut children {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "go").unwrap();
    }
    let mut claimed_by: HashMap<String, String> = HashMap::new();
    let mut busy = 0;
    let mut total = 0;
    for (name, out, mut child) in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "{name} failed: {status}");
        let text = std::fs::read_to_string(&out).unwrap();
        let mine: Vec<_> = text.lines().map(str::to_owned).collect();
        eprintln!("{name} claimed {}", mine.len());
        busy += usize::from(!mine.is_empty());
        total += mine.len();
        for id in mine {
            if let Some(other) = claimed_by.insert(id.clone(), name.clone()) {
                panic!("execution {id} claimed by both {other} and {name}");
            }
        }
    }
    assert_eq!(total, EXECUTIONS, "every execution claimed exactly once");
    assert!(busy >= 2, "only {busy} process(es) claimed: no overlap");
    // The database agrees with what each process reported.
    for (id, name) in &claimed_by {
        let e = store
            .execution_get(&docket_core::ExecutionKey::new("work", id))
            .unwrap()
            .unwrap();
        assert!(e.picked, "{id}");
        assert_eq!(e.picked_by.as_deref(), Some(name.as_str()), "{id}");
    }
}

fn child(args: &str) {
    let mut parts = args.splitn(3, ' ');
    let (name, db, out) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let store = docket_sqlite::connect(db, config()).unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    let names = vec!["work".to_owned()];
    let params = DueParams {
        now: t0(),
        task_names: &names,
        limit: BATCH,
        claim_for: None,
        clock: None,
        include_limited: false,
    };
    let mut mine = Vec::new();
    let mut by_mode = [0usize; 2];
    for round in 0.. {
        let mode = round % 2;
        let won: Vec<String> = match mode {
            0 => store
                .execution_lock_and_fetch_due(&params, name)
                .unwrap()
                .into_iter()
                .map(|e| e.task_instance)
                .collect(),
            _ => {
                let claim = Changes {
                    pick: Some(PickChange::Claim {
                        by: name.into(),
                        at: t0(),
                    }),
                    ..Changes::default()
                };
                store
                    .execution_fetch_due(&params)
                    .unwrap()
                    .into_iter()
                    .filter(|c| {
                        store
                            .execution_update(&c.key(), Guard::Version(c.version), &claim)
                            .unwrap()
                    })
                    .map(|c| c.task_instance)
                    .collect()
            }
        };
        if won.is_empty() && store.execution_fetch_due(&params).unwrap().is_empty() {
            break;
        }
        by_mode[mode] += won.len();
        mine.extend(won);
    }
    eprintln!(
        "{name}: {} by lock-and-fetch, {} by fetch",
        by_mode[0], by_mode[1]
    );
    let unique: HashSet<_> = mine.iter().collect();
    assert_eq!(unique.len(), mine.len(), "{name} claimed one twice itself");
    std::fs::write(out, mine.join("\n")).unwrap();
}
