//! How PostgreSQL spells docket's statements.

use docket_core::dialect::{write_schema, Capabilities, Dialect, LockAndFetch, SqlWriter};
use docket_core::ordering::{CustomKey, KeyType};
use docket_core::TableName;

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
            lock_and_fetch: Some(LockAndFetch::UpdateReturning),
            transactional_ddl: true,
            work_queue: true,
            claim_locks_examined_rows: false,
        }
    }

    fn placeholder(&self, n: usize) -> String {
        format!("${n}")
    }

    // PostgreSQL sorts NULL first under DESC; docket ranks NULL priority last everywhere.
    fn desc_nulls_last(&self, column: &str) -> String {
        format!("{column} DESC NULLS LAST")
    }

    // The key is bound; text compares in the "C" collation (code point order, as elsewhere).
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let name = key.attribute.as_str();
        match key.kind {
            // Only string values; anything else is missing, as on the other backends.
            KeyType::Text | KeyType::Timestamp => {
                w.push("(CASE WHEN jsonb_typeof(custom_attributes::jsonb -> ")
                    .bind(name)
                    .push(") = 'string' THEN (custom_attributes::jsonb ->> ")
                    .bind(name)
                    .push(") COLLATE \"C\" END)");
            }
            KeyType::Number => {
                w.push("(CASE WHEN jsonb_typeof(custom_attributes::jsonb -> ")
                    .bind(name)
                    .push(") = 'number' THEN (custom_attributes::jsonb ->> ")
                    .bind(name)
                    .push(")::numeric END)");
            }
        }
    }

    fn max_binds(&self) -> usize {
        65_535
    }

    fn max_insert_rows(&self) -> usize {
        usize::MAX
    }

    fn index_exists(&self, w: &mut SqlWriter<'_>, table: &TableName, index: &str) {
        w.push("SELECT indexname AS name FROM pg_indexes WHERE schemaname = ");
        write_schema(self, w, table);
        w.push(" AND tablename = ")
            .bind(table.table())
            .push(" AND indexname = ")
            .bind(index);
    }

    // No loose index scan before PostgreSQL 18 (`SELECT DISTINCT` reads the whole index): walk
    // the levels with one index probe each on (priority DESC NULLS LAST, execution_time).
    fn priority_levels(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        w.push("WITH RECURSIVE levels(level) AS ((SELECT priority FROM ")
            .table(table)
            .push(
                " WHERE priority IS NOT NULL ORDER BY priority DESC NULLS LAST LIMIT 1) \
                 UNION ALL SELECT (SELECT priority FROM ",
            )
            .table(table)
            .push(
                " WHERE priority < levels.level ORDER BY priority DESC NULLS LAST LIMIT 1) \
                 FROM levels WHERE levels.level IS NOT NULL) \
                 SELECT level FROM levels WHERE level IS NOT NULL ORDER BY level DESC",
            );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use docket_core::dialect::{Level, Statements};
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
        let r = s.due(Level::Any, now, &["a".into(), "b".into()], 7);
        assert_eq!(
            r.sql,
            "SELECT task_name, task_instance, task_data, execution_time, picked, picked_by, \
             last_success, last_failure, consecutive_failures, last_heartbeat, version, priority \
             FROM \"app\".\"jobs\" WHERE picked = $1 AND execution_time <= $2 AND task_name IN ($3, $4) \
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
            let q = ForWorker {
                worker: "w",
                task_type: "t",
                order: &order,
                now: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
                key: None,
            };
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
            s.due(Level::Any, now, &names, 1),
            s.lock_and_fetch(Level::Any, now, &names, 1, "me"),
            s.get(&docket_core::ExecutionKey::new("a", "1")),
            s.dead(now),
        ] {
            assert!(!r.sql.contains("priority"), "{}", r.sql);
        }
    }
}
