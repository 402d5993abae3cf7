//! Test data and cost measurement for `docket bench priority` and `docket bench queue` (tooling,
//! not the scheduler). Rows are generated server-side in chunks (MariaDB's sequence engine, or a
//! cross join of digits on MySQL); costs are the session's `Handler_read_*` deltas, i.e. index
//! and table rows the storage engine handed to the server.

use diesel::sql_types::Text;
use diesel::{MysqlConnection, QueryableByName, RunQueryDsl};
use docket_core::dialect::{Rendered, SqlWriter, Value};
use docket_core::ident::TableName;
use docket_core::store::sql::SqlSession;
use docket_core::StoreError;
use docket_diesel::db;
use docket_mysql::{Flavor, MysqlFamily, MysqlStore};
use std::time::Instant;

use super::diesel::{rolled_back, AdminDatabase, QueueRows, QueueSql, Rows, ScenarioSql};
use super::{Cost, QueuePlan, QueueScenario, Recorded};

/// `n` for `0 <= n < CHUNK`: MariaDB's sequence engine, else ten digits cross-joined.
fn numbers(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::MariaDb => "(SELECT seq AS n FROM seq_0_to_49999) g",
        Flavor::MySql => {
            "(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS n FROM \
             (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL \
             SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL \
             SELECT 8 UNION ALL SELECT 9) a, (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 \
             UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION \
             ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b, (SELECT 0 d UNION ALL \
             SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL \
             SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL \
             SELECT 9) c, (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 \
             UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION \
             ALL SELECT 8 UNION ALL SELECT 9) e, (SELECT 0 d UNION ALL SELECT 1 UNION ALL \
             SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4) f) g"
        }
    }
}

/// How MySQL/MariaDB generate the priority benchmark's rows: MariaDB's sequence engine, or a
/// cross join of digits on MySQL.
#[derive(Debug, Clone, Copy)]
pub struct MysqlScenario(pub Flavor);

impl ScenarioSql for MysqlScenario {
    fn select_rows(&self, w: &mut SqlWriter<'_>, rows: &Rows<'_>) {
        let (s, prefix, (from, _), (start, span)) =
            (rows.scenario, rows.prefix, rows.range, rows.span);
        w.push("SELECT ")
            .bind(s.task_name.as_str())
            .push(", CONCAT(")
            .bind(prefix)
            .push(", g.n + ")
            .bind(Value::BigInt(from as i64))
            .push("), TIMESTAMPADD(MICROSECOND, FLOOR((")
            .bind(Value::BigInt(start))
            .push(" + RAND() * ")
            .bind(Value::BigInt(span))
            .push(") * 1000000), ")
            .bind(s.now)
            .push("), FALSE, 0, 1, 1 + FLOOR(RAND() * ")
            .bind(Value::Int(i32::from(s.levels)))
            .push(")");
        self.rows_from(w, rows.range);
    }

    fn truncate(&self) -> &'static str {
        "TRUNCATE TABLE "
    }

    /// `ANALYZE TABLE` (it returns a result set: read as a query), then waits until InnoDB has
    /// purged what the load deleted, as PostgreSQL's `VACUUM` removes it. Until purge gets to
    /// them, the index entries of deleted rows stay in place, delete-marked, and every read of
    /// their range walks them: right after the drain deleted 500k due rows at full scale, a
    /// claim took 0.1 s instead of 1 ms and the runs measured the purge backlog, not the
    /// steady state. Gives up waiting after `PURGE_WAIT` (ten minutes).
    fn analyze(&self, session: &mut dyn SqlSession, table: &TableName) -> Result<(), StoreError> {
        let mut w = SqlWriter::new(self.0.dialect());
        w.push("ANALYZE TABLE ").table(table);
        session.query(&w.finish())?;
        let history = Rendered::text("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'");
        let started = Instant::now();
        while started.elapsed() < PURGE_WAIT {
            let rows = session.query(&history)?;
            let left = rows
                .first()
                .and_then(|r| r.lossy_text("Value"))
                .and_then(|v| v.parse::<u64>().ok());
            if left.is_none_or(|n| n == 0) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        Ok(())
    }
}

/// Longest wait for InnoDB's purge after a load (see `MysqlScenario::analyze`).
const PURGE_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

#[derive(QueryableByName)]
struct StatusRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "Value")]
    value: String,
}

fn handler_reads(conn: &mut MysqlConnection) -> Result<u64, StoreError> {
    let rows = diesel::sql_query("SHOW SESSION STATUS LIKE 'Handler_read%'")
        .load::<StatusRow>(conn)
        .map_err(db)?;
    Ok(rows
        .iter()
        .filter_map(|r| r.value.parse::<u64>().ok())
        .sum())
}

/// Replays each statement on one connection, each in a rolled-back transaction, and sums the
/// session's `Handler_read_*` deltas (less what reading the counters itself adds) and wall
/// time.
pub fn measure(store: &MysqlStore, stmts: &[Recorded]) -> Result<Cost, StoreError> {
    let mut conn = store.connector().connection()?;
    let a = handler_reads(&mut conn)?;
    let b = handler_reads(&mut conn)?;
    let overhead = b - a;
    let mut total = Cost::default();
    for r in stmts {
        total = total
            + rolled_back::<MysqlFamily, _>(&mut conn, |conn| {
                let before = handler_reads(conn)?;
                let started = Instant::now();
                r.replay(&mut store.connector().session(conn))?;
                let micros = started.elapsed().as_micros() as u64;
                let after = handler_reads(conn)?;
                Ok(Cost {
                    reads: after.saturating_sub(before).saturating_sub(overhead),
                    micros,
                    statements: 1,
                })
            })?;
    }
    Ok(total)
}

/// Creates the database a `mysql://` URL names when it does not exist yet (connecting to its
/// `information_schema` to do so), so a benchmark can run in a database of its own. Returns
/// whether it was created. The name must be a plain identifier (letters, digits, `_`).
pub fn ensure_database(url: &str) -> Result<bool, StoreError> {
    super::diesel::ensure_database::<MysqlFamily>(
        url,
        &AdminDatabase {
            // Either flavor: only its `?` placeholders matter here.
            dialect: Flavor::MariaDb.dialect(),
            name: "information_schema",
            exists: |name| {
                let mut w = SqlWriter::new(Flavor::MariaDb.dialect());
                w.push("SELECT SCHEMA_NAME AS name FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ")
                    .bind(name);
                w.finish()
            },
            create: |name| format!("CREATE DATABASE `{name}`"),
        },
    )
}

/// Work-queue rows from the same number source as the priority rows.
impl QueueSql for MysqlScenario {
    fn select_items(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>) {
        let (s, t) = (rows.scenario, rows.queue_type);
        let n = || Value::BigInt(rows.range.0 as i64);
        let batch = || Value::BigInt(QueueScenario::BATCH as i64);
        let worked = || Value::BigInt(s.worked as i64);
        w.push("SELECT ").bind(t.name.as_str()).push(", ");
        self.item_id(w, rows);
        w.push(", ")
            .bind(s.available_at())
            .push(", FALSE, 0, 1, TIMESTAMPADD(SECOND, (g.n + ")
            .bind(n())
            .push(") DIV ")
            .bind(batch())
            .push(", ")
            .bind(s.first_record_date())
            .push("), (g.n + ")
            .bind(n())
            .push(") MOD ")
            .bind(batch())
            .push(" + 1, ")
            .bind(t.max_assignments)
            .push(", CASE WHEN g.n + ")
            .bind(n())
            .push(" < ")
            .bind(worked())
            .push(" THEN 1 ELSE 0 END, g.n + ")
            .bind(n())
            .push(" >= ")
            .bind(worked())
            .push(" OR 1 < ")
            .bind(t.max_assignments);
        QueueSql::numbers(self, w, rows);
    }

    fn item_id(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>) {
        w.push("CONCAT('item-', g.n + ")
            .bind(Value::BigInt(rows.range.0 as i64))
            .push(")");
    }

    fn numbers(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>) {
        self.rows_from(w, rows.range);
    }
}

impl MysqlScenario {
    /// ` FROM <numbers> WHERE g.n < to - from`: `g.n` counts the rows `from..to`.
    fn rows_from(&self, w: &mut SqlWriter<'_>, (from, to): (u64, u64)) {
        w.push(" FROM ")
            .push(numbers(self.0))
            .push(" WHERE g.n < ")
            .bind(Value::BigInt((to - from) as i64));
    }
}

#[derive(QueryableByName)]
struct AnalyzeJson {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "ANALYZE")]
    plan: String,
}

#[derive(QueryableByName)]
struct ExplainAnalyze {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "EXPLAIN")]
    plan: String,
}

/// What [`walk_plan`] gathers.
#[derive(Debug, Default, PartialEq)]
struct Walked {
    /// Item rows read.
    items: f64,
    /// Assignment lookups counted by the plan (`r_loops`).
    lookups: f64,
    /// Whether the assignments are looked up once per item row (`unique_subquery` /
    /// `index_subquery`, whose `r_loops` MariaDB leaves at 0).
    per_item_row: bool,
    /// The first node that is not index-driven and bounded, described.
    whole: Option<String>,
}

/// Sums over the plan's `table` objects: item rows read (`r_rows x r_loops` of alias `i`) and
/// assignment lookups (`r_loops` of alias `a`); and the first node that is not index-driven and
/// bounded: a filesort, a full scan of `i`, or a read of `a` that is a full scan or whose key
/// parts do not include `task_instance` (every assignment of the type, or of the table).
fn walk_plan(v: &serde_json::Value, acc: &mut Walked) {
    match v {
        serde_json::Value::Object(map) => {
            if acc.whole.is_none() && map.contains_key("filesort") {
                acc.whole = Some("a filesort".to_owned());
            }
            if let Some(name) = map.get("table_name").and_then(|n| n.as_str()) {
                let num = |k: &str| map.get(k).and_then(serde_json::Value::as_f64);
                let text = |k: &str| map.get(k).and_then(|a| a.as_str()).unwrap_or("?");
                let loops = num("r_loops").unwrap_or(0.0);
                let rows = num("r_rows").unwrap_or(0.0);
                let access = text("access_type");
                let full = matches!(access, "ALL" | "index");
                let described = || {
                    format!(
                        "{name}: access_type {access}, key {}, {} rows read",
                        text("key"),
                        (rows * loops).round()
                    )
                };
                match name {
                    "i" => {
                        acc.items += rows * loops;
                        if acc.whole.is_none() && full {
                            acc.whole = Some(format!("{}: a scan of the item table", described()));
                        }
                    }
                    "a" => {
                        acc.lookups += loops;
                        acc.per_item_row |= matches!(access, "unique_subquery" | "index_subquery");
                        let by_item = map
                            .get("used_key_parts")
                            .and_then(|k| k.as_array())
                            .is_some_and(|k| k.iter().any(|p| p == "task_instance"));
                        if acc.whole.is_none() && full {
                            acc.whole = Some(format!(
                                "{}: a scan of every assignment in the table",
                                described()
                            ));
                        } else if acc.whole.is_none() && !by_item {
                            acc.whole = Some(format!(
                                "{}: its key parts do not include task_instance, so it reads \
                                 every assignment of the type",
                                described()
                            ));
                        }
                    }
                    _ => {}
                }
            }
            map.values().for_each(|x| walk_plan(x, acc));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|x| walk_plan(x, acc)),
        _ => {}
    }
}

/// Runs `stmt` under `ANALYZE FORMAT=JSON` (MariaDB) or `EXPLAIN ANALYZE` (MySQL) in a
/// rolled-back transaction, with the session's `Handler_read_*` delta as its reads and the
/// server's time (MariaDB's `r_total_time_ms`, else wall time); on MariaDB also item rows read,
/// assignment lookups and any filesort or full scan of the item table, from the JSON.
pub fn queue_plan(store: &MysqlStore, stmt: &Rendered) -> Result<QueuePlan, StoreError> {
    use diesel::connection::SimpleConnection;
    let mariadb = store.connector().meta().flavor() == Flavor::MariaDb;
    let explained = stmt.prefixed(if mariadb {
        "ANALYZE FORMAT=JSON "
    } else {
        "EXPLAIN ANALYZE "
    });
    let mut conn = store.connector().connection()?;
    let a = handler_reads(&mut conn)?;
    let b = handler_reads(&mut conn)?;
    let overhead = b - a;
    conn.batch_execute("BEGIN").map_err(db)?;
    let before = handler_reads(&mut conn);
    let started = Instant::now();
    let text = if mariadb {
        store
            .connector()
            .uncached(&explained)?
            .load::<AnalyzeJson>(&mut *conn)
            .map(|rows| rows.into_iter().map(|r| r.plan).collect::<Vec<_>>())
    } else {
        store
            .connector()
            .uncached(&explained)?
            .load::<ExplainAnalyze>(&mut *conn)
            .map(|rows| rows.into_iter().map(|r| r.plan).collect::<Vec<_>>())
    }
    .map_err(db);
    let wall = started.elapsed().as_micros() as u64;
    let after = handler_reads(&mut conn);
    let rollback = conn.batch_execute("ROLLBACK").map_err(db);
    let (text, before, after) = (text?, before?, after?);
    rollback?;
    let mut plan = QueuePlan {
        lines: text
            .iter()
            .flat_map(|t| t.lines().map(str::to_owned))
            .collect(),
        cost: Cost {
            reads: after.saturating_sub(before).saturating_sub(overhead),
            micros: wall,
            statements: 1,
        },
        ..QueuePlan::default()
    };
    if let Some(json) = mariadb
        .then(|| serde_json::from_str::<serde_json::Value>(&text.concat()).ok())
        .flatten()
    {
        let mut acc = Walked::default();
        walk_plan(&json, &mut acc);
        let items = acc.items.round() as u64;
        plan.items_read = Some(items);
        plan.assignment_probes = Some(if acc.per_item_row {
            items
        } else {
            acc.lookups.round() as u64
        });
        plan.whole_type = acc.whole;
        if let Some(ms) = json
            .pointer("/query_block/r_total_time_ms")
            .and_then(serde_json::Value::as_f64)
        {
            plan.cost.micros = (ms * 1000.0).round() as u64;
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::{walk_plan, Walked};

    fn walked(json: &str) -> Walked {
        let mut acc = Walked::default();
        walk_plan(&serde_json::from_str(json).unwrap(), &mut acc);
        acc
    }

    #[test]
    fn walk_plan_counts_item_rows_and_flags_type_wide_reads() {
        let materialized = r#"{"query_block": {"nested_loop": [{"table": {
            "table_name": "i", "access_type": "range", "key": "queue_fifo_idx",
            "used_key_parts": ["task_name", "assignable"], "r_loops": 1, "r_rows": 2002}}],
          "subqueries": [{"materialization": {"r_loops": 2002, "query_block": {"nested_loop": [
            {"table": {"table_name": "a", "access_type": "index", "key": "status_deadline_idx",
             "used_key_parts": ["status", "deadline"], "r_loops": 1, "r_rows": 4013}}]}}}]}}"#;
        let w = walked(materialized);
        assert_eq!((w.items, w.lookups, w.per_item_row), (2002.0, 1.0, false));
        assert_eq!(
            w.whole.as_deref(),
            Some(
                "a: access_type index, key status_deadline_idx, 4013 rows read: a scan of every \
                 assignment in the table"
            )
        );
        let probed = r#"{"query_block": {"nested_loop": [{"table": {
            "table_name": "i", "access_type": "range", "r_loops": 1, "r_rows": 20002}}],
          "subqueries": [{"query_block": {"nested_loop": [{"table": {"table_name": "a",
            "access_type": "unique_subquery", "key": "PRIMARY",
            "used_key_parts": ["task_name", "task_instance", "worker"],
            "r_loops": 0, "r_rows": null}}]}}]}}"#;
        assert_eq!(
            walked(probed),
            Walked {
                items: 20002.0,
                lookups: 0.0,
                per_item_row: true,
                whole: None
            }
        );
    }
}
