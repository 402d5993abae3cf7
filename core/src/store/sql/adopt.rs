//! Adopting an existing table (`docket migrate --adopt`), such as one made by db-scheduler's
//! DDL: check that every column docket reads is there with a type it reads and writes exactly,
//! record the migrations the table already satisfies without running them, and create only the
//! indexes those migrations would have created and the table lacks. The table itself is never
//! re-created or rewritten.
//!
//! The indexes come from the backend's own migrations: the `CREATE INDEX` statements of each
//! adopted migration whose key columns no existing index leads with. So every backend keeps
//! spelling its indexes in its own dialect, once.

use super::*;
use crate::dialect::Column;
use crate::migrate::{plan, split_statements, TableMigration, MIGRATION_BASE, MIGRATION_PRIORITY};

/// What a column must hold for docket to read and write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Bytes,
    Integer,
    Bool,
    Timestamp,
}

impl Kind {
    fn of(column: Column) -> Kind {
        match column {
            Column::TaskName | Column::TaskInstance | Column::PickedBy => Kind::Text,
            Column::TaskData => Kind::Bytes,
            Column::ExecutionTime
            | Column::LastSuccess
            | Column::LastFailure
            | Column::LastHeartbeat => Kind::Timestamp,
            Column::Picked => Kind::Bool,
            Column::ConsecutiveFailures | Column::Version | Column::Priority => Kind::Integer,
        }
    }

    fn describe(self, dialect: &dyn Dialect) -> String {
        match self {
            Kind::Text => "a text type".to_owned(),
            Kind::Bytes => "a binary type".to_owned(),
            Kind::Integer => "an integer type".to_owned(),
            Kind::Bool => "a boolean or integer type".to_owned(),
            Kind::Timestamp => format!("one of {}", dialect.syntax().timestamp_types.join(", ")),
        }
    }

    /// Whether a column of catalogue type `declared` holds this kind (see [`normalize`]).
    fn fits(self, dialect: &dyn Dialect, declared: &str) -> bool {
        const TEXT: &[&str] = &[
            "text",
            "varchar",
            "character varying",
            "char",
            "character",
            "nvarchar",
            "nchar",
            "varchar2",
            "nvarchar2",
            "clob",
            "nclob",
            "tinytext",
            "mediumtext",
            "longtext",
        ];
        const BYTES: &[&str] = &[
            "bytea",
            "blob",
            "tinyblob",
            "mediumblob",
            "longblob",
            "varbinary",
            "binary",
            "raw",
        ];
        // Oracle's NUMBER holds the integers of db-scheduler's NUMBER(19, 0) columns.
        const INTEGER: &[&str] = &[
            "smallint",
            "integer",
            "int",
            "bigint",
            "tinyint",
            "mediumint",
            "number",
        ];
        const BOOL: &[&str] = &["boolean", "bool", "bit"];
        let t = normalize(declared);
        let t = t.as_str();
        match self {
            Kind::Text => TEXT.contains(&t),
            Kind::Bytes => BYTES.contains(&t),
            Kind::Integer => INTEGER.contains(&t),
            Kind::Bool => BOOL.contains(&t) || INTEGER.contains(&t),
            Kind::Timestamp => dialect.syntax().timestamp_types.contains(&t),
        }
    }
}

/// A catalogue type name as [`Syntax::timestamp_types`](crate::dialect::Syntax::timestamp_types) lists them: lower case, without
/// parenthesized precision or length (`TIMESTAMP(6) WITH TIME ZONE` is `timestamp with time
/// zone`, `varchar(100)` is `varchar`), single spaces.
fn normalize(declared: &str) -> String {
    let mut out = String::with_capacity(declared.len());
    let mut depth = 0usize;
    for c in declared.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if depth == 0 => out.push(c.to_ascii_lowercase()),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What adopting keeps of a backend's migration plan: the migrations the table satisfies,
/// reduced to the indexes it lacks. Pure: the store rewrites every backend's plan with it the
/// same way, before [`SqlConnector::apply`] runs the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdoptPlan {
    /// Names of the migrations the table satisfies (`0001_base`, maybe `0002_priority`).
    pub satisfied: Vec<&'static str>,
    /// The key columns of each existing index, in order, lower case (`""` for an expression).
    pub indexes: Vec<Vec<String>>,
}

impl AdoptPlan {
    /// `steps` with each satisfied migration's SQL replaced by the `CREATE INDEX` statements
    /// whose key columns no existing index leads with (possibly nothing); `(version, index
    /// name)` of each is added to `created`. Other migrations are kept as they are.
    pub fn apply(
        &self,
        steps: Vec<TableMigration>,
        created: &mut Vec<(String, String)>,
    ) -> Vec<TableMigration> {
        steps
            .into_iter()
            .map(|step| {
                let name = step.version.split('@').next().unwrap_or_default();
                if !self.satisfied.contains(&name) {
                    return step;
                }
                let mut keep = Vec::new();
                for stmt in split_statements(&step.up) {
                    let Some((index, columns)) = index_statement(&stmt) else {
                        continue;
                    };
                    if !self.indexes.iter().any(|have| have.starts_with(&columns)) {
                        created.push((step.version.clone(), index));
                        keep.push(format!("{stmt};"));
                    }
                }
                TableMigration {
                    up: keep.join("\n"),
                    ..step
                }
            })
            .collect()
    }
}

/// The index name and key columns (lower case, without `ASC`/`DESC`/`NULLS LAST`) of a
/// `CREATE INDEX name ON table (columns)` statement, as docket's migrations write them.
fn index_statement(stmt: &str) -> Option<(String, Vec<String>)> {
    let rest = stmt
        .trim_start()
        .get(..12)
        .filter(|head| head.eq_ignore_ascii_case("CREATE INDEX"))
        .map(|head| &stmt.trim_start()[head.len()..])?;
    let on = rest.to_ascii_uppercase().find(" ON ")?;
    let name: String = rest[..on]
        .replace("{schema}", "")
        .chars()
        .filter(|c| !matches!(c, '"' | '`' | '[' | ']'))
        .collect();
    let open = rest.rfind('(')?;
    let close = rest.rfind(')')?;
    let columns = rest
        .get(open + 1..close)?
        .split(',')
        .map(|key| {
            key.split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_matches(|c| matches!(c, '"' | '`' | '[' | ']'))
                .to_ascii_lowercase()
        })
        .collect();
    Some((name.trim().to_owned(), columns))
}

impl<C: SqlConnector> SqlStore<C> {
    /// Plans the connector's migrations of the table up to `up_to` (all when `None`), passes
    /// the plan through `adapt` and has the connector run it; returns the versions applied now.
    pub(super) fn run_migrations(
        &self,
        up_to: Option<&str>,
        adapt: Adapt<'_>,
    ) -> Result<Vec<String>, StoreError> {
        let table = &self.config.table;
        let steps = plan(
            self.connector.migrations(),
            self.connector.dialect(),
            table,
            up_to,
        )?;
        self.connector.apply(table, adapt(steps))
    }

    /// Fails with [`StoreError::NeedsAdopt`] when the table exists but the migration history
    /// does not record its base migration: migrating would fail on creating it, in the
    /// database's words, where adopting is what the user needs.
    pub(super) fn refuse_unknown_table(&self) -> Result<(), StoreError> {
        if self.rows(&self.statements.table_columns())?.is_empty() {
            return Ok(());
        }
        let base = plan(
            self.connector.migrations(),
            self.connector.dialect(),
            &self.config.table,
            Some(MIGRATION_BASE),
        )?;
        let recorded = self.connector.recorded()?;
        if base.iter().all(|step| recorded.contains(&step.version)) {
            Ok(())
        } else {
            Err(StoreError::NeedsAdopt {
                table: self.config.table.to_string(),
            })
        }
    }

    /// [`StoreInfo::adopt`] for every SQL backend.
    pub(super) fn adopt_table(&self, up_to: Option<&str>) -> Result<Adopted, StoreError> {
        let columns = decode_all(self.rows(&self.statements.table_columns())?, |r| {
            Ok((r.text("name")?.to_ascii_lowercase(), r.text("data_type")?))
        })?;
        if columns.is_empty() {
            // Nothing to adopt: an ordinary migration creates the table.
            return Ok(Adopted {
                applied: self.run_migrations(up_to, &mut |steps| steps)?,
                ..Adopted::default()
            });
        }
        let dialect = self.connector.dialect();
        let incompatible = |column: Column, reason: String| StoreError::Incompatible {
            table: self.config.table.to_string(),
            column: column.name().to_owned(),
            reason,
        };
        let check = |column: Column| -> Result<bool, StoreError> {
            let Some((_, declared)) = columns.iter().find(|(n, _)| n == column.name()) else {
                return Ok(false);
            };
            let kind = Kind::of(column);
            if kind.fits(dialect, declared) {
                Ok(true)
            } else {
                Err(incompatible(
                    column,
                    format!(
                        "has type {declared}; docket needs {}",
                        kind.describe(dialect)
                    ),
                ))
            }
        };
        for column in Column::BASE {
            if !check(column)? {
                return Err(incompatible(column, "is missing".to_owned()));
            }
        }
        let mut satisfied = vec![MIGRATION_BASE];
        if check(Column::Priority)? {
            satisfied.push(MIGRATION_PRIORITY);
        }
        let plan = AdoptPlan {
            satisfied,
            indexes: self.index_keys()?,
        };
        let mut created = Vec::new();
        let done = self.run_migrations(up_to, &mut |steps| plan.apply(steps, &mut created))?;
        let (adopted, applied): (Vec<String>, _) = done.into_iter().partition(|version| {
            let name = version.split('@').next().unwrap_or_default();
            plan.satisfied.contains(&name)
        });
        // Only what ran now: a version recorded before (a docket table) is skipped whole.
        let created_indexes = created
            .into_iter()
            .filter(|(version, _)| adopted.contains(version))
            .map(|(_, index)| index)
            .collect();
        Ok(Adopted {
            adopted,
            created_indexes,
            applied,
        })
    }

    /// The key columns of each index on the table, in order.
    fn index_keys(&self) -> Result<Vec<Vec<String>>, StoreError> {
        let rows = decode_all(self.rows(&self.statements.index_columns())?, |r| {
            Ok((
                r.text("index_name")?,
                r.i64("position")?,
                r.text("column_name")?.to_ascii_lowercase(),
            ))
        })?;
        let mut indexes: Vec<(String, Vec<String>)> = Vec::new();
        for (index, position, column) in rows {
            let at = match indexes.iter().position(|(n, _)| *n == index) {
                Some(at) => at,
                None => {
                    indexes.push((index, Vec::new()));
                    indexes.len() - 1
                }
            };
            let keys = &mut indexes[at].1;
            let slot = usize::try_from(position.max(1) - 1).unwrap_or_default();
            if keys.len() <= slot {
                keys.resize(slot + 1, String::new());
            }
            keys[slot] = column;
        }
        Ok(indexes.into_iter().map(|(_, keys)| keys).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, up: &str) -> TableMigration {
        TableMigration {
            version: format!("{name}@t"),
            up: up.to_owned(),
            down: String::new(),
        }
    }

    #[test]
    fn types_are_normalized_and_classified() {
        assert_eq!(
            normalize("TIMESTAMP(6) WITH TIME ZONE"),
            "timestamp with time zone"
        );
        assert_eq!(normalize("varchar(100)"), "varchar");
        assert_eq!(normalize("NUMBER(19, 0)"), "number");
        #[derive(Debug)]
        struct D;
        impl Dialect for D {
            fn name(&self) -> &'static str {
                "d"
            }
            fn syntax(&self) -> crate::dialect::Syntax {
                crate::dialect::Syntax {
                    timestamp_types: &["timestamp with time zone"],
                    ..crate::dialect::Syntax::ANSI
                }
            }
        }
        assert!(Kind::Timestamp.fits(&D, "timestamp with time zone"));
        assert!(!Kind::Timestamp.fits(&D, "timestamp without time zone"));
        assert!(Kind::Bool.fits(&D, "tinyint"));
        assert!(Kind::Bool.fits(&D, "BIT"));
        assert!(Kind::Text.fits(&D, "character varying"));
        assert!(!Kind::Integer.fits(&D, "text"));
        assert!(!Kind::Bytes.fits(&D, "text"));
    }

    #[test]
    fn index_statements_are_read_from_migration_sql() {
        assert_eq!(
            index_statement(
                "CREATE INDEX {schema}\"t_priority_idx\" ON \"t\" (priority DESC NULLS LAST, execution_time ASC)"
            ),
            Some((
                "t_priority_idx".to_owned(),
                vec!["priority".to_owned(), "execution_time".to_owned()]
            ))
        );
        assert_eq!(
            index_statement("create index [x] on [t] ([version])"),
            Some(("x".to_owned(), vec!["version".to_owned()]))
        );
        assert_eq!(index_statement("ALTER TABLE t ADD priority SMALLINT"), None);
    }

    #[test]
    fn adopted_steps_keep_only_missing_indexes() {
        let plan = AdoptPlan {
            satisfied: vec![MIGRATION_BASE, MIGRATION_PRIORITY],
            indexes: vec![vec!["execution_time".into()], vec!["last_heartbeat".into()]],
        };
        let steps = vec![
            step(
                MIGRATION_BASE,
                "CREATE TABLE t (x INT);\nCREATE INDEX a ON t (execution_time);\nCREATE INDEX b ON t (last_heartbeat);",
            ),
            step(
                MIGRATION_PRIORITY,
                "ALTER TABLE t ADD priority SMALLINT;\nCREATE INDEX p ON t (priority DESC, execution_time);",
            ),
            step("0003_ordering", "ALTER TABLE t ADD record_order BIGINT;"),
        ];
        let mut created = Vec::new();
        let out = plan.apply(steps, &mut created);
        assert_eq!(out[0].up, "");
        assert_eq!(
            out[1].up,
            "CREATE INDEX p ON t (priority DESC, execution_time);"
        );
        assert_eq!(out[2].up, "ALTER TABLE t ADD record_order BIGINT;");
        assert_eq!(created, [("0002_priority@t".to_owned(), "p".to_owned())]);
    }
}
