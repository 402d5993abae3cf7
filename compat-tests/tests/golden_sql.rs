//! Golden SQL: every statement of `Statements::catalogue()` and every migration, as each of the
//! five dialects spells it, side by side, priority off and on (insta snapshots in
//! `tests/snapshots/`), and every work-queue statement of each dialect. SQL Server and Oracle
//! cannot run on the build machines, so their text (statements, work-queue statements and
//! migrations) is also parsed here with `sqlparser`'s `MsSqlDialect` and `OracleDialect`.
//!
//! Placeholders: `@P1` is a T-SQL variable name, which the MsSql parser reads as it is. The
//! Oracle parser reads `:1`-style binds as placeholders too; both are parsed verbatim, with no
//! textual substitution.

use docket_compat_tests::statements::every_statement;
use docket_core::dialect::{
    Dialect, LockAndFetch, OrderIndexStyle, Rendered, SqlWriter, Statements,
};
use docket_core::migrate::{plan, split_statements, MigrationFile};
use docket_core::store::sql::AdoptPlan;
use docket_core::{OrderingPolicy, TableName};
use sqlparser::dialect::{MsSqlDialect, MySqlDialect, OracleDialect};
use sqlparser::parser::Parser;

/// The five dialects, in the order the snapshots show them.
fn dialects() -> [&'static dyn Dialect; 5] {
    [
        &docket_postgres::PgDialect,
        &docket_mysql::MysqlDialect::MARIADB,
        &docket_sqlite::SqliteDialect,
        &docket_mssql::MssqlDialect,
        &docket_oracle::OracleDialect,
    ]
}

fn policy(priority: bool) -> OrderingPolicy {
    OrderingPolicy {
        priority,
        ..OrderingPolicy::default()
    }
}

fn table() -> TableName {
    TableName::parse("app.jobs").expect("valid table name")
}

fn catalogue(dialect: &'static dyn Dialect, priority: bool) -> Vec<(&'static str, Rendered)> {
    Statements::new(dialect, table(), policy(priority)).catalogue()
}

/// One statement in all five dialects, or `None` when the catalogue lacks it under this toggle
/// (the per-level forms exist only with priority on).
fn side_by_side(name: &str, priority: bool) -> Option<String> {
    let mut out = String::new();
    for dialect in dialects() {
        let (_, r) = catalogue(dialect, priority)
            .into_iter()
            .find(|(n, _)| *n == name)?;
        out.push_str(&format!(
            "-- {} ({} binds)\n{}\n\n",
            dialect.name(),
            r.binds.len(),
            r.sql
        ));
    }
    Some(out)
}

/// Statements a backend never sends, given how it claims and inserts (they are still rendered
/// by the catalogues, so every dialect lists the same names). Where a locking read locks every
/// row it examines, `next_for` reads candidates without locks and locks one by key
/// (`item_lock_one`), so the unkeyed claim reads `item_next_*` are not sent (Oracle, which
/// cannot limit a locking read, would reject them). A claim by task is sent only where the
/// dialect claims so.
fn unsent(dialect: &dyn Dialect, name: &str) -> bool {
    let lock_and_fetch = name.starts_with("lock_and_fetch");
    let select_then_update = name.starts_with("due_for_update") || name == "claim_keys";
    if name == "insert_many" && dialect.syntax().max_insert_rows < 2 {
        return true;
    }
    if name.ends_with("_by_task") && !dialect.capabilities().claims_by_task {
        return true;
    }
    let one_step_claim = name.starts_with("item_next_");
    if one_step_claim {
        return dialect.capabilities().claim_locks_examined_rows;
    }
    match dialect.capabilities().lock_and_fetch {
        Some(LockAndFetch::SelectThenUpdate) => lock_and_fetch,
        Some(LockAndFetch::UpdateReturning) => select_then_update,
        None => lock_and_fetch || select_then_update,
    }
}

macro_rules! golden {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let mut seen = false;
                for priority in [false, true] {
                    if let Some(text) = side_by_side(stringify!($name), priority) {
                        seen = true;
                        let toggle = if priority { "priority_on" } else { "priority_off" };
                        insta::assert_snapshot!(
                            format!("{}__{toggle}", stringify!($name)),
                            text
                        );
                    }
                }
                assert!(seen, "{} is not in the catalogue", stringify!($name));
            }
        )*

        /// Every catalogue statement has a golden test above, and no test names a statement
        /// the catalogue lost.
        #[test]
        fn every_catalogue_statement_has_a_golden_test() {
            let tested = [$(stringify!($name)),*];
            let mut listed: Vec<&str> = catalogue(&docket_postgres::PgDialect, true)
                .into_iter()
                .map(|(n, _)| n)
                .collect();
            listed.sort_unstable();
            let mut tested = tested.to_vec();
            tested.sort_unstable();
            assert_eq!(listed, tested);
        }
    };
}

golden!(
    insert,
    insert_many,
    insert_many_new,
    get,
    priority_levels,
    priority_levels_below,
    next_at_level,
    due,
    due_for_update,
    lock_and_fetch,
    due_at_level,
    due_for_update_at_level,
    lock_and_fetch_at_level,
    due_null_level,
    due_for_update_null_level,
    lock_and_fetch_null_level,
    claim_keys,
    update_claim,
    update_reschedule,
    update_client,
    heartbeat,
    heartbeat_versions,
    picked_at_versions,
    delete,
    delete_versions,
    update_versions,
    dead,
    dead_page_first,
    dead_page_after,
    dead_counts,
    paused_table_exists,
    paused_list,
    paused_page,
    paused_count,
    paused_among,
    paused_insert,
    paused_delete,
    limits_table_exists,
    limit_list,
    limit_lock,
    limit_update,
    limit_insert,
    limit_delete,
    limit_running,
    limit_starts,
    limit_starts_prune,
    limit_starts_insert,
    limit_claimed,
    limit_use,
    limit_use_rate,
    due_for_update_by_task,
    lock_and_fetch_by_task,
    limited_due_for_update,
    limited_due_for_update_full_keys,
    limited_due_for_update_no_key_full,
    lag_first_name,
    lag_next_name,
    lag_name_kind,
    lag_head,
    lag_head_items,
    lag_count_scheduled,
    lag_count_picked,
    lag_count_due,
    list,
    summary,
    unresolved_names,
    delete_unresolved,
    column_exists,
    due_excluding,
    due_for_update_excluding,
    lock_and_fetch_excluding,
    table_columns,
    index_columns,
    server_time,
);

fn parse(dialect: &dyn sqlparser::dialect::Dialect, what: &str, sql: &str) {
    match Parser::parse_sql(dialect, sql) {
        Ok(statements) => assert_eq!(statements.len(), 1, "{what}: one statement\n{sql}"),
        Err(e) => panic!("{what} does not parse: {e}\n{sql}"),
    }
}

/// Binds and placeholders agree: `@P1..@Pn` / `:1..:n`, each once, in order.
fn placeholders_match(dialect: &dyn Dialect, name: &str, r: &Rendered) {
    let mut rest = r.sql.as_str();
    for n in 1..=r.binds.len() {
        let p = dialect.placeholder(n);
        let at = rest
            .find(&p)
            .unwrap_or_else(|| panic!("{name}: {p} missing or out of order\n{}", r.sql));
        rest = &rest[at + p.len()..];
    }
    let next = dialect.placeholder(r.binds.len() + 1);
    assert!(!r.sql.contains(&next), "{name}: unbound {next}\n{}", r.sql);
}

/// Every statement of both catalogues (scheduler and work queue) that the backend sends.
fn parse_catalogue(dialect: &'static dyn Dialect, parser: &dyn sqlparser::dialect::Dialect) {
    for priority in [false, true] {
        let statements = Statements::new(dialect, table(), policy(priority));
        let queue = statements.queue_catalogue();
        for (name, r) in statements.catalogue().into_iter().chain(queue) {
            placeholders_match(dialect, name, &r);
            if unsent(dialect, name) {
                continue;
            }
            parse(parser, &format!("{} {name}", dialect.name()), &r.sql);
        }
    }
}

#[test]
fn mssql_statements_parse_as_tsql() {
    parse_catalogue(&docket_mssql::MssqlDialect, &MsSqlDialect {});
}

#[test]
fn oracle_statements_parse_as_oracle_sql() {
    parse_catalogue(&docket_oracle::OracleDialect, &OracleDialect {});
}

/// T-SQL's reserved keywords (SQL Server refuses one as a bare identifier; sqlparser reads it).
const TSQL_RESERVED: &str =
    "ADD ALL ALTER AND ANY AS ASC AUTHORIZATION BACKUP BEGIN BETWEEN BREAK BROWSE BULK BY \
    CASCADE CASE CHECK CHECKPOINT CLOSE CLUSTERED COALESCE COLLATE COLUMN COMMIT COMPUTE \
    CONSTRAINT CONTAINS CONTAINSTABLE CONTINUE CONVERT CREATE CROSS CURRENT CURRENT_DATE \
    CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURSOR DATABASE DBCC DEALLOCATE DECLARE \
    DEFAULT DELETE DENY DESC DISK DISTINCT DISTRIBUTED DOUBLE DROP DUMP ELSE END ERRLVL ESCAPE \
    EXCEPT EXEC EXECUTE EXISTS EXIT EXTERNAL FETCH FILE FILLFACTOR FOR FOREIGN FREETEXT \
    FREETEXTTABLE FROM FULL FUNCTION GOTO GRANT GROUP HAVING HOLDLOCK IDENTITY IDENTITY_INSERT \
    IDENTITYCOL IF IN INDEX INNER INSERT INTERSECT INTO IS JOIN KEY KILL LEFT LIKE LINENO LOAD \
    MERGE NATIONAL NOCHECK NONCLUSTERED NOT NULL NULLIF OF OFF OFFSETS ON OPEN OPENDATASOURCE \
    OPENQUERY OPENROWSET OPENXML OPTION OR ORDER OUTER OVER PERCENT PIVOT PLAN PRECISION \
    PRIMARY PRINT PROC PROCEDURE PUBLIC RAISERROR READ READTEXT RECONFIGURE REFERENCES \
    REPLICATION RESTORE RESTRICT RETURN REVERT REVOKE RIGHT ROLLBACK ROWCOUNT ROWGUIDCOL RULE \
    SAVE SCHEMA SECURITYAUDIT SELECT SESSION_USER SET SETUSER SHUTDOWN SOME STATISTICS \
    SYSTEM_USER TABLE TABLESAMPLE TEXTSIZE THEN TO TOP TRAN TRANSACTION TRIGGER TRUNCATE \
    TRY_CONVERT TSEQUAL UNION UNIQUE UNPIVOT UPDATE UPDATETEXT USE USER VALUES VARYING VIEW \
    WAITFOR WHEN WHERE WHILE WITH WRITETEXT";

/// Oracle's reserved words (V$RESERVED_WORDS with RESERVED = 'Y').
const ORACLE_RESERVED: &str =
    "ACCESS ADD ALL ALTER AND ANY AS ASC AUDIT BETWEEN BY CHAR CHECK CLUSTER COLUMN COMMENT \
    COMPRESS CONNECT CREATE CURRENT DATE DECIMAL DEFAULT DELETE DESC DISTINCT DROP ELSE \
    EXCLUSIVE EXISTS FILE FLOAT FOR FROM GRANT GROUP HAVING IDENTIFIED IMMEDIATE IN INCREMENT \
    INDEX INITIAL INSERT INTEGER INTERSECT INTO IS LEVEL LIKE LOCK LONG MAXEXTENTS MINUS \
    MLSLABEL MODE MODIFY NOAUDIT NOCOMPRESS NOT NOWAIT NULL NUMBER OF OFFLINE ON ONLINE OPTION \
    OR ORDER PCTFREE PRIOR PUBLIC RAW RENAME RESOURCE REVOKE ROW ROWID ROWNUM ROWS SELECT \
    SESSION SET SHARE SIZE SMALLINT START SUCCESSFUL SYNONYM SYSDATE TABLE THEN TO TRIGGER UID \
    UNION UNIQUE UPDATE USER VALIDATE VALUES VARCHAR VARCHAR2 VIEW WHENEVER WHERE WITH";

/// No alias (docket writes them bare, in lower case: ` AS name`) is a reserved word of SQL
/// Server or Oracle, which sqlparser reads but the servers refuse (`SUM(...) AS open` was one).
#[test]
fn mssql_and_oracle_aliases_are_not_reserved_words() {
    for (dialect, reserved) in [
        (
            &docket_mssql::MssqlDialect as &'static dyn Dialect,
            TSQL_RESERVED,
        ),
        (&docket_oracle::OracleDialect, ORACLE_RESERVED),
    ] {
        let mut aliases = 0;
        for (name, r) in every_statement(dialect) {
            for (_, after) in r
                .sql
                .match_indices(" AS ")
                .map(|(i, _)| r.sql.split_at(i + 4))
            {
                let alias: String = after
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if alias.is_empty() {
                    continue; // a cast's type, a computed column, a CTE body
                }
                aliases += 1;
                assert!(
                    !reserved
                        .split_whitespace()
                        .any(|w| w == alias.to_ascii_uppercase()),
                    "{} {name}: alias {alias} is a reserved word\n{}",
                    dialect.name(),
                    r.sql
                );
            }
        }
        assert!(
            aliases > 10,
            "{}: only {aliases} aliases seen",
            dialect.name()
        );
    }
    // The check finds one.
    assert!(TSQL_RESERVED.split_whitespace().any(|w| w == "OPEN"));
    assert!(ORACLE_RESERVED.split_whitespace().any(|w| w == "LEVEL"));
}

fn migrations(files: &[MigrationFile], dialect: &dyn Dialect) -> String {
    let mut out = String::new();
    for m in plan(files, dialect, &table(), None).expect("plan") {
        out.push_str(&format!(
            "-- {} up\n{}\n-- {} down\n{}\n",
            m.version, m.up, m.version, m.down
        ));
    }
    out
}

#[test]
fn migrations_of_each_dialect() {
    insta::assert_snapshot!(
        "migrations_postgres",
        migrations(docket_postgres::MIGRATIONS, &docket_postgres::PgDialect)
    );
    insta::assert_snapshot!(
        "migrations_mysql",
        migrations(
            docket_mysql::MIGRATIONS,
            &docket_mysql::MysqlDialect::MARIADB
        )
    );
    insta::assert_snapshot!(
        "migrations_sqlite",
        migrations(docket_sqlite::MIGRATIONS, &docket_sqlite::SqliteDialect)
    );
    insta::assert_snapshot!(
        "migrations_mssql",
        migrations(docket_mssql::MIGRATIONS, &docket_mssql::MssqlDialect)
    );
    insta::assert_snapshot!(
        "migrations_oracle",
        migrations(docket_oracle::MIGRATIONS, &docket_oracle::OracleDialect)
    );
}

fn parse_migrations(
    files: &[MigrationFile],
    dialect: &dyn Dialect,
    parser: &dyn sqlparser::dialect::Dialect,
) {
    for m in plan(files, dialect, &table(), None).expect("plan") {
        for (part, sql) in [("up", &m.up), ("down", &m.down)] {
            for stmt in split_statements(sql) {
                parse(parser, &format!("{} {part}", m.version), &stmt);
            }
        }
    }
}

#[test]
fn mssql_migrations_parse_as_tsql() {
    parse_migrations(
        docket_mssql::MIGRATIONS,
        &docket_mssql::MssqlDialect,
        &MsSqlDialect {},
    );
}

#[test]
fn oracle_migrations_parse_as_oracle_sql() {
    parse_migrations(
        docket_oracle::MIGRATIONS,
        &docket_oracle::OracleDialect,
        &OracleDialect {},
    );
}

/// The parsers are a real check: a statement with its CTE cut short, or Oracle's row limit placed
/// before `ORDER BY`, is rejected.
#[test]
fn parsers_reject_broken_statements() {
    let mssql = MsSqlDialect {};
    assert!(Parser::parse_sql(
        &mssql,
        "WITH due AS (SELECT TOP (@P1) x FROM [t] UPDATE due SET x = @P2"
    )
    .is_err());
    let oracle = OracleDialect {};
    assert!(Parser::parse_sql(
        &oracle,
        "SELECT x FROM \"t\" FETCH FIRST :1 ROWS ONLY ORDER BY x"
    )
    .is_err());
}

/// The work-queue statements (FIFO and a two-key custom order) of every backend, priority off
/// and on.
#[test]
fn queue_statements() {
    for dialect in dialects() {
        assert!(dialect.capabilities().work_queue, "{}", dialect.name());
        for priority in [false, true] {
            let text: String = Statements::new(dialect, table(), policy(priority))
                .queue_catalogue()
                .into_iter()
                .map(|(name, r)| format!("-- {name} ({} binds)\n{}\n\n", r.binds.len(), r.sql))
                .collect();
            let toggle = if priority {
                "priority_on"
            } else {
                "priority_off"
            };
            insta::assert_snapshot!(format!("queue_{}__{toggle}", dialect.name()), text);
        }
    }
}

/// SQL Server reads the custom keys of an unindexed order with OPENJSON, as UTF-8 bytes or an
/// exact DECIMAL (numeric text included); Oracle with JSON_VALUE ... RETURNING and an item method
/// that leaves values of another JSON type (text that holds no number) missing; Oracle's keyed lock carries no row limit.
#[test]
fn queue_custom_keys_per_dialect() {
    let lock_one = |dialect: &'static dyn Dialect| {
        Statements::new(dialect, table(), policy(false))
            .queue_catalogue()
            .into_iter()
            .find(|(n, _)| *n == "item_lock_one")
            .map(|(_, r)| r.sql)
            .unwrap_or_default()
    };
    let mssql = lock_one(&docket_mssql::MssqlDialect);
    assert!(
        mssql.contains(
            r#"OUTER APPLY OPENJSON(i.custom_attributes) WITH (k0 NVARCHAR(4000) '$."team"', k1 NVARCHAR(4000) '$."score"') AS j"#
        ) && mssql.contains("TRY_CAST(j.k1 AS DECIMAL(38, 10))")
            && mssql.contains("CONVERT(VARBINARY(256), CONVERT(VARCHAR(256), j.k0"),
        "{mssql}"
    );
    assert!(
        mssql.contains("WITH (UPDLOCK, READPAST, ROWLOCK)"),
        "{mssql}"
    );
    let oracle = lock_one(&docket_oracle::OracleDialect);
    assert!(
        oracle.contains(
            r#"JSON_VALUE(custom_attributes, '$."team".stringOnly()' RETURNING VARCHAR2(1000))"#
        ),
        "{oracle}"
    );
    assert!(
        oracle.contains(r#"JSON_VALUE(custom_attributes, '$."score".number()' RETURNING NUMBER)"#),
        "{oracle}"
    );
    assert!(
        oracle.ends_with("FOR UPDATE SKIP LOCKED") && !oracle.contains("FETCH FIRST"),
        "{oracle}"
    );
}

/// What `migrate --adopt` runs for a table with every column of `0001_base` and
/// `0002_priority` but no index: each backend's own `CREATE INDEX` statements of those
/// migrations, nothing else (no `CREATE TABLE`, no `ALTER TABLE`). With db-scheduler's indexes
/// in place it runs nothing.
#[test]
fn adopt_creates_only_missing_indexes() {
    let backends: [(&[MigrationFile], &'static dyn Dialect); 5] = [
        (docket_postgres::MIGRATIONS, &docket_postgres::PgDialect),
        (
            docket_mysql::MIGRATIONS,
            &docket_mysql::MysqlDialect::MARIADB,
        ),
        (docket_sqlite::MIGRATIONS, &docket_sqlite::SqliteDialect),
        (docket_mssql::MIGRATIONS, &docket_mssql::MssqlDialect),
        (docket_oracle::MIGRATIONS, &docket_oracle::OracleDialect),
    ];
    let adopt = |indexes: &[&[&str]]| AdoptPlan {
        satisfied: vec!["0001_base", "0002_priority"],
        indexes: indexes
            .iter()
            .map(|keys| keys.iter().map(|k| (*k).to_owned()).collect())
            .collect(),
    };
    let db_scheduler: &[&[&str]] = &[
        &["task_name", "task_instance"],
        &["execution_time"],
        &["last_heartbeat"],
        &["priority", "execution_time"],
    ];
    let mut out = String::new();
    for (files, dialect) in backends {
        let steps = plan(files, dialect, &table(), Some("0002_priority")).expect("plan");
        let mut created = Vec::new();
        for step in adopt(&[]).apply(steps.clone(), &mut created) {
            out.push_str(&format!(
                "-- {} {} adopted\n{}\n",
                dialect.name(),
                step.version,
                step.up
            ));
            for stmt in split_statements(&step.up) {
                assert!(stmt.starts_with("CREATE INDEX"), "{stmt}");
            }
        }
        let mut none = Vec::new();
        for step in adopt(db_scheduler).apply(steps, &mut none) {
            assert_eq!(
                step.up,
                "",
                "{}: db-scheduler's indexes cover it",
                dialect.name()
            );
        }
        assert!(none.is_empty());
        out.push('\n');
    }
    insta::assert_snapshot!("adopt_indexes", out);
}

fn render_all(statements: Vec<(impl AsRef<str>, Rendered)>) -> String {
    statements
        .into_iter()
        .map(|(name, r)| {
            format!(
                "-- {} ({} binds)\n{}\n\n",
                name.as_ref(),
                r.binds.len(),
                r.sql
            )
        })
        .collect()
}

/// Streaming intake (the multi-row insert, the id check, the item counts) and the index of a
/// two-key custom order (its DDL, and where the dialect indexes with generated columns the
/// queries that sort by them), for the backends that run the queue here, priority off and on
/// (SQL Server's and Oracle's: `mssql_and_oracle_scale_statements`).
#[test]
fn queue_scale_statements() {
    for dialect in &dialects()[..3] {
        for priority in [false, true] {
            let s = Statements::new(*dialect, table(), policy(priority));
            let mut text = render_all(s.queue_scale_catalogue().expect("renders"));
            text.push_str(&render_all(s.order_index_catalogue().expect("renders")));
            let toggle = if priority {
                "priority_on"
            } else {
                "priority_off"
            };
            insta::assert_snapshot!(format!("queue_scale_{}__{toggle}", dialect.name()), text);
        }
    }
}

/// The bulk intake of the dialects that load files (MySQL/MariaDB), priority off and on:
/// every statement but the `LOAD DATA` itself (which sqlparser does not read) parses.
#[test]
fn bulk_intake_statements() {
    for dialect in dialects() {
        let Some(load) = dialect.file_load() else {
            continue;
        };
        for priority in [false, true] {
            let s = Statements::new(dialect, table(), policy(priority));
            let all = s.bulk_intake_catalogue(load);
            for (name, r) in &all {
                if *name != "staging_load" {
                    parse(
                        &MySqlDialect {},
                        &format!("{} {name}", dialect.name()),
                        &r.sql,
                    );
                }
            }
            let toggle = if priority {
                "priority_on"
            } else {
                "priority_off"
            };
            insta::assert_snapshot!(
                format!("bulk_intake_{}__{toggle}", dialect.name()),
                render_all(all)
            );
        }
    }
}

/// `expr` of T-SQL's `ALTER TABLE t ADD [c] AS (expr)`, which sqlparser 0.64 does not read,
/// as a select list item it does: `SELECT (expr) AS [c] FROM t`.
fn computed_column_as_select(sql: &str) -> String {
    let (head, expr) = sql
        .split_once(" AS (")
        .unwrap_or_else(|| panic!("a computed column: {sql}"));
    let (table, column) = head
        .strip_prefix("ALTER TABLE ")
        .and_then(|rest| rest.split_once(" ADD "))
        .unwrap_or_else(|| panic!("ALTER TABLE t ADD c: {sql}"));
    let expr = expr
        .strip_suffix(')')
        .unwrap_or_else(|| panic!("ends the expression: {sql}"));
    format!("SELECT ({expr}) AS {column} FROM {table}")
}

/// The index of a custom order on SQL Server (computed columns over `JSON_VALUE`, then an
/// index on them) and Oracle (a function-based index on the `JSON_VALUE` expressions), golden
/// and parsed, existence checks included; neither runs the queue on the build machines.
#[test]
fn order_index_mssql_and_oracle() {
    let mssql = docket_mssql::MssqlDialect;
    let oracle = docket_oracle::OracleDialect;
    for (dialect, parser, name) in [
        (
            &mssql as &dyn Dialect,
            &MsSqlDialect {} as &dyn sqlparser::dialect::Dialect,
            "mssql",
        ),
        (&oracle, &OracleDialect {}, "oracle"),
    ] {
        let index = Statements::new(dialect, table(), policy(true))
            .order_index(&docket_core::dialect::queue::sample_custom_keys())
            .expect("renders");
        let mut ddl: Vec<(String, Rendered)> = index
            .columns
            .iter()
            .map(|c| (format!("add_column {}", c.name), c.add.clone()))
            .collect();
        ddl.push(("create_index".to_owned(), index.create.clone()));
        ddl.push(("drop_index".to_owned(), index.drop.clone()));
        ddl.extend(
            index
                .columns
                .iter()
                .map(|c| (format!("drop_column {}", c.name), c.drop.clone())),
        );
        for (what, r) in &ddl {
            assert!(r.binds.is_empty(), "{what}: DDL takes no binds");
            if name == "mssql" && what.starts_with("add_column") {
                // Indexable: deterministic and precise, no subquery (SQL Server refuses one
                // in a computed column), no FLOAT, no MAX type as an index key.
                assert!(
                    r.sql.starts_with("ALTER TABLE [app].[jobs] ADD [ord_")
                        && r.sql.contains("JSON_VALUE(custom_attributes, '$.\"")
                        && !r.sql.contains("PERSISTED"),
                    "{}",
                    r.sql
                );
                for banned in ["SELECT", "OPENJSON", "FLOAT", "MAX)"] {
                    assert!(!r.sql.contains(banned), "{banned}: {}", r.sql);
                }
                parse(
                    parser,
                    &format!("{name} {what}"),
                    &computed_column_as_select(&r.sql),
                );
                continue;
            }
            parse(parser, &format!("{name} {what}"), &r.sql);
        }
        assert_eq!(
            index.columns.is_empty(),
            name == "oracle",
            "SQL Server indexes computed columns, Oracle the expressions"
        );
        let mut exists = vec![("index_exists".to_owned(), index.exists.clone())];
        exists.extend(
            index
                .columns
                .iter()
                .map(|c| (format!("column_exists {}", c.name), c.exists.clone())),
        );
        for (what, r) in &exists {
            placeholders_match(dialect, what, r);
            parse(parser, &format!("{name} {what}"), &r.sql);
        }
        ddl.extend(exists);
        insta::assert_snapshot!(format!("order_index_{name}"), render_all(ddl));
    }
}

/// The custom order's `ORDER BY` of the unindexed queries is the indexed expressions: the
/// sort and the index agree. SQL Server sorts by the computed columns once they exist (its
/// unindexed query reads the same members with OPENJSON); PostgreSQL and Oracle match the index by its
/// expressions, so their query holds them verbatim, nothing bound: a plan made without the
/// values (PostgreSQL's generic plan of a cached statement) matches it too.
#[test]
fn custom_orders_sort_by_the_indexed_expressions() {
    for dialect in [
        &docket_mssql::MssqlDialect as &dyn Dialect,
        &docket_oracle::OracleDialect,
        &docket_postgres::PgDialect,
    ] {
        let statements = Statements::new(dialect, table(), policy(false));
        let index = statements
            .order_index(&docket_core::dialect::queue::sample_custom_keys())
            .expect("renders");
        // The catalogue's custom-order read (`item_eligible`, as `list_for` and the two-step
        // claim's candidate read sort).
        let list = statements
            .queue_catalogue()
            .into_iter()
            .find(|(n, _)| *n == "item_next_custom")
            .map(|(_, r)| r)
            .expect("item_next_custom");
        let mut sql = list.sql.clone();
        if dialect.syntax().order_index_style == OrderIndexStyle::GeneratedColumns {
            // The unindexed query reads each key's JSON text from OPENJSON where the index's
            // expression reads it with JSON_VALUE: the same expression around either.
            let keys = docket_core::dialect::queue::sample_custom_keys();
            for (n, key) in keys.iter().enumerate() {
                let json_value = format!(
                    "JSON_VALUE(custom_attributes, '{}')",
                    key.attribute.json_path()
                );
                sql = sql.replace(&format!("j.k{n}"), &json_value);
            }
            // A query that binds the path where the index DDL writes it.
            for (n, value) in list.binds.iter().enumerate().rev() {
                if let docket_core::dialect::Value::Text(Some(text)) = value {
                    if text.starts_with("$.") {
                        sql = sql.replace(&dialect.placeholder(n + 1), &format!("'{text}'"));
                    }
                }
            }
        }
        let ddl: String = index
            .columns
            .iter()
            .map(|c| c.add.sql.as_str())
            .chain([index.create.sql.as_str()])
            .collect::<Vec<_>>()
            .join("\n");
        let expressions: Vec<String> = docket_core::dialect::queue::sample_custom_keys()
            .iter()
            .flat_map(|key| {
                let mut w = SqlWriter::for_ddl(dialect);
                dialect.json_attribute(&mut w, key);
                let value = w.finish_ddl().expect("literal path").sql;
                [
                    format!("CASE WHEN {value} IS NULL THEN 1 ELSE 0 END"),
                    value,
                ]
            })
            .collect();
        for expr in &expressions {
            assert!(
                ddl.contains(expr.as_str()),
                "{}: the index does not hold {expr}\n{ddl}",
                dialect.name()
            );
        }
        assert_eq!(expressions.len(), 4, "{}: {expressions:?}", dialect.name());
        let order_by = sql
            .rsplit_once("ORDER BY ")
            .map(|(_, order)| order)
            .unwrap_or_else(|| panic!("{}: no ORDER BY\n{sql}", dialect.name()));
        for expr in &expressions {
            assert!(
                order_by.contains(expr.as_str()),
                "{}: the query does not sort by {expr}\n{sql}",
                dialect.name()
            );
        }
    }
}

/// Streaming intake and the indexed custom-order queries of SQL Server and Oracle, golden
/// and parsed, priority off and on: SQL Server inserts items with one multi-row `VALUES`
/// (at most 1,000 rows), Oracle one item per statement (no multi-row `VALUES` before 23ai);
/// SQL Server's queries of an indexed key set sort by the computed columns. The index DDL is
/// `order_index_mssql_and_oracle`'s.
#[test]
fn mssql_and_oracle_scale_statements() {
    for (dialect, parser) in [
        (
            &docket_mssql::MssqlDialect as &'static dyn Dialect,
            &MsSqlDialect {} as &dyn sqlparser::dialect::Dialect,
        ),
        (&docket_oracle::OracleDialect, &OracleDialect {}),
    ] {
        for priority in [false, true] {
            let s = Statements::new(dialect, table(), policy(priority));
            let mut scale = s.queue_scale_catalogue().expect("renders");
            if s.item_rows_per_insert() == 1 {
                // A backend that inserts one row per statement never sends the two-row one.
                scale.retain(|(name, _)| *name != "item_insert_rows");
            }
            for (name, r) in &scale {
                placeholders_match(dialect, name, r);
                parse(parser, &format!("{} {name}", dialect.name()), &r.sql);
            }
            let names: Vec<&str> = scale.iter().map(|(n, _)| *n).collect();
            let indexed = ["item_next_custom_indexed", "item_list_custom_indexed"];
            assert_eq!(
                indexed.iter().all(|n| names.contains(n)),
                dialect.name() == "mssql",
                "{}: {names:?}",
                dialect.name()
            );
            let toggle = if priority {
                "priority_on"
            } else {
                "priority_off"
            };
            insta::assert_snapshot!(
                format!("queue_scale_{}__{toggle}", dialect.name()),
                render_all(scale)
            );
        }
    }
    assert_eq!(
        Statements::new(&docket_mssql::MssqlDialect, table(), policy(true)).item_rows_per_insert(),
        142,
        "2,000 binds / 14 columns"
    );
}
