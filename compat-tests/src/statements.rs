//! Every statement a dialect renders, for the tests that read SQL text without a server
//! (`golden_sql.rs`, `prepared_sql.rs`).

use docket_core::dialect::{Dialect, Rendered, Statements};
use docket_core::{OrderingPolicy, TableName};

/// Every statement `dialect` renders for the table `app.jobs` (the catalogue, the work queue,
/// streaming intake, the bulk intake where the dialect loads files, and the custom-order
/// index), priority off and on.
pub fn every_statement(dialect: &'static dyn Dialect) -> Vec<(String, Rendered)> {
    let table = TableName::parse("app.jobs").expect("valid table name");
    let mut all = Vec::new();
    for priority in [false, true] {
        let policy = OrderingPolicy {
            priority,
            ..OrderingPolicy::default()
        };
        let s = Statements::new(dialect, table.clone(), policy);
        let named = s
            .catalogue()
            .into_iter()
            .chain(s.queue_catalogue())
            .chain(s.queue_scale_catalogue().expect("renders"))
            .chain(
                dialect
                    .file_load()
                    .map(|load| s.bulk_intake_catalogue(load))
                    .unwrap_or_default(),
            );
        all.extend(named.map(|(n, r)| (n.to_owned(), r)));
        all.extend(s.order_index_catalogue().expect("renders"));
    }
    all
}
