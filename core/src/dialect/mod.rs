//! SQL dialects. A [`Dialect`] states the few facts in which databases differ (placeholders,
//! quoting, limits, NULL ordering, the skip-locked idiom, insert-if-absent); the statements
//! themselves are rendered once, in [`statements`], from those facts.

pub mod file_load;
pub mod order_index;
pub mod queue;
pub mod statements;
pub mod writer;

pub use file_load::FileLoad;
pub use order_index::{GeneratedValue, OrderIndex, OrderIndexStyle};
pub use statements::{Column, Due, Level, Statements};
pub use writer::{Array, Rendered, SqlWriter, Value};

use crate::ident::TableName;
use crate::ordering::{CustomKey, KeyType};

/// How a backend claims a batch of due rows in one round trip (lock-and-fetch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockAndFetch {
    /// One statement: `UPDATE ... WHERE (key) IN (SELECT ... <skip-locked>) RETURNING ...`.
    /// Also right for a single-writer database whose transactions serialize claims.
    UpdateReturning,
    /// `SELECT ... <skip-locked>` then `UPDATE` of the selected keys, in one transaction
    /// (databases without `UPDATE ... RETURNING` or without `LIMIT` in `IN` subqueries).
    SelectThenUpdate,
    /// One statement that updates through an ordered, row-limited common table expression and
    /// returns the changed rows: `WITH due AS (SELECT <top> ... FROM t <lock_hint> WHERE ...
    /// ORDER BY ...) UPDATE due SET ... OUTPUT inserted...` (SQL Server, whose claim hint sits
    /// on the table and which has neither `RETURNING` nor a row-valued `IN`).
    CteUpdateOutput,
}

/// How a write names the rows a subquery found: the one-statement claim
/// ([`LockAndFetch::UpdateReturning`]), `UPDATE ... WHERE <open>SELECT <columns> FROM ... FOR
/// UPDATE SKIP LOCKED<close>`, and a write of several executions named by key
/// ([`Dialect::key_probe`], where `columns` is the one column each key's probe returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimMatch {
    /// Written before the subquery, e.g. `(task_name, task_instance) IN (`.
    pub open: &'static str,
    /// The subquery's select list.
    pub columns: &'static str,
    /// Written after it, e.g. `)`.
    pub close: &'static str,
}

impl ClaimMatch {
    /// By primary key: `(task_name, task_instance) IN (SELECT task_name, task_instance ...)`.
    pub const BY_KEY: ClaimMatch = ClaimMatch {
        open: "(task_name, task_instance) IN (",
        columns: "task_name, task_instance",
        close: ")",
    };
}

/// What a backend can do, stated once as data. Code asks these, never a backend's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// How lock-and-fetch claims, or `None` when the backend cannot claim without waiting.
    pub lock_and_fetch: Option<LockAndFetch>,
    /// Transactional DDL (a failed migration leaves nothing behind).
    pub transactional_ddl: bool,
    /// A locking read locks every row it examines, not only the rows it returns (InnoDB: for a
    /// sort, every eligible row), so `next_for` reads its candidates without locks first and
    /// then locks one by key. False where only returned rows are locked (PostgreSQL) or the
    /// write transaction is the lock (SQLite).
    pub claim_locks_examined_rows: bool,
    /// Runs the work queue (ships migrations `0003_ordering` and `0004_work_queue`).
    pub work_queue: bool,
}

/// The JSON strings a [`KeyType::Number`] key reads as numbers, as a POSIX regular expression
/// (PostgreSQL `~`, MySQL `REGEXP`, Oracle `REGEXP_LIKE`; SQLite and SQL Server spell the same
/// test with `GLOB`/`TRY_CAST`): a plain decimal with an optional sign, as a CSV cell holds a
/// number. Written without `?`, which is a placeholder in some dialects' statement text.
pub const NUMBER_TEXT: &str = "^[+-]{0,1}[0-9]+([.][0-9]+){0,1}$";

/// The JSON strings a [`KeyType::Timestamp`] key reads, as a POSIX regular expression: those
/// that start in the record-date form `YYYY-MM-DDThh:mm:ss` (their text order is time order).
pub const TIMESTAMP_TEXT: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}";

/// One SQL dialect. Defaults are ANSI-ish; backends override only what differs.
pub trait Dialect: Send + Sync + std::fmt::Debug {
    /// Short backend name, e.g. `postgres`.
    fn name(&self) -> &'static str;

    /// Everything the backend can do.
    fn capabilities(&self) -> Capabilities;

    /// The placeholder for the `n`-th bind (1-based). Default `?`.
    fn placeholder(&self, _n: usize) -> String {
        "?".to_owned()
    }

    /// Quotes a validated identifier part. Default: ANSI double quotes.
    fn quote_ident(&self, ident: &str) -> String {
        format!("\"{ident}\"")
    }

    /// Appends a row limit for a query (after `ORDER BY`). Default: `LIMIT ?`. A dialect
    /// that limits with [`Dialect::top`] instead writes nothing here.
    fn limit(&self, w: &mut SqlWriter<'_>, n: i64) {
        w.push(" LIMIT ").bind(n);
    }

    /// Writes a row limit that belongs right after `SELECT ` (T-SQL `TOP (n) `, with its
    /// trailing space), for dialects whose limit cannot follow `ORDER BY` in every place docket
    /// needs one (a claiming CTE). Called for every limited query, before the select list, and
    /// always together with [`Dialect::limit`]. Default: nothing.
    fn top(&self, _w: &mut SqlWriter<'_>, _n: i64) {}

    /// A table hint written right after the table name in a claiming select, for dialects that
    /// lock per table reference instead of per statement (T-SQL `WITH (UPDLOCK, READPAST,
    /// ROWLOCK)`). Default: `""` (the lock is [`Dialect::skip_locked_clause`]).
    fn lock_hint(&self) -> &'static str {
        ""
    }

    /// A pseudo-column addressing a row (Oracle `ROWID`), for dialects that cannot combine a
    /// row limit with `FOR UPDATE` in one query block. When set, the claiming select limits a
    /// subquery on this locator and locks in the outer block:
    /// `SELECT ... WHERE <locator> IN (SELECT <locator> ... ORDER BY ... <limit>) AND picked = ?
    /// ORDER BY ... FOR UPDATE SKIP LOCKED`. Default: `None` (limit and lock in one block).
    fn row_locator(&self) -> Option<&'static str> {
        None
    }

    /// `column DESC` with NULLs after every value. Default: plain `DESC`, right where NULL
    /// sorts lowest (MySQL, SQLite, SQL Server); PostgreSQL and Oracle override it.
    fn desc_nulls_last(&self, column: &str) -> String {
        format!("{column} DESC")
    }

    /// `column DESC` with NULLs last as a key of `CREATE INDEX` (a custom order's index).
    /// Default: [`Dialect::desc_nulls_last`]. Oracle, whose `CREATE INDEX` takes no `NULLS
    /// LAST`, writes plain `DESC` (its index then narrows the read but cannot give the order).
    fn index_desc_nulls_last(&self, column: &str) -> String {
        self.desc_nulls_last(column)
    }

    /// The row-lock clause for claiming due rows without waiting on other claimers. A
    /// single-writer database returns `""` (its write transaction is the lock).
    fn skip_locked_clause(&self) -> &'static str {
        " FOR UPDATE SKIP LOCKED"
    }

    /// Clause appended to an `INSERT` so an existing `(task_name, task_instance)` is left alone
    /// and reported as zero rows inserted. Default: `ON CONFLICT ... DO NOTHING`.
    fn insert_if_absent_suffix(&self) -> &'static str {
        " ON CONFLICT (task_name, task_instance) DO NOTHING"
    }

    /// How the one-statement claim matches the rows it locked. Default [`ClaimMatch::BY_KEY`].
    fn claim_match(&self) -> ClaimMatch {
        ClaimMatch::BY_KEY
    }

    /// For a statement that writes several executions named by key (the claim of selected
    /// keys, batched completions): match them through one primary-key probe per key over bound
    /// arrays (`UNNEST`, as [`Dialect::binds_arrays`]), each probe returning the one column
    /// `columns`, between `open` and `close`. Default `None`: `(task_name = ? AND
    /// task_instance = ? [AND version = ?]) OR ...`. PostgreSQL says `Some` with its claim's
    /// match (`ctid = ANY(ARRAY(...))`): on a table it has never analyzed it answered the OR
    /// list by reading every row of the keys' task name (the common `task_name = ?` taken
    /// out as an index condition), 37 ms for 100 keys among 20,000 rows against 1 ms probed.
    fn key_probe(&self) -> Option<ClaimMatch> {
        None
    }

    /// Writes the task filter of the due-query that reads every level (` AND ...`, the names
    /// bound). Default: ` AND task_name IN (?, ...)`. A dialect whose planner, without
    /// statistics on a fresh table, would answer that filter through the primary key and sort
    /// every due row instead of reading the due index in order (PostgreSQL) writes it so the
    /// planner cannot use it for an index or an estimate.
    fn due_task_filter(&self, w: &mut SqlWriter<'_>, task_names: &[String]) {
        w.push(" AND task_name IN ")
            .bind_list(task_names.iter().map(String::as_str));
    }

    /// Writes an index hint between a due-query's table and its `WHERE`, for a query at
    /// `level`. Default: none. MySQL/MariaDB name the per-level due index there: under load
    /// their optimizer read one level's due rows through the time index of every level instead
    /// (see the MySQL dialect). Written only where the table has [`Dialect::due_level_index`]
    /// (a table migrated partway lacks it): the store looks at start-up.
    fn due_index_hint(&self, _w: &mut SqlWriter<'_>, _level: Level) {}

    /// The index [`Dialect::due_index_hint`] names, whose presence the store checks before the
    /// hint is written. Default: `None` (no hint).
    fn due_level_index(&self) -> Option<&'static str> {
        None
    }

    /// Writes how a due-query at level `priority` selects it, when the dialect does not use
    /// ` AND priority = ?` and `ORDER BY execution_time`; returns whether it wrote one, in which
    /// case the query orders by `priority DESC NULLS LAST, execution_time` (same rows, same
    /// order). Default: writes nothing, `false`. PostgreSQL writes ` AND priority = ANY(?)` (a
    /// one-element array): with `priority = ?` its planner read a level's due rows through an
    /// index of every level's times and filtered the others out (see its dialect); an array
    /// comparison is no equality the planner propagates, so only the priority index yields the
    /// order, and the time bound stays an index bound behind it.
    fn due_level_filter(&self, _w: &mut SqlWriter<'_>, _priority: i16) -> bool {
        false
    }

    /// Most keys one statement names in its `(task_name = ? AND task_instance = ? ...) OR ...`
    /// list (batched completions, the claim of selected keys); longer lists are split into
    /// several statements of the same transaction. Default 500. MySQL/MariaDB say 20: their
    /// range optimizer's time grows faster than the list (measured on MariaDB 10.11: 0.4 ms for
    /// 10 keys, 2.2 ms for 40, 21 ms for 100, against 1 to 2 ms to run the statement).
    fn max_key_terms(&self) -> usize {
        500
    }

    /// Whether a multi-row insert binds one array per column (`INSERT ... SELECT * FROM
    /// UNNEST(?, ...)`, [`SqlWriter::insert_rows`]) rather than one value per cell. The
    /// statement is then one short text however many rows it carries, and a chunk is not bound
    /// by [`Dialect::max_binds`]. Default `false`; PostgreSQL says `true` (20,000 rows into
    /// the executions table: 2.5 times the rows/s of 1,000-row `VALUES` lists,
    /// docs/BENCHMARKS.md "Bulk enqueue").
    fn binds_arrays(&self) -> bool {
        false
    }

    /// Most bind parameters one statement may carry; multi-row statements are chunked to stay
    /// within it. Default 2,000: SQL Server's limit is 2,100 (PostgreSQL and MySQL allow
    /// 65,535, SQLite's bundled build 32,766; those dialects say so).
    fn max_binds(&self) -> usize {
        2_000
    }

    /// SQL expression for the connection's current schema, for catalogue look-ups.
    fn current_schema(&self) -> &'static str {
        "current_schema()"
    }

    /// Writes a query for the priority levels of `table` (its distinct non-NULL priorities)
    /// below `below` (all when `None`), highest first, as one column named `level`, read
    /// without scanning the table and without planner statistics. The default returns the
    /// highest one only, `SELECT MAX(priority) AS level ... [WHERE priority < ?]`, which every
    /// database answers from the end of the `(priority, execution_time)` index; the store
    /// descends one level per statement ([`Dialect::lists_all_levels`]). A `SELECT DISTINCT`
    /// was the default before: MariaDB answers it with a loose index scan only when its
    /// statistics show few distinct priorities (right after a bulk load it read the whole
    /// index, 150 ms per 1M rows, once a second per store), and SQL Server and SQLite have no
    /// loose index scan.
    fn priority_levels(&self, w: &mut SqlWriter<'_>, table: &TableName, below: Option<i16>) {
        w.push("SELECT MAX(priority) AS level FROM ").table(table);
        if let Some(level) = below {
            w.push(" WHERE priority < ")
                .bind(Value::SmallInt(Some(level)));
        }
    }

    /// Whether [`Dialect::priority_levels`] returns every level below its bound in one query
    /// (PostgreSQL's recursive skip scan) rather than the highest one. Default `false`.
    fn lists_all_levels(&self) -> bool {
        false
    }

    /// Writes an expression reading `key` from the JSON text column `custom_attributes`, NULL
    /// when the attribute is missing: text (and timestamp, normalized to sortable UTC text at
    /// intake) in binary collation (code point order), numbers as numbers. The path or name is
    /// bound where the queries of an indexed key set sort by generated columns
    /// ([`OrderIndexStyle::GeneratedColumns`]); dialects whose order index is on these very
    /// expressions write the validated [`AttributeName`](crate::AttributeName) as a literal
    /// instead ([`SqlWriter::attribute`]; Oracle takes only a literal path anyway), so that a
    /// plan made without the statement's values still matches the index.
    /// Default: SQL/JSON `JSON_VALUE(custom_attributes, ?)`.
    fn json_attribute(&self, w: &mut SqlWriter<'_>, key: &CustomKey) {
        let path = key.attribute.json_path();
        match key.kind {
            KeyType::Text | KeyType::Timestamp => {
                w.push("JSON_VALUE(custom_attributes, ")
                    .bind(path)
                    .push(")");
            }
            KeyType::Number => {
                w.push("CAST(JSON_VALUE(custom_attributes, ")
                    .bind(path)
                    .push(") AS DECIMAL(38, 10))");
            }
        }
    }

    /// Most rows one `INSERT ... VALUES (...), (...)` may list. Default 1000, SQL Server's
    /// limit; dialects without one return `usize::MAX`, and 1 means one row per statement
    /// (Oracle before 23ai has no multi-row `VALUES`).
    fn max_insert_rows(&self) -> usize {
        1000
    }

    /// The dialect's bulk-load path for large work-queue intakes ([`file_load`]), or `None`
    /// (default): intakes are multi-row inserts only.
    fn file_load(&self) -> Option<&dyn FileLoad> {
        None
    }

    /// How a custom order is indexed (see [`order_index`]). Default
    /// [`OrderIndexStyle::Expressions`]: an index on the expressions the queries sort by.
    fn order_index_style(&self) -> OrderIndexStyle {
        OrderIndexStyle::Expressions
    }

    /// The declared type of a generated column of an order index holding `value`:
    /// `Some(type)` adds it as `ALTER TABLE t ADD COLUMN c <type> AS (expr) VIRTUAL` (computed
    /// when read, stored only in indexes: MySQL/MariaDB, SQLite); `None` as a computed column
    /// without a declared type, `ALTER TABLE t ADD c AS (expr)` (SQL Server). Default `None`.
    fn generated_column_type(&self, _value: GeneratedValue) -> Option<String> {
        None
    }

    /// Writes a query returning one row (one text column named `name`) if the generated
    /// column `column` exists on `table`. Default: [`Dialect::column_exists`].
    fn generated_column_exists(&self, w: &mut SqlWriter<'_>, table: &TableName, column: &str) {
        self.column_exists(w, table, column);
    }

    /// Writes a statement dropping `column` of `table`. Default: `ALTER TABLE t DROP COLUMN c`.
    fn drop_column(&self, w: &mut SqlWriter<'_>, table: &TableName, column: &str) {
        w.push("ALTER TABLE ")
            .table(table)
            .push(" DROP COLUMN ")
            .push(&self.quote_ident(column));
    }

    /// Writes `CREATE INDEX <index> ON <table> (`; the caller writes the parts and `)`.
    /// Default: the index name unqualified (it lives in the table's schema), the table
    /// qualified. SQLite qualifies the index name instead.
    fn create_index_head(&self, w: &mut SqlWriter<'_>, table: &TableName, index: &str) {
        w.push("CREATE INDEX ")
            .push(&self.quote_ident(index))
            .push(" ON ")
            .table(table)
            .push(" (");
    }

    /// Writes a statement dropping the index `index` of `table`. Default: `DROP INDEX
    /// [schema.]index` (PostgreSQL, SQLite, Oracle); MySQL and SQL Server name the table
    /// instead (`DROP INDEX i ON t`).
    fn drop_index(&self, w: &mut SqlWriter<'_>, table: &TableName, index: &str) {
        w.push("DROP INDEX ");
        if let Some(schema) = table.schema() {
            w.push(&self.quote_ident(schema)).push(".");
        }
        w.push(&self.quote_ident(index));
    }

    /// Writes a query returning one row (one text column named `name`) if the index `index`
    /// exists on `table`, none otherwise. Default: `information_schema.statistics` (MySQL,
    /// MariaDB).
    fn index_exists(&self, w: &mut SqlWriter<'_>, table: &TableName, index: &str) {
        w.push("SELECT DISTINCT index_name AS name FROM information_schema.statistics WHERE table_schema = ");
        w.schema_of(table);
        w.push(" AND table_name = ")
            .bind(table.table())
            .push(" AND index_name = ")
            .bind(index);
    }

    /// Writes a query returning one row (one text column named `name`) if `column` exists on
    /// `table`, none otherwise. Default: `information_schema.columns`.
    fn column_exists(&self, w: &mut SqlWriter<'_>, table: &TableName, column: &str) {
        w.push("SELECT column_name AS name FROM information_schema.columns WHERE table_schema = ");
        w.schema_of(table);
        w.push(" AND table_name = ")
            .bind(table.table())
            .push(" AND column_name = ")
            .bind(column);
    }

    /// Writes a query returning one row per column of `table` (none when it does not exist):
    /// `name` (text) and `data_type` (the catalogue's type name as text, e.g. `timestamp with
    /// time zone`, `datetime`, `VARCHAR2`). Adopting an existing table checks these against
    /// what docket reads ([`Dialect::timestamp_types`]). Default: `information_schema.columns`.
    fn table_columns(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        w.push(
            "SELECT column_name AS name, data_type AS data_type FROM information_schema.columns \
             WHERE table_schema = ",
        );
        w.schema_of(table);
        w.push(" AND table_name = ").bind(table.table());
    }

    /// Writes a query returning one row per key column of each index on `table`:
    /// `index_name`, `position` (1-based) and `column_name`. A column of an expression index
    /// may be reported under a generated name; such an index simply matches nothing. Default:
    /// `information_schema.statistics` (MySQL and MariaDB; other dialects override it).
    fn index_columns(&self, w: &mut SqlWriter<'_>, table: &TableName) {
        w.push(
            "SELECT index_name AS index_name, seq_in_index AS position, column_name AS \
             column_name FROM information_schema.statistics WHERE table_schema = ",
        );
        w.schema_of(table);
        w.push(" AND table_name = ").bind(table.table());
    }

    /// The catalogue type names (as [`Dialect::table_columns`] reports them, lower case,
    /// without a precision such as `(6)`) of timestamp columns this backend reads and writes
    /// exactly. Adopting a table whose time columns have another type (one that depends on a
    /// session time zone, say) is an error naming the column. Default: none.
    fn timestamp_types(&self) -> &'static [&'static str] {
        &[]
    }
}

/// A dialect with every default, for core's own tests of rendering without a backend.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct Ansi;

#[cfg(test)]
impl Dialect for Ansi {
    fn name(&self) -> &'static str {
        "ansi"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            lock_and_fetch: None,
            transactional_ddl: false,
            work_queue: false,
            claim_locks_examined_rows: false,
        }
    }
}
