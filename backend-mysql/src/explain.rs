//! Query plans for tooling (`docket explain --database-url mysql://...`).

use crate::MysqlStore;
use diesel::sql_types::Text;
use diesel::{QueryableByName, RunQueryDsl};
use docket_core::dialect::Rendered;
use docket_core::StoreError;
use docket_diesel::db;

#[derive(QueryableByName)]
struct PlanRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "EXPLAIN")]
    plan: String,
}

/// Runs `EXPLAIN FORMAT=JSON` for `stmt` with its values bound and returns the plan's lines.
/// Plain `EXPLAIN` does not execute the statement, so explaining a claim claims nothing.
pub fn explain_plan(store: &MysqlStore, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
    let explained = Rendered {
        sql: format!("EXPLAIN FORMAT=JSON {}", stmt.sql),
        binds: stmt.binds.clone(),
    };
    let mut conn = store.connector().connection()?;
    let rows = store
        .connector()
        .uncached(&explained)?
        .load::<PlanRow>(&mut *conn)
        .map_err(db)?;
    Ok(rows
        .iter()
        .flat_map(|r| r.plan.lines().map(str::to_owned))
        .collect())
}
