//! One harness per backend: how to get an isolated space on its server.

pub mod postgres;
pub mod sqlite;

pub use postgres::Postgres;
pub use sqlite::Sqlite;

use std::sync::atomic::{AtomicU64, Ordering};

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
