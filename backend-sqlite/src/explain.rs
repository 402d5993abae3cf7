//! Query plans for tooling (`docket explain --database-url sqlite://...`).

use crate::SqliteStore;
use diesel::sql_types::{Integer, Text};
use diesel::{QueryableByName, RunQueryDsl};
use docket_core::dialect::Rendered;
use docket_core::StoreError;
use docket_diesel::db;

#[derive(QueryableByName)]
struct PlanRow {
    #[diesel(sql_type = Integer)]
    id: i32,
    #[diesel(sql_type = Integer)]
    parent: i32,
    #[diesel(sql_type = Text)]
    detail: String,
}

/// Runs `EXPLAIN QUERY PLAN` for `stmt` with its values bound and returns the plan, one line
/// per step, indented by depth (`SEARCH ... USING INDEX ...`). Nothing is executed, so this is
/// safe for statements that write (the lock-and-fetch `UPDATE`).
pub fn explain_plan(store: &SqliteStore, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
    let explained = Rendered {
        sql: format!("EXPLAIN QUERY PLAN {}", stmt.sql),
        binds: stmt.binds.clone(),
    };
    let mut conn = store.connector().connection()?;
    let rows = store
        .connector()
        .uncached(&explained)?
        .load::<PlanRow>(&mut *conn)
        .map_err(db)?;
    // Depth of each step: its parent's depth + 1 (parents come before their children).
    let mut depths: Vec<(i32, usize)> = Vec::with_capacity(rows.len());
    Ok(rows
        .into_iter()
        .map(|r| {
            let depth = depths
                .iter()
                .find(|(id, _)| *id == r.parent)
                .map_or(0, |(_, d)| d + 1);
            depths.push((r.id, depth));
            format!("{}{}", "  ".repeat(depth), r.detail)
        })
        .collect())
}
