//! How SQL Server spells docket's statements.

use docket_core::dialect::{Capabilities, Dialect, LockAndFetch, SqlWriter};
use docket_core::ordering::{CustomKey, KeyType};
use docket_core::TableName;

/// The SQL Server (2019+) dialect.
///
/// - `@P1, @P2, ...` placeholders (tiberius' numbered parameters), `[bracketed]` identifiers
///   (independent of the session's `QUOTED_IDENTIFIER` setting).
/// - Row limits are `TOP (@Pn)` right after `SELECT`: T-SQL has no `LIMIT`, and `TOP` is the
///   limit an updatable CTE may carry, which the claim needs.
/// - NULL sorts lowest in SQL Server, so plain `priority DESC` already ranks NULL last.
/// - Claims are one statement: `WITH due AS (SELECT TOP (@Pn) ... FROM t WITH (UPDLOCK,
///   READPAST, ROWLOCK) WHERE ... ORDER BY ...) UPDATE due SET ... OUTPUT inserted...`.
///   `READPAST` skips rows other claimers hold, `UPDLOCK` holds the rows read until the update
///   (so no shared-to-exclusive lock conversion between two claimers, db-scheduler's deadlock),
///   and `ROWLOCK` keeps the locks on rows, not pages.
/// - No `ON CONFLICT`: the insert is plain, the session reports a duplicate key (errors 2627
///   and 2601) as `StoreError::Duplicate`, and the shared store counts that as "already exists".
/// - Work queue: the claim reads its candidates without locks, then locks one by key `WITH
///   (UPDLOCK, READPAST, ROWLOCK)` (two-phase: a locking read that sorts would lock every
///   eligible row it examines). Custom keys are read with `OPENJSON` (see
///   [`Dialect::json_attribute`] below).
#[derive(Debug, Default, Clone, Copy)]
pub struct MssqlDialect;

impl Dialect for MssqlDialect {
    fn name(&self) -> &'static str {
        "mssql"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // One statement: an ordered TOP CTE with a READPAST/UPDLOCK/ROWLOCK hint, updated
            // through, OUTPUT returning the claimed rows.
            lock_and_fetch: Some(LockAndFetch::CteUpdateOutput),
            // CREATE/ALTER TABLE and CREATE INDEX take part in transactions.
            transactional_ddl: true,
            work_queue: true,
            // UPDLOCK holds every row the locking read examines; for a sort, every eligible one.
            claim_locks_examined_rows: true,
        }
    }

    fn placeholder(&self, n: usize) -> String {
        format!("@P{n}")
    }

    fn quote_ident(&self, ident: &str) -> String {
        format!("[{ident}]")
    }

    fn top(&self, w: &mut SqlWriter<'_>, n: i64) {
        w.push("TOP (").bind(n).push(") ");
    }

    /// `TOP` is written up front instead (see [`Dialect::top`]).
    fn limit(&self, _w: &mut SqlWriter<'_>, _n: i64) {}

    fn lock_hint(&self) -> &'static str {
        " WITH (UPDLOCK, READPAST, ROWLOCK)"
    }

    /// The lock is the table hint; nothing follows the statement.
    fn skip_locked_clause(&self) -> &'static str {
        ""
    }

    /// Plain insert; a duplicate key is `StoreError::Duplicate` (see the type's docs).
    fn insert_if_absent_suffix(&self) -> &'static str {
        ""
    }

    fn current_schema(&self) -> &'static str {
        "SCHEMA_NAME()"
    }

    /// A scalar subquery over `OPENJSON(custom_attributes)`'s default schema (one row per
    /// member: `key`, `value` as text, `type`), matching the member by its name, bound, and
    /// reading it only when its JSON type is the key's (1 string, 2 number): anything else is
    /// missing, as on the other backends. `TOP (1)`: a document with a duplicated member (valid
    /// JSON) must not fail the statement.
    ///
    /// - Text and timestamps (UTC text, normalized at intake) as the value's UTF-8 bytes:
    ///   NVARCHAR comparison ignores trailing spaces and `BIN2` orders UTF-16 code units, while
    ///   UTF-8 byte order is code point order, as on PostgreSQL's `"C"` collation.
    /// - Numbers as `DECIMAL(38, 10)`: exact for the integers and decimals JSON numbers usually
    ///   carry (2^53 + 1 included); exponent notation goes through `FLOAT`; a value beyond
    ///   `DECIMAL(38, 10)` (about 1e28) reads as missing rather than failing the statement.
    ///
    /// Not `CROSS APPLY OPENJSON(...) WITH (...)`: its typed columns convert any scalar (a
    /// number under a text key would read as text, a non-numeric string under a number key
    /// fails the statement), its column paths are literals (the attribute name would be spliced
    /// into the SQL), and the shared statement has no FROM-clause hook (docs/DESIGN.md).
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let (value, json_type) = match key.kind {
            KeyType::Text | KeyType::Timestamp => (
                "CONVERT(VARBINARY(MAX), CONVERT(VARCHAR(MAX), \
                 j.[value] COLLATE Latin1_General_100_BIN2_UTF8))",
                "1",
            ),
            KeyType::Number => (
                "COALESCE(TRY_CAST(j.[value] AS DECIMAL(38, 10)), \
                 TRY_CAST(TRY_CAST(j.[value] AS FLOAT) AS DECIMAL(38, 10)))",
                "2",
            ),
        };
        w.push("(SELECT TOP (1) ")
            .push(value)
            .push(" FROM OPENJSON(custom_attributes) j WHERE j.[key] = ")
            .bind(key.attribute.as_str())
            .push(" AND j.[type] = ")
            .push(json_type)
            .push(")");
    }

    // `SELECT DISTINCT` (the default) over the (priority, execution_time) index: SQL Server has
    // no loose index scan, so this reads that index once per poll with priority on; a
    // recursive skip scan is future work (see the README).

    /// `INFORMATION_SCHEMA` spelled in upper case: in a database with a case-sensitive
    /// collation the lower-case view names of the default do not resolve.
    fn column_exists(&self, w: &mut SqlWriter<'_>, table: &TableName, column: &str) {
        w.push("SELECT COLUMN_NAME AS name FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = ");
        w.schema_of(table);
        w.push(" AND TABLE_NAME = ")
            .bind(table.table())
            .push(" AND COLUMN_NAME = ")
            .bind(column);
    }

    /// `INFORMATION_SCHEMA.COLUMNS`, upper case as in [`Dialect::column_exists`] above.
    fn table_columns(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        w.push(
            "SELECT COLUMN_NAME AS name, DATA_TYPE AS data_type FROM INFORMATION_SCHEMA.COLUMNS \
             WHERE TABLE_SCHEMA = ",
        )
        .schema_of(table)
        .push(" AND TABLE_NAME = ")
        .bind(table.table());
    }

    /// `sys.index_columns` of the table's object id (the bracketed name is bound); included
    /// (non-key) columns have `key_ordinal` 0 and are left out.
    fn index_columns(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        let mut quoted = SqlWriter::new(self);
        quoted.table(table);
        w.push(
            "SELECT i.name AS index_name, ic.key_ordinal AS position, c.name AS column_name \
             FROM sys.indexes i JOIN sys.index_columns ic ON ic.object_id = i.object_id \
             AND ic.index_id = i.index_id JOIN sys.columns c ON c.object_id = ic.object_id \
             AND c.column_id = ic.column_id WHERE ic.key_ordinal > 0 AND i.object_id = \
             OBJECT_ID(",
        )
        .bind(quoted.finish().sql)
        .push(")");
    }

    /// `DATETIME2` (docket's) and `DATETIMEOFFSET` (db-scheduler's): docket binds UTC
    /// `DATETIME2` values, which SQL Server converts to offset +00:00.
    fn timestamp_types(&self) -> &'static [&'static str] {
        &["datetime2", "datetimeoffset"]
    }
}
