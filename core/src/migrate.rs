//! Versioned migrations, templated by table. Each backend ships its own SQL per migration (in
//! its own dialect); this module fills in the table and names the versions, so every backend
//! records and orders migrations the same way.

use crate::dialect::{Dialect, SqlWriter};
use crate::error::StoreError;
use crate::ident::TableName;

/// Name of the migration that creates the executions table.
pub const MIGRATION_BASE: &str = "0001_base";
/// Name of the migration that adds the nullable `priority` column and its index.
pub const MIGRATION_PRIORITY: &str = "0002_priority";
/// Name of the migration that adds record date, record order and custom attributes.
pub const MIGRATION_ORDERING: &str = "0003_ordering";
/// Name of the migration that adds the work-queue columns and the assignments table.
pub const MIGRATION_WORK_QUEUE: &str = "0004_work_queue";
/// Name of the migration that adds the table of paused tasks.
pub const MIGRATION_PAUSED: &str = "0008_paused_tasks";
/// Name of the migration that adds `limit_key` and the tables of limits and starts.
pub const MIGRATION_LIMITS: &str = "0009_limits";

/// One migration as shipped: `{table}` in the SQL stands for the quoted table name, `{name}`
/// for its unqualified name (for index names), `{schema}` for the quoted schema followed by `.`
/// or nothing (to name an index in the table's schema: PostgreSQL's `DROP INDEX`, SQLite's
/// `CREATE INDEX`), `{assignments}` for the quoted work-queue assignments table
/// (`<table>_assignments`, same schema), `{paused}` for the quoted table of paused tasks
/// (`<table>_paused`, same schema), `{limits}` and `{starts}` for the quoted tables of limits and
/// of the starts rate limits count (`<table>_limits`, `<table>_starts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrationFile {
    /// `0001_base`, `0002_priority`, ...
    pub name: &'static str,
    /// SQL applying it.
    pub up: &'static str,
    /// SQL reverting it.
    pub down: &'static str,
}

/// The [`MigrationFile`]s of a backend crate, from `migrations/<name>/{up,down}.sql` next to
/// its `Cargo.toml`, embedded at compile time:
/// `pub const MIGRATIONS: &[MigrationFile] = docket_core::migration_files!("0001_base", "0002_priority");`
///
/// Docket's own sequence is named here once: `migration_files!(through work_queue)` is
/// `0001_base` to `0004_work_queue`, `migration_files!(through due_index)` adds
/// `0005_due_index` (the backends whose due queries use that index); a backend's own later
/// migrations follow, e.g. `migration_files!(through due_index, "0006_due_priority_index")`.
#[macro_export]
macro_rules! migration_files {
    (through work_queue $(, $more:literal)*) => {
        $crate::migration_files!("0001_base", "0002_priority", "0003_ordering", "0004_work_queue" $(, $more)*)
    };
    (through due_index $(, $more:literal)*) => {
        $crate::migration_files!(through work_queue, "0005_due_index" $(, $more)*)
    };
    ($($name:literal),+ $(,)?) => {
        &[$($crate::migrate::MigrationFile {
            name: $name,
            up: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/", $name, "/up.sql")),
            down: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/", $name, "/down.sql")),
        }),+]
    };
}

/// A migration for one table, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMigration {
    /// Recorded version: `<name>@<table>`, so several docket tables can share a schema.
    pub version: String,
    /// SQL applying it.
    pub up: String,
    /// SQL reverting it.
    pub down: String,
}

/// Longest version string recorded (diesel keeps versions in a `VARCHAR(50)`).
pub const MAX_VERSION_LEN: usize = 50;

/// The migrations of `files` for `table`, up to and including `up_to` (all when `None`).
/// An unknown `up_to`, or a table name too long to record, is an error and nothing runs.
pub fn plan(
    files: &[MigrationFile],
    dialect: &dyn Dialect,
    table: &TableName,
    up_to: Option<&str>,
) -> Result<Vec<TableMigration>, StoreError> {
    let count = match up_to {
        None => files.len(),
        Some(last) => {
            files.iter().position(|f| f.name == last).ok_or_else(|| {
                let known: Vec<_> = files.iter().map(|f| f.name).collect();
                StoreError::UnknownMigration {
                    name: last.to_owned(),
                    known: known.join(", "),
                }
            })? + 1
        }
    };
    let quote = |t: &TableName| {
        let mut w = SqlWriter::new(dialect);
        w.table(t);
        w.finish().sql
    };
    let (quoted, assignments, paused, limits, starts) = (
        quote(table),
        quote(&table.assignments()),
        quote(&table.paused()),
        quote(&table.limits()),
        quote(&table.starts()),
    );
    let schema = table
        .schema()
        .map(|s| format!("{}.", dialect.quote_ident(s)))
        .unwrap_or_default();
    let fill = |sql: &str| {
        sql.replace("{table}", &quoted)
            .replace("{name}", table.table())
            .replace("{assignments}", &assignments)
            .replace("{paused}", &paused)
            .replace("{limits}", &limits)
            .replace("{starts}", &starts)
            .replace("{schema}", &schema)
    };
    files[..count]
        .iter()
        .map(|f| {
            let version = format!("{}@{table}", f.name);
            if version.len() > MAX_VERSION_LEN {
                return Err(StoreError::Migration {
                    source: format!(
                        "table name {table} is too long to record migration {} \
                         (versions are at most {MAX_VERSION_LEN} characters)",
                        f.name
                    )
                    .into(),
                });
            }
            Ok(TableMigration {
                version,
                up: fill(f.up),
                down: fill(f.down),
            })
        })
        .collect()
}

/// Splits migration SQL into single statements, for drivers that run one statement per call
/// (Oracle's OCI) or that report errors per statement. A statement ends with `;` at the end of
/// a line; whole-line `--` comments are dropped; empty statements are skipped. The migrations
/// docket ships contain no `;` inside literals or procedural blocks, which is what makes this
/// simple rule exact for them.
pub fn split_statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in sql.lines() {
        let trimmed = line.trim_end();
        if trimmed.trim_start().starts_with("--") {
            continue;
        }
        let (text, ends) = match trimmed.strip_suffix(';') {
            Some(text) => (text, true),
            None => (trimmed, false),
        };
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(text);
        if ends {
            let stmt = current.trim();
            if !stmt.is_empty() {
                out.push(stmt.to_owned());
            }
            current.clear();
        }
    }
    let rest = current.trim();
    if !rest.is_empty() {
        out.push(rest.to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::Ansi;

    const FILES: &[MigrationFile] = &[
        MigrationFile {
            name: "0001_base",
            up: "CREATE TABLE {table} (x INT); CREATE INDEX \"{name}_x\" ON {table} (x)",
            down: "DROP TABLE {table}",
        },
        MigrationFile {
            name: "0002_priority",
            up: "ALTER TABLE {table} ADD priority SMALLINT",
            down: "ALTER TABLE {table} DROP priority",
        },
    ];

    #[test]
    fn fills_table_and_versions_per_table() {
        let table = TableName::parse("app.jobs").unwrap();
        let all = plan(FILES, &Ansi, &table, None).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].version, "0001_base@app.jobs");
        assert_eq!(
            all[0].up,
            "CREATE TABLE \"app\".\"jobs\" (x INT); CREATE INDEX \"jobs_x\" ON \"app\".\"jobs\" (x)"
        );
        let first = plan(FILES, &Ansi, &table, Some("0001_base")).unwrap();
        assert_eq!(first.len(), 1);
    }

    #[test]
    fn splits_statements_and_drops_comment_lines() {
        let sql = "-- head\nCREATE TABLE t (\n    x INT\n);\n\nCREATE INDEX i ON t (x);\nDROP x";
        assert_eq!(
            split_statements(sql),
            [
                "CREATE TABLE t (\n    x INT\n)",
                "CREATE INDEX i ON t (x)",
                "DROP x"
            ]
        );
        assert!(split_statements("-- only a comment\n\n").is_empty());
    }

    #[test]
    fn unknown_target_and_long_names_are_errors() {
        let table = TableName::default();
        assert!(plan(FILES, &Ansi, &table, Some("0003_nope")).is_err());
        let long = TableName::parse(&"t".repeat(40)).unwrap();
        assert!(plan(FILES, &Ansi, &long, None).is_err());
    }
}
