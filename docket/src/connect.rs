//! The front door: [`connect`] opens the store a database URL names, whichever backend it is.

use docket_core::store::{Store, StoreConfig};
use docket_core::StoreError;
use std::sync::Arc;

/// Every scheme docket knows and the cargo feature of the backend that serves it, enabled in
/// this build or not, so that a URL of a backend left out names the feature to enable.
const SCHEMES: &[(&str, &str)] = &[
    ("postgres", "postgres"),
    ("postgresql", "postgres"),
    ("mysql", "mysql"),
    ("mariadb", "mysql"),
    ("sqlite", "sqlite"),
    ("mssql", "mssql"),
    ("sqlserver", "mssql"),
    ("oracle", "oracle"),
];

/// Why [`connect`] opened no store.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL names a backend this build leaves out.
    #[error("`{scheme}://` URLs need the `{feature}` feature of the docket crate, which this build does not enable (features = [\"{feature}\"] in Cargo.toml)")]
    FeatureNotEnabled {
        /// The URL's scheme.
        scheme: String,
        /// The cargo feature that brings its backend.
        feature: &'static str,
    },
    /// The URL's scheme is no database docket knows.
    #[error("`{url}` is not a database URL docket knows: expected one of {known}")]
    UnknownScheme {
        /// The URL, as given.
        url: String,
        /// The schemes this build serves.
        known: String,
    },
    /// The backend could not open the store (server down, bad credentials, bad options).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Opens the store that `url` names, with the default table (`scheduled_tasks`) and settings:
/// `postgres://...`, `mysql://...` (MySQL or MariaDB), `sqlite://PATH`, `mssql://...`,
/// `oracle://...`, each served by the backend of the cargo feature of that name. The scheme
/// picks the backend; a scheme whose feature this build leaves out is
/// [`ConnectError::FeatureNotEnabled`], naming the feature.
///
/// The store is ready for [`Scheduler::builder`](crate::Scheduler::builder),
/// [`SchedulerClient::new`](crate::SchedulerClient::new) and
/// [`WorkQueue::new`](crate::WorkQueue::new) (each takes the `Arc`). Nothing is created in the
/// database until you call [`StoreInfo::migrate`](docket_core::StoreInfo::migrate) (`store.migrate(None)?` applies every migration
/// docket ships; the CLI's `docket migrate` does the same).
pub fn connect(url: &str) -> Result<Arc<dyn Store>, ConnectError> {
    connect_with(url, StoreConfig::default())
}

/// [`connect`] with a [`StoreConfig`] of your own (another table, priority on).
pub fn connect_with(url: &str, config: StoreConfig) -> Result<Arc<dyn Store>, ConnectError> {
    match crate::backends::for_url(url) {
        Some(backend) => Ok(backend.connect(url, config)?),
        None => Err(not_served(url)),
    }
}

/// The error for a URL no enabled backend serves.
fn not_served(url: &str) -> ConnectError {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    match SCHEMES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(scheme))
    {
        Some((_, feature)) => ConnectError::FeatureNotEnabled {
            scheme: scheme.to_owned(),
            feature,
        },
        None => ConnectError::UnknownScheme {
            url: url.to_owned(),
            known: crate::backends::known_schemes(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every backend's schemes are in the table, with the feature of that backend's name.
    #[test]
    fn the_scheme_table_covers_every_enabled_backend() {
        for backend in crate::backends::all() {
            for scheme in backend.schemes() {
                assert!(
                    SCHEMES.contains(&(scheme, backend.name())),
                    "{scheme} ({})",
                    backend.name()
                );
            }
        }
    }

    #[test]
    fn unknown_and_disabled_schemes_are_named() {
        match not_served("redis://localhost") {
            ConnectError::UnknownScheme { url, .. } => assert_eq!(url, "redis://localhost"),
            other => panic!("{other}"),
        }
        match not_served("Oracle://db/FREEPDB1") {
            ConnectError::FeatureNotEnabled { scheme, feature } => {
                assert_eq!((scheme.as_str(), feature), ("Oracle", "oracle"));
            }
            other => panic!("{other}"),
        }
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn a_sqlite_url_opens_a_store_that_migrates() {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("a.db").display());
        let store = connect(&url).expect("opens");
        let applied = store.migrate(None).expect("migrates");
        assert!(applied.iter().any(|v| v.starts_with("0001")), "{applied:?}");
        assert!(store.migrate(None).expect("again").is_empty());
    }
}
