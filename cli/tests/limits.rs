//! `docket limits list|set|clear` end to end, on SQLite (a temporary file) and PostgreSQL (a
//! fresh schema on the compat suite's server).

mod common;

use chrono::Utc;
use common::{docket, migrate_all, sqlite_url, PgSchema};
use docket_core::store::DueParams;
use docket_core::{SchedulerClient, Store, StoreConfig, TaskDescriptor};
use predicates::str::contains;
use std::sync::Arc;

const WORK: TaskDescriptor = TaskDescriptor::new("work");

fn limits(url: &str, args: &[&str]) -> assert_cmd::assert::Assert {
    let (command, rest) = args.split_first().expect("a limits command");
    docket()
        .args(["limits", command, "--database-url", url])
        .args(rest)
        .assert()
}

fn stdout(assert: assert_cmd::assert::Assert) -> String {
    String::from_utf8(assert.success().get_output().stdout.clone()).expect("UTF-8")
}

/// On a migrated table: set, list (with what runs and what waits), replace, clear.
fn set_list_clear(url: &str, store: Arc<dyn Store>) {
    let out = stdout(limits(
        url,
        &["set", "work", "--max-running", "2", "--rate", "20/1s"],
    ));
    assert!(
        out.contains("work on scheduled_tasks is limited: max running 2, rate 20/1s"),
        "{out}"
    );
    // Five due executions, three of them under keys; a limited claim takes two (the limit).
    let client = SchedulerClient::new(store.clone()).expect("client");
    let past = Utc::now() - chrono::Duration::minutes(1);
    for (id, key) in [
        ("a", Some("k1")),
        ("b", Some("k2")),
        ("c", Some("k1")),
        ("d", None),
        ("e", None),
    ] {
        let mut instance = WORK.instance(id).scheduled_to(past);
        if let Some(key) = key {
            instance = instance.limit_key(key);
        }
        client.schedule(instance).expect("schedule");
    }
    let names = ["work".to_owned()];
    let claimed = store
        .execution_claim_limited(&DueParams::new(Utc::now(), &names, 10), "test")
        .expect("claim");
    assert_eq!(claimed.len(), 2, "max running 2");
    let out = stdout(limits(url, &["list"]));
    let header = out.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("TASK")
            && header.contains("KEYS RUNNING")
            && header.ends_with("DUE WAITING"),
        "{out}"
    );
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("work "))
        .unwrap_or_else(|| panic!("no row for work in:\n{out}"))
        .split_whitespace()
        .collect();
    // task, max running, rate, per key, per-key rate, running, keys running, starts, due.
    assert_eq!(
        row,
        ["work", "2", "20/1s", "-", "-", "2", "2", "2", "3"],
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&stdout(limits(url, &["list", "--json"]))).expect("JSON");
    assert_eq!(json[0]["task_name"], "work");
    assert_eq!(json[0]["rate"]["per_ms"], 1000);
    assert_eq!(json[0]["running"], 2);
    assert_eq!(json[0]["due_waiting"], 3);
    assert_eq!(json[0]["due_waiting_capped"], false);

    // Setting again replaces every limit of the task.
    let out = stdout(limits(
        url,
        &[
            "set",
            "work",
            "--max-running-per-key",
            "1",
            "--rate-per-key",
            "5/1m",
        ],
    ));
    assert!(
        out.contains("max running per key 1, rate per key 5/1m"),
        "{out}"
    );
    let limits_now = client.limits().expect("limits");
    assert_eq!(limits_now.len(), 1);
    assert_eq!(limits_now[0].max_running, None);
    assert_eq!(limits_now[0].max_running_per_key, Some(1));

    let out = stdout(limits(url, &["clear", "work"]));
    assert!(out.contains("cleared the limits of work"), "{out}");
    let out = stdout(limits(url, &["clear", "work"]));
    assert!(out.contains("nothing to clear"), "{out}");
    let out = stdout(limits(url, &["list"]));
    assert!(out.contains("no limits on scheduled_tasks"), "{out}");
}

#[test]
fn sqlite_set_list_clear() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = sqlite_url(&dir);
    migrate_all(&url);
    let store = docket_sqlite::connect(&url, StoreConfig::default()).expect("store");
    set_list_clear(&url, Arc::new(store));
}

#[test]
fn a_table_without_0009_limits_names_the_migration() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = sqlite_url(&dir);
    docket()
        .args([
            "migrate",
            "--database-url",
            &url,
            "--to",
            "0008_paused_tasks",
        ])
        .assert()
        .success();
    for args in [
        &["set", "work", "--max-running", "1"][..],
        &["clear", "work"],
    ] {
        limits(&url, args)
            .failure()
            .stderr(contains("lacks migration 0009_limits"));
    }
    let out = stdout(limits(&url, &["list"]));
    assert!(out.contains("needs migration 0009_limits"), "{out}");
}

#[test]
fn bad_limits_are_rejected_before_any_sql() {
    // No database at this URL: each error comes from the arguments alone.
    let url = "sqlite:///nonexistent/dir/x.db";
    for (args, said) in [
        (
            &["set", "work", "--rate", "20"][..],
            "\"20\" has no window: give N/WINDOW",
        ),
        (
            &["set", "work", "--rate", "20/1y"],
            "a whole number and a unit",
        ),
        (&["set", "work", "--rate-per-key", "x/1s"], "is not a count"),
        (&["set", "work", "--max-running", "-1"], "--max-running"),
        (&["set", "work"], "--max-running"),
        (&["set", "work", "--rate", "1/0s"], "a rate window of 0ns"),
        (
            &["set", "work", "--max-running", "3000000000"],
            "a count is above",
        ),
        (&["set", "", "--max-running", "1"], "the task name must be"),
    ] {
        limits(url, args).failure().stderr(contains(said));
    }
}

#[test]
fn postgres_set_list_clear() {
    let space = PgSchema::new();
    let url = space.url();
    migrate_all(&url);
    let store = docket_postgres::connect(&url, StoreConfig::default()).expect("store");
    set_list_clear(&url, Arc::new(store));
}
