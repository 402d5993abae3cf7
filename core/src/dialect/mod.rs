//! SQL dialects. A [`Dialect`] states the few facts in which databases differ (placeholders,
//! quoting, limits, NULL ordering, the skip-locked idiom, insert-if-absent); the statements
//! themselves are rendered once, in [`statements`], from those facts.

pub mod common;
pub mod file_load;
pub mod order_index;
pub mod queue;
pub mod statements;
pub mod writer;

pub use crate::records::{Due, DueFilter};
pub use file_load::FileLoad;
pub use order_index::{GeneratedValue, OrderIndex, OrderIndexStyle};
pub use statements::{ClaimParts, Column, LagRange, Level, Statements, TaskOf};
pub use writer::{Array, Rendered, SqlWriter, Value};

use crate::ident::TableName;
use crate::ordering::{CustomKey, KeyType};
use crate::records::ExecutionKey;

/// How a backend claims a batch of due rows in one round trip (lock-and-fetch). The
/// statements' shapes are the dialect's ([`Dialect::lock_and_fetch`],
/// [`Dialect::claiming_select`]); this says which of them the store sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockAndFetch {
    /// One statement that updates the due rows it locks and returns them
    /// ([`Dialect::lock_and_fetch`]; by default `UPDATE ... WHERE (key) IN (SELECT ...
    /// <skip-locked>) RETURNING ...`). Also right for a single-writer database whose
    /// transactions serialize claims.
    UpdateReturning,
    /// A locking select ([`Dialect::claiming_select`]) then an `UPDATE` of the selected keys,
    /// in one transaction (databases without `UPDATE ... RETURNING` or without `LIMIT` in `IN`
    /// subqueries).
    SelectThenUpdate,
}

/// How a write names the rows a subquery found, for [`common::update_returning`]: `UPDATE ...
/// WHERE <open>SELECT <columns> FROM ... FOR UPDATE SKIP LOCKED<close>`.
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
    /// A row limit may share a query block with the row lock (`... LIMIT n FOR UPDATE SKIP
    /// LOCKED`). False where the database rejects it (Oracle, ORA-02014): its claiming select
    /// limits a subquery instead ([`Dialect::claiming_select`]), and its work-queue claim locks
    /// one item by key, without a limit.
    pub limit_with_lock: bool,
    /// Claims task by task when asked ([`Due::by_task`](crate::records::Due::by_task)): its
    /// claim statement reads one locked index range per task name and merges them
    /// ([`ClaimParts::by_task`]). False: the claim reads the one range of due rows whatever
    /// [`Due::by_task`](crate::records::Due::by_task) says.
    pub claims_by_task: bool,
}

impl Capabilities {
    /// Nothing beyond plain statements (a dialect's default; test dialects).
    pub const NONE: Self = Self {
        lock_and_fetch: None,
        transactional_ddl: false,
        claim_locks_examined_rows: false,
        work_queue: false,
        limit_with_lock: true,
        claims_by_task: false,
    };
    /// A database whose claim is one `UPDATE ... RETURNING`, whose DDL takes part in
    /// transactions, and whose locking reads lock only the rows they return.
    pub const UPDATE_RETURNING: Self = Self {
        lock_and_fetch: Some(LockAndFetch::UpdateReturning),
        transactional_ddl: true,
        claim_locks_examined_rows: false,
        work_queue: true,
        limit_with_lock: true,
        claims_by_task: false,
    };
    /// A database that claims with a locking select and then an update of the keys, in one
    /// transaction; whose DDL commits implicitly; and whose locking reads lock every row they
    /// examine.
    pub const SELECT_THEN_UPDATE: Self = Self {
        lock_and_fetch: Some(LockAndFetch::SelectThenUpdate),
        transactional_ddl: false,
        claim_locks_examined_rows: true,
        work_queue: true,
        limit_with_lock: true,
        claims_by_task: false,
    };
}

/// The JSON strings a [`KeyType::Number`] key reads as numbers, as a POSIX regular expression
/// (PostgreSQL `~`, MySQL `REGEXP`, Oracle `REGEXP_LIKE`; SQLite and SQL Server spell the same
/// test with `GLOB`/`TRY_CAST`): a plain decimal with an optional sign, as a CSV cell holds a
/// number. Written without `?`, which is a placeholder in some dialects' statement text.
pub const NUMBER_TEXT: &str = "^[+-]{0,1}[0-9]+([.][0-9]+){0,1}$";

/// The JSON strings a [`KeyType::Timestamp`] key reads, as a POSIX regular expression: those
/// that start in the record-date form `YYYY-MM-DDThh:mm:ss` (their text order is time order).
pub const TIMESTAMP_TEXT: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}";

/// A dialect's fixed facts, in one place (diesel's `SqlDialect` shape): what the shared
/// statements write where, and the limits they work within. [`Syntax::ANSI`] holds the
/// defaults; a backend states what differs (`Syntax { max_binds: 65_535, ..Syntax::ANSI }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Syntax {
    /// Clause appended to an `INSERT` so an existing `(task_name, task_instance)` is left alone
    /// and reported as zero rows inserted (`""`: none; the store then inserts row by row where
    /// a batch meets an existing key). Default `ON CONFLICT ... DO NOTHING`.
    pub insert_if_absent: &'static str,
    /// Most keys one statement names in its key list (`(task_name = ? AND task_instance IN
    /// (...)) OR ...`: batched completions, heartbeats, the claim of selected keys); longer
    /// lists are split into several statements of the same transaction. Default 500.
    pub max_key_terms: usize,
    /// Whether a multi-row insert binds one array per column (`INSERT ... SELECT * FROM
    /// UNNEST(?, ...)`, [`SqlWriter::insert_rows`]) rather than one value per cell. The
    /// statement is then one short text however many rows it carries, and a chunk is not bound
    /// by [`Syntax::max_binds`]. Default `false`.
    pub binds_arrays: bool,
    /// Most bind parameters one statement may carry; multi-row statements are chunked to stay
    /// within it. Default 2,000: SQL Server's limit is 2,100.
    pub max_binds: usize,
    /// Most rows one `INSERT ... VALUES (...), (...)` may list. Default 1000, SQL Server's
    /// limit; `usize::MAX` for none, 1 for one row per statement.
    pub max_insert_rows: usize,
    /// SQL expression for the connection's current schema, for catalogue look-ups. Default
    /// `current_schema()`.
    pub current_schema: &'static str,
    /// The index a per-level due-query is steered onto ([`Dialect::due_filter`] with
    /// [`DueFilter::level_index`]), whose presence the store checks at start-up: a table
    /// migrated partway lacks it. Default `None`.
    pub due_level_index: Option<&'static str>,
    /// How a custom order is indexed (see [`order_index`]). Default
    /// [`OrderIndexStyle::Expressions`]: an index on the expressions the queries sort by.
    pub order_index_style: OrderIndexStyle,
    /// The catalogue type names (as [`Catalog::TableColumns`] reports them, lower case, without
    /// a precision such as `(6)`) of timestamp columns this backend reads and writes exactly.
    /// Adopting a table whose time columns have another type is an error naming the column.
    /// Default: none.
    pub timestamp_types: &'static [&'static str],
}

impl Syntax {
    /// The defaults (see each field).
    pub const ANSI: Syntax = Syntax {
        insert_if_absent: " ON CONFLICT (task_name, task_instance) DO NOTHING",
        max_key_terms: 500,
        binds_arrays: false,
        max_binds: 2_000,
        max_insert_rows: 1000,
        current_schema: "current_schema()",
        due_level_index: None,
        order_index_style: OrderIndexStyle::Expressions,
        timestamp_types: &[],
    };
}

/// Where a row limit goes: right after `SELECT ` (T-SQL `TOP (n) `) or after `ORDER BY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitAt {
    /// Right after `SELECT `, before the select list.
    Head,
    /// After `ORDER BY`, at the end of the query block.
    Tail,
}

/// Where a claiming read's row lock goes ([`Dialect::skip_locked`]): right after the table name
/// (T-SQL's table hint) or at the end of the query block (`FOR UPDATE SKIP LOCKED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockAt {
    /// Right after the table reference (its name and alias), before `WHERE`.
    Table,
    /// At the end of the query block, after `ORDER BY` and the limit.
    End,
}

/// Which priority levels a levels query lists ([`Dialect::priority_levels`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Levels {
    /// The highest level below the bound only (none when there is none): the planner
    /// descends one level per statement.
    Highest,
    /// Every level below the bound, highest first, in one statement (PostgreSQL's recursive
    /// skip scan).
    All,
}

/// A catalogue query ([`Dialect::catalog`]), each returning what its variant says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Catalog<'a> {
    /// One row (one text column `name`) if the column exists on the table, none otherwise.
    ColumnExists(&'a str),
    /// One row (one text column `name`) if the generated column exists (an order index's).
    GeneratedColumnExists(&'a str),
    /// One row (one text column `name`) if the index exists on the table, none otherwise.
    IndexExists(&'a str),
    /// One row per column of the table (none when it does not exist): `name` (text) and
    /// `data_type` (the catalogue's type name as text, e.g. `timestamp with time zone`,
    /// `datetime`, `VARCHAR2`). Adopting a table checks these against what docket reads.
    TableColumns,
    /// One row per key column of each index on the table: `index_name`, `position` (1-based)
    /// and `column_name`. A column of an expression index may be reported under a generated
    /// name; such an index simply matches nothing.
    IndexColumns,
}

/// A schema change of a custom order's index ([`Dialect::ddl`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ddl<'a> {
    /// `ALTER TABLE t DROP COLUMN c`.
    DropColumn(&'a str),
    /// `CREATE INDEX <index> ON <table> (`; the caller writes the parts and `)`.
    CreateIndexHead(&'a str),
    /// Drops the index.
    DropIndex(&'a str),
}

/// One SQL dialect: a few facts ([`Syntax`]) and the pieces of statements that differ, each
/// with a default built from the shared helpers of [`common`]; a backend overrides whole
/// pieces in its own crate, next to the measurement that justifies them.
pub trait Dialect: Send + Sync + std::fmt::Debug {
    /// Short backend name, e.g. `postgres`.
    fn name(&self) -> &'static str;

    /// Everything the backend can do (default [`Capabilities::NONE`]).
    fn capabilities(&self) -> Capabilities {
        Capabilities::NONE
    }

    /// The dialect's fixed facts. Default [`Syntax::ANSI`].
    fn syntax(&self) -> Syntax {
        Syntax::ANSI
    }

    /// The placeholder for the `n`-th bind (1-based). Default `?`.
    fn placeholder(&self, _n: usize) -> String {
        "?".to_owned()
    }

    /// Quotes a validated identifier part. Default: ANSI double quotes.
    fn quote_ident(&self, ident: &str) -> String {
        format!("\"{ident}\"")
    }

    /// Writes a row limit `n` at `at`; called at both places of every limited query, each
    /// dialect writes at one. Default: ` LIMIT ?` at the tail.
    fn limit(&self, w: &mut SqlWriter<'_>, n: i64, at: LimitAt) {
        if at == LimitAt::Tail {
            w.push(" LIMIT ").bind(n);
        }
    }

    /// Writes the row lock of a read that claims rows without waiting on other claimers, at
    /// `at`; called at both places of every locking read, each dialect writes at one (as
    /// [`Dialect::limit`]). Default: ` FOR UPDATE SKIP LOCKED` at the end. SQL Server writes
    /// its table hint, SQLite nothing (its write transaction is the lock).
    fn skip_locked(&self, w: &mut SqlWriter<'_>, at: LockAt) {
        if at == LockAt::End {
            w.push(" FOR UPDATE SKIP LOCKED");
        }
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

    /// Writes the due-query's filter from `WHERE` (and anything before it, such as an index
    /// hint) up to its level predicate; returns the level its `ORDER BY` is to be written for:
    /// `due.level`, or [`Level::Any`] (priority first) where the dialect selected one level its
    /// own way. Default [`common::due_filter`].
    fn due_filter(&self, w: &mut SqlWriter<'_>, due: &DueFilter<'_>) -> Level {
        common::due_filter(w, due)
    }

    /// Writes the one-statement claim ([`LockAndFetch::UpdateReturning`]), composed from
    /// `claim`'s parts: an update of up to [`ClaimParts::limit`] due rows in hand-out order,
    /// skipping rows other claimers hold, returning the claimed rows ([`ClaimParts::columns`],
    /// in any order). Default [`common::update_returning`] by key; PostgreSQL matches by row
    /// address, SQL Server writes `UPDATE ... OUTPUT ... WHERE EXISTS`.
    fn lock_and_fetch(&self, w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>) {
        common::update_returning(w, claim, ClaimMatch::BY_KEY);
    }

    /// Writes the locking select of a two-step claim ([`LockAndFetch::SelectThenUpdate`]): up
    /// to [`ClaimParts::limit`] due rows ([`ClaimParts::columns`]) in hand-out order, locked,
    /// skipping rows other claimers hold. Default [`common::claiming_select`]; Oracle, which cannot
    /// limit the query block it locks, limits a subquery of row addresses.
    fn claiming_select(&self, w: &mut SqlWriter<'_>, claim: &ClaimParts<'_>) {
        common::claiming_select(w, claim);
    }

    /// Writes the condition of a statement that writes the executions `keys` names, each with
    /// its version when given (for every key or for none): the claim of selected keys, batched
    /// completions and heartbeats. Default [`common::key_terms`], the keys grouped by task
    /// name; PostgreSQL probes the primary key once per key over bound arrays.
    fn keys_condition(
        &self,
        w: &mut SqlWriter<'_>,
        _table: &TableName,
        keys: &[(&ExecutionKey, Option<i64>)],
    ) {
        common::key_terms(w, keys.iter().copied());
    }

    /// Writes a query for the priority levels of `table` (its distinct non-NULL priorities)
    /// below `below` (all when `None`), highest first, as one column named `level`, read
    /// without scanning the table and without planner statistics. The default returns the
    /// highest one only, `SELECT MAX(priority) AS level ... [WHERE priority < ?]`, which every
    /// database answers from the end of the `(priority, execution_time)` index; the planner
    /// descends one level per statement ([`Levels::Highest`]). A `SELECT DISTINCT`
    /// was the default before: MariaDB answers it with a loose index scan only when its
    /// statistics show few distinct priorities (right after a bulk load it read the whole
    /// index, 150 ms per 1M rows, once a second per store), and SQL Server and SQLite have no
    /// loose index scan. Returns which of the two the query lists.
    fn priority_levels(
        &self,
        w: &mut SqlWriter<'_>,
        table: &TableName,
        below: Option<i16>,
    ) -> Levels {
        common::priority_levels(w, table, below);
        Levels::Highest
    }

    /// Writes an expression reading `key` from the JSON text column `custom_attributes`, NULL
    /// when the attribute is missing or its value does not convert to the key's type
    /// ([`NUMBER_TEXT`], [`TIMESTAMP_TEXT`]): text in binary collation (code point order),
    /// numbers as numbers. The path or name is bound where the queries of an indexed key set
    /// sort by generated columns ([`OrderIndexStyle::GeneratedColumns`]); dialects whose order
    /// index is on these very expressions write the validated
    /// [`AttributeName`](crate::AttributeName) as a literal instead ([`SqlWriter::attribute`];
    /// Oracle takes only a literal path anyway), so that a plan made without the statement's
    /// values still matches the index. Default: SQL/JSON `JSON_VALUE(custom_attributes, ?)`.
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

    /// Writes, right after the items table `i` (and its lock hint) of a work-queue read that
    /// sorts by custom `keys` without an order index, a row source of the keys' values, and
    /// says whether it did; the order then reads key `n` with [`Dialect::json_key_column`].
    /// SQL Server writes `OUTER APPLY OPENJSON(i.custom_attributes) WITH (...) AS j`, the
    /// typed-column read the work queue's design names. Default: nothing, `false` (keys are
    /// read in place with [`Dialect::json_attribute`]).
    fn json_keys_source(&self, _w: &mut SqlWriter<'_>, _keys: &[CustomKey]) -> bool {
        false
    }

    /// Key `n` of the source [`Dialect::json_keys_source`] wrote, with the meaning
    /// [`Dialect::json_attribute`] gives it. Default: [`Dialect::json_attribute`].
    fn json_key_column(&self, w: &mut SqlWriter<'_>, key: &CustomKey, _n: usize) {
        self.json_attribute(w, key);
    }

    /// The dialect's bulk-load path for large work-queue intakes ([`file_load`]), or `None`
    /// (default): intakes are multi-row inserts only.
    fn file_load(&self) -> Option<&dyn FileLoad> {
        None
    }

    /// The declared type of a generated column of an order index holding `value`:
    /// `Some(type)` adds it as `ALTER TABLE t ADD COLUMN c <type> AS (expr) VIRTUAL` (computed
    /// when read, stored only in indexes: MySQL/MariaDB, SQLite); `None` as a computed column
    /// without a declared type, `ALTER TABLE t ADD c AS (expr)` (SQL Server). Default `None`.
    fn generated_column_type(&self, _value: GeneratedValue) -> Option<String> {
        None
    }

    /// Writes the catalogue query `query` about `table`. Default [`common::catalog`]
    /// (`information_schema`, as MySQL and MariaDB have it).
    fn catalog(&self, w: &mut SqlWriter<'_>, table: &TableName, query: Catalog<'_>) {
        common::catalog(w, table, query);
    }

    /// Writes the schema change `change` of `table`. Default [`common::ddl`].
    fn ddl(&self, w: &mut SqlWriter<'_>, table: &TableName, change: Ddl<'_>) {
        common::ddl(w, table, change);
    }

    /// Writes a query for the database server's current time: one row, one column
    /// `server_time`, read when the statement runs (not frozen at a transaction's start) and
    /// as UTC whatever the session's time zone. The scheduler corrects its clock by it
    /// (docs/RELIABILITY.md, "Which clock"). Default: ANSI `SELECT CURRENT_TIMESTAMP AS
    /// server_time`, which only a database whose session runs in UTC answers right; every
    /// backend writes its own.
    fn server_time(&self, w: &mut SqlWriter<'_>) {
        w.push("SELECT CURRENT_TIMESTAMP AS server_time");
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
}
