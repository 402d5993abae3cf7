//! The priority benchmark's loaders (`docket bench priority`), written once for the diesel
//! backends: each backend says only how it generates rows server-side, empties a table and
//! refreshes statistics ([`ScenarioSql`]). Tooling, behind the `bench` feature.

use crate::session::{DieselConnector, Family};
use docket_core::bench::{chunks, Scenario};
use docket_core::dialect::{Rendered, SqlWriter, Value};
use docket_core::ident::TableName;
use docket_core::store::sql::{SqlConnector, SqlSession, SqlStore};
use docket_core::{StoreError, StoreInfo};

/// What a backend spells its own way when loading benchmark data.
pub trait ScenarioSql: Sync {
    /// Writes the query (after `INSERT INTO t (<ROW_COLUMNS>) `) generating `rows`, in
    /// [`ROW_COLUMNS`] order.
    fn select_rows(&self, w: &mut SqlWriter<'_>, rows: &Rows<'_>);
    /// The statement that empties a table (e.g. `TRUNCATE`).
    fn truncate(&self) -> &'static str {
        "DELETE FROM "
    }
    /// Refreshes the planner's statistics of `table` after a load.
    fn analyze(&self, session: &mut dyn SqlSession, table: &TableName) -> Result<(), StoreError>;
}

/// The columns the generated rows fill.
pub const ROW_COLUMNS: &str =
    "task_name, task_instance, execution_time, picked, consecutive_failures, version, priority";

/// Rows `range.0..range.1` of `scenario`: instances `<prefix><n>` of task `scenario.task_name`,
/// due at `scenario.now + span.0 + U[0, span.1)` seconds, unpicked, no failures, version 1,
/// priority uniform in `1..=scenario.levels`.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// Instance id prefix (`d` due, `f` future).
    pub prefix: &'a str,
    /// `[from, to)` row numbers.
    pub range: (u64, u64),
    /// Seconds after `now` of the earliest time, and the width of the uniform spread.
    pub span: (i64, i64),
}

type Store<F> = SqlStore<DieselConnector<F>>;

fn writer<F: Family>(store: &Store<F>) -> SqlWriter<'static> {
    SqlWriter::new(store.connector().dialect())
}

fn insert_rows<F: Family>(
    store: &Store<F>,
    sql: &dyn ScenarioSql,
    session: &mut dyn SqlSession,
    rows: &Rows<'_>,
) -> Result<(), StoreError> {
    let mut w = writer(store);
    w.push("INSERT INTO ")
        .table(&store.config().table)
        .push(" (")
        .push(ROW_COLUMNS)
        .push(") ");
    sql.select_rows(&mut w, rows);
    session.execute(&w.finish()).map(drop)
}

fn table_stmt<F: Family>(store: &Store<F>, head: &str, tail: &str) -> Rendered {
    let mut w = writer(store);
    w.push(head).table(&store.config().table).push(tail);
    w.finish()
}

/// Inserts the due rows, removes those of the drained levels, then refreshes statistics.
fn load_due<F: Family>(
    store: &Store<F>,
    sql: &dyn ScenarioSql,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    let table = &store.config().table;
    store.connector().with_session(&mut |session| {
        for range in chunks(s.due, Scenario::CHUNK) {
            let rows = Rows {
                scenario: s,
                prefix: "d",
                range,
                span: (-3600, 3600),
            };
            insert_rows(store, sql, session, &rows)?;
            progress(range.1 - range.0);
        }
        let mut w = writer(store);
        w.push("DELETE FROM ")
            .table(table)
            .push(" WHERE task_instance LIKE 'd%' AND priority > ")
            .bind(Value::SmallInt(Some(s.top_kept_level())));
        session.execute(&w.finish())?;
        sql.analyze(session, table)
    })
}

/// Migrates the store's table, empties it and loads `s`: future rows, then due rows, then
/// drains the top levels' due rows; `progress` gets the rows written by each chunk.
pub fn load_scenario<F: Family>(
    store: &Store<F>,
    sql: &dyn ScenarioSql,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    store.migrate(None)?;
    store.connector().with_session(&mut |session| {
        session.execute(&table_stmt(store, sql.truncate(), ""))?;
        for range in chunks(s.future, Scenario::CHUNK) {
            let rows = Rows {
                scenario: s,
                prefix: "f",
                range,
                span: (1, 86_399),
            };
            insert_rows(store, sql, session, &rows)?;
            progress(range.1 - range.0);
        }
        Ok(())
    })?;
    load_due(store, sql, s, progress)
}

/// Replaces every due row (claimed or not) by a fresh set drawn as in [`load_scenario`], so
/// each throughput run starts from the same state.
pub fn reload_due<F: Family>(
    store: &Store<F>,
    sql: &dyn ScenarioSql,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    let delete = table_stmt(store, "DELETE FROM ", " WHERE task_instance LIKE 'd%'");
    store
        .connector()
        .with_session(&mut |session| session.execute(&delete))?;
    load_due(store, sql, s, progress)
}

/// Drops the table and its work-queue assignments table (migration 0004 creates it) and
/// forgets their migrations in diesel's history table.
pub fn drop_scenario<F: Family>(store: &Store<F>) -> Result<(), StoreError> {
    let table = &store.config().table;
    store.connector().with_session(&mut |session| {
        for t in [table.assignments(), table.clone()] {
            let mut w = writer(store);
            w.push("DROP TABLE IF EXISTS ").table(&t);
            session.execute(&w.finish())?;
        }
        for m in F::MIGRATIONS {
            let mut w = writer(store);
            w.push("DELETE FROM __diesel_schema_migrations WHERE version = ")
                .bind(format!("{}@{table}", m.name).as_str());
            session.execute(&w.finish())?;
        }
        Ok(())
    })
}
