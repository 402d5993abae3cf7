//! Query plans for tooling (`docket explain --database-url mssql://...`).

use crate::MssqlStore;
use docket_core::dialect::Rendered;
use docket_core::StoreError;

/// Returns the estimated plan of `stmt` (values bound) as SQL Server's `SHOWPLAN_TEXT` lines.
///
/// `SET SHOWPLAN_TEXT ON` must be the only statement of its batch and makes the server return
/// plans instead of running statements; the statement is sent through `sp_executesql` with
/// its parameters, whose plan is then the one shown. Nothing is executed, so explaining a
/// claim claims nothing.
pub fn explain_plan(store: &MssqlStore, stmt: &Rendered) -> Result<Vec<String>, StoreError> {
    let connector = store.connector();
    let mut lease = connector.lease()?;
    let mut session = crate::session::MssqlSession(lease.conn()?);
    session.batch("SET SHOWPLAN_TEXT ON")?;
    let rows = session.rows(stmt);
    let off = session.batch("SET SHOWPLAN_TEXT OFF");
    let lines = rows?
        .iter()
        .filter_map(|row| row.try_get::<&str, _>(0).ok().flatten().map(str::to_owned))
        .collect();
    off?;
    Ok(lines)
}
