//! Bulk intake through a file the server reads in one statement (MySQL/MariaDB `LOAD DATA
//! LOCAL INFILE`). The work queue's intake writes a large batch of items to a private temporary
//! file in the dialect's format, loads it into a session-private staging table, and publishes
//! the staging table's rows into the docket table with one `INSERT ... SELECT`: one statement,
//! so the items appear all together or not at all (docs/DESIGN.md, "Bulk intake").

use super::{SqlWriter, Value};
use crate::ident::TableName;

/// How a dialect loads a client-side file of rows into a table (see [`super::Dialect::file_load`]).
pub trait FileLoad: Sync {
    /// Appends `values` to `out` as one line of the file, in the format [`FileLoad::load`] reads.
    fn write_row(&self, out: &mut Vec<u8>, values: &[Value]);

    /// Writes the statement that loads the file at `path` into `columns` of `table` (in the
    /// file's column order). Returns `false`, writing nothing, when `path` cannot be written as
    /// a plain literal (the statement takes no bind for it); the intake then inserts rows.
    fn load(&self, w: &mut SqlWriter<'_>, table: &TableName, columns: &[&str], path: &str) -> bool;

    /// Writes the statement creating the session-private staging table `staging` with a
    /// `seq` column (the row's place in the batch, 1-based) and `columns` typed as in `table`,
    /// and `table`'s primary key: a line repeating an earlier line's key is not loaded.
    fn create_staging(
        &self,
        w: &mut SqlWriter<'_>,
        staging: &TableName,
        table: &TableName,
        columns: &[&str],
    );

    /// Writes the statement dropping the staging table (only a temporary one, whatever the
    /// name).
    fn drop_staging(&self, w: &mut SqlWriter<'_>, staging: &TableName);

    /// Session settings for the publishing insert, and the statement restoring them after it:
    /// `(set, restore)`, both run on the same connection. MariaDB builds the secondary
    /// indexes of an empty table by sorting, not row by row, when one statement inserts into
    /// it with `unique_checks` and `foreign_key_checks` off.
    fn publish_settings(&self) -> Option<(&'static str, &'static str)> {
        None
    }
}
