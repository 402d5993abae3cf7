//! How MySQL 8 and MariaDB 10.6+ spell docket's statements: one dialect for the family, with a
//! [`Flavor`] for the few real differences between the two servers.

use docket_core::dialect::{
    common, Capabilities, Ddl, Dialect, DueFilter, FileLoad, GeneratedValue, Level,
    OrderIndexStyle, SqlWriter, Syntax, NUMBER_TEXT, TIMESTAMP_TEXT,
};
use docket_core::ordering::{CustomKey, KeyType};
use docket_core::TableName;
use std::fmt;

/// The per-level due index of migration 0006 (picked, priority, execution_time).
const DUE_LEVEL_INDEX: &str = "due_priority_idx";

/// Which server of the MySQL family a store talks to. Everything docket's statements need is
/// spelled the same on both; the flavor carries what is not: the minimum server version with
/// `FOR UPDATE SKIP LOCKED`, and the binary no-pad collation that makes instance ids compare
/// byte for byte (as on PostgreSQL) instead of ignoring trailing spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// MariaDB 10.6 or later (10.11 is the version the suite runs live).
    MariaDb,
    /// Oracle MySQL 8.0.17 or later.
    MySql,
}

impl Flavor {
    /// Recognizes the server from `SELECT VERSION()` (MariaDB always says `MariaDB` there).
    /// Returns the flavor and the `(major, minor, patch)` version, or `None` when the text is
    /// not a version.
    pub fn from_version(version: &str) -> Option<(Flavor, (u32, u32, u32))> {
        let flavor = if version.to_ascii_lowercase().contains("mariadb") {
            Flavor::MariaDb
        } else {
            Flavor::MySql
        };
        let numeric = version.split(['-', '+', ' ']).next()?;
        let mut parts = numeric.split('.').map(str::parse::<u32>);
        let major = parts.next()?.ok()?;
        let minor = parts.next().unwrap_or(Ok(0)).ok()?;
        let patch = parts.next().unwrap_or(Ok(0)).ok()?;
        Some((flavor, (major, minor, patch)))
    }

    /// The oldest server version docket supports: the first with `FOR UPDATE SKIP LOCKED`
    /// (MariaDB 10.6; MySQL 8.0.1) and, on MySQL, the `utf8mb4_0900_bin` collation (8.0.17).
    pub const fn min_version(self) -> (u32, u32, u32) {
        match self {
            Flavor::MariaDb => (10, 6, 0),
            Flavor::MySql => (8, 0, 17),
        }
    }

    /// Binary, no-pad utf8mb4 collation of the key columns: `'a'` and `'a '` are different
    /// instances, and `'A'` differs from `'a'`, exactly as on PostgreSQL.
    pub const fn key_collation(self) -> &'static str {
        match self {
            Flavor::MariaDb => "utf8mb4_nopad_bin",
            Flavor::MySql => "utf8mb4_0900_bin",
        }
    }

    /// The dialect of this flavor.
    pub const fn dialect(self) -> &'static MysqlDialect {
        match self {
            Flavor::MariaDb => &MysqlDialect::MARIADB,
            Flavor::MySql => &MysqlDialect::MYSQL,
        }
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flavor::MariaDb => "MariaDB",
            Flavor::MySql => "MySQL",
        })
    }
}

/// The MySQL/MariaDB dialect: `?` placeholders, backtick-quoted identifiers, `LIMIT ?`,
/// `FOR UPDATE SKIP LOCKED`, no `ON CONFLICT` (a duplicate key is reported as zero rows by the
/// session, see `store.rs`) and no `UPDATE ... RETURNING` (claims select, then update).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MysqlDialect {
    flavor: Flavor,
}

impl MysqlDialect {
    /// The MariaDB dialect.
    pub const MARIADB: MysqlDialect = MysqlDialect {
        flavor: Flavor::MariaDb,
    };
    /// The MySQL dialect.
    pub const MYSQL: MysqlDialect = MysqlDialect {
        flavor: Flavor::MySql,
    };

    /// The server flavor.
    pub const fn flavor(&self) -> Flavor {
        self.flavor
    }
}

impl Dialect for MysqlDialect {
    fn name(&self) -> &'static str {
        "mysql"
    }

    /// MySQL rejects LIMIT inside an IN subquery and has no UPDATE ... RETURNING: select FOR
    /// UPDATE SKIP LOCKED, then update the keys, in one transaction. InnoDB's locking reads
    /// lock every row they examine. Claims task by task when asked (a `UNION ALL` of locking
    /// selects, [`common::claiming_select`]).
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            claims_by_task: true,
            ..Capabilities::SELECT_THEN_UPDATE
        }
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            // The binary protocol counts parameters in 16 bits.
            max_binds: 65_535,
            max_insert_rows: usize::MAX,
            // Keys are written grouped by task name, `task_name = ? AND task_instance IN
            // (...)`, which the range optimizer plans in linear time (MariaDB 10.11, 100 keys:
            // 1.2 ms; 500: 7.4 ms). An `OR` list of key equalities grows faster (0.4 ms for
            // 10 keys, 2.2 ms for 40, 12.9 ms for 100), which is what a batch of many task
            // names still writes: 200 keys bounds that case.
            max_key_terms: 200,
            // Neither server has `ON CONFLICT`, and `INSERT IGNORE` would also downgrade
            // strict-mode errors (data too long) to truncating warnings. The insert is plain;
            // the session turns a duplicate-key error into "0 rows inserted".
            insert_if_absent: "",
            current_schema: "DATABASE()",
            // See `due_filter`.
            due_level_index: Some(DUE_LEVEL_INDEX),
            // Neither server matches an `ORDER BY` expression to an index (MySQL substitutes
            // generated columns only in some `WHERE` comparisons, MariaDB 10.11 not at all):
            // custom orders are indexed through virtual generated columns, which the queries
            // name.
            order_index_style: OrderIndexStyle::GeneratedColumns,
            // `DATETIME` holds the UTC wall-clock values docket binds. `TIMESTAMP` (the type
            // of db-scheduler's DDL for years) converts through the session time zone, which
            // is UTC on docket's connections (`+00:00` unless
            // `MysqlOptions::session_time_zone` says otherwise), so it stores the instants
            // docket binds, and other clients read them right in any session zone. Its range
            // ends in January 2038.
            timestamp_types: &["datetime", "timestamp"],
            ..Syntax::ANSI
        }
    }

    fn quote_ident(&self, ident: &str) -> String {
        format!("`{ident}`")
    }

    // `desc_nulls_last` keeps the default plain `DESC`: MySQL and MariaDB sort NULL lowest,
    // so NULL priority already ranks after every value.

    /// `LOAD DATA LOCAL INFILE` into a staging table (see `file_load.rs`).
    fn file_load(&self) -> Option<&dyn FileLoad> {
        Some(self)
    }

    // One level's due rows through `due_priority_idx` (0006: picked, priority, execution_time),
    // named: under load MariaDB costed that range against `execution_time_idx` read in time
    // order with `priority` filtered, and took the latter (3,000 to 8,000 rows examined for
    // 40, 35 to 45 ms, once a level had been claimed from its front: its remaining rows sit
    // behind the lower levels' due rows), while a quiet replay of the same statement chose the
    // exact range (docs/BENCHMARKS.md, "Per-level claims on MariaDB"). The index exists on
    // every table migrated through 0006; the store writes the hint only where the table has
    // it (a table migrated to 0002..0005 runs the same statements without it).
    fn due_filter(&self, w: &mut SqlWriter<'_>, due: &DueFilter<'_>) -> Level {
        if let (Level::Exactly(_), true) = (due.level, due.level_index) {
            w.push(" FORCE INDEX (").push(DUE_LEVEL_INDEX).push(")");
        }
        common::due_filter(w, due)
    }

    // Index names are per table.
    fn ddl(&self, w: &mut SqlWriter<'_>, table: &TableName, change: Ddl<'_>) {
        match change {
            Ddl::DropIndex(index) => common::drop_index_on_table(w, table, index),
            other => common::ddl(w, table, other),
        }
    }

    /// A `VIRTUAL` column (computed when read, stored only in the index), typed as the key's
    /// expression: text in the flavor's binary no-pad collation, numbers as `DECIMAL(65, 30)`.
    fn generated_column_type(&self, value: GeneratedValue) -> Option<String> {
        Some(match value {
            GeneratedValue::Missing => "TINYINT".to_owned(),
            GeneratedValue::Text { chars } => format!(
                "VARCHAR({chars}) CHARACTER SET utf8mb4 COLLATE {}",
                self.flavor.key_collation()
            ),
            GeneratedValue::Number => "DECIMAL(65, 30)".to_owned(),
        })
    }

    /// The path is bound. Text (and timestamps, sortable UTC text) is unquoted and compared in
    /// the flavor's binary no-pad collation: code point order, trailing spaces significant, as
    /// PostgreSQL's `COLLATE "C"` (`JSON_UNQUOTE` alone returns PAD SPACE `utf8mb4_bin`).
    /// Numbers are JSON numbers, or strings holding a plain decimal ([`NUMBER_TEXT`], as a CSV
    /// cell holds a number), read as `DECIMAL(65, 30)`: exact for every integer docket can be
    /// given (64-bit) and for fractions down to 1e-30; magnitudes beyond 1e35 saturate.
    /// Timestamps are strings in the record-date form ([`TIMESTAMP_TEXT`]). Any other value
    /// (JSON null, a boolean, text that does not convert) is missing, as on the other backends.
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let path = key.attribute.json_path();
        let value = |w: &mut SqlWriter<'_>| {
            w.push("JSON_EXTRACT(custom_attributes, ")
                .bind(path.clone())
                .push(")");
        };
        let string = |w: &mut SqlWriter<'_>| {
            w.push("JSON_UNQUOTE(");
            value(w);
            w.push(")");
        };
        let of_type = |w: &mut SqlWriter<'_>, types: &str| {
            w.push("JSON_TYPE(");
            value(w);
            w.push(") ").push(types);
        };
        w.push("(CASE WHEN ");
        match key.kind {
            KeyType::Text | KeyType::Timestamp => {
                of_type(w, "= 'STRING'");
                if key.kind == KeyType::Timestamp {
                    w.push(" AND ");
                    string(w);
                    w.push(" COLLATE ")
                        .push(self.flavor.key_collation())
                        .push(" REGEXP '")
                        .push(TIMESTAMP_TEXT)
                        .push("'");
                }
                w.push(" THEN ");
                string(w);
                w.push(" COLLATE ").push(self.flavor.key_collation());
            }
            KeyType::Number => {
                of_type(w, "IN ('INTEGER', 'UNSIGNED INTEGER', 'DECIMAL', 'DOUBLE')");
                w.push(" THEN CAST(");
                value(w);
                w.push(" AS DECIMAL(65, 30)) WHEN ");
                of_type(w, "= 'STRING'");
                w.push(" AND ");
                string(w);
                // An explicit collation: in a generated column the literal's differs.
                w.push(" COLLATE ")
                    .push(self.flavor.key_collation())
                    .push(" REGEXP '")
                    .push(NUMBER_TEXT)
                    .push("' THEN CAST(");
                string(w);
                w.push(" AS DECIMAL(65, 30))");
            }
        }
        w.push(" END)");
    }

    /// `UTC_TIMESTAMP(6)`: UTC with microseconds whatever the session's `time_zone`
    /// ([`MysqlOptions::session_time_zone`](crate::MysqlOptions::session_time_zone) may set
    /// another), read as a UTC `DATETIME` as docket's columns are; `NOW(6)` would give the
    /// session zone's wall-clock time, and the statement's start rather than the call.
    fn server_time(&self, w: &mut SqlWriter<'_>) {
        w.push("SELECT UTC_TIMESTAMP(6) AS server_time");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use docket_core::dialect::{Due, Level, Statements};
    use docket_core::store::NewExecution;
    use docket_core::{ExecutionKey, OrderingPolicy, TableName};

    fn now() -> chrono::DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
    }

    #[test]
    fn due_query_for_update_with_priority() {
        let table = TableName::parse("app.jobs").unwrap();
        let d = MysqlDialect::MARIADB;
        let s = Statements::new(&d, table, OrderingPolicy::priority_then_execution_time());
        let r = s.due_for_update(&Due::new(Level::Any, now(), &["a".into(), "b".into()], 7));
        assert_eq!(
            r.sql,
            "SELECT task_name, task_instance, task_data, execution_time, picked, picked_by, \
             last_success, last_failure, consecutive_failures, last_heartbeat, version, priority \
             FROM `app`.`jobs` WHERE picked = ? AND execution_time <= ? AND task_name IN (?, ?) \
             AND task_name NOT IN (SELECT task_name FROM `app`.`jobs_paused`) \
             AND task_name NOT IN (SELECT task_name FROM `app`.`jobs_limits`) \
             ORDER BY priority DESC, execution_time ASC LIMIT ? FOR UPDATE SKIP LOCKED"
        );
        assert_eq!(r.binds.len(), 5);
    }

    #[test]
    fn insert_is_plain_and_priority_off_never_names_priority() {
        let d = MysqlDialect::MYSQL;
        let s = Statements::new(&d, TableName::default(), OrderingPolicy::execution_time());
        let row = NewExecution {
            task_name: "a".into(),
            task_instance: "1".into(),
            task_data: None,
            execution_time: now(),
            priority: Some(1),
            limit_key: None,
        };
        let insert = s.insert(&row);
        assert!(
            insert.sql.ends_with("VALUES (?, ?, ?, ?, ?, ?, ?)"),
            "{}",
            insert.sql
        );
        let names = ["a".to_owned()];
        for r in [
            insert,
            s.due_for_update(&Due::new(Level::Any, now(), &names, 1)),
            s.claim_keys(&[ExecutionKey::new("a", "1")], "me", now()),
            s.get(&ExecutionKey::new("a", "1")),
            s.dead(now()),
        ] {
            assert!(!r.sql.contains("priority"), "{}", r.sql);
        }
    }

    #[test]
    fn flavor_from_version() {
        assert_eq!(
            Flavor::from_version("10.11.19-MariaDB-0+deb12u1"),
            Some((Flavor::MariaDb, (10, 11, 19)))
        );
        assert_eq!(
            Flavor::from_version("8.0.36"),
            Some((Flavor::MySql, (8, 0, 36)))
        );
        assert_eq!(
            Flavor::from_version("8.4.0-commercial"),
            Some((Flavor::MySql, (8, 4, 0)))
        );
        assert_eq!(Flavor::from_version("garbage"), None);
        assert!((10, 5, 9) < Flavor::MariaDb.min_version());
    }
}
