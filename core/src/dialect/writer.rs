//! The SQL writer: collects text and bind values together, so placeholders are numbered by the
//! dialect and can never drift from the values they stand for.

use super::Dialect;
use crate::error::StoreError;
use crate::ident::TableName;
use crate::ordering::AttributeName;
use chrono::{DateTime, Utc};

/// A bind value. Nullable variants carry their SQL type even when NULL.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text (`VARCHAR`/`TEXT`).
    Text(Option<String>),
    /// Bytes (`BYTEA`/`BLOB`/`VARBINARY`).
    Bytes(Option<Vec<u8>>),
    /// A UTC instant with microsecond precision.
    Timestamp(Option<DateTime<Utc>>),
    /// 16-bit integer (`priority`).
    SmallInt(Option<i16>),
    /// 32-bit integer.
    Int(i32),
    /// 64-bit integer (`version`, limits).
    BigInt(i64),
    /// Boolean.
    Bool(bool),
    /// One column of many rows, bound as one array parameter (multi-row inserts of a dialect
    /// that binds arrays: [`Syntax::binds_arrays`](crate::dialect::Syntax::binds_arrays)).
    Array(Array),
}

/// The values of one column over many rows, typed as the scalar [`Value`] they come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    /// Text.
    Text(Vec<Option<String>>),
    /// Bytes.
    Bytes(Vec<Option<Vec<u8>>>),
    /// UTC instants.
    Timestamp(Vec<Option<DateTime<Utc>>>),
    /// 16-bit integers.
    SmallInt(Vec<Option<i16>>),
    /// 32-bit integers.
    Int(Vec<i32>),
    /// 64-bit integers.
    BigInt(Vec<i64>),
    /// Booleans.
    Bool(Vec<bool>),
}

impl Array {
    /// How many rows the array holds.
    pub fn len(&self) -> usize {
        match self {
            Array::Text(v) => v.len(),
            Array::Bytes(v) => v.len(),
            Array::Timestamp(v) => v.len(),
            Array::SmallInt(v) => v.len(),
            Array::Int(v) => v.len(),
            Array::BigInt(v) => v.len(),
            Array::Bool(v) => v.len(),
        }
    }

    /// Whether the array holds no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An empty array of `value`'s type; `None` for an array.
    fn like(value: &Value) -> Option<Array> {
        Some(match value {
            Value::Text(_) => Array::Text(Vec::new()),
            Value::Bytes(_) => Array::Bytes(Vec::new()),
            Value::Timestamp(_) => Array::Timestamp(Vec::new()),
            Value::SmallInt(_) => Array::SmallInt(Vec::new()),
            Value::Int(_) => Array::Int(Vec::new()),
            Value::BigInt(_) => Array::BigInt(Vec::new()),
            Value::Bool(_) => Array::Bool(Vec::new()),
            Value::Array(_) => return None,
        })
    }

    /// Appends `value`, or gives it back when its type is not the array's.
    fn push(&mut self, value: Value) -> Result<(), Value> {
        match (self, value) {
            (Array::Text(a), Value::Text(v)) => a.push(v),
            (Array::Bytes(a), Value::Bytes(v)) => a.push(v),
            (Array::Timestamp(a), Value::Timestamp(v)) => a.push(v),
            (Array::SmallInt(a), Value::SmallInt(v)) => a.push(v),
            (Array::Int(a), Value::Int(v)) => a.push(v),
            (Array::BigInt(a), Value::BigInt(v)) => a.push(v),
            (Array::Bool(a), Value::Bool(v)) => a.push(v),
            (_, other) => return Err(other),
        }
        Ok(())
    }

    /// `rows` as one array per column; `None` when a column mixes types or holds arrays.
    fn columns(rows: &[Vec<Value>]) -> Option<Vec<Array>> {
        let mut columns: Vec<Array> = rows
            .first()?
            .iter()
            .map(Array::like)
            .collect::<Option<_>>()?;
        for row in rows {
            if row.len() != columns.len() {
                return None;
            }
            for (column, value) in columns.iter_mut().zip(row) {
                column.push(value.clone()).ok()?;
            }
        }
        Some(columns)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(Some(v.to_owned()))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(Some(v))
    }
}
impl From<DateTime<Utc>> for Value {
    fn from(v: DateTime<Utc>) -> Self {
        Value::Timestamp(Some(v))
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::BigInt(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v)
    }
}

/// A rendered statement: SQL text with dialect placeholders, and the values in bind order.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The SQL text.
    pub sql: String,
    /// Values for the placeholders, in order.
    pub binds: Vec<Value>,
    /// Where each placeholder stands in `sql` (byte ranges, in order), recorded as the writer
    /// wrote them: a session that sends text and values apart cuts the text here instead of
    /// searching it again.
    placeholders: Vec<std::ops::Range<usize>>,
    /// Whether the text follows how many items the caller passed (see
    /// [`SqlWriter::sized_by_input`]).
    sized_by_input: bool,
}

impl Rendered {
    /// A statement without binds, written by hand (migration bookkeeping, tooling).
    pub fn text(sql: impl Into<String>) -> Self {
        Self {
            sql: sql.into(),
            binds: Vec::new(),
            placeholders: Vec::new(),
            sized_by_input: false,
        }
    }

    /// Whether the text follows how many items the caller passed (a key list written as
    /// `OR` terms, a multi-row `VALUES`): each length is another statement. docket's diesel
    /// backends keep such a statement out of their statement cache, which would otherwise hold
    /// one entry per length seen for as long as new lengths turn up (docs/DESIGN.md,
    /// "Prepared statements").
    pub fn sized_by_input(&self) -> bool {
        self.sized_by_input
    }

    /// Where each placeholder stands in the text, one byte range per bind, in order.
    pub fn placeholders(&self) -> &[std::ops::Range<usize>] {
        &self.placeholders
    }

    /// The same statement after `prefix` (such as `EXPLAIN `), its placeholders moved along.
    pub fn prefixed(&self, prefix: &str) -> Self {
        let shift = prefix.len();
        Self {
            sql: format!("{prefix}{}", self.sql),
            binds: self.binds.clone(),
            placeholders: self
                .placeholders
                .iter()
                .map(|r| r.start + shift..r.end + shift)
                .collect(),
            sized_by_input: self.sized_by_input,
        }
    }
}

/// Builds one statement for one dialect.
pub struct SqlWriter<'d> {
    dialect: &'d dyn Dialect,
    sql: String,
    binds: Vec<Value>,
    placeholders: Vec<std::ops::Range<usize>>,
    /// DDL mode ([`SqlWriter::for_ddl`]): values are written as literals, not bound.
    ddl: bool,
    /// In DDL mode, the first value that cannot be written as a literal.
    refused: Option<Value>,
    /// Set by [`SqlWriter::sized_by_input`].
    sized_by_input: bool,
}

/// Whether `text` may be written as a literal in DDL: the characters of validated identifiers
/// and of the JSON paths built from them (`$."name"`), nothing that can end a literal or escape.
fn plain_literal(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.' | '"'))
}

impl<'d> SqlWriter<'d> {
    /// An empty statement.
    pub fn new(dialect: &'d dyn Dialect) -> Self {
        Self {
            dialect,
            sql: String::with_capacity(256),
            binds: Vec::new(),
            placeholders: Vec::new(),
            ddl: false,
            refused: None,
            sized_by_input: false,
        }
    }

    /// A writer for DDL (`CREATE INDEX`, generated columns), which takes no binds: what a
    /// dialect hook binds is written as a literal instead, so that index expressions are the
    /// very text the queries use with the value in place of the placeholder. Only text made of
    /// identifier characters and JSON-path punctuation (`[A-Za-z0-9_$."]`: validated attribute
    /// names and their paths) is accepted; anything else makes [`SqlWriter::finish_ddl`] fail.
    pub fn for_ddl(dialect: &'d dyn Dialect) -> Self {
        Self {
            ddl: true,
            ..Self::new(dialect)
        }
    }

    /// The dialect being written.
    pub fn dialect(&self) -> &'d dyn Dialect {
        self.dialect
    }

    /// Marks the statement's text as following the length of a list the caller passed: called
    /// by whatever writes a second item of such a list ([`Rendered::sized_by_input`]).
    pub fn sized_by_input(&mut self) -> &mut Self {
        self.sized_by_input = true;
        self
    }

    /// Appends SQL text written by docket itself (never user input).
    pub fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }

    /// Appends a placeholder and records its value.
    pub fn bind(&mut self, value: impl Into<Value>) -> &mut Self {
        let value = value.into();
        if self.ddl {
            match &value {
                Value::Text(Some(text)) if plain_literal(text) => {
                    self.sql.push('\'');
                    self.sql.push_str(text);
                    self.sql.push('\'');
                }
                _ => {
                    self.refused.get_or_insert(value);
                }
            }
            return self;
        }
        self.binds.push(value);
        let placeholder = self.dialect.placeholder(self.binds.len());
        let start = self.sql.len();
        self.sql.push_str(&placeholder);
        self.placeholders.push(start..self.sql.len());
        self
    }

    /// Appends a validated attribute name as a string literal (`'name'`), in queries as in DDL.
    /// For dialects whose order index is on expressions: a query planned without its values (a
    /// cached statement's generic plan on PostgreSQL) matches such an index only when the
    /// expression holds the name itself, not a placeholder. Safe to write: an
    /// [`AttributeName`] is `[A-Za-z_][A-Za-z0-9_]*`, like an identifier.
    pub fn attribute(&mut self, name: &AttributeName) -> &mut Self {
        self.sql.push('\'');
        self.sql.push_str(name.as_str());
        self.sql.push('\'');
        self
    }

    /// Appends `(?, ?, ...)`, one placeholder per value.
    pub fn bind_list<V: Into<Value>>(&mut self, values: impl IntoIterator<Item = V>) -> &mut Self {
        self.push("(");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.bind(v);
        }
        self.push(")")
    }

    /// [`SqlWriter::bind_list`] for a list the caller passed (ids, keys), whose length varies
    /// from call to call: more than one value marks the statement
    /// [`SqlWriter::sized_by_input`].
    pub fn bind_input_list<V: Into<Value> + Clone>(&mut self, values: &[V]) -> &mut Self {
        if values.len() > 1 {
            self.sized_by_input();
        }
        self.bind_list(values.iter().cloned())
    }

    /// Appends ` (<columns>) VALUES (?, ...), (?, ...)`: one entry of `rows` per row, each
    /// naming its columns, in the same order in every row (the first row's names are written).
    /// Several rows, where the dialect binds arrays ([`Syntax::binds_arrays`](crate::dialect::Syntax::binds_arrays)), are appended
    /// as ` (<columns>) SELECT * FROM UNNEST(?, ...)`, one array per column, instead: the text
    /// and the bind count of the statement stay the same however many rows it carries.
    pub fn insert_rows(&mut self, rows: Vec<Vec<(&'static str, Value)>>) -> &mut Self {
        let names: Vec<_> = rows
            .first()
            .map(|row| row.iter().map(|(name, _)| *name).collect())
            .unwrap_or_default();
        self.push(" (").push(&names.join(", ")).push(")");
        let rows: Vec<Vec<Value>> = rows
            .into_iter()
            .map(|row| row.into_iter().map(|(_, v)| v).collect())
            .collect();
        let arrays = self.dialect.syntax().binds_arrays && rows.len() > 1;
        match arrays.then(|| Array::columns(&rows)).flatten() {
            Some(columns) => {
                self.push(" SELECT * FROM UNNEST")
                    .bind_list(columns.into_iter().map(Value::Array));
            }
            None => {
                self.push(" VALUES ");
                for (i, row) in rows.into_iter().enumerate() {
                    if i > 0 {
                        self.push(", ").sized_by_input();
                    }
                    self.bind_list(row);
                }
            }
        }
        self
    }

    /// Appends a validated table name, quoted by the dialect.
    pub fn table(&mut self, table: &TableName) -> &mut Self {
        if let Some(schema) = table.schema() {
            let quoted = self.dialect.quote_ident(schema);
            self.sql.push_str(&quoted);
            self.sql.push('.');
        }
        let quoted = self.dialect.quote_ident(table.table());
        self.push(&quoted)
    }

    /// For catalogue look-ups: binds the table's schema, or appends the dialect's expression
    /// for the connection's current schema when the name has none.
    pub fn schema_of(&mut self, table: &TableName) -> &mut Self {
        match table.schema() {
            Some(schema) => self.bind(schema),
            None => {
                let current = self.dialect.syntax().current_schema;
                self.push(current)
            }
        }
    }

    /// Finishes the statement.
    pub fn finish(self) -> Rendered {
        Rendered {
            sql: self.sql,
            binds: self.binds,
            placeholders: self.placeholders,
            sized_by_input: self.sized_by_input,
        }
    }

    /// Finishes a [`SqlWriter::for_ddl`] statement (no binds), or names the value that could
    /// not be written as a literal.
    pub fn finish_ddl(self) -> Result<Rendered, StoreError> {
        match self.refused {
            None => Ok(self.finish()),
            Some(_) => Err(StoreError::Unsupported {
                backend: self.dialect.name(),
                capability: "a value other than identifier-like text in DDL",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `$n` placeholders; binds arrays when `.0` says so.
    #[derive(Debug)]
    struct Numbered(bool);

    impl Dialect for Numbered {
        fn name(&self) -> &'static str {
            "numbered"
        }
        fn placeholder(&self, n: usize) -> String {
            format!("${n}")
        }
        fn syntax(&self) -> crate::dialect::Syntax {
            crate::dialect::Syntax {
                binds_arrays: self.0,
                ..crate::dialect::Syntax::ANSI
            }
        }
    }

    fn row(id: &str, priority: Option<i16>) -> Vec<(&'static str, Value)> {
        vec![
            ("id", Value::from(id)),
            ("priority", Value::SmallInt(priority)),
        ]
    }

    #[test]
    fn several_rows_bind_one_array_per_column_where_the_dialect_can() {
        let mut w = SqlWriter::new(&Numbered(true));
        w.insert_rows(vec![row("a", Some(1)), row("b", None)]);
        let r = w.finish();
        assert_eq!(r.sql, " (id, priority) SELECT * FROM UNNEST($1, $2)");
        assert_eq!(
            r.binds,
            [
                Value::Array(Array::Text(vec![Some("a".into()), Some("b".into())])),
                Value::Array(Array::SmallInt(vec![Some(1), None])),
            ]
        );
        // One row, a dialect without arrays, or a column of mixed types: a VALUES list.
        let one = vec![row("a", Some(1))];
        let mut mixed = vec![row("a", Some(1)), row("b", None)];
        mixed[1][1].1 = Value::Int(2);
        for (dialect, rows, sql) in [
            (
                &Numbered(true) as &dyn Dialect,
                one,
                " (id, priority) VALUES ($1, $2)",
            ),
            (
                &Numbered(false),
                vec![row("a", Some(1)), row("b", None)],
                " (id, priority) VALUES ($1, $2), ($3, $4)",
            ),
            (
                &Numbered(true),
                mixed,
                " (id, priority) VALUES ($1, $2), ($3, $4)",
            ),
        ] {
            let mut w = SqlWriter::new(dialect);
            w.insert_rows(rows);
            let r = w.finish();
            assert_eq!(r.sql, sql);
            assert!(r.binds.iter().all(|b| !matches!(b, Value::Array(_))));
        }
    }

    #[test]
    fn ddl_writes_plain_text_as_literals_and_refuses_the_rest() {
        let mut w = SqlWriter::for_ddl(&Numbered(false));
        w.push("x -> ")
            .bind("$.\"team_1\"")
            .push(", ")
            .bind("score");
        let r = w.finish_ddl().unwrap();
        assert_eq!(r.sql, "x -> '$.\"team_1\"', 'score'");
        assert!(r.binds.is_empty());
        for bad in [
            Value::from("it's"),
            Value::from("a\\b"),
            Value::from(""),
            Value::Int(1),
            Value::Text(None),
        ] {
            let mut w = SqlWriter::for_ddl(&Numbered(false));
            w.push("x = ").bind(bad.clone());
            assert!(
                matches!(w.finish_ddl(), Err(StoreError::Unsupported { .. })),
                "{bad:?}"
            );
        }
        let mut w = SqlWriter::new(&Numbered(false));
        w.bind("a").bind("b");
        assert_eq!(w.finish().sql, "$1$2");
    }
}
