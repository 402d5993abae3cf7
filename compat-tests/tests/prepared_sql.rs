//! The SQL each diesel backend is sent for a [`Statement`]: the rendered text, cut at its
//! placeholders and rebuilt by diesel's query builder, must be the rendered text again
//! (Oracle: with diesel-oci's `:in0, :in1, ...` for `:1, :2, ...`), for every statement each
//! dialect renders. And the statement cache takes exactly the statements the rule allows.

use diesel::backend::Backend;
use diesel::query_builder::{QueryBuilder, QueryFragment};
use docket_compat_tests::statements::every_statement;
use docket_core::dialect::{Dialect, Rendered};
use docket_diesel::{Family, Prepare, Statement};

/// The text `q` is sent as, built by the backend's own query builder.
fn sent<F: Family>(
    q: &Statement<'_, F>,
    mut builder: <F::Backend as Backend>::QueryBuilder,
    backend: &F::Backend,
) -> String {
    q.to_sql(&mut builder, backend).expect("builds");
    builder.finish()
}

/// Every statement of `dialect`, cut and rebuilt by `F`'s query builder, is `expected` of its
/// rendered text; cached exactly when the rule says so, and never with the switch off.
fn check<F: Family>(
    dialect: &'static dyn Dialect,
    builder: impl Fn() -> <F::Backend as Backend>::QueryBuilder,
    backend: &F::Backend,
    expected: impl Fn(&Rendered) -> String,
) {
    let on = Prepare {
        dialect,
        statement_cache: true,
    };
    let off = Prepare {
        statement_cache: false,
        ..on
    };
    let all = every_statement(dialect);
    assert!(
        all.len() > 40,
        "{}: {} statements",
        dialect.name(),
        all.len()
    );
    for (name, r) in &all {
        let q = on
            .statement::<F>(r)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sent(&q, builder(), backend), expected(r), "{name}");
        let cached = q.is_safe_to_cache_prepared(backend).expect("walks");
        assert_eq!(cached, !r.sized_by_input(), "{name}");
        let q = off.statement::<F>(r).expect("cuts");
        assert!(
            !q.is_safe_to_cache_prepared(backend).expect("walks"),
            "{name}"
        );
    }
}

#[test]
fn postgres_is_sent_the_rendered_text() {
    use diesel::pg::{Pg, PgQueryBuilder};
    check::<docket_postgres::PgFamily>(
        &docket_postgres::PgDialect,
        PgQueryBuilder::default,
        &Pg,
        |r| r.sql.clone(),
    );
}

#[test]
fn mysql_and_mariadb_are_sent_the_rendered_text() {
    use diesel::mysql::{Mysql, MysqlQueryBuilder};
    for dialect in [
        &docket_mysql::MysqlDialect::MARIADB,
        &docket_mysql::MysqlDialect::MYSQL,
    ] {
        check::<docket_mysql::MysqlFamily>(dialect, MysqlQueryBuilder::default, &Mysql, |r| {
            r.sql.clone()
        });
    }
}

#[test]
fn sqlite_is_sent_the_rendered_text() {
    use diesel::sqlite::{Sqlite, SqliteQueryBuilder};
    check::<docket_sqlite::SqliteFamily>(
        &docket_sqlite::SqliteDialect,
        SqliteQueryBuilder::default,
        &Sqlite,
        |r| r.sql.clone(),
    );
}

/// diesel-oci names its binds `in0, in1, ...` and binds by those names, so `:n` is sent as
/// `:in{n-1}` (replaced from the highest `n` down, so that `:1` never matches in `:10`).
#[test]
fn oracle_is_sent_the_rendered_text_with_diesel_oci_bind_names() {
    use diesel_oci::query_builder::OciQueryBuilder;
    use diesel_oci::Oracle;
    check::<docket_oracle::OracleFamily>(
        &docket_oracle::OracleDialect,
        OciQueryBuilder::default,
        &Oracle,
        |r| {
            (1..=r.binds.len()).rev().fold(r.sql.clone(), |sql, n| {
                sql.replace(&format!(":{n}"), &format!(":in{}", n - 1))
            })
        },
    );
}

/// A statement is marked sized by its input exactly where its text follows how many keys,
/// rows or ids the caller passed: rendered with two and with three items, the text differs
/// for the marked ones only. So the cache keeps every statement whose text repeats
/// (PostgreSQL's array-bound batches among them) and never one that would add an entry per
/// length seen.
#[test]
fn only_statements_whose_text_follows_their_input_are_marked_sized_by_it() {
    let dialects: [&'static dyn Dialect; 6] = [
        &docket_postgres::PgDialect,
        &docket_mysql::MysqlDialect::MARIADB,
        &docket_mysql::MysqlDialect::MYSQL,
        &docket_sqlite::SqliteDialect,
        &docket_oracle::OracleDialect,
        &docket_mssql::MssqlDialect,
    ];
    let mut marked = 0;
    for dialect in dialects {
        for priority in [false, true] {
            let policy = docket_core::OrderingPolicy {
                priority,
                ..Default::default()
            };
            let table = docket_core::TableName::parse("app.jobs").expect("valid");
            let s = docket_core::dialect::Statements::new(dialect, table, policy);
            for ((name, two), (_, three)) in s.list_catalogue(2).iter().zip(s.list_catalogue(3)) {
                let varies = two.sql != three.sql;
                let at = format!("{} {name} (priority {priority})", dialect.name());
                assert_eq!(two.sized_by_input(), varies, "{at}: {}", two.sql);
                assert_eq!(three.sized_by_input(), varies, "{at}");
                marked += usize::from(varies);
            }
        }
    }
    // Key lists are OR terms and rows are VALUES lists outside PostgreSQL: both kinds occur.
    assert!(marked > 20, "{marked} marked");
}
