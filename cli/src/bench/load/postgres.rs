//! Test data and cost measurement for `docket bench priority` and `docket bench queue` (tooling,
//! not the scheduler). Rows are generated server-side with `generate_series`, in chunks so the
//! caller can show progress; costs are read from `EXPLAIN (ANALYZE, BUFFERS)`.

use docket_core::dialect::{Rendered, SqlWriter, Value};
use docket_core::ident::TableName;
use docket_core::store::sql::SqlSession;
use docket_core::{StoreError, StoreInfo};
use docket_postgres::{PgDialect, PgFamily, PgStore, PLAN_QUERY};

use super::diesel::{AdminDatabase, QueueRows, QueueSql, Rows, ScenarioSql};
use super::{Cost, QueuePlan, QueueScenario, Recorded};

/// How PostgreSQL generates the priority benchmark's rows: `generate_series`, server-side.
#[derive(Debug, Clone, Copy)]
pub struct PgScenario;

impl ScenarioSql for PgScenario {
    fn select_rows(&self, w: &mut SqlWriter<'_>, rows: &Rows<'_>) {
        let (s, prefix, (start, span)) = (rows.scenario, rows.prefix, rows.span);
        w.push("SELECT ")
            .bind(s.task_name.as_str())
            .push(", ")
            .bind(prefix)
            .push(" || g, ")
            .bind(s.now)
            .push(" + (")
            .bind(Value::BigInt(start))
            .push(" + random() * ")
            .bind(Value::BigInt(span))
            .push(") * interval '1 second', false, 0, 1, (1 + floor(random() * ")
            .bind(Value::Int(i32::from(s.levels)))
            .push("))::smallint");
        series(w, rows.range);
    }

    fn truncate(&self) -> &'static str {
        "TRUNCATE "
    }

    fn analyze(&self, session: &mut dyn SqlSession, table: &TableName) -> Result<(), StoreError> {
        let mut w = SqlWriter::new(&PgDialect);
        w.push("VACUUM ANALYZE ").table(table);
        session.execute(&w.finish()).map(drop)
    }
}

/// Creates the database a `postgres://` URL names when it does not exist yet (connecting to the
/// server's `postgres` database to do so), so a benchmark can run in a database of its own.
/// Returns whether it was created. The name must be a plain identifier (letters, digits, `_`).
pub fn ensure_database(url: &str) -> Result<bool, StoreError> {
    super::diesel::ensure_database::<PgFamily>(
        url,
        &AdminDatabase {
            dialect: &PgDialect,
            name: "postgres",
            exists: |name| {
                let mut w = SqlWriter::new(&PgDialect);
                w.push("SELECT datname AS name FROM pg_database WHERE datname = ")
                    .bind(name);
                w.finish()
            },
            create: |name| format!("CREATE DATABASE \"{name}\""),
        },
    )
}

/// Work-queue rows from `generate_series`, server-side.
impl QueueSql for PgScenario {
    fn select_items(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>) {
        let (s, t) = (rows.scenario, rows.queue_type);
        let batch = Value::BigInt(QueueScenario::BATCH as i64);
        let worked = Value::BigInt(s.worked as i64);
        w.push("SELECT ").bind(t.name.as_str()).push(", ");
        self.item_id(w, rows);
        w.push(", ")
            .bind(s.available_at())
            .push(", false, 0, 1, ")
            .bind(s.first_record_date())
            .push(" + (g / ")
            .bind(batch.clone())
            .push(") * interval '1 second', g % ")
            .bind(batch)
            .push(" + 1, ")
            .bind(t.max_assignments)
            .push(", CASE WHEN g < ")
            .bind(worked.clone())
            .push(" THEN 1 ELSE 0 END, g >= ")
            .bind(worked)
            .push(" OR 1 < ")
            .bind(t.max_assignments);
        self.numbers(w, rows);
    }

    fn item_id(&self, w: &mut SqlWriter<'_>, _rows: &QueueRows<'_>) {
        w.push("'item-' || g");
    }

    fn numbers(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>) {
        series(w, rows.range);
    }
}

/// ` FROM generate_series(from, to - 1) g`.
fn series(w: &mut SqlWriter<'_>, (from, to): (u64, u64)) {
    w.push(" FROM generate_series(")
        .bind(Value::BigInt(from as i64))
        .push("::bigint, ")
        .bind(Value::BigInt(to as i64 - 1))
        .push("::bigint) g");
}

/// `(rows, loops)` of a plan node line's `actual` part.
fn actual(line: &str) -> Option<(u64, u64)> {
    let part = line.split("(actual ").nth(1)?;
    let field = |key: &str| {
        part.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|n| n.trim_end_matches(')').parse::<u64>().ok())
    };
    Some((field("rows=")?, field("loops=")?))
}

/// Reads [`QueuePlan::items_read`] and [`QueuePlan::assignment_probes`] from plan lines: nodes
/// `... on <table> i` and `... on <table>_assignments a`, with the `Rows Removed by ...` lines
/// that follow a node (per loop, like `rows`).
fn queue_plan_reads(lines: &[String], table: &str) -> (u64, u64) {
    let items = format!(" on {table} i ");
    let assignments = format!(" on {table}_assignments a ");
    let (mut read, mut probes) = (0, 0);
    // Loops of the item node whose detail lines are being read.
    let mut current: Option<u64> = None;
    for line in lines {
        if let Some((rows, loops)) = actual(line) {
            current = None;
            if line.contains(&items) {
                read += rows * loops;
                current = Some(loops);
            } else if line.contains(&assignments) {
                probes += loops;
            }
            continue;
        }
        if line.contains("->") {
            current = None;
            continue;
        }
        let removed = line
            .trim_start()
            .strip_prefix("Rows Removed by ")
            .and_then(|r| r.split(": ").nth(1))
            .and_then(|n| n.trim().parse::<u64>().ok());
        if let (Some(loops), Some(removed)) = (current, removed) {
            read += removed * loops;
        }
    }
    (read, probes)
}

/// The first node that sorts, or reads more than an index range of the item table or more than
/// one item's assignments per lookup: a sort, a sequential or bitmap scan of the item table
/// (alias `i`), or a scan of the assignments table (alias `a`) that is sequential or whose
/// index condition does not fix `task_instance` (one item's assignments), unless it is the
/// `(task_name, worker, task_instance)` index, whose range is the worker's own assignments of
/// the type: otherwise it reads every assignment of the type (the primary key's range on
/// `task_name` alone, `worker` only filtering).
fn whole_type(lines: &[String], table: &str) -> Option<String> {
    let on_items = format!(" on {table} i ");
    let on_assignments = format!(" on {table}_assignments a ");
    let name = |node: &str| node.split("  (").next().unwrap_or(node).to_owned();
    // An assignments node whose index condition is still to be read.
    let mut pending: Option<String> = None;
    for line in lines {
        let t = line.trim_start();
        let node = t.trim_start_matches("->").trim_start();
        if t.starts_with("->") || line.contains("(actual ") || t.contains("(never executed)") {
            if let Some(found) = pending.take() {
                return Some(found);
            }
            let scan = |kind: &str| node.starts_with(kind);
            if scan("Sort ") || scan("Incremental Sort ") {
                return Some(format!("{}: a sort", name(node)));
            }
            if (scan("Seq Scan") || scan("Bitmap Heap Scan")) && node.contains(&on_items) {
                return Some(format!("{}: a scan of the item table", name(node)));
            }
            if node.contains(&on_assignments) && !node.contains("_assignments_worker_idx ") {
                if scan("Seq Scan") {
                    return Some(format!("{}: a scan of the assignments", name(node)));
                }
                pending = Some(format!(
                    "{}: its index condition does not fix task_instance, so it reads every \
                     assignment of the type",
                    name(node)
                ));
            }
            continue;
        }
        if let Some(cond) = t.strip_prefix("Index Cond: ") {
            if pending.is_some() && cond.contains("task_instance") {
                pending = None;
            }
        }
    }
    pending
}

/// Explains `stmt` under `EXPLAIN (ANALYZE, BUFFERS)` (values bound; rolled back, so a claim
/// claims nothing): the plan, buffers of the top node and execution time, item rows read and
/// assignment probes, and any sort or scan of the whole type.
pub fn queue_plan(store: &PgStore, stmt: &Rendered) -> Result<QueuePlan, StoreError> {
    let lines = explain_plan(store, stmt)?;
    let table = store.config().table.table();
    let (items_read, probes) = queue_plan_reads(&lines, table);
    Ok(QueuePlan {
        cost: plan_cost(&lines),
        items_read: Some(items_read),
        assignment_probes: Some(probes),
        whole_type: whole_type(&lines, table),
        lines,
    })
}

/// Shared buffers (hit + read) of the plan's top node, which include its children's, and the
/// execution time.
fn plan_cost(lines: &[String]) -> Cost {
    let mut cost = Cost {
        statements: 1,
        ..Cost::default()
    };
    for line in lines.iter().skip(1) {
        let t = line.trim_start();
        if t.starts_with("->") || t.starts_with("CTE ") || t.contains("Plan") {
            break;
        }
        if let Some(rest) = t.strip_prefix("Buffers: shared") {
            for part in rest.split_whitespace() {
                for key in ["hit=", "read="] {
                    if let Some(n) = part.strip_prefix(key).and_then(|n| n.parse::<u64>().ok()) {
                        cost.reads += n;
                    }
                }
            }
        }
    }
    if let Some(ms) = lines
        .iter()
        .find_map(|l| l.trim_start().strip_prefix("Execution Time: "))
        .and_then(|t| t.trim_end_matches(" ms").parse::<f64>().ok())
    {
        cost.micros = (ms * 1000.0).round() as u64;
    }
    cost
}

/// Runs each statement under `EXPLAIN (ANALYZE, BUFFERS)` in a rolled-back transaction and
/// sums shared buffers and execution time.
pub fn measure(store: &PgStore, stmts: &[Recorded]) -> Result<Cost, StoreError> {
    stmts.iter().try_fold(Cost::default(), |total, r| {
        Ok(total + plan_cost(&explain_plan(store, &r.stmt)?))
    })
}

/// The plan of `stmt` under `EXPLAIN (ANALYZE, BUFFERS)`, rolled back ([`PLAN_QUERY`]).
fn explain_plan(store: &PgStore, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
    docket_core::explain::explain_plan(store.connector(), &PLAN_QUERY, stmt)
}

#[cfg(test)]
mod tests {
    use super::{plan_cost, queue_plan_reads, whole_type};

    #[test]
    fn queue_plan_reads_count_item_rows_and_probes() {
        let plan: Vec<String> = [
            "Limit  (cost=0.85..9.1 rows=1 width=90) (actual time=80.1..80.1 rows=1 loops=1)",
            "  Buffers: shared hit=400012",
            "  ->  LockRows  (cost=0.85..9.1 rows=1 width=90) (actual time=80.1..80.1 rows=1 loops=1)",
            "        ->  Nested Loop Anti Join  (cost=0.85..9.1 rows=1 width=90) (actual time=80.1..80.1 rows=1 loops=1)",
            "              ->  Index Scan using b_queue_fifo_idx on b i  (cost=0.42..4.4 rows=1 width=80) (actual time=0.01..20.0 rows=100001 loops=1)",
            "                    Index Cond: ((task_name = 'x') AND (assignable = true))",
            "                    Filter: (execution_time <= '2026-01-01')",
            "                    Rows Removed by Filter: 5",
            "              ->  Index Scan using b_assignments_pkey on b_assignments a  (cost=0.42..4.4 rows=1 width=40) (actual time=0.001..0.001 rows=1 loops=100001)",
            "                    Index Cond: (((task_name)::text = (i.task_name)::text) AND ((task_instance)::text = (i.task_instance)::text) AND ((worker)::text = 'w'::text))",
            "                    Filter: (status = ANY ('{SKIPPED}'))",
            "                    Rows Removed by Filter: 0",
            "Execution Time: 80.250 ms",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(queue_plan_reads(&plan, "b"), (100_006, 100_001));
        assert_eq!(whole_type(&plan, "b"), None);
    }

    #[test]
    fn whole_type_flags_sorts_scans_and_type_wide_assignment_ranges() {
        let lines = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let materialized = lines(&[
            "Limit  (cost=0.85..0.99 rows=1 width=407) (actual time=7.3..7.3 rows=1 loops=1)",
            "  ->  Nested Loop Anti Join  (cost=0.85..1.0 rows=9 width=407) (actual time=7.2..7.2 rows=1 loops=1)",
            "        ->  Index Scan using b_queue_fifo_idx on b i  (cost=0.43..1.0 rows=9 width=401) (actual time=0.03..0.03 rows=1 loops=1)",
            "              Index Cond: (((task_name)::text = 'x'::text) AND (assignable = true))",
            "        ->  Materialize  (cost=0.42..5812.26 rows=1 width=30) (actual time=0.02..7.2 rows=1 loops=1)",
            "              ->  Index Scan using b_assignments_pkey on b_assignments a  (cost=0.42..5812.26 rows=1 width=30) (actual time=0.02..7.2 rows=1 loops=1)",
            "                    Index Cond: (((task_name)::text = 'x'::text) AND ((worker)::text = 'w'::text))",
            "Execution Time: 7.370 ms",
        ]);
        assert!(whole_type(&materialized, "b").is_some_and(
            |w| w.starts_with("Index Scan using b_assignments_pkey on b_assignments a:")
        ));
        let by_worker: Vec<String> = materialized
            .iter()
            .map(|l| l.replace("b_assignments_pkey", "b_assignments_worker_idx"))
            .collect();
        assert_eq!(whole_type(&by_worker, "b"), None, "the worker's own range");
        let sorted = lines(&[
            "Limit  (actual time=1.0..1.0 rows=1 loops=1)",
            "  ->  Sort  (cost=1.0..2.0 rows=9 width=8) (actual time=1.0..1.0 rows=1 loops=1)",
            "        ->  Seq Scan on b i  (cost=0.0..1.0 rows=9 width=8) (actual time=0.1..0.9 rows=9 loops=1)",
        ]);
        assert_eq!(whole_type(&sorted, "b").as_deref(), Some("Sort: a sort"));
        let scanned = &sorted[2..];
        assert_eq!(
            whole_type(scanned, "b").as_deref(),
            Some("Seq Scan on b i: a scan of the item table")
        );
    }

    #[test]
    fn plan_cost_reads_the_top_node_only() {
        let plan: Vec<String> = [
            "Limit  (cost=0.42..8.44 rows=1 width=8) (actual time=0.02..0.03 rows=1 loops=1)",
            "  Buffers: shared hit=3 read=2",
            "  ->  Index Scan using x on t  (actual time=0.02..0.02 rows=1 loops=1)",
            "        Buffers: shared hit=3 read=2",
            "Planning:",
            "  Buffers: shared hit=20",
            "Planning Time: 0.1 ms",
            "Execution Time: 0.250 ms",
        ]
        .map(str::to_owned)
        .to_vec();
        let c = plan_cost(&plan);
        assert_eq!((c.reads, c.micros, c.statements), (5, 250, 1));
    }
}
