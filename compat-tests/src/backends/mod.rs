//! One harness per backend: how to get an isolated space on its server.

pub mod mssql;
pub mod mysql;
pub mod oracle;
pub mod postgres;
pub mod sqlite;

pub use mssql::Mssql;
pub use mysql::Mysql;
pub use oracle::Oracle;
pub use postgres::Postgres;
pub use sqlite::Sqlite;

use docket_core::{Store, StoreConfig, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Opens a store on `url` for the backend named `backend` (as in test names), for processes
/// that get a space's [`url`](crate::Space::url) rather than the space itself.
pub fn connect(
    backend: &str,
    url: &str,
    config: StoreConfig,
) -> Result<Arc<dyn Store>, StoreError> {
    docket::backends::by_name(backend)
        .ok_or_else(|| StoreError::connection(format!("no backend called {backend:?}")))?
        .connect(url, config)
}

/// [`crate::Space::foreign`] for a diesel backend: plain SQL on `store`'s pool, with no
/// prepared statements kept.
pub(crate) fn foreign_on<F: docket_diesel::Family>(
    store: &docket_core::backend::SqlStore<docket_diesel::DieselConnector<F>>,
) -> Box<dyn crate::harness::Foreign> {
    Box::new(store.connector().clone().with_statement_cache(false))
}

/// Whether the diesel backends' stores keep their statements prepared: on, unless
/// `DOCKET_STATEMENT_CACHE` is `off`, `false` or `0` (to run the suite the other way too).
pub fn statement_cache() -> bool {
    std::env::var("DOCKET_STATEMENT_CACHE")
        .map(|v| {
            !matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "off" | "false" | "0"
            )
        })
        .unwrap_or(true)
}

/// A name unique to this process and test: `docket_t_<pid>_<n>_<nanos>`.
pub fn unique_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("docket_t_{}_{n}_{nanos}", std::process::id())
}
