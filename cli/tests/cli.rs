//! The `docket` binary end to end, on SQLite (a temporary file) and PostgreSQL (a fresh schema
//! on the compat suite's server: `DOCKET_POSTGRES_URL` or a throwaway one).

mod common;

use assert_cmd::Command;
use chrono::{Duration, Utc};
use common::{docket, migrate_all, sqlite_url, PgSchema, SQLITE_FILE};
use docket_compat_tests::{backends, cases, Harness, Toggle};
use docket_core::{
    Adopted, QueueConfig, SchedulerClient, Store, StoreConfig, TaskDescriptor, WorkQueue,
};
use predicates::prelude::*;
use predicates::str::contains;
use std::sync::Arc;

const WORK: TaskDescriptor = TaskDescriptor::new("work");
const OTHER: TaskDescriptor = TaskDescriptor::new("other");

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
    for command in [
        "migrate", "queue", "enqueue", "index", "explain", "demo", "limits",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} missing from:\n{help}"
        );
    }
}

#[test]
fn demo_runs_a_scheduler_and_explains_the_order() {
    let out = stdout_of(docket().arg("demo").env_remove("DOCKET_POSTGRES_URL"));
    for said in [
        "hand-out order",
        "higher priority goes first",
        "exponential backoff",
        "none was claimed twice",
    ] {
        assert!(out.contains(said), "{said:?} in {out}");
    }
    // The narration states the claim size the scheduler runs with: no poll claims more.
    let number_after = |text: &str, word: &str| -> Vec<usize> {
        text.split(word)
            .skip(1)
            .filter_map(|rest| {
                rest.split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse()
                    .ok()
            })
            .collect()
    };
    let most = number_after(&out, "claims up to ");
    let claimed = number_after(&out, "claimed ");
    assert_eq!(most.len(), 1, "{out}");
    assert!(!claimed.is_empty(), "{out}");
    assert!(
        claimed.iter().all(|n| *n <= most[0]),
        "{claimed:?} > {most:?}: {out}"
    );
}

#[test]
fn demo_fair_narrates_when_each_mode_serves_the_low_level() {
    docket()
        .args(["demo", "--fair"])
        .assert()
        .success()
        .stdout(contains("never handed out in 100 s"))
        .stdout(contains("handed out at 2 s: level 10 (weight 10)"))
        .stdout(contains(
            "handed out at 81 s: after 81 s due its effective priority was 91",
        ));
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
    assert!(!dir.path().join(SQLITE_FILE).exists(), "nothing was opened");
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
        pg.contains(
            "AND priority = ANY($5) AND task_name NOT IN (SELECT task_name FROM \"scheduled_tasks_paused\") \
             AND task_name NOT IN (SELECT task_name FROM \"scheduled_tasks_limits\") ORDER BY priority DESC NULLS LAST, execution_time ASC LIMIT $6"
        ),
        "{pg}"
    );
    // The claim names the rows its subquery locked by address (PostgreSQL's `lock_and_fetch`).
    assert!(pg.contains("FOR UPDATE SKIP LOCKED)) RETURNING"), "{pg}");
    let all_pg =
        stdout_of(docket().args(["explain", "--backend", "postgres", "--priority", "--all"]));
    assert!(
        all_pg.contains("ORDER BY priority DESC NULLS LAST, execution_time ASC LIMIT $5"),
        "the single ordered statement (fallback) is in --all\n{all_pg}"
    );
    let lite = stdout_of(docket().args(["explain", "--backend", "sqlite", "--priority"]));
    // Elsewhere the levels are read one index probe at a time, highest first.
    assert!(lite.contains("SELECT MAX(priority) AS \"level\""), "{lite}");
    assert!(
        lite.contains(
            "AND priority = ? AND task_name NOT IN (SELECT task_name FROM \"scheduled_tasks_paused\") \
             AND task_name NOT IN (SELECT task_name FROM \"scheduled_tasks_limits\") ORDER BY execution_time ASC LIMIT ?"
        ),
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
    // After the 16 work-queue statements: intake (the multi-row insert, the id check, the
    // counts) and the sample custom order's index (create, exists, drop); where the index is on
    // generated columns (MySQL, SQLite) the 3 queries that sort by them and, per column (4),
    // its add and drop, and one column check.
    for (backend, scale, index) in [("postgres", 3, 3), ("mysql", 6, 12), ("sqlite", 6, 12)] {
        let all =
            stdout_of(docket().args(["explain", "--backend", backend, "--all", "--priority"]));
        let statements: Vec<&str> = all
            .split("\n;\n")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        // 47 statements (5 for held-back poison rows and adopting a table, 1 for the server's
        // clock, 4 for bulk enqueue,
        // with and without skipping existing keys, and batched completion, 3 for the paged
        // dead executions and their counts, batched heartbeats and the read of their reach, 7 for paused tasks (the bounded page, its count and the
        // lookup by name among them), 8 for the
        // lag read), plus the levels queries (all levels, and those
        // below a level), 6 per-level forms and the next-due probe of a drained level with
        // priority on, then the 16 work-queue statements (2 for items with their
        // assignments) and, priority on, the queue's 2 level statements (its levels, a claim
        // at one level). Then the 18 of limits (their rows, a limited task's claim, the check
        // of a task left at its limit, and the ordinary claim task by task).
        assert_eq!(statements.len(), 56 + 18 + 16 + 2 + scale + index, "{all}");
        assert!(all.ends_with("\n;\n"));
        for s in statements {
            let sql = s.lines().last().unwrap();
            assert!(
                // `(SELECT ...) UNION ALL (...)`: a claim by task.
                ["SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "ALTER", "CREATE", "DROP", "("]
                    .iter()
                    .any(|k| sql.starts_with(k)),
                "{backend}: {sql}"
            );
        }
        assert!(all.contains("-- item_insert_rows"), "{all}");
        assert!(all.contains("-- create_index"), "{all}");
    }
}

#[test]
fn explain_on_a_sqlite_file_prints_the_query_plan() {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir);
    migrate_all(&url);
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
    migrate_all(&url);
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

/// Runs a command that must fail; returns its stderr and how long it took.
fn failing(args: &[&str]) -> (String, std::time::Duration) {
    let started = std::time::Instant::now();
    let out = docket().args(args).assert().failure().get_output().clone();
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

/// A permanent connection error is reported with the driver's own words, at once, not after
/// the pool's 30 s connection timeout as "timed out waiting for connection". (The bound is a
/// correctness check, far above the few milliseconds it takes.)
#[test]
fn permanent_connection_errors_fail_fast_in_the_drivers_words() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("sqlite://{}/no/such/dir/x.db", dir.path().display());
    for (url, words) in [
        ("postgres://x@127.0.0.1:1/db", "Connection refused"),
        (
            "postgres://x@no-such-host.invalid/db",
            "no-such-host.invalid",
        ),
        ("mysql://x@127.0.0.1:1/db", "127.0.0.1"),
        (missing.as_str(), "Unable to open the database file"),
    ] {
        let (stderr, took) = failing(&["migrate", "--database-url", url]);
        assert!(stderr.contains("connection failed"), "{url}: {stderr}");
        assert!(stderr.contains(words), "{url}: {stderr}");
        assert!(!stderr.contains("timed out"), "{url}: {stderr}");
        assert!(took < std::time::Duration::from_secs(10), "{url}: {took:?}");
    }
}

/// An unknown database and an unknown role on a live server fail as fast, naming them.
#[test]
fn postgres_unknown_database_and_role_fail_fast() {
    let admin = docket_compat_tests::servers::postgres::SERVER
        .admin_url()
        .unwrap_or_else(|e| panic!("NOT RUN: postgres: {e}"))
        .to_owned();
    let (base, query) = admin.split_once('?').unwrap_or((&admin, ""));
    let (server, _db) = base.rsplit_once('/').unwrap();
    let query = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    let no_db = format!("{server}/docket_no_such_db{query}");
    let (scheme, rest) = server.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let no_role = format!("{scheme}://docket_no_such_role@{host}/postgres{query}");
    for (url, words) in [
        (no_db.as_str(), "\"docket_no_such_db\" does not exist"),
        (no_role.as_str(), "docket_no_such_role"),
    ] {
        let (stderr, took) = failing(&["migrate", "--database-url", url]);
        assert!(stderr.contains("connection failed"), "{url}: {stderr}");
        assert!(stderr.contains(words), "{url}: {stderr}");
        assert!(took < std::time::Duration::from_secs(10), "{url}: {took:?}");
    }
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

/// SQL Server reads an unindexed custom order's keys with `OPENJSON`, and an order index holds
/// computed columns of `JSON_VALUE` expressions (SQL Server cannot index a computed column
/// holding `OPENJSON`; docs/DESIGN.md, "SQL Server and Oracle").
#[test]
fn explain_all_prints_sql_server_and_oracle_dialects() {
    // After the 16 work-queue statements: SQL Server's intake (3), its queries sorting by the
    // index's computed columns (3) and the index DDL (4 columns added and dropped, create,
    // exists, drop, a column check); Oracle's intake without the multi-row insert (it inserts
    // one item per statement, 2) and its function-based index (create, exists, drop).
    // SQL Server reads an unindexed custom order's keys with OPENJSON (the work queue's design),
    // an indexed one from computed JSON_VALUE columns; Oracle with JSON_VALUE only.
    for (backend, marker, custom_key, index_ddl, queue, openjson) in [
        (
            "mssql",
            "WITH (UPDLOCK, READPAST, ROWLOCK)",
            "TRY_CAST(j.k1 AS DECIMAL(38, 10))",
            "AS (CONVERT(VARBINARY(256), CONVERT(VARCHAR(256), JSON_VALUE(custom_attributes, '$.\"team\"')",
            16 + 6 + 12,
            true,
        ),
        (
            "oracle",
            "FOR UPDATE SKIP LOCKED",
            "JSON_VALUE(custom_attributes, '$.\"team\".stringOnly()' RETURNING VARCHAR2(1000))",
            "(JSON_VALUE(custom_attributes, '$.\"score\".number()' RETURNING NUMBER)) DESC",
            16 + 2 + 3,
            false,
        ),
    ] {
        for priority in [false, true] {
            let mut args = vec!["explain", "--backend", backend, "--all"];
            if priority {
                args.push("--priority");
            }
            let all = stdout_of(docket().args(&args));
            let statements = all.split("\n;\n").filter(|s| !s.trim().is_empty()).count();
            // Priority on: the scheduler's 9 level statements and the queue's 2.
            // 15 of them the paused-task and lag statements, 1 the server's clock; 18 more
            // the limits'.
            assert_eq!(statements, (if priority { 56 + 2 } else { 47 }) + 18 + queue, "{all}");
            assert!(all.contains(marker), "{all}");
            for name in [
                "-- item_next_custom",
                "-- item_lock_one",
                "-- item_claim",
                "-- assignment_finish",
                "-- item_ids_present",
                "-- item_counts",
                "-- create_index",
                "-- index_exists",
                "-- drop_index",
            ] {
                assert!(all.contains(name), "{backend}: {name}\n{all}");
            }
            assert!(all.contains(custom_key), "{all}");
            assert!(all.contains(index_ddl), "{all}");
            assert_eq!(
                all.contains("OUTER APPLY OPENJSON(i.custom_attributes) WITH ("),
                openjson,
                "{all}"
            );
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

/// `docket bench KIND --backend BACKEND --database-url URL MORE...`, which must succeed; its
/// standard output.
fn bench(kind: &str, backend: &str, url: &str, more: &[&str]) -> String {
    stdout_of(
        docket()
            .args(["bench", kind, "--backend", backend, "--database-url", url])
            .args(more),
    )
}

/// `docket bench priority` at a tiny scale: its code paths run and its last line keeps the
/// summary's shape (figures are for benchmarks, never asserted here). A second run with
/// `--reuse` keeps the future rows the first run (`--keep`) left.
fn bench_summary(backend: &str, url: &str) {
    let first = bench_run(backend, url, &["--keep"]);
    assert!(first.contains("(loaded in full)"), "{first}");
    assert!(
        first.contains("one poll, batch 8 = lock-and-fetch's claim"),
        "{first}"
    );
    let second = bench_run(backend, url, &["--reuse"]);
    assert!(
        second.contains("(future rows of the kept table reused, due rows loaded afresh)"),
        "{second}"
    );
}

fn bench_run(backend: &str, url: &str, more: &[&str]) -> String {
    let mut args = vec![
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
        "--mode",
        "weighted",
        "--fair-polls",
        "20",
    ];
    args.extend(more);
    let out = bench("priority", backend, url, &args);
    // The fairness run drives the clock by hand: the weighted bound holds exactly.
    let fairness = "(?m)^fairness backend=\\w+ mode=Weighted low_share=\\d\\.\\d{3} \
                    low_first_poll=\\d+ low_longest_wait_s=\\d+ wait_bound_s=2 within_bound=true$";
    assert!(
        predicate::str::is_match(fairness).unwrap().eval(&out),
        "no fairness line:\n{out}"
    );
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
    out
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
    let out = bench(
        "queue",
        "postgres",
        &space.url(),
        &["--items", "300", "--worked", "100", "--calls", "3"],
    );
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

/// `docket bench latency` at a tiny scale: the worker process starts, every job is picked up
/// (a job that never starts fails the run), and the table has a line per phase (figures are
/// for benchmarks, never asserted here).
fn bench_latency(backend: &str, url: &str) {
    let out = bench(
        "latency",
        backend,
        url,
        &[
            "--idle-jobs",
            "3",
            "--spacing-ms",
            "10",
            "--load-rate",
            "20",
            "--load-seconds",
            "1",
            "--quiet-seconds",
            "0",
        ],
    );
    let system = format!("docket ({backend})");
    for (phase, jobs) in [("idle", 3), ("load", 20)] {
        let shape = format!(r"(?m)^{} +{phase} +{jobs} +\d", regex_escape(&system));
        assert!(
            predicate::str::is_match(shape).unwrap().eval(&out),
            "{phase}: {out}"
        );
    }
    assert!(out.contains("statements/s"), "{out}");
}

fn regex_escape(text: &str) -> String {
    text.replace('(', r"\(").replace(')', r"\)")
}

#[test]
fn sqlite_bench_latency_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    bench_latency("sqlite", &sqlite_url(&dir));
}

#[test]
fn postgres_bench_latency_prints_the_table() {
    let space = PgSchema::new();
    bench_latency("postgres", &space.url());
}

/// `docket bench throughput --processes 1,2` at a tiny scale: both process counts drain the
/// table, every job exactly once (checked by the run), one line each.
#[test]
fn sqlite_bench_throughput_by_processes_prints_a_line_per_count() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench(
        "throughput",
        "sqlite",
        &sqlite_url(&dir),
        &["--jobs", "200", "--processes", "1,2"],
    );
    for n in [1, 2] {
        let shape = format!(r"(?m)^ +{n} +\d+ +\d+\.\d\d +\d+\.\d{{3}}");
        assert!(
            predicate::str::is_match(shape).unwrap().eval(&out),
            "{n} processes: {out}"
        );
    }
}

#[test]
fn sqlite_bench_limits_prints_each_phase_and_the_ratios() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench(
        "limits",
        "sqlite",
        &sqlite_url(&dir),
        &["--jobs", "200", "--backlog", "50", "--rounds", "2"],
    );
    // Two rounds, the second in reverse order, each phase on a fresh table (the limits table
    // of the phase before dropped with it), every check passed.
    for phase in [
        "a baseline",
        "b beside limited",
        "c limited max_running",
        "d limited per key",
    ] {
        let line = format!(r"(?m)^round 2 {phase} +\d+ jobs/s");
        assert!(
            predicate::str::is_match(line).unwrap().eval(&out),
            "{phase}: {out}"
        );
    }
    let summary =
        r"(?m)^summary backend=sqlite rounds=2 beside_over_baseline=\d+\.\d\d,\d+\.\d\d \(median";
    assert!(
        predicate::str::is_match(summary).unwrap().eval(&out),
        "{out}"
    );
}

/// Writes a CSV file into `dir`; returns its path.
fn csv_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// `docket enqueue --database-url URL --task T --csv FILE`, for more arguments to follow.
fn enqueue_cmd(url: &str, task: &str, csv: &str) -> Command {
    let mut cmd = docket();
    cmd.args([
        "enqueue",
        "--database-url",
        url,
        "--task",
        task,
        "--csv",
        csv,
    ]);
    cmd
}

/// `docket queue --database-url URL --worker W --task T`: what `worker` would get next.
fn worker_queue_cmd(url: &str, worker: &str, task: &str) -> Command {
    let mut cmd = docket();
    cmd.args([
        "queue",
        "--database-url",
        url,
        "--worker",
        worker,
        "--task",
        task,
    ]);
    cmd
}

/// `docket queue --worker W --task T --json`: the listed items, in order.
fn worker_queue(url: &str, worker: &str, task: &str) -> Vec<serde_json::Value> {
    let out = stdout_of(worker_queue_cmd(url, worker, task).arg("--json"));
    serde_json::from_str::<serde_json::Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn item_ids(items: &[serde_json::Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["item"].as_str().unwrap().to_owned())
        .collect()
}

/// Record dates present sort by date, missing ones are the batch's start time, ties go by
/// record order (the row).
const GOOD_CSV: &str = "\
record_date,text,score
2020-03-11T10:15:55.935,a,1
,missing-a,2
2020-03-11T10:15:55,b,3
2019-01-01T00:00:00,c,4
,missing-b,
2020-03-11T10:15:55.935,\"same date, later row\",6
2999-01-01T00:00:00,future,7
";

#[test]
fn postgres_enqueue_csv_then_list_for_a_worker() {
    let space = PgSchema::new();
    let url = space.url();
    let dir = tempfile::tempdir().unwrap();
    let good = csv_file(&dir, "good.csv", GOOD_CSV);
    migrate_all(&url);

    let before = Utc::now();
    enqueue_cmd(&url, "label", &good)
        .args(["--batch", "b1", "--max-assignments", "2"])
        .assert()
        .success()
        .stdout(contains(
            "enqueued 7 items of task label as batch b1 (max assignments 2)",
        ));
    let after = Utc::now();

    let items = worker_queue(&url, "w1", "label");
    assert_eq!(
        item_ids(&items),
        ["b1/4", "b1/3", "b1/1", "b1/6", "b1/2", "b1/5", "b1/7"]
    );
    assert_eq!(
        items[0]["record"],
        serde_json::json!({"hitOrder": 4, "hitOrderDate": "2019-01-01T00:00:00.000"})
    );
    assert_eq!(items[3]["attributes"]["text"], "same date, later row");
    assert_eq!(
        items[5]["attributes"],
        serde_json::json!({"text": "missing-b"})
    );
    // A missing record date is the batch's start time.
    let start = items[4]["record"]["hitOrderDate"].as_str().unwrap();
    let start = docket_core::queue::parse_record_date(start).unwrap();
    assert!(
        before - Duration::milliseconds(1) <= start && start <= after,
        "{start}"
    );
    assert_eq!(
        items[4]["record"]["hitOrderDate"],
        items[5]["record"]["hitOrderDate"]
    );
    assert_eq!(
        (
            &items[4]["record"]["hitOrder"],
            &items[5]["record"]["hitOrder"]
        ),
        (&2.into(), &5.into())
    );
    assert!(items
        .iter()
        .all(|i| i["assignments"] == 0 && i["max_assignments"] == 2));

    let table = stdout_of(worker_queue_cmd(&url, "w1", "label").args(["--limit", "3"]));
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with('#')
            && lines[0].contains("RECORD")
            && lines[0].contains("ASSIGNMENTS"),
        "{table}"
    );
    assert!(
        lines[1].contains("b1/4")
            && lines[1].contains(r#"{"hitOrder":4,"hitOrderDate":"2019-01-01T00:00:00.000"}"#)
            && lines[1].ends_with("0/2"),
        "{table}"
    );
    assert!(lines[3].contains("b1/1"), "{table}");
    assert!(
        table.contains("3 items for worker w1, in hand-out order: record date, then record order"),
        "{table}"
    );
    // Listing claims nothing: another worker and w1 again see the same.
    assert_eq!(item_ids(&worker_queue(&url, "w2", "label")).len(), 7);
    assert_eq!(item_ids(&worker_queue(&url, "w1", "label"))[0], "b1/4");

    // The same batch again: the ids exist, the whole batch fails, nothing is added.
    enqueue_cmd(&url, "label", &good)
        .args(["--batch", "b1"])
        .assert()
        .failure()
        .stderr(contains(
            "CSV line 2, column \"id\": item id \"b1/1\" already exists",
        ));
    assert_eq!(worker_queue(&url, "w1", "label").len(), 7);

    // Without --batch the batch id is the start time, compactly.
    let out = stdout_of(docket().args([
        "enqueue",
        "--database-url",
        &url,
        "--task",
        "other",
        "--csv",
        &good,
    ]));
    let batch = out.trim().rsplit(" as batch ").next().unwrap();
    let batch = batch.split(' ').next().unwrap();
    assert!(
        predicate::str::is_match(r"^\d{8}T\d{6}\.\d{3}Z$")
            .unwrap()
            .eval(batch),
        "{out}"
    );
    assert_eq!(
        item_ids(&worker_queue(&url, "w1", "other"))[0],
        format!("{batch}/4")
    );
}

#[test]
fn postgres_malformed_csv_names_line_and_column_and_inserts_nothing() {
    let (_space, url, dir) = migrated_pg_and_dir();
    let enqueue = |file: &str| enqueue_cmd(&url, "label", file).assert();
    // Row 3 starts on line 5: row 1's quoted text spans two lines.
    let bad_date = csv_file(
        &dir,
        "bad-date.csv",
        "record_date,text\n\
         2020-01-01T00:00:00,\"fine\nstill fine\"\n\
         ,missing\n\
         2020-13-01T00:00:00,bad month\n\
         2020-01-02T00:00:00,never read\n",
    );
    enqueue(&bad_date)
        .failure()
        .stderr(contains("CSV line 5, column \"record_date\""))
        .stderr(contains("YYYY-MM-DDThh:mm:ss"));
    let short_row = csv_file(&dir, "short.csv", "text,score\na,1\nb\n");
    enqueue(&short_row)
        .failure()
        .stderr(contains("CSV line 3, column \"score\": expected 2 fields"));
    let bad_header = csv_file(&dir, "header.csv", "text,\"x;drop\"\na,1\n");
    enqueue(&bad_header).failure().stderr(contains(
        "CSV line 1, column \"x;drop\": invalid attribute name",
    ));
    // Nothing of any of them was inserted.
    worker_queue_cmd(&url, "w1", "label")
        .assert()
        .success()
        .stdout(contains("nothing of label for worker w1"));
    assert!(worker_queue(&url, "w1", "label").is_empty());

    enqueue(&dir.path().join("absent.csv").display().to_string())
        .failure()
        .stderr(contains("cannot read").and(contains("absent.csv")));
    let good = csv_file(&dir, "good.csv", GOOD_CSV);
    enqueue_cmd(&url, "label", &good)
        .args(["--max-assignments", "0"])
        .assert()
        .failure()
        .stderr(contains("--max-assignments").and(contains("0 is not in 1..")));
    docket()
        .args(["queue", "--database-url", &url, "--worker", "w1"])
        .assert()
        .failure()
        .stderr(contains("--task"));
    assert!(worker_queue(&url, "w1", "label").is_empty());
}

#[test]
fn postgres_enqueue_reads_standard_input_and_the_library_shares_the_parser() {
    let space = PgSchema::new();
    let url = space.url();
    migrate_all(&url);
    docket()
        .args([
            "enqueue",
            "--database-url",
            &url,
            "--task",
            "piped",
            "--csv",
            "-",
            "--batch",
            "in",
        ])
        .write_stdin("id,text\nfirst,x\n,y\n")
        .assert()
        .success()
        .stdout(contains("enqueued 2 items of task piped as batch in"));
    assert_eq!(
        item_ids(&worker_queue(&url, "w", "piped")),
        ["first", "in/2"]
    );
    let queue = WorkQueue::new(pg_store(&url, false), QueueConfig::default()).unwrap();
    let n = queue
        .enqueue_csv("id,text\nlib-1,x\n".as_bytes(), "lib", 3, None)
        .unwrap();
    assert_eq!(n, 1);
    let items = worker_queue(&url, "w", "lib");
    assert_eq!(item_ids(&items), ["lib-1"]);
    assert_eq!(items[0]["max_assignments"], 3);
    let err = queue
        .enqueue_csv("id\nlib-2\n\nlib-2\n".as_bytes(), "lib", 1, None)
        .unwrap_err();
    assert!(
        err.to_string().contains("CSV line 4, column \"id\""),
        "{err}"
    );
    assert_eq!(worker_queue(&url, "w", "lib").len(), 1);
}

#[test]
fn postgres_enqueue_and_list_in_a_custom_order() {
    let (_space, url, dir) = migrated_pg_and_dir();
    let order = "team,score:number:desc";
    let file = csv_file(
        &dir,
        "teams.csv",
        "id,team,score\nb-1,b,1\na-9,a,9\nnone,,5\na-10,a,10\nbad-later,a,\n",
    );
    let with_order = |args: &[&str]| {
        let mut cmd = docket();
        cmd.args(args)
            .args(["--database-url", &url, "--order", order]);
        cmd
    };
    with_order(&["enqueue", "--task", "t", "--csv", &file])
        .assert()
        .success();
    let listed = stdout_of(&mut with_order(&[
        "queue", "--worker", "w", "--task", "t", "--json",
    ]));
    let items: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    // Numbers compare as numbers (CSV cells are normalized for the number key), missing last.
    assert_eq!(
        item_ids(&items),
        ["a-10", "a-9", "bad-later", "b-1", "none"]
    );
    // FIFO (no --order) lists the same items by row.
    assert_eq!(
        item_ids(&worker_queue(&url, "w", "t")),
        ["b-1", "a-9", "none", "a-10", "bad-later"]
    );
    let not_a_number = csv_file(&dir, "nan.csv", "id,team,score\nx,a,lots\n");
    with_order(&["enqueue", "--task", "t", "--csv", &not_a_number])
        .assert()
        .failure()
        .stderr(contains("CSV line 2").and(contains("not a number")));
    worker_queue_cmd(&url, "w", "t")
        .args(["--order", "score:int"])
        .assert()
        .failure()
        .stderr(contains("score:int").and(contains("not text, number or timestamp")));
}

/// CSV cells enqueued without `--order` are stored as text (`{"score":"2"}`); `queue --order
/// score:number:desc` still hands them out as numbers (3, 2, 1), as OPENJSON's typed columns
/// read them, on every live backend.
#[test]
fn custom_order_over_csv_text_reads_numbers() {
    for harness in [
        &backends::Postgres as &dyn docket_compat_tests::Harness,
        &backends::Mysql,
        &backends::Sqlite,
    ] {
        let space = harness.space();
        let url = space.url();
        migrate_all(&url);
        let dir = tempfile::tempdir().unwrap();
        let file = csv_file(
            &dir,
            "s.csv",
            "id,score\none,1\nthree,3\nword,lots\ntwo,2\n",
        );
        enqueue_cmd(&url, "t", &file).assert().success();
        let listed = stdout_of(worker_queue_cmd(&url, "w", "t").args([
            "--order",
            "score:number:desc",
            "--json",
        ]));
        let items: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
        assert_eq!(
            item_ids(&items),
            ["three", "two", "one", "word"],
            "{}",
            harness.name()
        );
    }
}

/// A fresh, fully migrated PostgreSQL schema, its URL, and a temporary directory for files.
fn migrated_pg_and_dir() -> (PgSchema, String, tempfile::TempDir) {
    let space = PgSchema::new();
    let url = space.url();
    migrate_all(&url);
    (space, url, tempfile::tempdir().unwrap())
}

/// A file of several chunks is one transaction: a bad row on its last line, or an id used
/// again thousands of rows later (past the reader's window: the database finds it), inserts
/// nothing and names the line; the good file goes in whole. `docket queue` then lists the
/// executions only and counts the items; `docket index` serves the custom order.
#[test]
fn postgres_enqueue_streams_a_large_file_all_or_nothing() {
    let (_space, url, dir) = migrated_pg_and_dir();
    let rows = 20_000;
    let mut text = String::from("id,team,score\n");
    for i in 1..=rows {
        text.push_str(&format!("r{i},t{},{}\n", i % 7, i % 100));
    }
    let order = "team,score:number:desc";
    let enqueue = |file: &str| {
        let mut cmd = enqueue_cmd(&url, "big", file);
        cmd.args(["--order", order]);
        cmd
    };
    let last_line = rows + 2;
    let bad_last = csv_file(&dir, "bad-last.csv", &format!("{text}late,t1,lots\n"));
    enqueue(&bad_last)
        .assert()
        .failure()
        .stderr(contains(format!(
            "CSV line {last_line}, column \"score\": not a number"
        )));
    // PostgreSQL ends the transaction at the duplicate key, before the row can be named: the
    // error names the lines of the chunk (10,000-row inserts: rows 10001..20000 are one
    // chunk, so a repeat on the line before the last names lines 10002 to 20001).
    let mut repeated_text = text.clone();
    repeated_text.insert_str(text.rfind("r20000,").unwrap(), "r2,t1,1\n");
    let repeated = csv_file(&dir, "repeated.csv", &repeated_text);
    enqueue(&repeated).assert().failure().stderr(contains(
        "CSV line 10002, column \"id\": an item id on lines 10002 to 20001 repeats one \
             given more than 16384 rows earlier in this file; nothing was inserted",
    ));
    // Within the reader's window the error names both lines.
    let near = csv_file(&dir, "near.csv", &format!("{text}r{rows},t1,1\n"));
    enqueue(&near).assert().failure().stderr(contains(format!(
        "CSV line {last_line}, column \"id\": duplicate item id \"r{rows}\" (first on line {})",
        last_line - 1
    )));
    assert!(
        worker_queue(&url, "w", "big").is_empty(),
        "nothing inserted"
    );

    let good = csv_file(&dir, "good.csv", &text);
    enqueue(&good)
        .assert()
        .success()
        .stdout(contains(format!("enqueued {rows} items of task big")));
    SchedulerClient::new(pg_store(&url, false))
        .unwrap()
        .schedule(
            WORK.instance("due-now")
                .scheduled_to(Utc::now() - Duration::seconds(1)),
        )
        .unwrap();
    let listed = stdout_of(docket().args(["queue", "--database-url", &url]));
    assert!(listed.contains("due-now"), "{listed}");
    assert!(
        !listed.contains("r1 "),
        "items are not executions: {listed}"
    );
    assert!(
        listed.contains(&format!(
            "the table also holds {rows} work-queue items ({rows} open) of task type(s) big"
        )),
        "{listed}"
    );
    let json = stdout_of(docket().args(["queue", "--database-url", &url, "--json"]));
    assert_eq!(instances(&json), ["due-now"]);

    let list =
        || stdout_of(worker_queue_cmd(&url, "w", "big").args(["--order", order, "--limit", "2"]));
    let before = list();
    assert!(before.contains("custom order not indexed"), "{before}");
    assert!(
        before.contains(
            "in hand-out order: team (text, ascending, missing last), then score (number, \
             descending, missing last), then record date, then record order"
        ),
        "{before}"
    );
    let index = |extra: &[&str]| {
        let mut cmd = docket();
        cmd.args([
            "index",
            "--database-url",
            &url,
            "--task",
            "big",
            "--order",
            order,
        ])
        .args(extra);
        stdout_of(&mut cmd)
    };
    let created = index(&[]);
    assert!(created.contains("CREATE INDEX"), "{created}");
    assert!(
        created.contains("created index scheduled_tasks_ord_"),
        "{created}"
    );
    assert!(index(&[]).contains("exists already: nothing to do"));
    let after = list();
    assert!(
        after.contains("custom order served by index scheduled_tasks_ord_"),
        "{after}"
    );
    let items = |out: &str| {
        out.lines()
            .skip(1)
            .take(2)
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        items(&before),
        items(&after),
        "the same items, in the same order"
    );
    assert!(
        before.contains(" r399 "),
        "t0 first, then the highest score: {before}"
    );
    let dropped = index(&["--drop"]);
    assert!(dropped.contains("DROP INDEX"), "{dropped}");
    assert!(dropped.contains("dropped index"), "{dropped}");
    assert!(index(&["--drop"]).contains("nothing to drop"));
}

#[test]
fn postgres_work_queue_commands_before_0004_name_the_migration() {
    let space = PgSchema::new();
    let url = space.url();
    let dir = tempfile::tempdir().unwrap();
    let good = csv_file(&dir, "good.csv", GOOD_CSV);
    docket()
        .args(["migrate", "--database-url", &url, "--to", "0003_ordering"])
        .assert()
        .success()
        .stdout(contains("applied 0003_ordering").and(contains("0004").not()));
    enqueue_cmd(&url, "label", &good)
        .assert()
        .failure()
        .stderr(contains("lacks migration 0004_work_queue"));
    worker_queue_cmd(&url, "w1", "label")
        .assert()
        .failure()
        .stderr(contains("lacks migration 0004_work_queue"));
    // The executions listing does not need it.
    docket()
        .args(["queue", "--database-url", &url])
        .assert()
        .success();
}

/// `docket migrate --adopt` on `space`, its printed lines read back.
fn adopt_with_the_binary(space: &dyn docket_compat_tests::Space, to: Option<&str>) -> Adopted {
    let url = space.url();
    let mut cmd = docket();
    cmd.args(["migrate", "--adopt", "--database-url", &url]);
    if let Some(to) = to {
        cmd.args(["--to", to]);
    }
    let out = stdout_of(&mut cmd);
    let mut done = Adopted::default();
    for line in out.lines() {
        let word = |prefix: &str| {
            line.strip_prefix(prefix)
                .map(|rest| rest.split(' ').next().unwrap_or_default().to_owned())
        };
        if let Some(v) = word("adopted ") {
            done.adopted.push(v);
        } else if let Some(v) = word("created index ") {
            done.created_indexes.push(v);
        } else if let Some(v) = word("applied ") {
            done.applied.push(v);
        } else {
            assert!(line.contains("up to date"), "unexpected output: {line}");
        }
    }
    done
}

/// The issue's adoption flow with the binary: a db-scheduler table adopted by
/// `docket migrate --adopt`, then docket schedulers run every row of their tasks.
fn adopt_db_scheduler_table_with_the_cli(harness: &dyn docket_compat_tests::Harness) {
    for toggle in [Toggle::Off, Toggle::On] {
        cases::db_scheduler::adoption_flow(harness, toggle, &adopt_with_the_binary);
    }
}

#[test]
fn postgres_migrate_adopt_takes_over_a_db_scheduler_table() {
    adopt_db_scheduler_table_with_the_cli(&backends::Postgres);
}

#[test]
fn mysql_migrate_adopt_takes_over_a_db_scheduler_table() {
    adopt_db_scheduler_table_with_the_cli(&backends::Mysql);
}

#[test]
fn sqlite_migrate_adopt_takes_over_a_db_scheduler_table() {
    adopt_db_scheduler_table_with_the_cli(&backends::Sqlite);
}

#[test]
fn migrate_adopt_names_the_incompatible_column() {
    let space = backends::Sqlite.space();
    let foreign = space.foreign();
    foreign
        .batch("CREATE TABLE scheduled_tasks (task_name TEXT, task_instance TEXT)")
        .unwrap();
    docket()
        .args(["migrate", "--adopt", "--database-url", &space.url()])
        .assert()
        .failure()
        .stderr(contains("cannot be adopted: column task_data is missing"));
}

/// Plain `migrate` on a table made by db-scheduler's DDL (no docket history) names `--adopt`
/// and changes nothing; `--adopt` then takes the table over.
#[test]
fn migrate_on_a_db_scheduler_table_names_adopt() {
    for harness in [
        &backends::Postgres as &dyn docket_compat_tests::Harness,
        &backends::Mysql,
        &backends::Sqlite,
    ] {
        let space = harness.space();
        docket_compat_tests::harness::create_db_scheduler_table(&*space, &*space.foreign(), false);
        docket()
            .args(["migrate", "--database-url", &space.url()])
            .assert()
            .failure()
            .stderr(contains("docket migrate --adopt"));
        let applied =
            stdout_of(docket().args(["migrate", "--adopt", "--database-url", &space.url()]));
        assert!(
            applied.contains("adopted 0001_base@scheduled_tasks"),
            "{applied}"
        );
    }
}
