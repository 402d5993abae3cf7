//! The shared pieces of statements: what [`Dialect`](super::Dialect)'s default methods write, public so that
//! a backend overriding a piece can still write the shared parts of it (sea-query's
//! `*_common` shape). Each takes the writer, whose dialect quotes and numbers.

use super::{
    Catalog, ClaimMatch, ClaimParts, Ddl, DueFilter, Level, LimitAt, LockAt, SqlWriter, TaskOf,
    Value,
};
use crate::ident::TableName;
use crate::records::ExecutionKey;

/// The due-query's filter: ` WHERE picked = ? AND execution_time <= ? AND task_name IN (...)`
/// and the level's predicate; returns `due.level`.
pub fn due_filter(w: &mut SqlWriter<'_>, due: &DueFilter<'_>) -> Level {
    due_head(w, due);
    task_in(w, due.task_names);
    level(w, due.level, "");
    due.level
}

/// ` WHERE picked = ? AND execution_time <= ?`: what every due-query starts with.
pub fn due_head(w: &mut SqlWriter<'_>, due: &DueFilter<'_>) {
    w.push(" WHERE picked = ")
        .bind(false)
        .push(" AND execution_time <= ")
        .bind(due.due_by);
}

/// ` AND task_name IN (?, ...)`.
pub fn task_in(w: &mut SqlWriter<'_>, task_names: &[String]) {
    w.push(" AND task_name IN ")
        .bind_list(task_names.iter().map(String::as_str));
}

/// ` AND <alias>priority = ?` or ` AND <alias>priority IS NULL` for one level; nothing for
/// [`Level::Any`].
pub fn level(w: &mut SqlWriter<'_>, level: Level, alias: &str) {
    match level {
        Level::Any => {}
        Level::Exactly(p) => {
            w.push(" AND ")
                .push(alias)
                .push("priority = ")
                .bind(Value::SmallInt(Some(p)));
        }
        Level::Null => {
            w.push(" AND ").push(alias).push("priority IS NULL");
        }
    }
}

/// The one-statement claim, `UPDATE <table> SET ... WHERE <open>SELECT <columns> FROM <table>
/// WHERE ... ORDER BY ... <limit> FOR UPDATE SKIP LOCKED<close> RETURNING <select list>`, its
/// subquery's rows matched as `by` says ([`ClaimMatch::BY_KEY`] by default).
pub fn update_returning(w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>, by: ClaimMatch) {
    let d = w.dialect();
    claim.update_set(w);
    w.push(" WHERE ").push(by.open).push("SELECT ");
    d.limit(w, claim.limit(), LimitAt::Head);
    w.push(by.columns).push(" FROM ").table(claim.table());
    d.skip_locked(w, LockAt::Table);
    claim.due_rows(w);
    d.skip_locked(w, LockAt::End);
    w.push(by.close)
        .push(" RETURNING ")
        .push(&claim.select_list());
}

/// The claiming select of a two-step claim: `SELECT <select list> FROM <table> WHERE ... ORDER
/// BY ... <limit> FOR UPDATE SKIP LOCKED`, limit and lock in one query block.
/// A claim by task ([`ClaimParts::by_task`]) is one such select per task, joined: `(SELECT ...
/// WHERE ... task_name = ? ... LIMIT n FOR UPDATE SKIP LOCKED) UNION ALL (...) ORDER BY ...
/// LIMIT n` (each task's rows up to the limit, locked, then the first of all of them; the
/// rows locked and not returned are released when the claim's transaction ends).
pub fn claiming_select(w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>) {
    let d = w.dialect();
    if !(claim.by_task() && d.capabilities().claims_by_task) {
        claim.select_from(w, true);
        d.skip_locked(w, LockAt::Table);
        claim.due_rows(w);
        d.skip_locked(w, LockAt::End);
        return;
    }
    let mut level = Level::Any;
    for (i, name) in claim.task_names().iter().enumerate() {
        w.push(if i == 0 { "(" } else { " UNION ALL (" });
        claim.select_from(w, true);
        d.skip_locked(w, LockAt::Table);
        level = claim.task_rows(w, TaskOf::Bound(name));
        d.skip_locked(w, LockAt::End);
        w.push(")");
    }
    claim.order_by(w, level);
    d.limit(w, claim.limit(), LimitAt::Tail);
}

/// `SELECT MAX(priority) AS "level" FROM t [WHERE priority < ?]`: the highest level below a
/// bound, from the end of the priority index. The alias is quoted (`LEVEL` is reserved in
/// Oracle), so it stays lower case everywhere.
pub fn priority_levels(w: &mut SqlWriter<'_>, table: &TableName, below: Option<i16>) {
    let alias = w.dialect().quote_ident("level");
    w.push("SELECT MAX(priority) AS ")
        .push(&alias)
        .push(" FROM ")
        .table(table);
    if let Some(level) = below {
        w.push(" WHERE priority < ")
            .bind(Value::SmallInt(Some(level)));
    }
}

/// The catalogue queries through `information_schema` (MySQL, MariaDB; the others override
/// what they spell differently).
pub fn catalog(w: &mut SqlWriter<'_>, table: &TableName, query: Catalog<'_>) {
    let filter = |w: &mut SqlWriter<'_>| {
        w.schema_of(table);
        w.push(" AND table_name = ").bind(table.table());
    };
    match query {
        Catalog::ColumnExists(column) | Catalog::GeneratedColumnExists(column) => {
            w.push(
                "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = ",
            );
            filter(w);
            w.push(" AND column_name = ").bind(column);
        }
        Catalog::IndexExists(index) => {
            w.push(
                "SELECT DISTINCT index_name AS name FROM information_schema.statistics \
                 WHERE table_schema = ",
            );
            filter(w);
            w.push(" AND index_name = ").bind(index);
        }
        Catalog::TableColumns => {
            w.push(
                "SELECT column_name AS name, data_type AS data_type FROM \
                 information_schema.columns WHERE table_schema = ",
            );
            filter(w);
        }
        Catalog::IndexColumns => {
            w.push(
                "SELECT index_name AS index_name, seq_in_index AS position, column_name AS \
                 column_name FROM information_schema.statistics WHERE table_schema = ",
            );
            filter(w);
        }
    }
}

/// The schema changes of a custom order's index: `ALTER TABLE t DROP COLUMN c`; `CREATE INDEX
/// i ON t (` with the index name unqualified (it lives in the table's schema) and the table
/// qualified; `DROP INDEX [schema.]i` (PostgreSQL, SQLite, Oracle).
pub fn ddl(w: &mut SqlWriter<'_>, table: &TableName, change: Ddl<'_>) {
    let d = w.dialect();
    let quote = |name: &str| d.quote_ident(name);
    match change {
        Ddl::DropColumn(column) => {
            let column = quote(column);
            w.push("ALTER TABLE ")
                .table(table)
                .push(" DROP COLUMN ")
                .push(&column);
        }
        Ddl::CreateIndexHead(index) => {
            let index = quote(index);
            w.push("CREATE INDEX ")
                .push(&index)
                .push(" ON ")
                .table(table)
                .push(" (");
        }
        Ddl::DropIndex(index) => {
            let index = quote(index);
            let schema = table.schema().map(quote);
            w.push("DROP INDEX ");
            if let Some(schema) = schema {
                w.push(&schema).push(".");
            }
            w.push(&index);
        }
    }
}

/// `DROP INDEX <index> ON <table>`, as MySQL/MariaDB and SQL Server spell it (index names are
/// per table there).
pub fn drop_index_on_table(w: &mut SqlWriter<'_>, table: &TableName, index: &str) {
    let index = w.dialect().quote_ident(index);
    w.push("DROP INDEX ").push(&index).push(" ON ").table(table);
}

/// The keys of one task name in a key list: the name, then each instance with its version.
type KeyGroup<'k> = (&'k str, Vec<(&'k str, Option<i64>)>);

/// Writes the keys grouped by task name, one term per name: `(task_name = ? AND
/// task_instance = ? [AND version = ?])` for a name with one key, `(task_name = ? AND
/// task_instance IN (?, ...) [AND version = CASE task_instance WHEN ? THEN ? ... END])` for
/// several, joined by `OR`. Every dialect accepts it (SQL Server has no row-valued `IN`),
/// and each term is one range of the primary key: MariaDB plans an `IN` list in linear
/// time, where an `OR` list of key equalities took 12.9 ms to plan at 100 keys against
/// 1.2 ms (docs/BENCHMARKS.md, "Where a MariaDB claim's time goes").
pub fn key_terms<'k>(
    w: &mut SqlWriter<'_>,
    keys: impl IntoIterator<Item = (&'k ExecutionKey, Option<i64>)>,
) {
    let mut groups: Vec<KeyGroup<'_>> = Vec::new();
    for (key, version) in keys {
        let member = (key.task_instance.as_str(), version);
        match groups.iter_mut().find(|(name, _)| *name == key.task_name) {
            Some((_, members)) => members.push(member),
            None => groups.push((key.task_name.as_str(), vec![member])),
        }
    }
    for (i, (name, members)) in groups.iter().enumerate() {
        if i > 0 {
            w.push(" OR ").sized_by_input();
        }
        w.push("(task_name = ").bind(*name);
        match members.as_slice() {
            [(instance, version)] => {
                w.push(" AND task_instance = ").bind(*instance);
                if let Some(v) = version {
                    w.push(" AND version = ").bind(*v);
                }
            }
            _ => {
                w.sized_by_input()
                    .push(" AND task_instance IN ")
                    .bind_list(members.iter().map(|(instance, _)| *instance));
                let versions: Option<Vec<i64>> = members.iter().map(|(_, v)| *v).collect();
                if let Some(versions) = versions {
                    w.push(" AND version = CASE task_instance");
                    for ((instance, _), version) in members.iter().zip(versions) {
                        w.push(" WHEN ")
                            .bind(*instance)
                            .push(" THEN ")
                            .bind(version);
                    }
                    w.push(" END");
                }
            }
        }
        w.push(")");
    }
}
