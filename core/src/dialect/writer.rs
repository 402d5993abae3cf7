//! The SQL writer: collects text and bind values together, so placeholders are numbered by the
//! dialect and can never drift from the values they stand for.

use super::Dialect;
use crate::error::StoreError;
use crate::ident::TableName;
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
}

/// Builds one statement for one dialect.
pub struct SqlWriter<'d> {
    dialect: &'d dyn Dialect,
    sql: String,
    binds: Vec<Value>,
    /// DDL mode ([`SqlWriter::for_ddl`]): values are written as literals, not bound.
    ddl: bool,
    /// In DDL mode, the first value that cannot be written as a literal.
    refused: Option<Value>,
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
            ddl: false,
            refused: None,
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
        self.sql.push_str(&placeholder);
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
                let current = self.dialect.current_schema();
                self.push(current)
            }
        }
    }

    /// Finishes the statement.
    pub fn finish(self) -> Rendered {
        Rendered {
            sql: self.sql,
            binds: self.binds,
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

    #[derive(Debug)]
    struct Numbered;

    impl Dialect for Numbered {
        fn name(&self) -> &'static str {
            "numbered"
        }
        fn capabilities(&self) -> super::super::Capabilities {
            super::super::Capabilities {
                lock_and_fetch: None,
                transactional_ddl: false,
                claim_locks_examined_rows: false,
                work_queue: false,
            }
        }
        fn placeholder(&self, n: usize) -> String {
            format!("${n}")
        }
    }

    #[test]
    fn ddl_writes_plain_text_as_literals_and_refuses_the_rest() {
        let mut w = SqlWriter::for_ddl(&Numbered);
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
            let mut w = SqlWriter::for_ddl(&Numbered);
            w.push("x = ").bind(bad.clone());
            assert!(
                matches!(w.finish_ddl(), Err(StoreError::Unsupported { .. })),
                "{bad:?}"
            );
        }
        let mut w = SqlWriter::new(&Numbered);
        w.bind("a").bind("b");
        assert_eq!(w.finish().sql, "$1$2");
    }
}
