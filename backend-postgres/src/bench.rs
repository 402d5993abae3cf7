//! Test data and cost measurement for `docket bench priority` (tooling, not the scheduler).
//! Rows are generated server-side with `generate_series`, in chunks so the caller can show
//! progress; costs are read from `EXPLAIN (ANALYZE, BUFFERS)`.

use crate::dialect::PgDialect;
use crate::store::bound;
use crate::{migrate, PgStore, MIGRATIONS};
use diesel::connection::SimpleConnection;
use diesel::sql_types::Text;
use diesel::{PgConnection, QueryableByName, RunQueryDsl};
use docket_core::bench::{Cost, Recorded, Scenario};
use docket_core::dialect::{Rendered, SqlWriter, Value};
use docket_core::{Store, StoreError};
use docket_diesel::db;

fn run(conn: &mut PgConnection, stmt: &Rendered) -> Result<usize, StoreError> {
    bound(stmt).execute(conn).map_err(db)
}

fn plain(store: &PgStore, head: &str, tail: &str) -> String {
    let mut w = SqlWriter::new(&PgDialect);
    w.push(head).table(&store.config().table).push(tail);
    w.finish().sql
}

/// Inserts rows `from..to` (instances `<prefix><n>`) at `now + start + U[0, span)` seconds.
fn insert_rows(
    store: &PgStore,
    conn: &mut PgConnection,
    s: &Scenario,
    prefix: &str,
    (from, to): (u64, u64),
    (start, span): (i64, i64),
) -> Result<(), StoreError> {
    let mut w = SqlWriter::new(&PgDialect);
    w.push("INSERT INTO ")
        .table(&store.config().table)
        .push(
            " (task_name, task_instance, execution_time, picked, consecutive_failures, version, \
             priority) SELECT ",
        )
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
        .push("))::smallint FROM generate_series(")
        .bind(Value::BigInt(from as i64))
        .push("::bigint, ")
        .bind(Value::BigInt(to as i64 - 1))
        .push("::bigint) g");
    run(conn, &w.finish()).map(drop)
}

fn chunks(n: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..n)
        .step_by(Scenario::CHUNK as usize)
        .map(move |from| (from, (from + Scenario::CHUNK).min(n)))
}

/// Inserts the due rows, removes those of the drained levels, then vacuums and analyzes.
fn load_due(
    store: &PgStore,
    conn: &mut PgConnection,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    for chunk in chunks(s.due) {
        insert_rows(store, conn, s, "d", chunk, (-3600, 3600))?;
        progress(chunk.1 - chunk.0);
    }
    let mut w = SqlWriter::new(&PgDialect);
    w.push("DELETE FROM ")
        .table(&store.config().table)
        .push(" WHERE task_instance LIKE 'd%' AND priority > ")
        .bind(Value::SmallInt(Some(s.top_kept_level())));
    run(conn, &w.finish())?;
    conn.batch_execute(&plain(store, "VACUUM ANALYZE ", ""))
        .map_err(db)
}

/// Migrates the store's table, empties it and loads `s`: future rows, then due rows, then
/// drains the top levels' due rows; `progress` gets the rows written by each chunk.
pub fn load_scenario(
    store: &PgStore,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    migrate(store, None)?;
    let mut conn = store.connector().connection()?;
    conn.batch_execute(&plain(store, "TRUNCATE ", ""))
        .map_err(db)?;
    for chunk in chunks(s.future) {
        insert_rows(store, &mut conn, s, "f", chunk, (1, 86_399))?;
        progress(chunk.1 - chunk.0);
    }
    load_due(store, &mut conn, s, progress)
}

/// Replaces every due row (claimed or not) by a fresh set drawn as in [`load_scenario`], so
/// each throughput run starts from the same state.
pub fn reload_due(
    store: &PgStore,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    let mut conn = store.connector().connection()?;
    conn.batch_execute(&plain(
        store,
        "DELETE FROM ",
        " WHERE task_instance LIKE 'd%'",
    ))
    .map_err(db)?;
    load_due(store, &mut conn, s, progress)
}

/// Drops the table and forgets its migrations.
pub fn drop_scenario(store: &PgStore) -> Result<(), StoreError> {
    let mut conn = store.connector().connection()?;
    conn.batch_execute(&plain(store, "DROP TABLE IF EXISTS ", ""))
        .map_err(db)?;
    for m in MIGRATIONS {
        let mut w = SqlWriter::new(&PgDialect);
        w.push("DELETE FROM __diesel_schema_migrations WHERE version = ")
            .bind(format!("{}@{}", m.name, store.config().table).as_str());
        run(&mut conn, &w.finish())?;
    }
    Ok(())
}

#[derive(QueryableByName)]
struct PlanRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "QUERY PLAN")]
    line: String,
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
    let mut conn = store.connector().connection()?;
    let mut total = Cost::default();
    for Recorded { stmt, .. } in stmts {
        let explained = Rendered {
            sql: format!("EXPLAIN (ANALYZE, BUFFERS) {}", stmt.sql),
            binds: stmt.binds.clone(),
        };
        conn.batch_execute("BEGIN").map_err(db)?;
        let plan = bound(&explained).load::<PlanRow>(&mut *conn).map_err(db);
        let rollback = conn.batch_execute("ROLLBACK").map_err(db);
        let lines: Vec<String> = plan?.into_iter().map(|r| r.line).collect();
        rollback?;
        total = total + plan_cost(&lines);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::plan_cost;

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
