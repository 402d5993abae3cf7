//! Test data and cost measurement for `docket bench priority` (tooling, not the scheduler).
//! Rows are generated server-side in chunks (MariaDB's sequence engine, or a cross join of
//! digits on MySQL); costs are the session's `Handler_read_*` deltas, i.e. index and table rows
//! the storage engine handed to the server.

use crate::dialect::Flavor;
use crate::store::{bound, MysqlSession};
use crate::{migrate, MysqlStore, MIGRATIONS};
use diesel::sql_types::Text;
use diesel::{MysqlConnection, QueryableByName, RunQueryDsl};
use docket_core::bench::{Cost, Recorded, Scenario};
use docket_core::dialect::{Rendered, SqlWriter, Value};
use docket_core::{Store, StoreError};
use docket_diesel::db;
use std::time::Instant;

fn run(conn: &mut MysqlConnection, stmt: &Rendered) -> Result<usize, StoreError> {
    bound(stmt).execute(conn).map_err(db)
}

fn plain(store: &MysqlStore, head: &str, tail: &str) -> Rendered {
    let mut w = SqlWriter::new(store.connector().mysql_dialect());
    w.push(head).table(&store.config().table).push(tail);
    w.finish()
}

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

/// Inserts rows `from..to` (instances `<prefix><n>`) at `now + start + U[0, span)` seconds.
fn insert_rows(
    store: &MysqlStore,
    conn: &mut MysqlConnection,
    s: &Scenario,
    prefix: &str,
    (from, to): (u64, u64),
    (start, span): (i64, i64),
) -> Result<(), StoreError> {
    let mut w = SqlWriter::new(store.connector().mysql_dialect());
    w.push("INSERT INTO ")
        .table(&store.config().table)
        .push(
            " (task_name, task_instance, execution_time, picked, consecutive_failures, version, \
             priority) SELECT ",
        )
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
        .push(") FROM ")
        .push(numbers(store.connector().flavor()))
        .push(" WHERE g.n < ")
        .bind(Value::BigInt((to - from) as i64));
    run(conn, &w.finish()).map(drop)
}

fn chunks(n: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..n)
        .step_by(Scenario::CHUNK as usize)
        .map(move |from| (from, (from + Scenario::CHUNK).min(n)))
}

fn load_due(
    store: &MysqlStore,
    conn: &mut MysqlConnection,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    for chunk in chunks(s.due) {
        insert_rows(store, conn, s, "d", chunk, (-3600, 3600))?;
        progress(chunk.1 - chunk.0);
    }
    let mut w = SqlWriter::new(store.connector().mysql_dialect());
    w.push("DELETE FROM ")
        .table(&store.config().table)
        .push(" WHERE task_instance LIKE 'd%' AND priority > ")
        .bind(Value::SmallInt(Some(s.top_kept_level())));
    run(conn, &w.finish())?;
    analyze(store, conn)
}

fn analyze(store: &MysqlStore, conn: &mut MysqlConnection) -> Result<(), StoreError> {
    #[derive(QueryableByName)]
    struct AnalyzeRow {
        #[diesel(sql_type = Text)]
        #[diesel(column_name = "Msg_text")]
        _msg: String,
    }
    bound(&plain(store, "ANALYZE TABLE ", ""))
        .load::<AnalyzeRow>(conn)
        .map_err(db)
        .map(drop)
}

/// Migrates the store's table, empties it and loads `s`: future rows, then due rows, then
/// drains the top levels' due rows; `progress` gets the rows written by each chunk.
pub fn load_scenario(
    store: &MysqlStore,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    migrate(store, None)?;
    let mut conn = store.connector().connection()?;
    run(&mut conn, &plain(store, "TRUNCATE TABLE ", ""))?;
    for chunk in chunks(s.future) {
        insert_rows(store, &mut conn, s, "f", chunk, (1, 86_399))?;
        progress(chunk.1 - chunk.0);
    }
    load_due(store, &mut conn, s, progress)
}

/// Replaces every due row (claimed or not) by a fresh set drawn as in [`load_scenario`].
pub fn reload_due(
    store: &MysqlStore,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    let mut conn = store.connector().connection()?;
    run(
        &mut conn,
        &plain(store, "DELETE FROM ", " WHERE task_instance LIKE 'd%'"),
    )?;
    load_due(store, &mut conn, s, progress)
}

/// Drops the table and forgets its migrations.
pub fn drop_scenario(store: &MysqlStore) -> Result<(), StoreError> {
    let mut conn = store.connector().connection()?;
    run(&mut conn, &plain(store, "DROP TABLE IF EXISTS ", ""))?;
    for m in MIGRATIONS {
        let mut w = SqlWriter::new(store.connector().mysql_dialect());
        w.push("DELETE FROM __diesel_schema_migrations WHERE version = ")
            .bind(format!("{}@{}", m.name, store.config().table).as_str());
        run(&mut conn, &w.finish())?;
    }
    Ok(())
}

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

/// Replays each statement on one connection and sums the session's `Handler_read_*` deltas
/// (less what reading the counters itself adds) and wall time.
pub fn measure(store: &MysqlStore, stmts: &[Recorded]) -> Result<Cost, StoreError> {
    let mut conn = store.connector().connection()?;
    let a = handler_reads(&mut conn)?;
    let b = handler_reads(&mut conn)?;
    let overhead = b - a;
    let mut total = Cost::default();
    for r in stmts {
        let before = handler_reads(&mut conn)?;
        let started = Instant::now();
        r.replay(&mut MysqlSession(&mut conn))?;
        let micros = started.elapsed().as_micros() as u64;
        let after = handler_reads(&mut conn)?;
        total = total
            + Cost {
                reads: after.saturating_sub(before).saturating_sub(overhead),
                micros,
                statements: 1,
            };
    }
    Ok(total)
}
