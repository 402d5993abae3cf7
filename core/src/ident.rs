//! Validated SQL identifiers. Nothing user-supplied reaches SQL text unless it passed
//! [`TableName::parse`]; dialects then quote each part.

use crate::error::DocketError;
use std::fmt;

/// Longest identifier part accepted: the smallest limit among supported databases
/// (PostgreSQL truncates at 63 bytes; Oracle 12.2+ allows 128, MySQL 64).
pub const MAX_IDENT_LEN: usize = 63;

/// Suffix of the work-queue assignments table derived from a docket table's name.
pub const ASSIGNMENTS_SUFFIX: &str = "_assignments";

/// Longest table part accepted: room is left for [`ASSIGNMENTS_SUFFIX`].
pub const MAX_TABLE_LEN: usize = MAX_IDENT_LEN - ASSIGNMENTS_SUFFIX.len();

/// A table name, optionally schema-qualified (`schema.table`), each part matching
/// `[A-Za-z_][A-Za-z0-9_]*`; the schema at most [`MAX_IDENT_LEN`] characters long, the table
/// at most [`MAX_TABLE_LEN`] (so the derived assignments table name fits every database).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    schema: Option<String>,
    table: String,
}

impl TableName {
    /// The default table name, `scheduled_tasks`.
    pub const DEFAULT: &'static str = "scheduled_tasks";

    /// Validates `value`; quotes, semicolons, comment markers, spaces and anything else that is
    /// not a plain identifier are rejected with [`DocketError::InvalidIdentifier`].
    pub fn parse(value: &str) -> Result<Self, DocketError> {
        let invalid = |reason| DocketError::InvalidIdentifier {
            value: value.to_owned(),
            reason,
        };
        let mut parts = value.split('.');
        let first = parts.next().unwrap_or_default();
        let second = parts.next();
        if parts.next().is_some() {
            return Err(invalid("at most one '.' (schema.table) is allowed"));
        }
        let (schema, table) = match second {
            Some(table) => (Some(first), table),
            None => (None, first),
        };
        if let Some(schema) = schema {
            validate_part(schema, MAX_IDENT_LEN).map_err(invalid)?;
        }
        validate_part(table, MAX_TABLE_LEN).map_err(invalid)?;
        Ok(match second {
            Some(table) => Self {
                schema: Some(first.to_owned()),
                table: table.to_owned(),
            },
            None => Self {
                schema: None,
                table: first.to_owned(),
            },
        })
    }

    /// The schema part, if qualified.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The unqualified table part.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The work-queue assignments table of this table: `<table>_assignments`, same schema.
    pub fn assignments(&self) -> TableName {
        Self {
            schema: self.schema.clone(),
            table: format!("{}{ASSIGNMENTS_SUFFIX}", self.table),
        }
    }

    /// The table of paused tasks of this table: `<table>_paused`, same schema
    /// (`0008_paused_tasks`).
    pub fn paused(&self) -> TableName {
        Self {
            schema: self.schema.clone(),
            table: format!("{}_paused", self.table),
        }
    }

    /// The table of task limits of this table: `<table>_limits`, same schema (`0009_limits`).
    pub fn limits(&self) -> TableName {
        self.suffixed("_limits")
    }

    /// The starts rate limits count: `<table>_starts`, same schema (`0009_limits`).
    pub fn starts(&self) -> TableName {
        self.suffixed("_starts")
    }

    fn suffixed(&self, suffix: &str) -> TableName {
        Self {
            schema: self.schema.clone(),
            table: format!("{}{suffix}", self.table),
        }
    }

    /// The session-private staging table of a bulk intake into this table:
    /// `<table>_intake`, same schema ([`crate::dialect::file_load`]).
    pub fn intake(&self) -> TableName {
        Self {
            schema: self.schema.clone(),
            table: format!("{}_intake", self.table),
        }
    }
}

impl Default for TableName {
    fn default() -> Self {
        Self {
            schema: None,
            table: Self::DEFAULT.to_owned(),
        }
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.table),
            None => f.write_str(&self.table),
        }
    }
}

impl std::str::FromStr for TableName {
    type Err = DocketError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

fn validate_part(part: &str, max: usize) -> Result<(), &'static str> {
    let mut chars = part.chars();
    match chars.next() {
        None => return Err("empty identifier"),
        Some(c) if !(c.is_ascii_alphabetic() || c == '_') => {
            return Err("must start with an ASCII letter or '_'")
        }
        _ => {}
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err("only ASCII letters, digits and '_' are allowed");
    }
    if part.len() > max {
        return Err(if max == MAX_IDENT_LEN {
            "longer than 63 characters"
        } else {
            "table names are limited to 51 characters (room for the `_assignments` table)"
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_and_qualified_names() {
        assert_eq!(
            TableName::parse("scheduled_tasks").unwrap().table(),
            "scheduled_tasks"
        );
        let q = TableName::parse("app.jobs_2").unwrap();
        assert_eq!((q.schema(), q.table()), (Some("app"), "jobs_2"));
        assert_eq!(q.to_string(), "app.jobs_2");
    }

    #[test]
    fn rejects_injection_and_malformed_names() {
        for bad in [
            "",
            "a;drop table x",
            "t\"x",
            "t'x",
            "t`x",
            "t--",
            "t/*x*/",
            "1abc",
            "a.b.c",
            ".t",
            "t.",
            "t x",
            "tä",
            &"x".repeat(64),
            &"x".repeat(52),
        ] {
            assert!(
                matches!(
                    TableName::parse(bad),
                    Err(DocketError::InvalidIdentifier { .. })
                ),
                "{bad:?} must be rejected"
            );
        }
    }
}
