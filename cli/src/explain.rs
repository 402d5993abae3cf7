//! `docket explain`: the SQL a dialect emits, and optionally the database's plan for it.

use crate::args::{parse_table, store_config};
use crate::backends::{self, Backend};
use crate::error::CliError;
use crate::progress;
use chrono::{SecondsFormat, Utc};
use docket_core::dialect::{Due, Level, LockAndFetch, Rendered, Statements, Value};
use docket_core::store::ListFilter;
use docket_core::{OrderingPolicy, PriorityMode, TableName};

/// Arguments of `docket explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Backend whose dialect to print: postgres, mysql, sqlite, mssql or oracle.
    #[arg(long, value_name = "BACKEND")]
    backend: String,
    /// Render with the priority toggle on.
    #[arg(long)]
    priority: bool,
    /// Print every statement the dialect can emit, not only the due-queries (where the backend
    /// runs the work queue, its statements too: FIFO and a sample custom order, intake, and
    /// the DDL of that order's index).
    #[arg(long)]
    all: bool,
    /// Also print the database's plan for the due-queries (PostgreSQL: EXPLAIN (ANALYZE,
    /// BUFFERS), in a rolled-back transaction; SQLite: EXPLAIN QUERY PLAN; SQL Server:
    /// SHOWPLAN_TEXT; Oracle: EXPLAIN PLAN). The table must be migrated.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// The executions table, optionally schema-qualified.
    #[arg(long, value_name = "TABLE", default_value = TableName::DEFAULT, value_parser = parse_table)]
    table: TableName,
    /// The priority mode to narrate (with --priority; the SQL is the same in every mode).
    #[command(flatten)]
    mode: crate::mode::ModeArgs,
}

/// How a mode uses the per-level statements, one comment line each.
fn narrate(mode: &PriorityMode) -> Vec<String> {
    let mut lines = vec![format!("mode: {}", crate::mode::describe(mode))];
    lines.extend(match mode {
        PriorityMode::Strict => vec![
            "levels highest first, then NULL, until the batch is full; a drained level is \
             skipped until next_at_level says it has a due row"
                .to_owned(),
        ],
        PriorityMode::Weighted(_) => vec![
            "each level with due work keeps a pass (executions received / weight); the batch \
             goes to the lowest pass, unused room to the next lowest: usually one probe a poll"
                .to_owned(),
        ],
        PriorityMode::Aging(_) => vec![
            "the level that can reach the highest effective priority E is probed with the bound \
             execution_time <= now - (E - level) x step (a bind value: same SQL); a short band \
             reads the level's oldest due row and moves down"
                .to_owned(),
        ],
    });
    lines
}

/// The statements that claim due work under a backend's capabilities.
/// The statements a store sends to find and claim due work: with priority on, the levels query
/// and the per-level forms (see `docket_core::dialect::Level`).
fn due_query_names(backend: &dyn Backend, priority: bool) -> Vec<&'static str> {
    let (mut names, due, lock, for_update) = if priority {
        (
            vec!["priority_levels"],
            "due_at_level",
            "lock_and_fetch_at_level",
            "due_for_update_at_level",
        )
    } else {
        (Vec::new(), "due", "lock_and_fetch", "due_for_update")
    };
    names.push(due);
    match backend.dialect().capabilities().lock_and_fetch {
        Some(LockAndFetch::UpdateReturning) => names.push(lock),
        Some(LockAndFetch::SelectThenUpdate) => names.extend([for_update, "claim_keys"]),
        None => {}
    }
    names
}

fn describe(name: &str) -> &'static str {
    match name {
        "due" => "due-query of fetch-and-lock-on-execute: candidates in hand-out order",
        "priority_levels" => {
            "priority on: the levels, highest first (index probes, a skip scan on PostgreSQL)"
        }
        "due_at_level" => "priority on: due candidates of one level, probed highest level first",
        "lock_and_fetch_at_level" => "priority on: lock-and-fetch of one level",
        "next_at_level" => "priority on: when a level found empty next has a due row (cached)",
        "due_for_update_at_level" => "priority on: lock-and-fetch step 1, one level",
        "lock_and_fetch" => "lock-and-fetch: claims a batch in one statement",
        "due_for_update" => "lock-and-fetch, step 1: lock due rows",
        "claim_keys" => "lock-and-fetch, step 2: mark the locked rows picked",
        "item_next_fifo" | "item_next_custom" => {
            "work queue: one-step claim read (sent only where a locking read locks just the rows it returns)"
        }
        "item_list_fifo" => "work queue: list_for; also the two-step claim's unlocked candidate read",
        "item_lock_one" => "work queue, two-step claim: lock one candidate by key",
        "item_insert_rows" => "work-queue intake: many items per statement, in chunks",
        "item_ids_present" => "work-queue intake: which ids of a chunk the table has (names a duplicate)",
        "item_counts" => "work queue: items and open items per task type",
        "item_next_custom_indexed" | "item_list_custom_indexed" | "item_lock_one_indexed" => {
            "work queue: the custom order sorted by its index's generated columns (once `docket index` made them)"
        }
        "create_index" => "custom-order index (`docket index`): the index",
        "index_exists" => "custom-order index: does it exist",
        "drop_index" => "custom-order index (`docket index --drop`): drop it",
        _ if name.starts_with("add_column ") => {
            "custom-order index: a generated column it holds, added first"
        }
        _ if name.starts_with("drop_column ") => "custom-order index: drop a generated column",
        _ if name.starts_with("column_exists ") => "custom-order index: does a generated column exist",
        "insert_many" => "bulk enqueue: many rows per statement, in chunks",
        "delete_versions" => "batched completion: remove finished one-time executions, fenced",
        "update_versions" => "batched completion: reschedule or retry, per-row values, fenced",
        _ => "",
    }
}

fn literal(v: &Value) -> String {
    fn or_null<T>(v: &Option<T>, f: impl Fn(&T) -> String) -> String {
        v.as_ref().map_or_else(|| "NULL".to_owned(), f)
    }
    match v {
        Value::Text(t) => or_null(t, |s| format!("'{}'", s.replace('\'', "''"))),
        Value::Bytes(b) => or_null(b, |b| format!("<{} bytes>", b.len())),
        Value::Timestamp(t) => or_null(t, |t| t.to_rfc3339_opts(SecondsFormat::Micros, true)),
        Value::SmallInt(n) => or_null(n, i16::to_string),
        Value::Int(n) => n.to_string(),
        Value::BigInt(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => format!("<array of {} values>", a.len()),
    }
}

fn print_statement(name: &str, r: &Rendered) -> Result<(), CliError> {
    let about = describe(name);
    if about.is_empty() {
        say!("-- {name}");
    } else {
        say!("-- {name}: {about}");
    }
    let binds: Vec<_> = r.binds.iter().map(literal).collect();
    say!("-- binds: [{}]", binds.join(", "));
    say!("{}", r.sql);
    say!(";");
    Ok(())
}

/// The statements of streaming intake and of indexed custom orders that the backend sends:
/// the multi-row item insert only where the dialect inserts more than one item per statement
/// (Oracle inserts one, with `item_insert`).
fn queue_scale_statements(
    statements: &Statements<'_>,
) -> Result<Vec<(&'static str, Rendered)>, CliError> {
    let mut scale = statements.queue_scale_catalogue()?;
    if statements.item_rows_per_insert() == 1 {
        scale.retain(|(name, _)| *name != "item_insert_rows");
    }
    Ok(scale)
}

/// Runs `docket explain`.
pub fn run(args: &Args) -> Result<(), CliError> {
    let backend = backends::by_name(&args.backend)?;
    if let Some(url) = &args.database_url {
        let of_url = backends::for_url(url)?;
        if of_url.name() != backend.name() {
            return Err(CliError::BackendMismatch {
                backend: backend.name(),
                url: of_url.name(),
            });
        }
    }
    let policy = OrderingPolicy {
        priority: args.priority,
        mode: args.mode.priority_mode()?,
        ..OrderingPolicy::default()
    };
    let statements = Statements::new(backend.dialect(), args.table.clone(), policy);
    say!(
        "-- docket explain: {} dialect, priority {}, table {}",
        backend.name(),
        if args.priority { "on" } else { "off" },
        args.table
    );
    if args.priority {
        for line in narrate(&statements.policy().mode) {
            say!("-- {line}");
        }
    }
    let wanted = due_query_names(backend, args.priority);
    for (name, rendered) in statements.catalogue() {
        if args.all || wanted.contains(&name) {
            print_statement(name, &rendered)?;
        }
    }
    if args.all && backend.dialect().capabilities().work_queue {
        for (name, rendered) in statements.queue_catalogue() {
            print_statement(name, &rendered)?;
        }
        for (name, rendered) in queue_scale_statements(&statements)? {
            print_statement(name, &rendered)?;
        }
        for (name, rendered) in statements.order_index_catalogue()? {
            print_statement(&name, &rendered)?;
        }
    }
    if let Some(url) = &args.database_url {
        explain_on(backend, url, args, &statements, &wanted)?;
    }
    Ok(())
}

/// Plans of the due-queries on a live database, rendered with the clock's now and the task
/// names present in the table (so the plan reflects real data, not the sample arguments).
fn explain_on(
    backend: &dyn Backend,
    url: &str,
    args: &Args,
    statements: &Statements<'_>,
    wanted: &[&str],
) -> Result<(), CliError> {
    let config = store_config(&args.table, args.priority);
    let now = Utc::now();
    let (names, plans) = progress::while_running(
        format!("explaining on {}", backend.name()),
        || -> Result<_, CliError> {
            let store = backend.connect(url, config.clone())?;
            store.check_schema()?;
            let mut names: Vec<String> = store
                .execution_summary()?
                .into_iter()
                .map(|s| s.task_name)
                .collect();
            if names.is_empty() {
                names.push("report".to_owned());
            }
            let limit = 10;
            // The level probed first: the highest priority in the table.
            let top = store
                .execution_list(&ListFilter {
                    limit: Some(1),
                    ..ListFilter::default()
                })?
                .first()
                .and_then(|e| e.priority)
                .map_or(Level::Null, Level::Exactly);
            let level = if args.priority { top } else { Level::Any };
            let stmts: Vec<(&str, Rendered)> = wanted
                .iter()
                .filter_map(|w| match *w {
                    "priority_levels" => Some((*w, statements.priority_levels(None))),
                    "due" | "due_at_level" => {
                        Some((*w, statements.due(&Due::new(level, now, &names, limit))))
                    }
                    "lock_and_fetch" | "lock_and_fetch_at_level" => Some((
                        *w,
                        statements
                            .lock_and_fetch(&Due::new(level, now, &names, limit), "docket-explain"),
                    )),
                    "due_for_update" | "due_for_update_at_level" => Some((
                        *w,
                        statements.due_for_update(&Due::new(level, now, &names, limit)),
                    )),
                    _ => None,
                })
                .collect();
            let rendered: Vec<Rendered> = stmts.iter().map(|(_, r)| r.clone()).collect();
            let plans = backend.explain(url, config.clone(), &rendered)?;
            Ok((stmts.into_iter().map(|(n, _)| n).collect::<Vec<_>>(), plans))
        },
    )?;
    for (name, plan) in names.iter().zip(plans) {
        say!(
            "-- {} of {name} (now, task names in the table):",
            backend.plan_label()
        );
        for line in plan {
            say!("--   {line}");
        }
    }
    Ok(())
}
