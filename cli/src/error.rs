//! What can go wrong in a command.

use docket_core::{DocketError, StoreError};

/// A command's failure; printed as `error: ...` with exit code 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The database URL's scheme names no backend.
    #[error("unsupported database URL scheme {scheme:?}; supported: {known}")]
    UnknownScheme {
        /// The scheme given.
        scheme: String,
        /// Supported schemes.
        known: String,
    },
    /// `--backend` names no backend.
    #[error("unknown backend {name:?}; known: {known}")]
    UnknownBackend {
        /// The name given.
        name: String,
        /// Known backends.
        known: String,
    },
    /// `--backend` and `--database-url` disagree.
    #[error("--backend {backend} does not match the --database-url, which is a {url} URL")]
    BackendMismatch {
        /// From `--backend`.
        backend: &'static str,
        /// From the URL's scheme.
        url: &'static str,
    },
    /// `--to` names no migration of the backend.
    #[error("unknown migration {name:?}; {backend} has: {known}")]
    UnknownMigration {
        /// The name given.
        name: String,
        /// The backend.
        backend: &'static str,
        /// Its migrations.
        known: String,
    },
    /// An input file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The scheduler or client failed.
    #[error(transparent)]
    Docket(#[from] DocketError),
    /// Output could not be written or a temporary file created.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// JSON output failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A benchmark could not run as asked.
    #[error("bench: {0}")]
    Bench(String),
    /// `docket web` could not start.
    #[error("web: {0}")]
    Web(String),
    /// The demo did not finish as it should.
    #[error("demo: {0}")]
    Demo(String),
}
