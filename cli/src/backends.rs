//! The backends the CLI can drive: the `docket` crate's one list ([`docket::backends`]), with
//! the CLI's errors. A backend is chosen by the scheme of `--database-url` (or by name for
//! `explain --backend`).

use crate::error::CliError;
pub use docket::backends::Backend;

/// The backend for a database URL, by its scheme.
pub fn for_url(url: &str) -> Result<&'static dyn Backend, CliError> {
    docket::backends::for_url(url).ok_or_else(|| CliError::UnknownScheme {
        scheme: url.split_once(':').map_or("", |(s, _)| s).to_owned(),
        known: docket::backends::known_schemes(),
    })
}

/// The backend with this name (or one of its schemes).
pub fn by_name(name: &str) -> Result<&'static dyn Backend, CliError> {
    docket::backends::by_name(name).ok_or_else(|| CliError::UnknownBackend {
        name: name.to_owned(),
        known: docket::backends::known_names(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_select_backends() {
        let name = |url| for_url(url).map(|b| b.name());
        assert_eq!(name("postgres://u@h/db").unwrap(), "postgres");
        assert_eq!(name("postgresql://u@h/db").unwrap(), "postgres");
        assert_eq!(name("sqlite:///tmp/x.db").unwrap(), "sqlite");
        assert_eq!(name("SQLITE:x.db").unwrap(), "sqlite");
        assert_eq!(name("mssql://h:1433;user=sa").unwrap(), "mssql");
        assert_eq!(name("oracle://u:p@h/svc").unwrap(), "oracle");
        for bad in ["db2://x", "x.db", ""] {
            assert!(matches!(for_url(bad), Err(CliError::UnknownScheme { .. })));
        }
        assert_eq!(by_name("sqlite").unwrap().name(), "sqlite");
        assert!(by_name("db2").is_err());
    }
}
