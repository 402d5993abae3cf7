//! The `docket` binary end to end, on SQLite (a temporary file) and PostgreSQL (a fresh schema
//! on the compat suite's server: `DOCKET_POSTGRES_URL` or a throwaway one).

use assert_cmd::Command;
use chrono::{Duration, Utc};
use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use docket_core::{SchedulerClient, Store, StoreConfig, TaskDescriptor};
use predicates::prelude::*;
use predicates::str::contains;
use std::sync::Arc;

const WORK: TaskDescriptor = TaskDescriptor::new("work");
const OTHER: TaskDescriptor = TaskDescriptor::new("other");

fn docket() -> Command {
    Command::new(env!("CARGO_BIN_EXE_docket"))
}

fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).unwrap()
}

/// Schedules, with priority on: `null` (written with priority off), `low` (10), `high` (90),
/// `high-later` (90, due later), `other` (a second task), and one not yet due.
fn seed(on: Arc<dyn Store>, off: Arc<dyn Store>) {
    let now = Utc::now();
    SchedulerClient::new(off)
        .unwrap()
        .schedule(
            WORK.instance("null")
                .priority(99)
                .scheduled_to(now - Duration::hours(5)),
        )
        .unwrap();
    let client = SchedulerClient::new(on).unwrap();
    for (id, p, hours_ago) in [("low", 10, 4), ("high", 90, 2), ("high-later", 90, 1)] {
        client
            .schedule(
                WORK.instance(id)
                    .priority(p)
                    .scheduled_to(now - Duration::hours(hours_ago)),
            )
            .unwrap();
    }
    client
        .schedule(
            OTHER
                .instance("other")
                .priority(50)
                .scheduled_to(now - Duration::hours(3)),
        )
        .unwrap();
    client
        .schedule(
            WORK.instance("future")
                .priority(100)
                .scheduled_to(now + Duration::hours(1)),
        )
        .unwrap();
}

fn instances(json: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["task_instance"].as_str().unwrap().to_owned())
        .collect()
}

/// Migrate, seed, then `queue` in both orders, filtered, limited, as a table and as JSON.
fn migrate_then_queue(
    url: &str,
    on: impl Fn() -> Arc<dyn Store>,
    off: impl Fn() -> Arc<dyn Store>,
) {
    let applied = stdout_of(docket().args(["migrate", "--database-url", url]));
    assert!(
        applied.contains("applied 0001_base@scheduled_tasks"),
        "{applied}"
    );
    assert!(
        applied.contains("applied 0002_priority@scheduled_tasks"),
        "{applied}"
    );
    docket()
        .args(["migrate", "--database-url", url])
        .assert()
        .success()
        .stdout(contains("up to date"));
    docket()
        .args(["queue", "--database-url", url, "--json"])
        .assert()
        .success()
        .stdout(contains("[]"));
    seed(on(), off());

    let by_priority =
        stdout_of(docket().args(["queue", "--database-url", url, "--priority", "--json"]));
    assert_eq!(
        instances(&by_priority),
        ["high", "high-later", "other", "low", "null"],
        "priority desc, NULL last, then due time; future excluded"
    );
    let by_time = stdout_of(docket().args(["queue", "--database-url", url, "--json"]));
    assert_eq!(
        instances(&by_time),
        ["null", "low", "other", "high", "high-later"]
    );
    let work_only = stdout_of(docket().args([
        "queue",
        "--database-url",
        url,
        "--priority",
        "--task",
        "work",
        "--limit",
        "2",
        "--json",
    ]));
    assert_eq!(instances(&work_only), ["high", "high-later"]);

    let table = stdout_of(docket().args(["queue", "--database-url", url, "--priority"]));
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with('#') && lines[0].contains("PRIORITY"),
        "{table}"
    );
    assert!(
        lines[1].contains("high") && lines[1].contains("90"),
        "{table}"
    );
    assert!(
        lines[5].contains("null") && lines[5].contains("NULL"),
        "{table}"
    );
    assert!(table.contains("5 due, in hand-out order"), "{table}");
}

#[test]
fn help_lists_every_command() {
    let help = stdout_of(docket().arg("--help"));
    for command in ["migrate", "queue", "explain", "demo"] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} missing from:\n{help}"
        );
    }
}

#[test]
fn demo_runs_a_scheduler_and_explains_the_order() {
    docket()
        .arg("demo")
        .env_remove("DOCKET_POSTGRES_URL")
        .assert()
        .success()
        .stdout(contains("hand-out order"))
        .stdout(contains("higher priority goes first"))
        .stdout(contains("exponential backoff"))
        .stdout(contains("none was claimed twice"));
}

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("cli.db").display())
}

fn sqlite_store(url: &str, priority: bool) -> Arc<dyn Store> {
    Arc::new(docket_sqlite::connect(url, StoreConfig::with_priority(priority)).unwrap())
}

#[test]
fn sqlite_migrate_then_queue() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    migrate_then_queue(
        &url,
        || sqlite_store(&url, true),
        || sqlite_store(&url, false),
    );
}

#[test]
fn sqlite_priority_queue_before_0002_names_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    docket()
        .args(["migrate", "--database-url", &url, "--to", "0001_base"])
        .assert()
        .success()
        .stdout(contains("applied 0001_base").and(contains("0002").not()));
    docket()
        .args(["queue", "--database-url", &url, "--priority"])
        .assert()
        .failure()
        .stderr(contains("0002_priority"));
    docket()
        .args(["queue", "--database-url", &url])
        .assert()
        .success()
        .stdout(contains("nothing is due"));
}

#[test]
fn queue_on_an_unmigrated_table_names_0001() {
    let dir = tempfile::tempdir().unwrap();
    docket()
        .args([
            "queue",
            "--database-url",
            &sqlite_url(&dir),
            "--table",
            "jobs",
        ])
        .assert()
        .failure()
        .stderr(contains("jobs lacks migration 0001_base"));
}

#[test]
fn unknown_scheme_is_a_clear_error() {
    for command in ["migrate", "queue"] {
        docket()
            .args([command, "--database-url", "db2://scott@db/sample"])
            .assert()
            .failure()
            .stderr(contains("unsupported database URL scheme \"db2\""))
            .stderr(contains("sqlite://"));
    }
    docket()
        .args(["explain", "--backend", "db2"])
        .assert()
        .failure()
        .stderr(contains("unknown backend \"db2\""));
}

#[test]
fn bad_table_names_are_rejected_before_any_sql() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    for bad in ["x;drop table y", "a\"b", "a.b.c", "1abc"] {
        docket()
            .args(["migrate", "--database-url", &url, "--table", bad])
            .assert()
            .failure()
            .stderr(contains("invalid identifier"));
    }
    assert!(!dir.path().join("cli.db").exists(), "nothing was opened");
}

#[test]
fn unknown_migration_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    docket()
        .args([
            "migrate",
            "--database-url",
            &sqlite_url(&dir),
            "--to",
            "0009_magic",
        ])
        .assert()
        .failure()
        .stderr(contains("unknown migration \"0009_magic\"").and(contains("0002_priority")));
}

#[test]
fn explain_prints_each_dialects_due_queries() {
    // Priority on: the levels query, then one index range per level.
    let pg = stdout_of(docket().args(["explain", "--backend", "postgres", "--priority"]));
    assert!(pg.contains("WITH RECURSIVE levels(level)"), "{pg}");
    assert!(
        pg.contains("AND priority = $5 ORDER BY execution_time ASC LIMIT $6"),
        "{pg}"
    );
    assert!(pg.contains("FOR UPDATE SKIP LOCKED) RETURNING"), "{pg}");
    let all_pg =
        stdout_of(docket().args(["explain", "--backend", "postgres", "--priority", "--all"]));
    assert!(
        all_pg.contains("ORDER BY priority DESC NULLS LAST, execution_time ASC LIMIT $5"),
        "the single ordered statement (fallback) is in --all\n{all_pg}"
    );
    let lite = stdout_of(docket().args(["explain", "--backend", "sqlite", "--priority"]));
    assert!(lite.contains("SELECT DISTINCT priority AS level"), "{lite}");
    assert!(
        lite.contains("AND priority = ? ORDER BY execution_time ASC LIMIT ?"),
        "{lite}"
    );
    let my = stdout_of(docket().args(["explain", "--backend", "mysql", "--priority"]));
    assert!(my.contains("FOR UPDATE SKIP LOCKED"), "{my}");
    assert!(my.contains("`scheduled_tasks`"), "{my}");
    assert!(
        !lite.contains("FOR UPDATE") && !lite.contains("NULLS"),
        "{lite}"
    );
    let off = stdout_of(docket().args(["explain", "--backend", "sqlite"]));
    assert!(
        off.lines()
            .filter(|l| !l.starts_with("--"))
            .all(|sql| !sql.contains("priority")),
        "priority off: no statement names the column\n{off}"
    );
}

#[test]
fn explain_all_ends_every_statement_with_a_semicolon_line() {
    for backend in ["postgres", "mysql", "sqlite"] {
        let all =
            stdout_of(docket().args(["explain", "--backend", backend, "--all", "--priority"]));
        let statements: Vec<&str> = all
            .split("\n;\n")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        // 17 statements, plus the levels query, 6 per-level forms and the next-due probe of a
        // drained level with priority on.
        assert_eq!(statements.len(), 25, "{all}");
        assert!(all.ends_with("\n;\n"));
        for s in statements {
            let sql = s.lines().last().unwrap();
            assert!(
                ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH"]
                    .iter()
                    .any(|k| sql.starts_with(k)),
                "{backend}: {sql}"
            );
        }
    }
}

#[test]
fn explain_on_a_sqlite_file_prints_the_query_plan() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    docket()
        .args(["migrate", "--database-url", &url])
        .assert()
        .success();
    docket()
        .args([
            "explain",
            "--backend",
            "sqlite",
            "--priority",
            "--database-url",
            &url,
        ])
        .assert()
        .success()
        .stdout(contains("-- EXPLAIN QUERY PLAN of due"))
        .stdout(contains("-- EXPLAIN QUERY PLAN of lock_and_fetch"))
        .stdout(contains("SEARCH scheduled_tasks"));
    docket()
        .args(["explain", "--backend", "postgres", "--database-url", &url])
        .assert()
        .failure()
        .stderr(contains("does not match"));
}

/// A fresh schema on the suite's PostgreSQL server, dropped at the end.
struct PgSchema {
    admin: String,
    schema: String,
}

impl PgSchema {
    fn new() -> Self {
        let admin = docket_compat_tests::servers::postgres::admin_url()
            .unwrap_or_else(|e| panic!("NOT RUN: postgres: {e}"))
            .to_owned();
        let schema = docket_compat_tests::backends::unique_name();
        PgConnection::establish(&admin)
            .unwrap()
            .batch_execute(&format!("CREATE SCHEMA \"{schema}\""))
            .unwrap();
        Self { admin, schema }
    }

    /// The admin URL with libpq `options` selecting the schema.
    fn url(&self) -> String {
        let sep = if self.admin.contains('?') { '&' } else { '?' };
        format!(
            "{}{sep}options=-c%20search_path%3D{}",
            self.admin, self.schema
        )
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut conn) = PgConnection::establish(&self.admin) {
            let _ = conn.batch_execute(&format!(
                "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                self.schema
            ));
        }
    }
}

fn pg_store(url: &str, priority: bool) -> Arc<dyn Store> {
    Arc::new(docket_postgres::connect(url, StoreConfig::with_priority(priority)).unwrap())
}

#[test]
fn postgres_migrate_then_queue() {
    let space = PgSchema::new();
    let url = space.url();
    migrate_then_queue(&url, || pg_store(&url, true), || pg_store(&url, false));
}

#[test]
fn postgres_explain_analyzes_without_claiming() {
    let space = PgSchema::new();
    let url = space.url();
    docket()
        .args(["migrate", "--database-url", &url])
        .assert()
        .success();
    seed(pg_store(&url, true), pg_store(&url, false));
    docket()
        .args([
            "explain",
            "--backend",
            "postgres",
            "--priority",
            "--database-url",
            &url,
        ])
        .assert()
        .success()
        .stdout(contains("-- EXPLAIN (ANALYZE, BUFFERS) of due"))
        .stdout(contains("-- EXPLAIN (ANALYZE, BUFFERS) of lock_and_fetch"))
        .stdout(contains("Execution Time"));
    // ANALYZE ran the claim in a rolled-back transaction: everything is still due.
    let queued = stdout_of(docket().args(["queue", "--database-url", &url, "--json"]));
    assert_eq!(instances(&queued).len(), 5);
}

#[test]
fn postgres_errors_name_what_is_wrong() {
    let space = PgSchema::new();
    let url = space.url();
    docket()
        .args(["queue", "--database-url", &url])
        .assert()
        .failure()
        .stderr(contains("scheduled_tasks lacks migration 0001_base"));
    docket()
        .args(["migrate", "--database-url", &url, "--table", "bad-name"])
        .assert()
        .failure()
        .stderr(contains("invalid identifier \"bad-name\""));
    docket()
        .args([
            "migrate",
            "--database-url",
            "postgres://nobody@127.0.0.1:1/none",
        ])
        .assert()
        .failure()
        .stderr(contains("connection failed"));
}

#[test]
fn explain_all_prints_sql_server_and_oracle_dialects() {
    for (backend, marker) in [
        ("mssql", "WITH (UPDLOCK, READPAST, ROWLOCK)"),
        ("oracle", "FOR UPDATE SKIP LOCKED"),
    ] {
        for priority in [false, true] {
            let mut args = vec!["explain", "--backend", backend, "--all"];
            if priority {
                args.push("--priority");
            }
            let all = stdout_of(docket().args(&args));
            let statements = all.split("\n;\n").filter(|s| !s.trim().is_empty()).count();
            assert_eq!(statements, if priority { 25 } else { 17 }, "{all}");
            assert!(all.contains(marker), "{all}");
        }
    }
    let mssql = stdout_of(docket().args(["explain", "--backend", "mssql", "--priority"]));
    assert!(mssql.contains("-- lock_and_fetch_at_level"), "{mssql}");
    assert!(mssql.contains("OUTPUT inserted.task_name"), "{mssql}");
    let oracle = stdout_of(docket().args(["explain", "--backend", "oracle", "--priority"]));
    assert!(oracle.contains("-- due_for_update_at_level"), "{oracle}");
    assert!(
        oracle.contains("WHERE ROWID IN (SELECT ROWID FROM"),
        "{oracle}"
    );
    assert!(
        oracle.contains("priority DESC NULLS LAST") || !oracle.contains("DESC,"),
        "{oracle}"
    );
}

/// `docket bench priority` at a tiny scale: its code paths run and its last line keeps the
/// summary's shape (figures are for benchmarks, never asserted here).
fn bench_summary(backend: &str, url: &str) {
    let out = stdout_of(docket().args([
        "bench",
        "priority",
        "--backend",
        backend,
        "--database-url",
        url,
        "--due",
        "200",
        "--future",
        "2000",
        "--threads",
        "2",
        "--schedulers",
        "1",
        "--seconds",
        "1",
    ]));
    let last = out.lines().last().unwrap_or_default();
    let shape = format!(
        "^summary backend={backend} due=200 future=2000 buffers_off=\\d+ buffers_on=\\d+ \
         buffers_naive=\\d+ buffers_ratio=\\d+\\.\\d\\d throughput_off=\\d+ \
         throughput_on=\\d+ throughput_ratio=\\d+\\.\\d\\d$"
    );
    assert!(
        predicate::str::is_match(shape).unwrap().eval(last),
        "last line: {last}\n{out}"
    );
    assert!(out.contains("priority on (cache fresh"), "{out}");
}

#[test]
fn sqlite_bench_priority_prints_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    bench_summary("sqlite", &sqlite_url(&dir));
}

#[test]
fn postgres_bench_priority_prints_the_summary() {
    let space = PgSchema::new();
    bench_summary("postgres", &space.url());
}

/// `docket bench queue` at a tiny scale on PostgreSQL: both scenarios run through the real
/// `next_for`, their plans are printed, and the last line keeps the summary's shape (figures
/// and verdicts are for benchmarks, never asserted here).
#[test]
fn postgres_bench_queue_prints_the_summary() {
    let space = PgSchema::new();
    let out = stdout_of(docket().args([
        "bench",
        "queue",
        "--backend",
        "postgres",
        "--database-url",
        &space.url(),
        "--items",
        "300",
        "--worked",
        "100",
        "--calls",
        "3",
    ]));
    let last = out.lines().last().unwrap_or_default();
    let mut shape = "^summary backend=postgres items=300 worked=100".to_owned();
    for k in ["a", "b"] {
        shape.push_str(&format!(
            " buffers_fresh_{k}=\\d+ buffers_{k}=\\d+ buffers_ratio_{k}=\\d+\\.\\d\\d \
             next_for_ms_fresh_{k}=\\d+\\.\\d{{3}} next_for_ms_{k}=\\d+\\.\\d{{3}} \
             time_ratio_{k}=\\d+\\.\\d\\d bounded_fresh_{k}=(yes|no) bounded_{k}=(yes|no)"
        ));
    }
    shape.push('$');
    assert!(
        predicate::str::is_match(shape).unwrap().eval(last),
        "last line: {last}\n{out}"
    );
    for expected in [
        "scenario A (bench-queue-a), max_assignments=1",
        "scenario B (bench-queue-b), max_assignments=2",
        "FOR UPDATE SKIP LOCKED",
        "Execution Time",
    ] {
        assert!(out.contains(expected), "{expected}: {out}");
    }
}
