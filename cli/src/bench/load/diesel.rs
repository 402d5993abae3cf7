//! The benchmarks' loaders (`docket bench priority`, `docket bench queue`), written once for the
//! diesel backends: each backend says only how it generates rows server-side, empties a table
//! and refreshes statistics ([`ScenarioSql`], [`QueueSql`]).

use super::{chunks, QueueScenario, QueueType, Scenario};
use diesel::connection::SimpleConnection;
use docket_core::backend::SqlStore;
use docket_core::dialect::{Dialect, Rendered, SqlWriter, Value};
use docket_core::ident::TableName;
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::{StoreError, StoreInfo};
use docket_diesel::{DieselConnector, DieselSession, Family, Prepare};

/// Runs `measured` (a replay and its counters) in a transaction that is then rolled back, so
/// that replaying what a claim sends (`SELECT ... FOR UPDATE`, the claiming `UPDATE`) locks
/// and reads as it did but changes nothing.
pub fn rolled_back<F: Family, T>(
    conn: &mut F::Connection,
    measured: impl FnOnce(&mut F::Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    conn.batch_execute("BEGIN").map_err(F::error)?;
    let result = measured(conn);
    conn.batch_execute("ROLLBACK").map_err(F::error)?;
    result
}

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

/// `<head><table> WHERE task_name = ? AND task_instance LIKE '<prefix>%'`: the scenario's
/// rows of one kind (`d` due, `f` future) by primary-key prefix, not by a scan (which on
/// InnoDB would also lock every row of the table).
fn scenario_rows<F: Family>(
    store: &Store<F>,
    head: &str,
    s: &Scenario,
    prefix: &'static str,
) -> SqlWriter<'static> {
    let mut w = writer(store);
    w.push(head)
        .table(&store.config().table)
        .push(" WHERE task_name = ")
        .bind(s.task_name.as_str())
        .push(" AND task_instance LIKE '")
        .push(prefix)
        .push("%'");
    w
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
        let mut w = scenario_rows(store, "DELETE FROM ", s, "d");
        w.push(" AND priority > ")
            .bind(Value::SmallInt(Some(s.top_kept_level())));
        session.execute(&w.finish())?;
        sql.analyze(session, table)
    })
}

/// Seconds after the load's `now` of the earliest future row, and the width of their spread:
/// the day after the next, so that no future row falls due during a run (at 10M future rows a
/// span starting at once makes 116 rows a second due, in every level, drained ones included)
/// and a kept table can be loaded again with `reuse` for a day.
pub const FUTURE_SPAN: (i64, i64) = (86_400, 86_400);

/// Migrates the store's table and loads `s`: future rows, then due rows, then drains the top
/// levels' due rows; `progress` gets the rows written by each chunk. With `reuse`, a table
/// that already holds exactly `s.future` future rows of `s`'s task in `s.levels` levels, the
/// first of them not due within the next hour, keeps them and only its due rows are loaded
/// afresh (minutes instead of most of an hour at 10M future rows). Returns whether it did.
pub fn load_scenario<F: Family>(
    store: &Store<F>,
    sql: &dyn ScenarioSql,
    s: &Scenario,
    reuse: bool,
    progress: &mut dyn FnMut(u64),
) -> Result<bool, StoreError> {
    store.migrate(None)?;
    if reuse && future_rows_fit(store, s)? {
        // What earlier runs added besides the scenario (the fairness run's own task).
        let mut w = writer(store);
        w.push("DELETE FROM ")
            .table(&store.config().table)
            .push(" WHERE task_name <> ")
            .bind(s.task_name.as_str());
        let others = w.finish();
        store
            .connector()
            .with_session(&mut |session| session.execute(&others))?;
        reload_due(store, sql, s, progress)?;
        return Ok(true);
    }
    store.connector().with_session(&mut |session| {
        session.execute(&table_stmt(store, sql.truncate(), ""))?;
        for range in chunks(s.future, Scenario::CHUNK) {
            let rows = Rows {
                scenario: s,
                prefix: "f",
                range,
                span: FUTURE_SPAN,
            };
            insert_rows(store, sql, session, &rows)?;
            progress(range.1 - range.0);
        }
        Ok(())
    })?;
    load_due(store, sql, s, progress)?;
    Ok(false)
}

/// Whether the table's future rows are those `s` would load, none due within the next hour.
fn future_rows_fit<F: Family>(store: &Store<F>, s: &Scenario) -> Result<bool, StoreError> {
    let head = "SELECT COUNT(*) AS n, MIN(execution_time) AS first, MAX(priority) AS top FROM ";
    let stmt = scenario_rows(store, head, s, "f").finish();
    let mut rows = store
        .connector()
        .with_session(&mut |session| session.query(&stmt))?;
    let Some(row) = rows.first_mut() else {
        return Ok(false);
    };
    if u64::try_from(row.i64("n")?) != Ok(s.future) || row.opt_i16("top")? != Some(s.levels) {
        return Ok(false);
    }
    let soon = s.now + chrono::Duration::hours(1);
    Ok(row.opt_timestamp("first")?.is_none_or(|t| t > soon))
}

/// Replaces every due row (claimed or not) by a fresh set drawn as in [`load_scenario`], so
/// each throughput run starts from the same state.
pub fn reload_due<F: Family>(
    store: &Store<F>,
    sql: &dyn ScenarioSql,
    s: &Scenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    let delete = scenario_rows(store, "DELETE FROM ", s, "d").finish();
    store
        .connector()
        .with_session(&mut |session| session.execute(&delete))?;
    load_due(store, sql, s, progress)
}

/// Drops the table, its work-queue assignments table (migration 0004 creates it), its table
/// of paused tasks (0008) and its tables of limits and starts (0009), and forgets their
/// migrations in diesel's history table.
pub fn drop_scenario<F: Family>(store: &Store<F>) -> Result<(), StoreError> {
    let table = &store.config().table;
    store.connector().with_session(&mut |session| {
        let tables = [
            table.assignments(),
            table.paused(),
            table.limits(),
            table.starts(),
            table.clone(),
        ];
        for t in tables {
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

/// `<command><table>` (`ANALYZE t`, MySQL's `ANALYZE TABLE t`): the planner's statistics of
/// the executions table, as autovacuum (or InnoDB's automatic recalculation) keeps them on a
/// table in use.
pub fn analyze_table<F: Family>(store: &Store<F>, command: &str) -> Result<(), StoreError> {
    let mut w = writer(store);
    w.push(command).table(&store.config().table);
    let stmt = w.finish();
    store
        .connector()
        .with_session(&mut |session| session.query(&stmt).map(drop))
}

/// What a backend spells its own way when loading the work-queue benchmark's data.
pub trait QueueSql: ScenarioSql {
    /// Writes the query (after `INSERT INTO t (<ITEM_COLUMNS>) `) generating the items of
    /// `rows`, in [`ITEM_COLUMNS`] order: item `n` is `item-<n>`, in batch `n / BATCH` (record
    /// date one second per batch), record order `n % BATCH + 1`; the first `worked` carry one
    /// counted assignment (see [`QueueScenario`]).
    fn select_items(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>);
    /// Writes the id (`item-<n>`) of the generated row's item `n`.
    fn item_id(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>);
    /// Writes ` FROM ...`: the source of the generated rows, one per item of `rows`.
    fn numbers(&self, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>);
}

/// Writes the query (after `INSERT INTO t_assignments (<ASSIGNMENT_COLUMNS>) `) generating the
/// SUBMITTED assignments of the scenario's worker on the items of `rows`.
fn select_assignments(sql: &dyn QueueSql, w: &mut SqlWriter<'_>, rows: &QueueRows<'_>) {
    let at = rows.scenario.available_at();
    w.push("SELECT ")
        .bind(rows.queue_type.name.as_str())
        .push(", ");
    sql.item_id(w, rows);
    w.push(", ")
        .bind(rows.scenario.worker.as_str())
        .push(", 'SUBMITTED', ")
        .bind(at + chrono::Duration::minutes(30))
        .push(", ")
        .bind(at)
        .push(", ")
        .bind(at);
    sql.numbers(w, rows);
}

/// The item columns the work-queue loader fills.
pub const ITEM_COLUMNS: &str = "task_name, task_instance, execution_time, picked, \
     consecutive_failures, version, record_date, record_order, max_assignments, assignments, \
     assignable";

/// The assignment columns the work-queue loader fills.
pub const ASSIGNMENT_COLUMNS: &str =
    "task_name, task_instance, worker, status, deadline, assigned_at, updated_at";

/// Items (or their assignments) `range.0..range.1` of one type of a [`QueueScenario`].
#[derive(Debug, Clone, Copy)]
pub struct QueueRows<'a> {
    /// The scenario.
    pub scenario: &'a QueueScenario,
    /// The task type.
    pub queue_type: &'a QueueType,
    /// `[from, to)` item numbers.
    pub range: (u64, u64),
}

/// Migrates the store's table (every migration, so the work-queue schema is there), empties it
/// and its assignments table, loads `s` (items of each type in FIFO order, then the worker's
/// assignments), then refreshes both tables' statistics; `progress` gets the rows written by
/// each chunk.
pub fn load_queue<F: Family>(
    store: &Store<F>,
    sql: &dyn QueueSql,
    s: &QueueScenario,
    progress: &mut dyn FnMut(u64),
) -> Result<(), StoreError> {
    store.migrate(None)?;
    let table = &store.config().table;
    let tables = [table.clone(), table.assignments()];
    store.connector().with_session(&mut |session| {
        for t in &tables {
            let mut w = writer(store);
            w.push(sql.truncate()).table(t);
            session.execute(&w.finish())?;
        }
        for queue_type in &s.types {
            let parts: [(&TableName, &str, u64, QueueSelect); 2] = [
                (&tables[0], ITEM_COLUMNS, s.items, |sql, w, rows| {
                    sql.select_items(w, rows)
                }),
                (
                    &tables[1],
                    ASSIGNMENT_COLUMNS,
                    s.worked.min(s.items),
                    select_assignments,
                ),
            ];
            for (into, columns, n, select) in parts {
                for range in chunks(n, QueueScenario::CHUNK) {
                    let mut w = writer(store);
                    w.push("INSERT INTO ")
                        .table(into)
                        .push(" (")
                        .push(columns)
                        .push(") ");
                    let rows = QueueRows {
                        scenario: s,
                        queue_type,
                        range,
                    };
                    select(sql, &mut w, &rows);
                    session.execute(&w.finish())?;
                    progress(range.1 - range.0);
                }
            }
        }
        tables.iter().try_for_each(|t| sql.analyze(session, t))
    })
}

/// One of [`QueueSql`]'s row generators.
type QueueSelect = fn(&dyn QueueSql, &mut SqlWriter<'_>, &QueueRows<'_>);

/// How [`ensure_database`] finds and creates a database on a backend's server.
#[derive(Debug, Clone, Copy)]
pub struct AdminDatabase {
    /// The dialect `exists` renders in.
    pub dialect: &'static dyn Dialect,
    /// A database every server has, to connect to (e.g. `postgres`).
    pub name: &'static str,
    /// The query returning a row when the database named by its one bind exists.
    pub exists: fn(&str) -> Rendered,
    /// The statement creating the database of the given (plain identifier) name.
    pub create: fn(&str) -> String,
}

/// Creates the database a `scheme://authority/name[?query]` URL names when it does not exist
/// yet (connecting to the server's `admin.name` database to do so), so a benchmark can run in
/// a database of its own. Returns whether it was created. The name must be a plain identifier
/// (letters, digits, `_`).
pub fn ensure_database<F: Family>(url: &str, admin: &AdminDatabase) -> Result<bool, StoreError> {
    let bad = |reason: &str| StoreError::database(format!("database URL {url:?}: {reason}"));
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("no scheme"))?;
    let (authority, path) = rest.split_once('/').ok_or_else(|| bad("no database"))?;
    let (name, query) = path.split_once('?').unwrap_or((path, ""));
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad("the database name must be letters, digits and _"));
    }
    let admin_url = format!(
        "{scheme}://{authority}/{}{}{query}",
        admin.name,
        if query.is_empty() { "" } else { "?" }
    );
    let mut conn = <F::Connection as diesel::Connection>::establish(&admin_url)
        .map_err(|e| StoreError::database(format!("connecting to {admin_url:?}: {e}")))?;
    // One-off statements on a connection of its own: nothing to keep prepared.
    let prepare = Prepare {
        dialect: admin.dialect,
        statement_cache: false,
    };
    let mut session = DieselSession::<F>::new(&mut conn, prepare);
    if !session.query(&(admin.exists)(name))?.is_empty() {
        return Ok(false);
    }
    session.execute(&Rendered::text((admin.create)(name)))?;
    Ok(true)
}
