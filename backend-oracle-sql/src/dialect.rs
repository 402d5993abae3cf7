//! How Oracle spells docket's statements.

use docket_core::dialect::{Capabilities, Dialect, LockAndFetch, SqlWriter};
use docket_core::TableName;

/// The Oracle (19c+, 23ai) dialect.
///
/// - `:1, :2, ...` placeholders, `"double-quoted"` table names. Quoted names are
///   case-sensitive in Oracle, so the migrations create the table under exactly the quoted
///   name the statements use (`"scheduled_tasks"`, lower case); columns stay unquoted (stored
///   upper case, resolved case-insensitively).
/// - Row limits are `FETCH FIRST :n ROWS ONLY` after `ORDER BY` (12c+).
/// - NULL sorts *first* under `DESC` in Oracle: the priority order is `priority DESC NULLS
///   LAST`.
/// - Claims select, then update, in one transaction ([`LockAndFetch::SelectThenUpdate`]).
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
/// - `LEVEL` is a reserved word: the levels query names its column `"level"`.
#[derive(Debug, Default, Clone, Copy)]
pub struct OracleDialect;

impl Dialect for OracleDialect {
    fn name(&self) -> &'static str {
        "oracle"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            // FOR UPDATE SKIP LOCKED on a ROWID subquery, then update the keys.
            lock_and_fetch: Some(LockAndFetch::SelectThenUpdate),
            // DDL commits implicitly.
            transactional_ddl: false,
            work_queue: false,
            claim_locks_examined_rows: true,
        }
    }

    fn placeholder(&self, n: usize) -> String {
        format!(":{n}")
    }

    fn limit(&self, w: &mut SqlWriter<'_>, n: i64) {
        w.push(" FETCH FIRST ").bind(n).push(" ROWS ONLY");
    }

    fn desc_nulls_last(&self, column: &str) -> String {
        format!("{column} DESC NULLS LAST")
    }

    fn row_locator(&self) -> Option<&'static str> {
        Some("ROWID")
    }

    fn insert_if_absent_suffix(&self) -> &'static str {
        ""
    }

    fn current_schema(&self) -> &'static str {
        "SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')"
    }

    fn priority_levels(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        w.push("SELECT DISTINCT priority AS \"level\" FROM ")
            .table(table)
            .push(" WHERE priority IS NOT NULL ORDER BY \"level\" DESC");
    }

    /// `ALL_TAB_COLUMNS`: the table name as quoted (case kept), the column name upper case
    /// (how Oracle stores unquoted names).
    fn column_exists(&self, w: &mut SqlWriter<'_>, table: &TableName, column: &str) {
        w.push("SELECT column_name AS name FROM all_tab_columns WHERE owner = ");
        w.schema_of(table);
        w.push(" AND table_name = ")
            .bind(table.table())
            .push(" AND column_name = ")
            .bind(column.to_ascii_uppercase());
    }

    /// `ALL_TAB_COLUMNS` of the table (its name as quoted, case kept).
    fn table_columns(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        w.push("SELECT column_name AS name, data_type AS data_type FROM all_tab_columns WHERE owner = ")
            .schema_of(table)
            .push(" AND table_name = ")
            .bind(table.table());
    }

    /// `ALL_IND_COLUMNS`. A `DESC` key is a function-based index column in Oracle (reported
    /// under a generated `SYS_NC...` name), so such an index matches no column list.
    fn index_columns(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        w.push(
            "SELECT index_name AS index_name, column_position AS position, column_name AS \
             column_name FROM all_ind_columns WHERE table_owner = ",
        )
        .schema_of(table)
        .push(" AND table_name = ")
        .bind(table.table());
    }

    /// `TIMESTAMP` only: docket binds UTC `TIMESTAMP` values, which a `TIMESTAMP WITH TIME
    /// ZONE` column (db-scheduler's Oracle DDL) would read in the session time zone.
    fn timestamp_types(&self) -> &'static [&'static str] {
        &["timestamp"]
    }
}
