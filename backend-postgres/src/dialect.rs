//! How PostgreSQL spells docket's statements.

use docket_core::dialect::{
    common, Array, Capabilities, Catalog, ClaimMatch, ClaimParts, Dialect, DueFilter, Level,
    Levels, LimitAt, SqlWriter, Syntax, TaskOf, Value, NUMBER_TEXT, TIMESTAMP_TEXT,
};
use docket_core::ordering::{CustomKey, KeyType};
use docket_core::{ExecutionKey, TableName};

// The claim's subquery locks the rows, so their row addresses (`ctid`) cannot change
// before the update reads them: `ctid = ANY(ARRAY(SELECT ctid ...))` runs the subquery
// once and fetches the rows by address. Matched by key instead (`(task_name,
// task_instance) IN (SELECT ...)`), a table without statistics was joined with a sequential
// scan of every row (7.9 ms against 2.5 ms for a claim of 40 among 20,000).
const CLAIM_BY_CTID: ClaimMatch = ClaimMatch {
    open: "ctid = ANY(ARRAY(",
    columns: "ctid",
    close: "))",
};

/// The PostgreSQL dialect: `$n` placeholders, double-quoted identifiers, `NULLS LAST`,
/// `FOR UPDATE SKIP LOCKED`, `ON CONFLICT DO NOTHING`, `UPDATE ... RETURNING`.
#[derive(Debug, Default, Clone, Copy)]
pub struct PgDialect;

impl Dialect for PgDialect {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            claims_by_task: true,
            ..Capabilities::UPDATE_RETURNING
        }
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            // The wire protocol counts parameters in 16 bits.
            max_binds: 65_535,
            max_insert_rows: usize::MAX,
            // `UNNEST($1, $2, ...)` with one typed array per column: a chunk of rows is one
            // short statement, parsed and planned once, whatever its length.
            binds_arrays: true,
            // `timestamp` (without time zone) compared with the `timestamptz` binds would
            // shift by the session time zone: not adoptable.
            timestamp_types: &["timestamp with time zone"],
            ..Syntax::ANSI
        }
    }

    /// By task ([`ClaimParts::by_task`]): `... WHERE ctid = ANY(ARRAY(SELECT ctid FROM
    /// UNNEST($names) AS n(name) CROSS JOIN LATERAL (SELECT ctid, execution_time FROM t WHERE
    /// picked = (n.name IS NULL) AND ... task_name = n.name ... ORDER BY execution_time LIMIT n
    /// FOR UPDATE SKIP LOCKED) due
    /// ORDER BY execution_time LIMIT n)) RETURNING ...`: one range of the lag index per task,
    /// each locked up to the limit, the first of all of them claimed (the others' locks end
    /// with the statement's transaction). One text whatever the number of tasks.
    fn lock_and_fetch(&self, w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>) {
        if !claim.by_task() {
            return common::update_returning(w, claim, CLAIM_BY_CTID);
        }
        let names = claim.task_names().iter().cloned().map(Some).collect();
        claim.update_set(w);
        w.push(" WHERE ctid = ANY(ARRAY(SELECT ctid FROM UNNEST(")
            .bind(Value::Array(Array::Text(names)))
            .push(") AS n(name) CROSS JOIN LATERAL (SELECT ctid, execution_time FROM ")
            .table(claim.table());
        // `picked` compared with an expression of the lateral row, false: a `picked = false`
        // written as a value lets the planner prove the partial due index's predicate and
        // read that index in time order, filtering on the name (with statistics that say each
        // task holds half the rows it chose so: 20,000 rows removed, 3 ms); compared with the
        // outer row, the lag index's range is read (0.3 ms). docs/BENCHMARKS.md, "The ordinary
        // claim task by task".
        let task = TaskOf::Lateral {
            name: "n.name",
            unpicked: "(n.name IS NULL)",
        };
        let level = claim.task_rows(w, task);
        w.push(" FOR UPDATE SKIP LOCKED) due");
        claim.order_by(w, level);
        self.limit(w, claim.limit(), LimitAt::Tail);
        w.push(")) RETURNING ").push(&claim.select_list());
    }

    /// Several keys: one primary-key probe per key over bound arrays, each returning the row's
    /// address, `ctid = ANY(ARRAY(SELECT (SELECT x.ctid FROM t x WHERE x.task_name = k.n AND
    /// x.task_instance = k.i [AND x.version = k.v]) FROM UNNEST($1, $2 [, $3]) AS k(n, i
    /// [, v])))`: one short text however many keys. A row that changes between the probe and
    /// the write has a new ctid, which the write's recheck does not find: it counts as not
    /// written, as a changed version would.
    fn keys_condition(
        &self,
        w: &mut SqlWriter<'_>,
        table: &TableName,
        keys: &[(&ExecutionKey, Option<i64>)],
    ) {
        if keys.len() < 2 {
            return common::key_terms(w, keys.iter().copied());
        }
        let probe = CLAIM_BY_CTID;
        let versions: Option<Vec<i64>> = keys.iter().map(|(_, v)| *v).collect();
        w.push(probe.open)
            .push("SELECT (SELECT x.")
            .push(probe.columns)
            .push(" FROM ")
            .table(table)
            .push(" x WHERE x.task_name = k.n AND x.task_instance = k.i");
        if versions.is_some() {
            w.push(" AND x.version = k.v");
        }
        let text = |f: fn(&ExecutionKey) -> &String| {
            Value::Array(Array::Text(
                keys.iter().map(|(k, _)| Some(f(k).clone())).collect(),
            ))
        };
        w.push(") FROM UNNEST(")
            .bind(text(|k| &k.task_name))
            .push(", ")
            .bind(text(|k| &k.task_instance));
        match versions {
            Some(v) => {
                w.push(", ")
                    .bind(Value::Array(Array::BigInt(v)))
                    .push(") AS k(n, i, v)");
            }
            None => {
                w.push(") AS k(n, i)");
            }
        }
        w.push(probe.close);
    }

    fn placeholder(&self, n: usize) -> String {
        format!("${n}")
    }

    // Without statistics (a fresh table, autovacuum off or not run yet) PostgreSQL estimates
    // `task_name IN (...)` at 0.5% of the rows, answers it with a bitmap scan of the primary key
    // and sorts every due row of those tasks on each claim (17 ms for 20,000 rows). Behind a
    // CASE the filter neither matches an index nor gets that estimate, so the claim reads the
    // partial due index of migration 0005 in execution-time order and stops at the limit
    // (0.08 ms), with or without statistics (docs/BENCHMARKS.md, "ClaimParts plan").
    //
    // One level's due rows as `priority = ANY(ARRAY[level])` ordered by `priority DESC NULLS
    // LAST, execution_time`. With `priority = ?` and `ORDER BY execution_time` the planner read a
    // level through the due index of every level (0005) or the time index, filtering priority:
    // it costs a level's rows as spread evenly in time, but a level claimed from its front has
    // its remaining due rows behind the lower levels' (25,885 rows read for 40 on 1M due rows,
    // 20 ms). An array comparison is no equality the planner propagates, so `priority` stays in
    // the `ORDER BY` and only the priority index (0002) yields that order, without a sort; its
    // scan is bounded by the level and the time (`= ANY` is an equality to the btree): 6
    // buffers for that claim, 3 for a drained level's probe, custom and generic plans alike
    // (docs/BENCHMARKS.md, "Per-level claims on PostgreSQL").
    fn due_filter(&self, w: &mut SqlWriter<'_>, due: &DueFilter<'_>) -> Level {
        common::due_head(w, due);
        match due.level {
            Level::Any => {
                w.push(" AND CASE WHEN task_name IN ")
                    .bind_list(due.task_names.iter().map(String::as_str))
                    .push(" THEN TRUE END");
                Level::Any
            }
            Level::Exactly(priority) => {
                common::task_in(w, due.task_names);
                w.push(" AND priority = ANY(")
                    .bind(Value::Array(Array::SmallInt(vec![Some(priority)])))
                    .push(")");
                Level::Any
            }
            Level::Null => {
                common::task_in(w, due.task_names);
                common::level(w, Level::Null, "");
                Level::Null
            }
        }
    }

    // PostgreSQL sorts NULL first under DESC; docket ranks NULL priority last everywhere.
    fn desc_nulls_last(&self, column: &str) -> String {
        format!("{column} DESC NULLS LAST")
    }

    // The name is written as a literal, not bound: a cached statement may run on a generic
    // plan, made without its values, and that plan matches the order index's expressions
    // (`docket index`) only when they are the same text. Text compares in the "C" collation
    // (code point order, as elsewhere). Numbers are JSON numbers or strings holding a plain
    // decimal (`->>` prints a number in that form too), timestamps strings in the record-date
    // form; any other value is missing (`NUMBER_TEXT`, `TIMESTAMP_TEXT`). `~` and the casts
    // are immutable, so the expressions can be indexed.
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let text = |w: &mut SqlWriter<'_>| {
            w.push("(custom_attributes::jsonb ->> ")
                .attribute(&key.attribute)
                .push(")");
        };
        let (types, pattern, close) = match key.kind {
            KeyType::Text => (" = 'string'", None, " COLLATE \"C\" END)"),
            KeyType::Timestamp => (" = 'string'", Some(TIMESTAMP_TEXT), " COLLATE \"C\" END)"),
            KeyType::Number => (
                " IN ('number', 'string')",
                Some(NUMBER_TEXT),
                "::numeric END)",
            ),
        };
        w.push("(CASE WHEN jsonb_typeof(custom_attributes::jsonb -> ")
            .attribute(&key.attribute)
            .push(")")
            .push(types);
        if let Some(pattern) = pattern {
            w.push(" AND ");
            text(w);
            w.push(" ~ '").push(pattern).push("'");
        }
        w.push(" THEN ");
        text(w);
        w.push(close);
    }

    /// `pg_index` lists index key columns (no `information_schema` view lists indexes): each
    /// key column with its position; expression columns (attnum 0) have no `pg_attribute` row
    /// and are left out. `pg_indexes` says whether an index exists.
    fn catalog(&self, w: &mut SqlWriter<'_>, table: &TableName, query: Catalog<'_>) {
        match query {
            Catalog::IndexColumns => {
                w.push(
                    "SELECT i.relname AS index_name, k.n AS position, a.attname AS column_name \
                     FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid \
                     JOIN pg_namespace ns ON ns.oid = t.relnamespace \
                     JOIN pg_class i ON i.oid = x.indexrelid \
                     CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) \
                     JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum \
                     WHERE ns.nspname = ",
                )
                .schema_of(table)
                .push(" AND t.relname = ")
                .bind(table.table());
            }
            Catalog::IndexExists(index) => {
                w.push("SELECT indexname AS name FROM pg_indexes WHERE schemaname = ");
                w.schema_of(table);
                w.push(" AND tablename = ")
                    .bind(table.table())
                    .push(" AND indexname = ")
                    .bind(index);
            }
            other => common::catalog(w, table, other),
        }
    }

    // No loose index scan before PostgreSQL 18 (`SELECT DISTINCT` reads the whole index): walk
    // the levels with one index probe each on (priority DESC NULLS LAST, execution_time), all
    // in one statement, every level at once.
    fn priority_levels(
        &self,
        w: &mut SqlWriter<'_>,
        table: &TableName,
        below: Option<i16>,
    ) -> Levels {
        w.push("WITH RECURSIVE levels(level) AS ((SELECT priority FROM ")
            .table(table);
        match below {
            Some(level) => w
                .push(" WHERE priority < ")
                .bind(Value::SmallInt(Some(level))),
            None => w.push(" WHERE priority IS NOT NULL"),
        };
        w.push(
            " ORDER BY priority DESC NULLS LAST LIMIT 1) UNION ALL SELECT (SELECT priority FROM ",
        )
        .table(table)
        .push(
            " WHERE priority < levels.level ORDER BY priority DESC NULLS LAST LIMIT 1) \
                 FROM levels WHERE levels.level IS NOT NULL) \
                 SELECT level FROM levels WHERE level IS NOT NULL ORDER BY level DESC",
        );
        Levels::All
    }

    /// `clock_timestamp()`: the time when it is called (`now()` and `CURRENT_TIMESTAMP` give
    /// the transaction's start), a `timestamptz`, so the session's time zone does not matter.
    fn server_time(&self, w: &mut SqlWriter<'_>) {
        w.push("SELECT clock_timestamp() AS server_time");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use docket_core::dialect::{Due, Level, Statements};
    use docket_core::{OrderingPolicy, TableName};

    #[test]
    fn due_query_with_priority_is_numbered_and_nulls_last() {
        let table = TableName::parse("app.jobs").unwrap();
        let s = Statements::new(
            &PgDialect,
            table,
            OrderingPolicy::priority_then_execution_time(),
        );
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let r = s.due(&Due::new(Level::Any, now, &["a".into(), "b".into()], 7));
        assert_eq!(
            r.sql,
            "SELECT task_name, task_instance, task_data, execution_time, picked, picked_by, \
             last_success, last_failure, consecutive_failures, last_heartbeat, version, priority \
             FROM \"app\".\"jobs\" WHERE picked = $1 AND execution_time <= $2 \
             AND CASE WHEN task_name IN ($3, $4) THEN TRUE END \
             AND task_name NOT IN (SELECT task_name FROM \"app\".\"jobs_paused\") \
             AND task_name NOT IN (SELECT task_name FROM \"app\".\"jobs_limits\") \
             ORDER BY priority DESC NULLS LAST, execution_time ASC LIMIT $5"
        );
        assert_eq!(r.binds.len(), 5);
    }

    /// The order index holds the very expressions the claim sorts by: with each bind written
    /// as its literal, every key expression of the index is in the query's `ORDER BY`, in the
    /// same order.
    #[test]
    fn order_index_expressions_are_the_querys() {
        use docket_core::dialect::queue::{sample_custom_keys, ForWorker};
        use docket_core::dialect::Value;
        use docket_core::PrimaryOrder;
        for priority in [false, true] {
            let policy = OrderingPolicy {
                priority,
                ..OrderingPolicy::default()
            };
            let s = Statements::new(&PgDialect, TableName::parse("app.jobs").unwrap(), policy);
            let keys = sample_custom_keys();
            let order = PrimaryOrder::Custom(keys.clone());
            let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
            let q = ForWorker::new("w", "t", &order, now);
            let r = s.item_eligible(&q, Some(1), true);
            let mut sql = r.sql.clone();
            for (i, value) in r.binds.iter().enumerate().rev() {
                if let Value::Text(Some(text)) = value {
                    sql = sql.replace(&format!("${}", i + 1), &format!("'{text}'"));
                }
            }
            let order_by = &sql[sql.find(" ORDER BY ").unwrap() + 10..sql.find(" LIMIT").unwrap()];
            let index = s.order_index(&keys).unwrap();
            assert!(index.columns.is_empty() && index.order_by.is_empty());
            assert!(index.name.starts_with("jobs_ord_"), "{}", index.name);
            let create = &index.create.sql;
            assert!(
                create.starts_with(&format!(
                    "CREATE INDEX \"{}\" ON \"app\".\"jobs\" (task_name, assignable, ",
                    index.name
                )),
                "{create}"
            );
            // The query sorts by `<missing flag>, <value> ASC|DESC` per key; the index holds
            // `(<missing flag>), (<value>)[ DESC]`.
            let mut at = 0;
            for key in &keys {
                let mut value = docket_core::dialect::SqlWriter::for_ddl(&PgDialect);
                PgDialect.json_attribute(&mut value, key);
                let value = value.finish_ddl().unwrap().sql;
                let flag = format!("CASE WHEN {value} IS NULL THEN 1 ELSE 0 END");
                let found = order_by[at..].find(&format!("{flag}, {value}")).unwrap();
                at += found + flag.len();
                assert!(create.contains(&format!("({flag}), ({value})")), "{create}");
            }
            assert_eq!(
                create.contains("priority DESC NULLS LAST"),
                priority,
                "{create}"
            );
            assert!(create.ends_with("record_date, record_order)"), "{create}");
            assert!(index.create.binds.is_empty());
        }
    }

    #[test]
    fn priority_off_never_names_the_priority_column() {
        let s = Statements::new(
            &PgDialect,
            TableName::default(),
            OrderingPolicy::execution_time(),
        );
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let names = ["a".to_owned()];
        for r in [
            s.due(&Due::new(Level::Any, now, &names, 1)),
            s.lock_and_fetch(&Due::new(Level::Any, now, &names, 1), "me"),
            s.get(&docket_core::ExecutionKey::new("a", "1")),
            s.dead(now),
        ] {
            assert!(!r.sql.contains("priority"), "{}", r.sql);
        }
    }
}
