//! The ordering policy: in which order eligible (due, unclaimed) rows are handed out.
//!
//! The policy is data. Dialects render it as `ORDER BY` ([`crate::dialect`]); the engine uses
//! [`Execution::cmp_in_hand_out_order`](crate::Execution::cmp_in_hand_out_order) to keep the same order for rows a backend returns unordered
//! (for example `UPDATE ... RETURNING`).

use crate::error::DocketError;

/// The primary ordering, applied after priority (when enabled).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PrimaryOrder {
    /// `execution_time` ascending: the scheduler default.
    #[default]
    ExecutionTime,
    /// Record date ascending, then record order ascending: the work-queue default (a missing
    /// record date was resolved to the start of the item's batch when it was enqueued).
    Fifo,
    /// Attributes of `custom_attributes`, in the given order; a missing attribute sorts last.
    /// Turning it on for a task type turns FIFO off for it.
    Custom(Vec<CustomKey>),
}

impl PrimaryOrder {
    /// Parses a custom order from comma-separated [`CustomKey::parse`] specs, e.g.
    /// `team:text:asc,score:number:desc`.
    pub fn parse_custom(spec: &str) -> Result<Self, DocketError> {
        spec.split(',')
            .map(CustomKey::parse)
            .collect::<Result<Vec<_>, _>>()
            .map(PrimaryOrder::Custom)
    }

    /// The keys of a custom order (none for the others).
    pub fn custom_keys(&self) -> &[CustomKey] {
        match self {
            PrimaryOrder::Custom(keys) => keys,
            _ => &[],
        }
    }
}

/// How a custom attribute compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// By Unicode code point (binary collation on every backend).
    Text,
    /// Numerically (the attribute must be a JSON number; a string is normalized at intake).
    Number,
    /// As an instant (normalized at intake to UTC `YYYY-MM-DDThh:mm:ss.ffffffZ`, so text order
    /// is time order).
    Timestamp,
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    /// Smallest first.
    #[default]
    Asc,
    /// Largest first.
    Desc,
}

/// One key of a [`PrimaryOrder::Custom`] ordering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomKey {
    /// The attribute's name in `custom_attributes`.
    pub attribute: AttributeName,
    /// How it compares.
    pub kind: KeyType,
    /// Direction; missing attributes sort last either way.
    pub direction: Direction,
}

impl CustomKey {
    /// Parses `name[:text|number|timestamp[:asc|desc]]` (default `text`, `asc`), e.g.
    /// `score:number:desc`.
    pub fn parse(spec: &str) -> Result<Self, DocketError> {
        let mut parts = spec.trim().split(':');
        let name = parts.next().unwrap_or_default();
        let bad = |what: &str| DocketError::InvalidConfig(format!("order key {spec:?}: {what}"));
        let kind = match parts.next() {
            None | Some("text") => KeyType::Text,
            Some("number") => KeyType::Number,
            Some("timestamp") => KeyType::Timestamp,
            Some(other) => {
                return Err(bad(&format!(
                    "type {other:?} is not text, number or timestamp"
                )))
            }
        };
        let direction = match parts.next() {
            None | Some("asc") => Direction::Asc,
            Some("desc") => Direction::Desc,
            Some(other) => return Err(bad(&format!("direction {other:?} is not asc or desc"))),
        };
        if parts.next().is_some() {
            return Err(bad("expected name[:type[:direction]]"));
        }
        Self::new(name, kind, direction)
    }

    /// A key; the name is validated (see [`AttributeName::parse`]).
    pub fn new(attribute: &str, kind: KeyType, direction: Direction) -> Result<Self, DocketError> {
        Ok(Self {
            attribute: AttributeName::parse(attribute)?,
            kind,
            direction,
        })
    }
}

/// Longest attribute name accepted.
pub const MAX_ATTRIBUTE_LEN: usize = 64;

/// A validated custom-attribute name: `[A-Za-z_][A-Za-z0-9_]*`, at most
/// [`MAX_ATTRIBUTE_LEN`] characters. The JSON path built from it (`$."name"`) is always bound
/// as a parameter; validation keeps quotes, semicolons and comment markers out of paths anyway.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AttributeName(String);

impl AttributeName {
    /// Validates `name`.
    pub fn parse(name: &str) -> Result<Self, DocketError> {
        let invalid = |reason| DocketError::InvalidAttribute {
            name: name.to_owned(),
            reason,
        };
        let mut chars = name.chars();
        match chars.next() {
            None => return Err(invalid("it is empty")),
            Some(c) if !(c.is_ascii_alphabetic() || c == '_') => {
                return Err(invalid("it must start with a letter or '_'"))
            }
            Some(_) => {}
        }
        if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(invalid("only letters, digits and '_' are allowed"));
        }
        if name.len() > MAX_ATTRIBUTE_LEN {
            return Err(invalid("it is longer than 64 characters"));
        }
        Ok(Self(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The SQL/JSON path of the attribute, `$."name"` (bound, never spliced).
    pub fn json_path(&self) -> String {
        format!("$.\"{}\"", self.0)
    }
}

impl std::fmt::Display for AttributeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Priority toggle in front of a primary order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OrderingPolicy {
    /// When true, `priority` descending comes first, NULL priority ranking below every value.
    /// When false, no statement reads or writes the `priority` column.
    pub priority: bool,
    /// The order after priority.
    pub primary: PrimaryOrder,
}

impl OrderingPolicy {
    /// Execution time only, priority off (the default).
    pub fn execution_time() -> Self {
        Self::default()
    }

    /// Priority descending, then execution time.
    pub fn priority_then_execution_time() -> Self {
        Self {
            priority: true,
            primary: PrimaryOrder::ExecutionTime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Execution;
    use chrono::{TimeZone, Utc};

    fn exec(priority: Option<i16>, secs: i64) -> Execution {
        let mut e = Execution::new(
            "t",
            &format!("{priority:?}-{secs}"),
            Utc.timestamp_opt(secs, 0).unwrap(),
        );
        e.priority = priority;
        e
    }

    #[test]
    fn priority_desc_nulls_last_then_time() {
        let mut rows = [
            exec(None, 1),
            exec(Some(1), 2),
            exec(Some(3), 5),
            exec(Some(3), 4),
        ];
        let policy = OrderingPolicy::priority_then_execution_time();
        rows.sort_by(|a, b| a.cmp_in_hand_out_order(b, &policy));
        let order: Vec<_> = rows
            .iter()
            .map(|e| (e.priority, e.execution_time.timestamp()))
            .collect();
        assert_eq!(
            order,
            vec![(Some(3), 4), (Some(3), 5), (Some(1), 2), (None, 1)]
        );
        rows.sort_by(|a, b| a.cmp_in_hand_out_order(b, &OrderingPolicy::execution_time()));
        assert_eq!(rows[0].priority, None);
    }

    #[test]
    fn custom_orders_parse_from_specs() {
        let order = PrimaryOrder::parse_custom("team, score:number:desc,at:timestamp").unwrap();
        let keys: Vec<_> = order
            .custom_keys()
            .iter()
            .map(|k| (k.attribute.as_str(), k.kind, k.direction))
            .collect();
        assert_eq!(
            keys,
            [
                ("team", KeyType::Text, Direction::Asc),
                ("score", KeyType::Number, Direction::Desc),
                ("at", KeyType::Timestamp, Direction::Asc),
            ]
        );
        for bad in [
            "",
            "a:int",
            "a:text:up",
            "a:text:asc:x",
            "a';--:text",
            "a,,b",
        ] {
            assert!(PrimaryOrder::parse_custom(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn attribute_names_reject_sql_and_path_syntax() {
        for bad in [
            "", "1a", "a'b", "a\"b", "a;b", "a--b", "a/*b", "a.b", "a b", "a$", "é",
        ] {
            assert!(AttributeName::parse(bad).is_err(), "{bad:?} accepted");
        }
        let ok = AttributeName::parse("score_2").unwrap();
        assert_eq!(ok.json_path(), "$.\"score_2\"");
        assert!(AttributeName::parse(&"a".repeat(65)).is_err());
    }
}
