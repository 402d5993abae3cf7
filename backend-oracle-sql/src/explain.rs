//! Query plans for tooling (`docket explain --database-url oracle://...`).

use crate::OracleStore;
use diesel::connection::SimpleConnection;
use diesel::sql_types::Text;
use diesel::{QueryableByName, RunQueryDsl};
use docket_core::dialect::Rendered;
use docket_core::StoreError;
use docket_diesel::db;

#[derive(QueryableByName)]
struct PlanRow {
    #[diesel(sql_type = Text)]
    #[diesel(column_name = "PLAN_TABLE_OUTPUT")]
    line: String,
}

/// Runs `EXPLAIN PLAN FOR` for `stmt` (values bound) and returns `DBMS_XPLAN.DISPLAY`'s lines.
/// `EXPLAIN PLAN` does not execute the statement, so explaining a claim claims nothing.
pub fn explain_plan(store: &OracleStore, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
    let explained = Rendered {
        sql: format!("EXPLAIN PLAN FOR {}", stmt.sql),
        binds: stmt.binds.clone(),
    };
    let mut conn = store.connector().connection()?;
    conn.batch_execute("DELETE FROM plan_table").map_err(db)?;
    store
        .connector()
        .uncached(&explained)?
        .execute(&mut *conn)
        .map_err(db)?;
    let rows = diesel::sql_query("SELECT plan_table_output FROM TABLE(DBMS_XPLAN.DISPLAY())")
        .load::<PlanRow>(&mut *conn)
        .map_err(db)?;
    Ok(rows.into_iter().map(|r| r.line).collect())
}
