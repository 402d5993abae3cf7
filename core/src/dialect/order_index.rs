//! Indexes for custom orders. A custom order sorts a task type's open items by JSON attributes,
//! which no generic index holds: without help every `next_for` sorts all open, arrived items
//! of the type. [`Statements::order_index`] builds the index for one key set, in one of two
//! [`OrderIndexStyle`]s:
//!
//! - **Expressions** (PostgreSQL; Oracle's function-based index): an index on the very
//!   expressions the queries sort by, rendered by the same [`Dialect::json_attribute`] hook
//!   with the attribute name written as a literal in the queries too ([`SqlWriter::attribute`]):
//!   PostgreSQL keeps statements prepared, and a prepared statement's generic plan, made
//!   without its values, matches an index expression only when the query holds the same
//!   constant. So the queries stay as they are, with or without the index.
//! - **Generated columns** (MySQL/MariaDB, SQLite; SQL Server's computed columns): one column
//!   per key holding its value and one holding its "missing" flag, and an index on those. These
//!   databases do not match an `ORDER BY` expression written with bound values to an index, so
//!   the queries of a task type whose index exists order by the columns instead
//!   ([`Statements::item_eligible_indexed`]).
//!
//! The index leads with `(task_name, assignable)` and, with priority on, `priority` (highest
//! first, NULL last), then the keys (missing last, in the key's direction), then record date and
//! record order: the whole `ORDER BY` of `next_for` and `list_for`, so the first open item is the
//! first index entry of the type that passes the remaining filters. Names are derived, never
//! taken from input: `<table>_ord_<hash>` for the index and `ord_<hash>_<n>[_missing]` for
//! columns, where the hash (FNV-1a, 48 bits) is over the table and the rendered index parts, so
//! a key set, a direction, the priority toggle or a change in how docket renders a key each
//! get their own index. Nothing user-supplied is spliced: attribute names are validated
//! identifiers and the DDL writer refuses any other text ([`SqlWriter::for_ddl`]).

use super::{Catalog, Ddl, Dialect, Rendered, SqlWriter, Statements};
use crate::error::StoreError;
use crate::ident::TableName;
use crate::ordering::{CustomKey, Direction, KeyType};

/// How a dialect indexes a custom order (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderIndexStyle {
    /// An index on the expressions the queries sort by; the queries are unchanged.
    Expressions,
    /// Generated columns holding the expressions and an index on them; the queries of an
    /// indexed key set sort by the columns.
    GeneratedColumns,
}

/// What a generated column of an order index holds, for dialects that declare its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratedValue {
    /// 1 when the key is missing, else 0.
    Missing,
    /// Text of at most `chars` characters (text keys, and timestamp keys in their normalized
    /// UTC form). A longer value does not fit the column: MySQL/MariaDB reject the row.
    Text {
        /// Longest value, in characters.
        chars: usize,
    },
    /// A number.
    Number,
}

/// A generated column of an [`OrderIndex`], with its DDL.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedColumn {
    /// Derived name, `ord_<hash>_<n>` or `ord_<hash>_<n>_missing`.
    pub name: String,
    /// Adds it.
    pub add: Rendered,
    /// Drops it.
    pub drop: Rendered,
    /// One row if it exists.
    pub exists: Rendered,
}

/// The index serving one custom key set on one table, as one dialect builds it.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderIndex {
    /// Derived name, `<table>_ord_<hash>`.
    pub name: String,
    /// Generated columns to add first (none in the [`OrderIndexStyle::Expressions`] style).
    pub columns: Vec<GeneratedColumn>,
    /// The generated columns in `ORDER BY` order with their directions (empty in the
    /// [`OrderIndexStyle::Expressions`] style).
    pub order_by: Vec<(String, Direction)>,
    /// `CREATE INDEX`.
    pub create: Rendered,
    /// Drops the index.
    pub drop: Rendered,
    /// One row if the index exists.
    pub exists: Rendered,
}

/// Writes the statement adding generated column `column` (a validated, derived name) that
/// computes `expr` (rendered DDL text of docket's own expressions), holding `value`, as the
/// dialect declares it ([`Dialect::generated_column_type`]).
fn add_generated_column(
    d: &dyn Dialect,
    w: &mut SqlWriter<'_>,
    table: &TableName,
    column: &str,
    value: GeneratedValue,
    expr: &str,
) {
    w.push("ALTER TABLE ").table(table);
    match d.generated_column_type(value) {
        Some(sql_type) => w
            .push(" ADD COLUMN ")
            .push(&d.quote_ident(column))
            .push(" ")
            .push(&sql_type)
            .push(" AS (")
            .push(expr)
            .push(") VIRTUAL"),
        None => w
            .push(" ADD ")
            .push(&d.quote_ident(column))
            .push(" AS (")
            .push(expr)
            .push(")"),
    };
}

/// Hex digits of the hash in derived names.
const HASH_DIGITS: usize = 12;

/// Longest index name written (PostgreSQL truncates identifiers at 63 bytes).
const MAX_INDEX_NAME: usize = 63;

/// Longest text a generated text column holds.
const MAX_TEXT_CHARS: usize = 768;

/// Bytes of an index entry left for the text keys: InnoDB's 3072-byte limit less what the
/// other parts take (task name 402, flags, priority, numbers, dates; generously).
const TEXT_KEY_BYTES: usize = 3072 - 640;

/// Characters per text key so that the index entry fits (4 bytes per character in utf8mb4).
fn text_chars(keys: &[CustomKey]) -> usize {
    let text = keys.iter().filter(|k| k.kind == KeyType::Text).count();
    (TEXT_KEY_BYTES / (4 * text.max(1))).min(MAX_TEXT_CHARS)
}

/// FNV-1a, 64 bits: stable across Rust versions and platforms (names must not change).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn direction(d: Direction) -> &'static str {
    match d {
        Direction::Asc => "",
        Direction::Desc => " DESC",
    }
}

impl Statements<'_> {
    /// The index that serves the custom order `keys` on this table, for this dialect and
    /// priority toggle (see the [module docs](self)). Fails only if a key's expression holds
    /// something the DDL writer refuses (never for validated attribute names).
    pub fn order_index(&self, keys: &[CustomKey]) -> Result<OrderIndex, StoreError> {
        let d = self.dialect();
        let value = |key: &CustomKey| {
            let mut w = SqlWriter::for_ddl(d);
            d.json_attribute(&mut w, key);
            w.finish_ddl().map(|r| r.sql)
        };
        let missing = |v: &str| format!("CASE WHEN {v} IS NULL THEN 1 ELSE 0 END");
        let mut head = vec!["task_name".to_owned(), "assignable".to_owned()];
        if self.policy().priority {
            head.push(d.index_desc_nulls_last("priority"));
        }
        let tail = ["record_date".to_owned(), "record_order".to_owned()];
        let values = keys.iter().map(value).collect::<Result<Vec<_>, _>>()?;
        // The canonical form (expressions) names the index whatever the style.
        let mut parts = head.clone();
        for (key, v) in keys.iter().zip(&values) {
            parts.push(format!("({})", missing(v)));
            parts.push(format!("({v}){}", direction(key.direction)));
        }
        parts.extend(tail.iter().cloned());
        let hash = format!(
            "{:016x}",
            fnv1a(&format!("{}|{}", self.table(), parts.join(", ")))
        );
        let hash = &hash[..HASH_DIGITS];
        let table = self.table().table();
        let room = MAX_INDEX_NAME - "_ord_".len() - HASH_DIGITS;
        let name = format!("{}_ord_{hash}", &table[..table.len().min(room)]);

        let mut columns = Vec::new();
        let mut order_by = Vec::new();
        if d.syntax().order_index_style == OrderIndexStyle::GeneratedColumns {
            parts = head;
            let chars = text_chars(keys);
            for (i, (key, v)) in keys.iter().zip(&values).enumerate() {
                let n = i + 1;
                let held = match key.kind {
                    KeyType::Text => GeneratedValue::Text { chars },
                    KeyType::Timestamp => GeneratedValue::Text { chars: 32 },
                    KeyType::Number => GeneratedValue::Number,
                };
                for (column, what, expr, dir) in [
                    (
                        format!("ord_{hash}_{n}_missing"),
                        GeneratedValue::Missing,
                        missing(v),
                        Direction::Asc,
                    ),
                    (format!("ord_{hash}_{n}"), held, v.clone(), key.direction),
                ] {
                    columns.push(self.generated_column(&column, what, &expr));
                    parts.push(format!("{}{}", d.quote_ident(&column), direction(dir)));
                    order_by.push((column, dir));
                }
            }
            parts.extend(tail);
        }
        let mut create = SqlWriter::new(d);
        d.ddl(&mut create, self.table(), Ddl::CreateIndexHead(&name));
        create.push(&parts.join(", ")).push(")");
        let mut drop = SqlWriter::new(d);
        d.ddl(&mut drop, self.table(), Ddl::DropIndex(&name));
        let mut exists = SqlWriter::new(d);
        d.catalog(&mut exists, self.table(), Catalog::IndexExists(&name));
        Ok(OrderIndex {
            name,
            columns,
            order_by,
            create: create.finish(),
            drop: drop.finish(),
            exists: exists.finish(),
        })
    }

    fn generated_column(&self, name: &str, value: GeneratedValue, expr: &str) -> GeneratedColumn {
        let d = self.dialect();
        let mut add = SqlWriter::new(d);
        add_generated_column(d, &mut add, self.table(), name, value, expr);
        let mut drop = SqlWriter::new(d);
        d.ddl(&mut drop, self.table(), Ddl::DropColumn(name));
        let mut exists = SqlWriter::new(d);
        d.catalog(
            &mut exists,
            self.table(),
            Catalog::GeneratedColumnExists(name),
        );
        GeneratedColumn {
            name: name.to_owned(),
            add: add.finish(),
            drop: drop.finish(),
            exists: exists.finish(),
        }
    }

    /// The order index statements, rendered for a two-key custom order (as
    /// [`Statements::queue_catalogue`]): create, drop and the existence checks.
    pub fn order_index_catalogue(&self) -> Result<Vec<(String, Rendered)>, StoreError> {
        let index = self.order_index(&crate::dialect::queue::sample_custom_keys())?;
        let mut all = Vec::new();
        for c in &index.columns {
            all.push((format!("add_column {}", c.name), c.add.clone()));
        }
        all.push(("create_index".to_owned(), index.create.clone()));
        all.push(("index_exists".to_owned(), index.exists.clone()));
        all.push(("drop_index".to_owned(), index.drop.clone()));
        for c in &index.columns {
            all.push((format!("drop_column {}", c.name), c.drop.clone()));
        }
        if let Some(c) = index.columns.first() {
            all.push((format!("column_exists {}", c.name), c.exists.clone()));
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a() {
        // Reference values of FNV-1a 64.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn text_columns_fit_the_index() {
        let key = |name, kind| CustomKey::new(name, kind, Direction::Asc).unwrap();
        assert_eq!(text_chars(&[key("a", KeyType::Number)]), 608);
        assert_eq!(text_chars(&[key("a", KeyType::Text)]), 608);
        let two = [key("a", KeyType::Text), key("b", KeyType::Text)];
        assert_eq!(text_chars(&two), 304);
        assert!(2 * 4 * text_chars(&two) <= TEXT_KEY_BYTES);
    }
}
