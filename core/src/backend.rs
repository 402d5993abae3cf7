//! A backend as tooling sees it: picked at run time by name or URL scheme, it connects, migrates
//! and explains. Applications use a backend crate's `connect` directly; the CLI and the
//! compatibility suite read one list of [`Backend`]s (the `docket` crate's `backends`).

use crate::dialect::{Dialect, Rendered};
use crate::error::StoreError;
pub use crate::store::sql::SqlStore;
use crate::store::{Store, StoreConfig};
use std::sync::Arc;

/// One backend crate, behind a trait object.
pub trait Backend: Send + Sync + 'static {
    /// Name used in test names, `explain --backend` and messages, e.g. `postgres`.
    fn name(&self) -> &'static str;
    /// URL schemes (before `:`) that select it.
    fn schemes(&self) -> &'static [&'static str];
    /// How it spells statements (without a server: the default flavor).
    fn dialect(&self) -> &'static dyn Dialect;
    /// What `explain` runs in front of a statement, e.g. `EXPLAIN (ANALYZE, BUFFERS)`.
    fn plan_label(&self) -> &'static str;
    /// Names of the migrations it ships, in order.
    fn migration_names(&self) -> Vec<&'static str>;
    /// Opens a store on `url`; fails if no connection can be made.
    fn connect(&self, url: &str, config: StoreConfig) -> Result<Arc<dyn Store>, StoreError>;
    /// The database's plan for each statement (values bound, nothing changed), one list of
    /// lines per statement.
    fn explain(
        &self,
        url: &str,
        config: StoreConfig,
        stmts: &[Rendered],
    ) -> Result<Vec<Vec<String>>, StoreError>;

    /// Applies pending migrations of `config.table` up to `up_to`; returns the versions applied.
    fn migrate(
        &self,
        url: &str,
        config: StoreConfig,
        up_to: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        self.connect(url, config)?.migrate(up_to)
    }
}

impl std::fmt::Debug for dyn Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Implements [`Backend`] for a unit struct of a backend crate whose root has the standard
/// function `connect(url, config)` (returning a [`SqlStore`](crate::backend::SqlStore)) and
/// `MIGRATIONS`; `$plan` is the backend's [`PlanQuery`](crate::explain::PlanQuery), which
/// [`explain`](Backend::explain) runs through [`explain_plan`](crate::explain::explain_plan).
#[macro_export]
macro_rules! backend {
    ($ty:ident, $name:literal, [$($scheme:literal),+], $dialect:expr, $plan:expr) => {
        /// This backend for tooling that picks one at run time (see
        /// [`docket_core::backend::Backend`]).
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $ty;

        impl $crate::backend::Backend for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn schemes(&self) -> &'static [&'static str] {
                &[$($scheme),+]
            }
            fn dialect(&self) -> &'static dyn $crate::dialect::Dialect {
                &$dialect
            }
            fn plan_label(&self) -> &'static str {
                $plan.label()
            }
            fn migration_names(&self) -> Vec<&'static str> {
                MIGRATIONS.iter().map(|m| m.name).collect()
            }
            fn connect(
                &self,
                url: &str,
                config: $crate::store::StoreConfig,
            ) -> Result<std::sync::Arc<dyn $crate::store::Store>, $crate::error::StoreError> {
                Ok(std::sync::Arc::new(connect(url, config)?))
            }
            fn explain(
                &self,
                url: &str,
                config: $crate::store::StoreConfig,
                stmts: &[$crate::dialect::Rendered],
            ) -> Result<Vec<Vec<String>>, $crate::error::StoreError> {
                let store = connect(url, config)?;
                stmts
                    .iter()
                    .map(|s| $crate::explain::explain_plan(store.connector(), &$plan, s))
                    .collect()
            }
        }
    };
}
