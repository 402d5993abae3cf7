//! The table of paused tasks (`<table>_paused`, `0008_paused_tasks`): one row per task that no
//! scheduler may claim. Small (one row per paused task), read at every poll by its primary key.

use super::*;

impl<'d> Statements<'d> {
    /// One row if the table of paused tasks exists (its `task_name` column), none otherwise.
    pub fn paused_table_exists(&self) -> Rendered {
        let mut w = self.writer();
        self.dialect.catalog(
            &mut w,
            &self.table.paused(),
            Catalog::ColumnExists("task_name"),
        );
        w.finish()
    }

    /// Every paused task (`task_name`, `paused_at`, `paused_by`), by name.
    pub fn paused_list(&self) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT task_name, paused_at, paused_by FROM ")
            .table(&self.table.paused())
            .push(" ORDER BY task_name");
        w.finish()
    }

    /// The first `limit` paused tasks by name (`task_name`, `paused_at`, `paused_by`).
    pub fn paused_page(&self, limit: i64) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT ");
        self.dialect.limit(&mut w, limit, LimitAt::Head);
        w.push("task_name, paused_at, paused_by FROM ")
            .table(&self.table.paused())
            .push(" ORDER BY task_name");
        self.dialect.limit(&mut w, limit, LimitAt::Tail);
        w.finish()
    }

    /// How many tasks are paused (column `paused`).
    pub fn paused_count(&self) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT COUNT(*) AS paused FROM ")
            .table(&self.table.paused());
        w.finish()
    }

    /// The paused tasks among `names` (`task_name`, `paused_at`, `paused_by`), by name; the
    /// caller bounds `names` (one bind each, at least one). Its text follows how many names
    /// are given ([`Rendered::sized_by_input`]).
    pub fn paused_among(&self, names: &[&str]) -> Rendered {
        let mut w = self.writer();
        w.push("SELECT task_name, paused_at, paused_by FROM ")
            .table(&self.table.paused())
            .push(" WHERE task_name IN (");
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                w.push(", ").sized_by_input();
            }
            w.bind(*name);
        }
        w.push(") ORDER BY task_name");
        w.finish()
    }

    /// Pauses `task_name` (a duplicate key when it is paused already).
    pub fn paused_insert(&self, task_name: &str, at: DateTime<Utc>, by: Option<&str>) -> Rendered {
        let mut w = self.writer();
        w.push("INSERT INTO ")
            .table(&self.table.paused())
            .push(" (task_name, paused_at, paused_by) VALUES (")
            .bind(task_name)
            .push(", ")
            .bind(at)
            .push(", ")
            .bind(Value::Text(by.map(str::to_owned)))
            .push(")");
        w.finish()
    }

    /// Resumes `task_name` (no row changed when it was not paused).
    pub fn paused_delete(&self, task_name: &str) -> Rendered {
        let mut w = self.writer();
        w.push("DELETE FROM ")
            .table(&self.table.paused())
            .push(" WHERE task_name = ")
            .bind(task_name);
        w.finish()
    }
}
