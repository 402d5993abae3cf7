//! How Oracle spells docket's statements.

use docket_core::dialect::{
    Capabilities, Catalog, ClaimParts, Dialect, LimitAt, LockAt, SqlWriter, Syntax, TIMESTAMP_TEXT,
};
use docket_core::ordering::{CustomKey, KeyType};
use docket_core::TableName;

/// Bytes of a text (or timestamp) custom key that Oracle reads (`RETURNING VARCHAR2(1000)`):
/// a custom order's index on five text keys, with their missing flags and the index's other
/// columns, stays within the 6,398-byte index key of an 8 KB block (ORA-01450 otherwise, at
/// `CREATE INDEX`, from the declared sizes).
pub const TEXT_KEY_BYTES: usize = 1000;

/// [`TEXT_KEY_BYTES`] as the `RETURNING` type (statement text is a constant).
const TEXT_KEY_TYPE: &str = "VARCHAR2(1000)";

/// The Oracle (19c+, 23ai) dialect.
///
/// - `:1, :2, ...` placeholders, `"double-quoted"` table names. Quoted names are
///   case-sensitive in Oracle, so the migrations create the table under exactly the quoted
///   name the statements use (`"scheduled_tasks"`, lower case); columns stay unquoted (stored
///   upper case, resolved case-insensitively).
/// - Row limits are `FETCH FIRST :n ROWS ONLY` after `ORDER BY` (12c+).
/// - NULL sorts *first* under `DESC` in Oracle: the priority order is `priority DESC NULLS
///   LAST`.
/// - Claims select, then update, in one transaction ([`LockAndFetch::SelectThenUpdate`](docket_core::dialect::LockAndFetch::SelectThenUpdate)).
///   Oracle rejects a row-limiting clause in the query block that has `FOR UPDATE`
///   (ORA-02014), and `ROWNUM <= n` would cut the rows before `ORDER BY`. So the limit goes
///   into a subquery of `ROWID`s and the outer block locks:
///   `SELECT ... FROM t WHERE ROWID IN (SELECT ROWID FROM t WHERE <due> ORDER BY ... FETCH
///   FIRST :n ROWS ONLY) AND picked = :m ORDER BY ... FOR UPDATE SKIP LOCKED`.
///   Rows another claimer holds are skipped, so under contention a batch can come back
///   shorter than `n` (never with a row twice); the next poll takes the rest.
/// - No `UPDATE ... RETURNING` into a result set, no `ON CONFLICT`: the insert is plain and
///   the session reports ORA-00001 (unique constraint) as `StoreError::Duplicate`, which the
///   shared store counts as "already exists".
/// - `LEVEL` is a reserved word: the levels query quotes its column `"level"` (as every
///   dialect does, [`docket_core::dialect::common::priority_levels`]).
/// - Work queue: the claim reads its candidates without locks, then locks one by key with
///   `FOR UPDATE SKIP LOCKED` (two-phase; the keyed read carries no row limit, which Oracle
///   rejects beside `FOR UPDATE`). Custom keys are read with `JSON_VALUE ... RETURNING` (see
///   [`Dialect::json_attribute`] below).
#[derive(Debug, Default, Clone, Copy)]
pub struct OracleDialect;

impl Dialect for OracleDialect {
    fn name(&self) -> &'static str {
        "oracle"
    }

    /// FOR UPDATE SKIP LOCKED on a ROWID subquery, then update the keys. A limited read cannot
    /// lock (ORA-02014), so the claim locks one candidate by key.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            limit_with_lock: false,
            ..Capabilities::SELECT_THEN_UPDATE
        }
    }

    /// A limit and `FOR UPDATE` cannot share a query block (ORA-02014): the limit goes into a
    /// subquery of `ROWID`s and the outer block locks, `SELECT ... WHERE ROWID IN (SELECT ROWID
    /// ... ORDER BY ... FETCH FIRST :n ROWS ONLY) AND picked = :m ORDER BY ... FOR UPDATE SKIP
    /// LOCKED`. The outer block repeats `picked = false`, so a row claimed and committed by
    /// someone else in between is not returned as due.
    fn claiming_select(&self, w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>) {
        claim.select_from(w, false);
        w.push(" WHERE ROWID IN (SELECT ");
        self.limit(w, claim.limit(), LimitAt::Head);
        w.push("ROWID FROM ").table(claim.table());
        let order_level = claim.due_rows(w);
        w.push(") AND picked = ").bind(false);
        claim.order_by(w, order_level);
        self.skip_locked(w, LockAt::End);
    }

    fn placeholder(&self, n: usize) -> String {
        format!(":{n}")
    }

    fn syntax(&self) -> Syntax {
        Syntax {
            insert_if_absent: "",
            current_schema: "SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')",
            // One row per `INSERT ... VALUES`: Oracle before 23ai has no multi-row `VALUES`
            // (ORA-00933), so work-queue intake inserts item by item.
            max_insert_rows: 1,
            // `TIMESTAMP` only: docket binds UTC `TIMESTAMP` values, which a `TIMESTAMP WITH
            // TIME ZONE` column (db-scheduler's Oracle DDL) would read in the session time
            // zone.
            timestamp_types: &["timestamp"],
            ..Syntax::ANSI
        }
    }

    fn limit(&self, w: &mut SqlWriter<'_>, n: i64, at: LimitAt) {
        if at == LimitAt::Tail {
            w.push(" FETCH FIRST ").bind(n).push(" ROWS ONLY");
        }
    }

    fn desc_nulls_last(&self, column: &str) -> String {
        format!("{column} DESC NULLS LAST")
    }

    /// Plain `DESC`: Oracle's `CREATE INDEX` takes no `NULLS LAST` (ORA-00907), and a `DESC`
    /// key keeps NULL first. With priority on, a custom order's index then narrows the read
    /// to the type's open items, which are sorted, as with migration 0004's priority index.
    fn index_desc_nulls_last(&self, column: &str) -> String {
        format!("{column} DESC")
    }

    /// `JSON_VALUE(custom_attributes, '$."name".stringOnly()' RETURNING VARCHAR2(1000))`, or
    /// `number()` `RETURNING NUMBER`: the item method makes a value of another JSON type (for
    /// `number()`, a string that holds no number) an error, which JSON_VALUE's default `NULL
    /// ON ERROR` turns into missing, as on the other backends; a timestamp is a string in the
    /// record-date form (`REGEXP_LIKE` with [`TIMESTAMP_TEXT`]). Numbers are exact to 38 digits; text (and timestamps, UTC text normalized at
    /// intake) sorts by the session's `NLS_SORT`, which every pooled connection sets to
    /// `BINARY` (UTF-8 byte order, code point order in an AL32UTF8 database). Limits: a text
    /// value over 1,000 bytes ([`TEXT_KEY_BYTES`]) and an empty string (NULL in Oracle) read
    /// as missing.
    ///
    /// The same expressions are a custom order's function-based index (JSON_VALUE is a
    /// deterministic built-in), which Oracle uses where a query's expression is the indexed
    /// one, path and `RETURNING` type included; a B-tree index holds text in binary order, so
    /// only a `BINARY` `NLS_SORT` (set on every connection) can take an `ORDER BY` from it.
    ///
    /// The path is a literal: Oracle's JSON_VALUE takes only a text literal as its path (no
    /// bind), the one place docket writes a caller's word into SQL. The name in it is an [`AttributeName`](docket_core::AttributeName), validated as
    /// `[A-Za-z_][A-Za-z0-9_]*`, so it cannot end the quoted step or the literal.
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let value = |w: &mut SqlWriter<'_>, method: &str, returning: &str| {
            w.push("JSON_VALUE(custom_attributes, '")
                .push(&key.attribute.json_path())
                .push(".")
                .push(method)
                .push("()' RETURNING ")
                .push(returning)
                .push(")");
        };
        match key.kind {
            KeyType::Text => value(w, "stringOnly", TEXT_KEY_TYPE),
            KeyType::Timestamp => {
                w.push("(CASE WHEN REGEXP_LIKE(");
                value(w, "stringOnly", TEXT_KEY_TYPE);
                w.push(", '").push(TIMESTAMP_TEXT).push("') THEN ");
                value(w, "stringOnly", TEXT_KEY_TYPE);
                w.push(" END)");
            }
            // `number()` converts a string holding a number too; text that does not convert is
            // an error, which `NULL ON ERROR` (the default) makes missing.
            KeyType::Number => value(w, "number", "NUMBER"),
        }
    }

    /// The `ALL_*` views: table and index names as quoted (case kept), column names upper
    /// case (how Oracle stores unquoted names). A `DESC` index key is a function-based index
    /// column in Oracle (reported under a generated `SYS_NC...` name), so such an index
    /// matches no column list.
    fn catalog(&self, w: &mut SqlWriter<'_>, table: &TableName, query: Catalog<'_>) {
        let of_table = |w: &mut SqlWriter<'_>| {
            w.schema_of(table);
            w.push(" AND table_name = ").bind(table.table());
        };
        match query {
            Catalog::IndexExists(index) => {
                w.push("SELECT index_name AS name FROM all_indexes WHERE table_owner = ");
                of_table(w);
                w.push(" AND index_name = ").bind(index);
            }
            Catalog::ColumnExists(column) | Catalog::GeneratedColumnExists(column) => {
                w.push("SELECT column_name AS name FROM all_tab_columns WHERE owner = ");
                of_table(w);
                w.push(" AND column_name = ")
                    .bind(column.to_ascii_uppercase());
            }
            Catalog::TableColumns => {
                w.push(
                    "SELECT column_name AS name, data_type AS data_type FROM all_tab_columns \
                     WHERE owner = ",
                );
                of_table(w);
            }
            Catalog::IndexColumns => {
                w.push(
                    "SELECT index_name AS index_name, column_position AS position, column_name \
                     AS column_name FROM all_ind_columns WHERE table_owner = ",
                );
                of_table(w);
            }
        }
    }

    /// `SYSTIMESTAMP` (the server's clock with its zone) as UTC, a plain `TIMESTAMP`
    /// (`CURRENT_TIMESTAMP` is in the session's zone); `FROM DUAL` for 19c.
    fn server_time(&self, w: &mut SqlWriter<'_>) {
        w.push("SELECT SYS_EXTRACT_UTC(SYSTIMESTAMP) AS server_time FROM DUAL");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::dialect::Statements;
    use docket_core::ordering::Direction;
    use docket_core::OrderingPolicy;

    /// Five text keys (value and missing flag each, a flag is a NUMBER of up to 22 bytes) and
    /// the index's other columns fit the 6,398-byte key of an 8 KB block: task_name
    /// VARCHAR2(100 CHAR) (400 bytes in AL32UTF8), assignable, priority, record_order as
    /// NUMBER, record_date TIMESTAMP(6) (11 bytes).
    #[test]
    fn text_keys_fit_the_index_key() {
        assert_eq!(TEXT_KEY_TYPE, format!("VARCHAR2({TEXT_KEY_BYTES})"));
        let others = 400 + 3 * 22 + 11;
        assert!(others + 5 * (TEXT_KEY_BYTES + 22) <= 6398);
    }

    #[test]
    fn intake_inserts_one_item_per_statement() {
        let table = TableName::parse("jobs").unwrap();
        let s = Statements::new(&OracleDialect, table, OrderingPolicy::default());
        assert_eq!(s.item_rows_per_insert(), 1);
    }

    #[test]
    fn the_order_index_has_no_nulls_last() {
        let table = TableName::parse("jobs").unwrap();
        let policy = OrderingPolicy {
            priority: true,
            ..OrderingPolicy::default()
        };
        let s = Statements::new(&OracleDialect, table, policy);
        let key = CustomKey::new("team", KeyType::Text, Direction::Asc).unwrap();
        let index = s.order_index(&[key]).unwrap();
        assert!(
            index.create.sql.contains("priority DESC,"),
            "{}",
            index.create.sql
        );
        assert!(!index.create.sql.contains("NULLS"), "{}", index.create.sql);
        assert!(
            index.exists.sql.contains("all_indexes"),
            "{}",
            index.exists.sql
        );
    }
}
