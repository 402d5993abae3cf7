//! Query plans for tooling (`docket explain --database-url ...`, `docket bench queue`), written
//! once over [`SqlConnector`]: each backend only describes how its database shows a plan
//! ([`PlanQuery`]), and [`explain_plan`] runs that through the backend's own sessions, with the
//! statement's values bound. Explaining never changes data: a claim explained claims nothing.
//! Plans are one-off statements, so they are never kept prepared ([`PlanConnector`]).

use crate::dialect::Rendered;
use crate::error::StoreError;
use crate::store::sql::{SqlConnector, SqlSession};
use crate::store::Row;

/// How a database shows the plan of a statement: the few shapes the backends' `EXPLAIN`s take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanQuery {
    /// `<prefix> <statement>` is a query whose rows' first column holds the plan text (a cell
    /// may hold several lines, e.g. MySQL's `EXPLAIN FORMAT=JSON`). With `rolled_back`, it runs
    /// in a transaction that is always rolled back: for a prefix that executes the statement
    /// (PostgreSQL's `EXPLAIN (ANALYZE, BUFFERS)`).
    Prefix {
        /// What goes in front of the statement.
        prefix: &'static str,
        /// Whether to run it in a transaction that is rolled back.
        rolled_back: bool,
    },
    /// `<prefix> <statement>` is a query returning the plan as a tree of steps, rows with
    /// columns `id`, `parent` and `detail`, parents before their children (SQLite's
    /// `EXPLAIN QUERY PLAN`): one line per step, indented two spaces per level.
    Tree {
        /// What goes in front of the statement.
        prefix: &'static str,
    },
    /// The plan is written to a table and read back (Oracle's `EXPLAIN PLAN FOR`): on one
    /// session, `clear` (plain text) empties the plan table, `<prefix> <statement>` is executed,
    /// and the first column of `display`'s rows is the plan.
    Stored {
        /// Empties the plan table (run as plain text, without binds).
        clear: &'static str,
        /// What goes in front of the statement.
        prefix: &'static str,
        /// The query reading the plan back.
        display: &'static str,
    },
    /// A session setting makes the server return plans instead of running statements (SQL
    /// Server's `SET SHOWPLAN_TEXT ON`): on one session, `on` is sent as plain text (a batch of
    /// its own), the statement is queried and its rows' first column is the plan, then `off`
    /// is sent, also when the query failed.
    Toggled {
        /// Turns plans on (plain text).
        on: &'static str,
        /// Turns them off again (plain text).
        off: &'static str,
    },
}

impl PlanQuery {
    /// What is run in front of (or around) a statement, for labels: e.g.
    /// `EXPLAIN (ANALYZE, BUFFERS)`.
    pub const fn label(&self) -> &'static str {
        match self {
            PlanQuery::Prefix { prefix, .. }
            | PlanQuery::Tree { prefix }
            | PlanQuery::Stored { prefix, .. } => prefix,
            PlanQuery::Toggled { on, .. } => on,
        }
    }
}

/// A connector that can send tooling's one-off statements (query plans) without keeping them
/// prepared: a plan is asked for once, so caching it would only fill the connection's
/// statement cache (and PostgreSQL may plan a kept statement generically after a few runs).
pub trait PlanConnector: SqlConnector + Sized {
    /// A connector on the same connections whose sessions prepare nothing for keeps (the
    /// diesel backends: the statement cache off; a backend without one: itself).
    fn for_plans(&self) -> Self;
}

/// The database's plan of `stmt` (values bound), one line per entry, obtained as `how` says on
/// a session of `connector` (through [`PlanConnector::for_plans`]).
pub fn explain_plan<C: PlanConnector>(
    connector: &C,
    how: &PlanQuery,
    stmt: &Rendered,
) -> Result<Vec<String>, StoreError> {
    let connector = &connector.for_plans();
    let prefixed = |prefix: &str| stmt.prefixed(&format!("{prefix} "));
    match *how {
        PlanQuery::Prefix {
            prefix,
            rolled_back: false,
        } => {
            let explained = prefixed(prefix);
            connector.with_session(&mut |s| Ok(text_lines(&s.query(&explained)?)))
        }
        PlanQuery::Prefix {
            prefix,
            rolled_back: true,
        } => {
            let explained = prefixed(prefix);
            rolled_back(connector, &mut |s| Ok(text_lines(&s.query(&explained)?)))
        }
        PlanQuery::Tree { prefix } => {
            let explained = prefixed(prefix);
            connector.with_session(&mut |s| Ok(tree_lines(&s.query(&explained)?)))
        }
        PlanQuery::Stored {
            clear,
            prefix,
            display,
        } => {
            let explained = prefixed(prefix);
            let display = Rendered::text(display);
            connector.with_session(&mut |s| {
                s.execute_unprepared(clear)?;
                s.execute(&explained)?;
                Ok(text_lines(&s.query(&display)?))
            })
        }
        PlanQuery::Toggled { on, off } => connector.with_session(&mut |s| {
            s.execute_unprepared(on)?;
            let rows = s.query(stmt);
            let turned_off = s.execute_unprepared(off);
            let lines = text_lines(&rows?);
            turned_off?;
            Ok(lines)
        }),
    }
}

/// Runs `f` in a transaction that is rolled back once `f` is done, and returns what `f`
/// returned.
fn rolled_back<C: SqlConnector, T>(
    connector: &C,
    f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut done = None;
    let rolled_back = connector.in_transaction(&mut |s| {
        done = Some(f(s)?);
        Err(StoreError::conflict("rolled back after explaining"))
    });
    match done {
        Some(value) => Ok(value),
        None => rolled_back,
    }
}

/// The lines of the text in each row's first column.
fn text_lines(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|row| row.lossy_text(&row.cells().first()?.0))
        .flat_map(|text| text.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// One line per step of a plan tree (`id`, `parent`, `detail`), indented by depth: a step's
/// parent's depth + 1 (parents come before their children).
fn tree_lines(rows: &[Row]) -> Vec<String> {
    let mut depths: Vec<(Option<i64>, usize)> = Vec::with_capacity(rows.len());
    rows.iter()
        .map(|row| {
            let parent = row.peek_i64("parent");
            let depth = depths
                .iter()
                .find(|(id, _)| id.is_some() && *id == parent)
                .map_or(0, |(_, d)| d + 1);
            depths.push((row.peek_i64("id"), depth));
            format!(
                "{}{}",
                "  ".repeat(depth),
                row.lossy_text("detail").unwrap_or_default()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Cell;

    fn row(cells: &[(&str, Cell)]) -> Row {
        Row::new(
            cells
                .iter()
                .map(|(n, c)| ((*n).to_owned(), c.clone()))
                .collect(),
        )
    }

    #[test]
    fn text_lines_split_cells_and_read_the_first_column() {
        let rows = [
            row(&[("EXPLAIN", Cell::Text("{\n  \"a\": 1\n}".to_owned()))]),
            row(&[
                ("StmtText", Cell::Bytes(b"|--Top".to_vec())),
                ("StmtId", Cell::Int(1)),
            ]),
            row(&[("QUERY PLAN", Cell::Null)]),
        ];
        assert_eq!(
            text_lines(&rows),
            ["{", "  \"a\": 1", "}", "|--Top"].map(str::to_owned)
        );
    }

    #[test]
    fn tree_lines_indent_by_depth() {
        let step = |id: i64, parent: i64, detail: &str| {
            row(&[
                ("id", Cell::Int(id)),
                ("parent", Cell::Int(parent)),
                ("notused", Cell::Int(0)),
                ("detail", Cell::Text(detail.to_owned())),
            ])
        };
        let rows = [
            step(2, 0, "SEARCH t USING INDEX i"),
            step(5, 2, "LIST SUBQUERY 1"),
            step(7, 5, "SCAN a"),
            step(9, 0, "USE TEMP B-TREE FOR ORDER BY"),
        ];
        assert_eq!(
            tree_lines(&rows),
            [
                "SEARCH t USING INDEX i",
                "  LIST SUBQUERY 1",
                "    SCAN a",
                "USE TEMP B-TREE FOR ORDER BY"
            ]
            .map(str::to_owned)
        );
    }

    #[test]
    fn labels_are_what_runs_in_front() {
        let pg = PlanQuery::Prefix {
            prefix: "EXPLAIN (ANALYZE, BUFFERS)",
            rolled_back: true,
        };
        assert_eq!(pg.label(), "EXPLAIN (ANALYZE, BUFFERS)");
        let mssql = PlanQuery::Toggled {
            on: "SET SHOWPLAN_TEXT ON",
            off: "SET SHOWPLAN_TEXT OFF",
        };
        assert_eq!(mssql.label(), "SET SHOWPLAN_TEXT ON");
    }
}
