//! How SQLite spells docket's statements.

use docket_core::dialect::{
    common, Capabilities, Catalog, ClaimMatch, ClaimParts, Ddl, Dialect, GeneratedValue, Level,
    LimitAt, LockAt, OrderIndexStyle, SqlWriter, Syntax, TaskOf,
};
use docket_core::ordering::{CustomKey, KeyType};
use docket_core::TableName;

/// [`TIMESTAMP_TEXT`](docket_core::dialect::TIMESTAMP_TEXT) as a `GLOB` pattern.
const TIMESTAMP_GLOB: &str =
    "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*";

/// The SQLite dialect: `?` placeholders, double-quoted identifiers, `LIMIT ?`, no row locks.
///
/// SQLite has one writer per database file: a write transaction (`BEGIN IMMEDIATE`, or a
/// single autocommit `UPDATE`) holds the file's write lock from start to commit, so the claim
/// `UPDATE ... WHERE (task_name, task_instance) IN (SELECT ... LIMIT ?) RETURNING ...` is atomic
/// without `FOR UPDATE SKIP LOCKED`: a second claimer waits (busy timeout) and then sees the rows
/// as picked. NULL sorts lowest in SQLite, so plain `priority DESC` already ranks NULL last.
#[derive(Debug, Default, Clone, Copy)]
pub struct SqliteDialect;

impl Dialect for SqliteDialect {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    /// The claim is one statement, serialized by the database's single write lock; CREATE,
    /// ALTER and DROP take part in transactions (a failed migration leaves nothing).
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            claims_by_task: true,
            ..Capabilities::UPDATE_RETURNING
        }
    }

    /// By task ([`ClaimParts::by_task`]): `... WHERE (task_name, task_instance) IN (SELECT
    /// task_name, task_instance FROM (SELECT * FROM (SELECT task_name, task_instance,
    /// execution_time FROM t WHERE ... task_name = ? ... LIMIT ?) UNION ALL SELECT * FROM (...))
    /// ORDER BY execution_time LIMIT ?) RETURNING ...`: each task's range of the lag index up to
    /// the limit (a compound member cannot carry its own `LIMIT`, a subquery can), the first of
    /// all of them claimed.
    fn lock_and_fetch(&self, w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>) {
        if !claim.by_task() {
            return common::update_returning(w, claim, ClaimMatch::BY_KEY);
        }
        claim.update_set(w);
        w.push(" WHERE (task_name, task_instance) IN (SELECT task_name, task_instance FROM (");
        let mut level = Level::Any;
        for (i, name) in claim.task_names().iter().enumerate() {
            if i > 0 {
                w.push(" UNION ALL ");
            }
            w.push("SELECT * FROM (SELECT task_name, task_instance, execution_time FROM ")
                .table(claim.table());
            level = claim.task_rows(w, TaskOf::Bound(name));
            w.push(")");
        }
        w.push(")");
        claim.order_by(w, level);
        self.limit(w, claim.limit(), LimitAt::Tail);
        w.push(") RETURNING ").push(&claim.select_list());
    }

    /// Nothing: no row locks to skip, the write lock serializes claimers (see the type's docs).
    fn skip_locked(&self, _w: &mut SqlWriter<'_>, _at: LockAt) {}

    fn syntax(&self) -> Syntax {
        Syntax {
            // SQLITE_MAX_VARIABLE_NUMBER of the bundled build.
            max_binds: 32_766,
            max_insert_rows: usize::MAX,
            // SQLite matches an index expression only to the same expression with the same
            // literal, not to one written with a bound value (as docket's queries are): custom
            // orders are indexed through virtual generated columns, which the queries name.
            order_index_style: OrderIndexStyle::GeneratedColumns,
            // Declared types with INTEGER or NUMERIC affinity: docket stores integer
            // microseconds (db-scheduler's `TIMESTAMP` columns hold whatever its driver wrote:
            // see docs/MOVING_FROM_DB_SCHEDULER.md).
            timestamp_types: &["integer", "int", "bigint", "timestamp", "datetime"],
            ..Syntax::ANSI
        }
    }

    /// The path is bound. `json_extract` returns a JSON string as TEXT, compared with SQLite's
    /// BINARY collation (UTF-8 bytes: code point order). Numbers are JSON numbers (integers and
    /// reals compare numerically with each other) or strings holding a plain decimal, cast to
    /// NUMERIC; timestamps are strings in the record-date form. SQLite has no regular
    /// expressions, so [`NUMBER_TEXT`](docket_core::dialect::NUMBER_TEXT) and
    /// [`TIMESTAMP_TEXT`](docket_core::dialect::TIMESTAMP_TEXT) are spelled with `GLOB`. Any
    /// other value is missing, as on the other backends.
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let path = key.attribute.json_path();
        let value = |w: &mut SqlWriter<'_>| {
            w.push("json_extract(custom_attributes, ")
                .bind(path.clone())
                .push(")");
        };
        let of_type = |w: &mut SqlWriter<'_>, types: &str| {
            w.push("json_type(custom_attributes, ")
                .bind(path.clone())
                .push(") ")
                .push(types);
        };
        w.push("(CASE WHEN ");
        match key.kind {
            KeyType::Text => {
                of_type(w, "= 'text'");
                w.push(" THEN ");
                value(w);
            }
            KeyType::Timestamp => {
                of_type(w, "= 'text'");
                w.push(" AND ");
                value(w);
                w.push(" GLOB '").push(TIMESTAMP_GLOB).push("' THEN ");
                value(w);
            }
            KeyType::Number => {
                of_type(w, "IN ('integer', 'real')");
                w.push(" THEN ");
                value(w);
                w.push(" WHEN ");
                of_type(w, "= 'text'");
                w.push(" AND ");
                // A plain decimal: one optional sign, then digits with at most one inner '.'.
                let unsigned = |w: &mut SqlWriter<'_>| {
                    w.push("ltrim(");
                    value(w);
                    w.push(", '+-')");
                };
                unsigned(w);
                w.push(" GLOB '[0-9]*' AND ");
                unsigned(w);
                w.push(" NOT GLOB '*[^0-9.]*' AND ");
                unsigned(w);
                w.push(" NOT GLOB '*.*.*' AND ");
                value(w);
                w.push(" NOT GLOB '*.' AND ");
                value(w);
                w.push(" NOT GLOB '[+-][+-]*' THEN CAST(");
                value(w);
                w.push(" AS NUMERIC)");
            }
        }
        w.push(" END)");
    }

    /// A `VIRTUAL` column typed as docket's tables are (`STRICT`): numbers `ANY`, so that
    /// integers and reals stay as computed and compare numerically.
    fn generated_column_type(&self, value: GeneratedValue) -> Option<String> {
        let sql_type = match value {
            GeneratedValue::Missing => "INTEGER",
            GeneratedValue::Text { .. } => "TEXT",
            GeneratedValue::Number => "ANY",
        };
        Some(sql_type.to_owned())
    }

    /// The schema (attached database) qualifies the index name, not the table.
    fn ddl(&self, w: &mut SqlWriter<'_>, table: &TableName, change: Ddl<'_>) {
        match change {
            Ddl::CreateIndexHead(index) => {
                w.push("CREATE INDEX ");
                if let Some(schema) = table.schema() {
                    w.push(&self.quote_ident(schema)).push(".");
                }
                w.push(&self.quote_ident(index))
                    .push(" ON ")
                    .push(&self.quote_ident(table.table()))
                    .push(" (");
            }
            other => common::ddl(w, table, other),
        }
    }

    /// No information_schema: table-valued pragma functions list columns and indexes (their
    /// `name` column is the name), and the schema argument selects an attached database.
    /// `pragma_table_info` leaves generated columns out; `pragma_table_xinfo` lists them. Its
    /// `type` is the declared type as written in `CREATE TABLE`. `pragma_index_info` numbers
    /// an index's columns from 0.
    fn catalog(&self, w: &mut SqlWriter<'_>, table: &TableName, query: Catalog<'_>) {
        match query {
            Catalog::IndexExists(index) => pragma_lookup(w, "pragma_index_list", table, index),
            Catalog::GeneratedColumnExists(column) => {
                pragma_lookup(w, "pragma_table_xinfo", table, column)
            }
            Catalog::ColumnExists(column) => pragma_lookup(w, "pragma_table_info", table, column),
            Catalog::TableColumns => {
                w.push("SELECT name, type AS data_type FROM ");
                pragma(w, "pragma_table_info", table.table(), table.schema());
            }
            Catalog::IndexColumns => {
                w.push(
                    "SELECT il.name AS index_name, ii.seqno + 1 AS position, ii.name AS \
                     column_name FROM ",
                );
                pragma(w, "pragma_index_list", table.table(), table.schema());
                w.push(" AS il, pragma_index_info(il.name");
                if let Some(schema) = table.schema() {
                    w.push(", ").bind(schema);
                }
                w.push(") AS ii");
            }
        }
    }

    /// SQLite runs in the process: its `'now'` is the node's own clock (to the millisecond),
    /// so the correction the scheduler derives from it is zero within the measurement's
    /// uncertainty. Kept as a statement anyway, so every backend answers the same operation;
    /// returned in docket's SQLite encoding (integer microseconds since the Unix epoch).
    fn server_time(&self, w: &mut SqlWriter<'_>) {
        w.push(
            "SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000 \
             AS server_time",
        );
    }
}

/// `name(?[, ?])`: a table-valued pragma on `arg`, in `schema` (an attached database) if given.
fn pragma(w: &mut SqlWriter<'_>, name: &str, arg: &str, schema: Option<&str>) {
    w.push(name).push("(").bind(arg);
    if let Some(schema) = schema {
        w.push(", ").bind(schema);
    }
    w.push(")");
}

/// `SELECT name FROM <pragma>(<table>[, <schema>]) WHERE name = <name>`, every value bound: a
/// catalogue look-up through a table-valued pragma function (the schema argument selects an
/// attached database).
fn pragma_lookup(w: &mut SqlWriter<'_>, pragma: &str, table: &TableName, name: &str) {
    w.push("SELECT name FROM ")
        .push(pragma)
        .push("(")
        .bind(table.table());
    if let Some(schema) = table.schema() {
        w.push(", ").bind(schema);
    }
    w.push(") WHERE name = ").bind(name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use docket_core::dialect::{Due, Level, Statements};
    use docket_core::OrderingPolicy;

    #[test]
    fn lock_and_fetch_is_one_update_without_row_locks() {
        let s = Statements::new(
            &SqliteDialect,
            TableName::default(),
            OrderingPolicy::priority_then_execution_time(),
        );
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let r = s.lock_and_fetch(&Due::new(Level::Any, now, &["a".into()], 5), "me");
        assert_eq!(
            r.sql,
            "UPDATE \"scheduled_tasks\" SET picked = ?, picked_by = ?, last_heartbeat = ?, \
             version = version + 1 WHERE (task_name, task_instance) IN (SELECT task_name, \
             task_instance FROM \"scheduled_tasks\" WHERE picked = ? AND execution_time <= ? \
             AND task_name IN (?) AND task_name NOT IN (SELECT task_name FROM \"scheduled_tasks_paused\") \
             AND task_name NOT IN (SELECT task_name FROM \"scheduled_tasks_limits\") \
             ORDER BY priority DESC, execution_time ASC LIMIT ?) \
             RETURNING task_name, task_instance, task_data, execution_time, picked, picked_by, \
             last_success, last_failure, consecutive_failures, last_heartbeat, version, priority"
        );
        assert_eq!(r.binds.len(), 7);
        assert!(!r.sql.contains("FOR UPDATE"));
    }

    #[test]
    fn column_check_uses_pragma_table_info_with_binds() {
        let s = Statements::new(
            &SqliteDialect,
            TableName::parse("main.jobs").unwrap(),
            OrderingPolicy::execution_time(),
        );
        let r = s.column_exists("priority");
        assert_eq!(
            r.sql,
            "SELECT name FROM pragma_table_info(?, ?) WHERE name = ?"
        );
        assert_eq!(r.binds.len(), 3);
    }
}
