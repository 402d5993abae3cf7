//! Query plans for tooling (`docket explain --database-url postgres://...`).

use crate::PgStore;
use diesel::connection::SimpleConnection;
use diesel::sql_types::Text;
use diesel::{QueryableByName, RunQueryDsl};
use docket_core::dialect::Rendered;
use docket_core::StoreError;
use docket_diesel::db;

#[derive(QueryableByName)]
struct PlanRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "QUERY PLAN")]
    line: String,
}

/// Runs `EXPLAIN (ANALYZE, BUFFERS)` for `stmt` with its values bound and returns the plan
/// lines. ANALYZE executes the statement, so it runs inside a transaction that is always
/// rolled back: explaining the lock-and-fetch `UPDATE` claims nothing.
pub fn explain_plan(store: &PgStore, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
    let explained = Rendered {
        sql: format!("EXPLAIN (ANALYZE, BUFFERS) {}", stmt.sql),
        binds: stmt.binds.clone(),
    };
    let mut conn = store.connector().connection()?;
    conn.batch_execute("BEGIN").map_err(db)?;
    let plan = store
        .connector()
        .uncached(&explained)?
        .load::<PlanRow>(&mut *conn)
        .map_err(db);
    let rollback = conn.batch_execute("ROLLBACK").map_err(db);
    let plan = plan?;
    rollback?;
    Ok(plan.into_iter().map(|r| r.line).collect())
}
