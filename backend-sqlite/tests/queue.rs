//! The work queue on a SQLite file, both priority toggles.

mod common;

use docket_core::StoreConfig;
use std::sync::Arc;

#[test]
fn work_queue_on_a_database_file() {
    for priority in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("queue.db").display());
        let store = docket_sqlite::connect(&url, StoreConfig::with_priority(priority)).unwrap();
        docket_sqlite::migrate(&store, None).unwrap();
        common::scenario(Arc::new(store));
    }
}
