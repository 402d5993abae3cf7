//! How SQL Server spells docket's statements.

use docket_core::dialect::{
    common, Capabilities, Catalog, ClaimParts, Ddl, Dialect, LimitAt, LockAndFetch, LockAt,
    OrderIndexStyle, SqlWriter, Syntax,
};
use docket_core::ordering::{CustomKey, KeyType};
use docket_core::TableName;

/// Leading UTF-8 bytes of a text (or timestamp) custom key that SQL Server compares and
/// indexes: five such keys, their missing flags and the index's other columns fit the
/// 1,700-byte key of a nonclustered index.
pub const TEXT_KEY_BYTES: usize = 256;

/// [`TIMESTAMP_TEXT`](docket_core::dialect::TIMESTAMP_TEXT) as a `LIKE` pattern.
const TIMESTAMP_LIKE: &str =
    "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]%";

/// The conversion of a text key to its UTF-8 bytes, up to the `JSON_VALUE` it wraps
/// ([`TEXT_KEY_BYTES`] spelled out: the statement text must be a constant).
const TEXT_KEY_HEAD: &str = "CONVERT(VARBINARY(256), CONVERT(VARCHAR(256), ";

/// The table hint of a claiming read: `READPAST` skips rows other claimers hold, `UPDLOCK`
/// holds the rows read until the update, `ROWLOCK` keeps the locks on rows (see
/// [`MssqlDialect`]).
const LOCK_HINT: &str = " WITH (UPDLOCK, READPAST, ROWLOCK)";

/// The SQL Server (2019+) dialect.
///
/// - `@P1, @P2, ...` placeholders (tiberius' numbered parameters), `[bracketed]` identifiers
///   (independent of the session's `QUOTED_IDENTIFIER` setting).
/// - Row limits are `TOP (@Pn)` right after `SELECT`: T-SQL has no `LIMIT`, and `TOP` is the
///   limit a derived table may carry, which the claim needs.
/// - NULL sorts lowest in SQL Server, so plain `priority DESC` already ranks NULL last.
/// - Claims are one statement: `UPDATE t SET ... OUTPUT inserted... WHERE picked = 0 AND EXISTS
///   (SELECT 1 FROM (SELECT TOP (@Pn) task_name, task_instance FROM t WITH (UPDLOCK, READPAST,
///   ROWLOCK) WHERE ... ORDER BY ...) due WHERE <key matches>)`, standard T-SQL that Babelfish
///   runs too. `READPAST` skips rows other claimers hold, `UPDLOCK` holds the rows read until the update
///   (so no shared-to-exclusive lock conversion between two claimers, db-scheduler's deadlock),
///   and `ROWLOCK` keeps the locks on rows, not pages.
/// - No `ON CONFLICT`: the insert is plain, the session reports a duplicate key (errors 2627
///   and 2601) as `StoreError::Duplicate`, and the shared store counts that as "already exists".
/// - Work queue: the claim reads its candidates without locks, then locks one by key `WITH
///   (UPDLOCK, READPAST, ROWLOCK)` (two-phase: a locking read that sorts would lock every
///   eligible row it examines). Custom keys of a task type without an order index are read
///   with `OUTER APPLY OPENJSON(custom_attributes) WITH (...)` ([`Dialect::json_keys_source`]),
///   as WorkSpace reads them; an order index holds computed columns of `JSON_VALUE` (see
///   [`Dialect::json_attribute`] below: a computed column cannot hold `OPENJSON`) and the
///   queries of an indexed task type sort by those columns. Both give one order.
#[derive(Debug, Default, Clone, Copy)]
pub struct MssqlDialect;

impl Dialect for MssqlDialect {
    fn name(&self) -> &'static str {
        "mssql"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // One statement: an update of the keys an ordered TOP select with a
            // READPAST/UPDLOCK/ROWLOCK hint found, OUTPUT returning the claimed rows.
            lock_and_fetch: Some(LockAndFetch::UpdateReturning),
            // CREATE/ALTER TABLE and CREATE INDEX take part in transactions.
            transactional_ddl: true,
            work_queue: true,
            // UPDLOCK holds every row the locking read examines; for a sort, every eligible one.
            claim_locks_examined_rows: true,
            limit_with_lock: true,
            // The one range of due rows (a `CROSS APPLY` of locked reads per task is not
            // written: nothing here runs SQL Server).
            claims_by_task: false,
        }
    }

    fn placeholder(&self, n: usize) -> String {
        format!("@P{n}")
    }

    fn quote_ident(&self, ident: &str) -> String {
        format!("[{ident}]")
    }

    /// The table hint `WITH (UPDLOCK, READPAST, ROWLOCK)` right after the table: T-SQL locks
    /// per table reference, and nothing follows the statement (see the type's docs).
    fn skip_locked(&self, w: &mut SqlWriter<'_>, at: LockAt) {
        if at == LockAt::Table {
            w.push(LOCK_HINT);
        }
    }

    /// One update of the rows an ordered, limited select of keys locked: `UPDATE t SET ...
    /// OUTPUT inserted... WHERE picked = 0 AND EXISTS (SELECT 1 FROM (SELECT TOP (n)
    /// task_name, task_instance FROM t WITH (UPDLOCK, READPAST, ROWLOCK) WHERE ... ORDER BY
    /// ...) due WHERE due.task_name = t.task_name AND due.task_instance = t.task_instance)`.
    /// T-SQL has neither `RETURNING` nor a row-valued `IN`, and its lock is the table hint.
    /// The outer `picked` check repeats the eligibility the locks guarantee, so a server that
    /// ignores the hint (Babelfish takes `UPDLOCK, READPAST` and waits instead) claims fewer
    /// rows, never a row twice. Standard T-SQL with the table itself as the target: an update
    /// through a CTE (the shape before) is not Babelfish's, and an update of an alias (`UPDATE
    /// x ... FROM t x JOIN ...`) now and then failed there with a garbled alias ("missing
    /// FROM-clause entry").
    fn lock_and_fetch(&self, w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>) {
        claim.update_set(w);
        let inserted: Vec<_> = claim
            .columns()
            .iter()
            .map(|c| format!("inserted.{}", c.name()))
            .collect();
        w.push(" OUTPUT ")
            .push(&inserted.join(", "))
            .push(" WHERE picked = ")
            .bind(false)
            .push(" AND EXISTS (SELECT 1 FROM (SELECT ");
        self.limit(w, claim.limit(), LimitAt::Head);
        w.push("task_name, task_instance FROM ")
            .table(claim.table())
            .push(LOCK_HINT);
        claim.due_rows(w);
        w.push(") due WHERE due.task_name = ")
            .table(claim.table())
            .push(".task_name AND due.task_instance = ")
            .table(claim.table())
            .push(".task_instance)");
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            // Plain insert; a duplicate key is `StoreError::Duplicate` (see the type's docs).
            insert_if_absent: "",
            current_schema: "SCHEMA_NAME()",
            // Computed columns (`ALTER TABLE t ADD c AS (expr)`, not persisted: the
            // expressions are deterministic and precise) and an index on them; the queries of
            // an indexed key set sort by the columns.
            order_index_style: OrderIndexStyle::GeneratedColumns,
            // `DATETIME2` (docket's) and `DATETIMEOFFSET` (db-scheduler's): docket binds UTC
            // `DATETIME2` values, which SQL Server converts to offset +00:00.
            timestamp_types: &["datetime2", "datetimeoffset"],
            ..Syntax::ANSI
        }
    }

    /// `TOP (n)` right after `SELECT`, the limit a derived table may carry.
    fn limit(&self, w: &mut SqlWriter<'_>, n: i64, at: LimitAt) {
        if at == LimitAt::Head {
            w.push("TOP (").bind(n).push(") ");
        }
    }

    /// `JSON_VALUE(custom_attributes, '$."name"')` (the path bound; a literal in index DDL),
    /// typed, NULL (missing) when the member is absent, JSON `null`, an object or an array.
    /// The same expression is the computed column of a custom order's index
    /// ([`Syntax::order_index_style`]), so the sorted and the indexed orders agree:
    /// SQL Server indexes a computed column only when its expression is deterministic and
    /// precise and has no subquery, which rules out `OPENJSON` and `FLOAT`.
    ///
    /// - Text and timestamps (UTC text, normalized at intake) as the value's UTF-8 bytes, its
    ///   first [`TEXT_KEY_BYTES`]: `NVARCHAR` comparison ignores trailing spaces and `BIN2`
    ///   orders UTF-16 code units, while UTF-8 byte order is code point order, as on
    ///   PostgreSQL's `"C"` collation. Bounded so that an index on five text keys stays within
    ///   SQL Server's 1,700-byte key (a `MAX` type cannot be an index key at all).
    /// - Numbers as `TRY_CAST(... AS DECIMAL(38, 10))`: exact for the integers and decimals JSON
    ///   numbers usually carry (2^53 + 1 included); text that is not a plain decimal
    ///   (exponent notation, beyond about 1e28) reads as missing rather than failing the
    ///   statement.
    ///
    /// A number key reads a string holding a plain decimal as that number, as every backend
    /// does ([`NUMBER_TEXT`](docket_core::dialect::NUMBER_TEXT)); a timestamp key reads strings
    /// in the record-date form only (`LIKE` spells
    /// [`TIMESTAMP_TEXT`](docket_core::dialect::TIMESTAMP_TEXT)).
    ///
    /// Differences from the other backends (docs/DESIGN.md, "SQL Server and Oracle"):
    /// `JSON_VALUE` does not say a member's JSON type, so a text key also reads a number or a
    /// boolean as its text; a value over 4,000 characters reads as missing (`JSON_VALUE`'s lax
    /// mode); text compares by its first [`TEXT_KEY_BYTES`] UTF-8 bytes.
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let path = key.attribute.json_path();
        key_value(w, key.kind, &|w| {
            w.push("JSON_VALUE(custom_attributes, ")
                .bind(path.clone())
                .push(")");
        });
    }

    /// `OUTER APPLY OPENJSON(i.custom_attributes) WITH (k0 NVARCHAR(4000) '$."team"', ...) AS
    /// j`: each key's member as the text `JSON_VALUE` reads (NULL for an absent member, JSON
    /// `null`, an object or an array), typed by [`Dialect::json_key_column`] as in
    /// [`Dialect::json_attribute`], so both reads give one order. `OPENJSON`'s `WITH` takes
    /// literal paths only: the path is built from a validated
    /// [`AttributeName`](docket_core::AttributeName) (`[A-Za-z_][A-Za-z0-9_]*`). Not typed in
    /// `WITH` itself: a member that does not convert must read as missing, where a typed
    /// column would fail the statement. `OUTER`, not `CROSS`: `OPENJSON` of a NULL
    /// `custom_attributes` gives no row, and an item without attributes is still handed out
    /// (its keys missing, so last), as on every backend.
    fn json_keys_source(&self, w: &mut SqlWriter<'_>, keys: &[CustomKey]) -> bool {
        if keys.is_empty() {
            return false;
        }
        w.push(" OUTER APPLY OPENJSON(i.custom_attributes) WITH (");
        for (n, key) in keys.iter().enumerate() {
            if n > 0 {
                w.push(", ");
            }
            w.push(&format!("k{n} NVARCHAR(4000) '"))
                .push(&key.attribute.json_path())
                .push("'");
        }
        w.push(") AS j");
        true
    }

    fn json_key_column(&self, w: &mut SqlWriter<'_>, key: &CustomKey, n: usize) {
        key_value(w, key.kind, &|w| {
            w.push(&format!("j.k{n}"));
        });
    }

    /// `DROP INDEX i ON t`: index names are per table.
    fn ddl(&self, w: &mut SqlWriter<'_>, table: &TableName, change: Ddl<'_>) {
        match change {
            Ddl::DropIndex(index) => common::drop_index_on_table(w, table, index),
            other => common::ddl(w, table, other),
        }
    }

    /// `sys.indexes` and `sys.index_columns` of the table's object id (the bracketed name is
    /// bound; included, non-key, columns have `key_ordinal` 0 and are left out), and
    /// `INFORMATION_SCHEMA` spelled in upper case: in a database with a case-sensitive
    /// collation the lower-case view names of the default do not resolve.
    fn catalog(&self, w: &mut SqlWriter<'_>, table: &TableName, query: Catalog<'_>) {
        let object_id = || {
            let mut quoted = SqlWriter::new(self);
            quoted.table(table);
            quoted.finish().sql
        };
        match query {
            Catalog::IndexExists(index) => {
                w.push("SELECT name AS name FROM sys.indexes WHERE object_id = OBJECT_ID(")
                    .bind(object_id())
                    .push(") AND name = ")
                    .bind(index);
            }
            Catalog::ColumnExists(column) | Catalog::GeneratedColumnExists(column) => {
                w.push(
                    "SELECT COLUMN_NAME AS name FROM INFORMATION_SCHEMA.COLUMNS WHERE \
                     TABLE_SCHEMA = ",
                );
                w.schema_of(table);
                w.push(" AND TABLE_NAME = ")
                    .bind(table.table())
                    .push(" AND COLUMN_NAME = ")
                    .bind(column);
            }
            Catalog::TableColumns => {
                w.push(
                    "SELECT COLUMN_NAME AS name, DATA_TYPE AS data_type FROM \
                     INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ",
                )
                .schema_of(table)
                .push(" AND TABLE_NAME = ")
                .bind(table.table());
            }
            Catalog::IndexColumns => {
                w.push(
                    "SELECT i.name AS index_name, ic.key_ordinal AS position, c.name AS \
                     column_name FROM sys.indexes i JOIN sys.index_columns ic ON ic.object_id = \
                     i.object_id AND ic.index_id = i.index_id JOIN sys.columns c ON c.object_id \
                     = ic.object_id AND c.column_id = ic.column_id WHERE ic.key_ordinal > 0 AND \
                     i.object_id = OBJECT_ID(",
                )
                .bind(object_id())
                .push(")");
            }
        }
    }

    /// `SYSUTCDATETIME()`: UTC, `datetime2(7)` (`GETDATE()` is local time and milliseconds).
    fn server_time(&self, w: &mut SqlWriter<'_>) {
        w.push("SELECT SYSUTCDATETIME() AS server_time");
    }
}

/// A custom key of `kind` from its JSON text, which `value` writes (`JSON_VALUE`, or an
/// `OPENJSON` column): see [`Dialect::json_attribute`].
fn key_value(w: &mut SqlWriter<'_>, kind: KeyType, value: &dyn Fn(&mut SqlWriter<'_>)) {
    let text = |w: &mut SqlWriter<'_>| {
        w.push(TEXT_KEY_HEAD);
        value(w);
        w.push(" COLLATE Latin1_General_100_BIN2_UTF8))");
    };
    match kind {
        KeyType::Text => text(w),
        KeyType::Timestamp => {
            w.push("(CASE WHEN ");
            value(w);
            w.push(" LIKE '").push(TIMESTAMP_LIKE).push("' THEN ");
            text(w);
            w.push(" END)");
        }
        // `TRY_CAST` alone would also take spaces around the digits.
        KeyType::Number => {
            w.push("(CASE WHEN ");
            value(w);
            w.push(" NOT LIKE '%[^-+.0-9]%' THEN TRY_CAST(");
            value(w);
            w.push(" AS DECIMAL(38, 10)) END)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::ordering::Direction;

    fn render(key: &CustomKey, ddl: bool) -> String {
        let mut w = if ddl {
            SqlWriter::for_ddl(&MssqlDialect)
        } else {
            SqlWriter::new(&MssqlDialect)
        };
        MssqlDialect.json_attribute(&mut w, key);
        if ddl {
            w.finish_ddl().expect("a literal path").sql
        } else {
            w.finish().sql
        }
    }

    #[test]
    fn keys_are_json_value_bound_in_queries_and_literal_in_ddl() {
        let team = CustomKey::new("team", KeyType::Text, Direction::Asc).unwrap();
        assert_eq!(
            render(&team, false),
            "CONVERT(VARBINARY(256), CONVERT(VARCHAR(256), JSON_VALUE(custom_attributes, @P1) \
             COLLATE Latin1_General_100_BIN2_UTF8))"
        );
        let score = CustomKey::new("score", KeyType::Number, Direction::Desc).unwrap();
        assert_eq!(
            render(&score, true),
            r#"(CASE WHEN JSON_VALUE(custom_attributes, '$."score"') NOT LIKE '%[^-+.0-9]%' THEN TRY_CAST(JSON_VALUE(custom_attributes, '$."score"') AS DECIMAL(38, 10)) END)"#
        );
        // Indexable: no subquery, no table-valued function, no FLOAT, no MAX type.
        for sql in [render(&team, true), render(&score, true)] {
            for banned in ["SELECT", "OPENJSON", "FLOAT", "MAX"] {
                assert!(!sql.contains(banned), "{banned} in {sql}");
            }
        }
    }

    /// Five text keys (value and missing flag each) and the index's other columns fit the
    /// 1,700-byte key of a nonclustered index: task_name NVARCHAR(100), assignable BIT,
    /// priority SMALLINT, record_date DATETIME2(6), record_order BIGINT.
    #[test]
    fn text_keys_fit_the_index_key() {
        assert!(TEXT_KEY_HEAD.contains(&format!("VARBINARY({TEXT_KEY_BYTES})")));
        assert!(TEXT_KEY_HEAD.contains(&format!("VARCHAR({TEXT_KEY_BYTES})")));
        let others = 200 + 1 + 2 + 8 + 8;
        assert!(others + 5 * (TEXT_KEY_BYTES + 4) <= 1700);
    }
}
