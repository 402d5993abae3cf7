//! The token that writes need, the session cookie a browser gets for it, and the cross-site
//! request checks every form POST passes.
//!
//! - Browsers sign in once with the token (`POST /login`) and get a cookie holding a random
//!   per-process session key (never the token itself), `HttpOnly; SameSite=Strict`.
//! - API clients send `Authorization: Bearer <token>` (no cookie is read on `/api/`).
//! - Every form carries a random per-process CSRF value checked on POST, and a POST whose
//!   `Origin` names another host than `Host` is refused.
//!
//! A restart makes new secrets: browsers sign in again and open forms must be reloaded.

use super::error::WebError;
use crate::error::CliError;
use axum::http::{header, HeaderMap};
use subtle::ConstantTimeEq;

/// Name of the session cookie.
pub const COOKIE: &str = "docket_session";

/// The per-process secrets.
pub struct Secrets {
    /// What writes need; `None`: the site is read-only.
    token: Option<String>,
    /// Hidden field of every form.
    csrf: String,
    /// Value of the session cookie after signing in.
    session: String,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("read_only", &self.token.is_none())
            .finish_non_exhaustive()
    }
}

fn random_hex() -> Result<String, CliError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| CliError::Web(format!("no random numbers from the OS: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

impl Secrets {
    /// Fresh secrets for `token`.
    pub fn new(token: Option<String>) -> Result<Self, CliError> {
        Ok(Self {
            token,
            csrf: random_hex()?,
            session: random_hex()?,
        })
    }

    /// Whether writes are impossible (no token configured).
    pub fn read_only(&self) -> bool {
        self.token.is_none()
    }

    /// The CSRF value forms carry.
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    /// The `Set-Cookie` value that signs a browser in.
    pub fn session_cookie(&self) -> String {
        format!(
            "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
            self.session
        )
    }

    /// The `Set-Cookie` value that signs a browser out.
    pub fn clear_cookie() -> String {
        format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
    }

    fn writable(&self) -> Result<&str, WebError> {
        self.token.as_deref().ok_or_else(|| {
            WebError::Forbidden(
                "this dashboard is read-only: it was started without --token-file".into(),
            )
        })
    }

    /// Checks a token typed into the sign-in form.
    pub fn check_token(&self, given: &str) -> Result<(), WebError> {
        if same(given.trim(), self.writable()?) {
            Ok(())
        } else {
            Err(WebError::Unauthorized("wrong token".into()))
        }
    }

    /// Whether the request carries a valid session cookie.
    pub fn signed_in(&self, headers: &HeaderMap) -> bool {
        self.token.is_some()
            && cookies(headers).any(|(name, value)| name == COOKIE && same(value, &self.session))
    }

    /// A browser form POST: same origin, the right CSRF value, the site writable, signed in.
    pub fn check_form(&self, headers: &HeaderMap, csrf: &str) -> Result<(), WebError> {
        self.check_csrf(headers, csrf)?;
        self.writable()?;
        if !self.signed_in(headers) {
            return Err(WebError::Unauthorized(
                "sign in with the dashboard's token first".into(),
            ));
        }
        Ok(())
    }

    /// Same origin and the right CSRF value (the sign-in form: no session yet).
    pub fn check_csrf(&self, headers: &HeaderMap, csrf: &str) -> Result<(), WebError> {
        self.check_origin(headers)?;
        if !same(csrf, &self.csrf) {
            return Err(WebError::Forbidden(
                "the form's CSRF token is missing or stale (was the server restarted?); \
                 reload the page and try again"
                    .into(),
            ));
        }
        Ok(())
    }

    /// An API write: `Authorization: Bearer <token>` (and a same-origin `Origin`, if any).
    pub fn check_bearer(&self, headers: &HeaderMap) -> Result<(), WebError> {
        self.check_origin(headers)?;
        let token = self.writable()?;
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| {
                WebError::Unauthorized("missing header Authorization: Bearer <token>".into())
            })?;
        if same(given.trim(), token) {
            Ok(())
        } else {
            Err(WebError::Unauthorized("wrong token".into()))
        }
    }

    /// Refuses a request whose `Origin` (when present) is not this server's `Host`.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), WebError> {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let origin = origin.to_str().unwrap_or("null");
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let origin_host = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        match (origin_host, host) {
            (Some(o), Some(h)) if o.eq_ignore_ascii_case(h) => Ok(()),
            _ => Err(WebError::Forbidden(format!(
                "cross-site request refused: Origin {origin:?} is not this server ({})",
                host.unwrap_or("no Host header")
            ))),
        }
    }
}

/// The request's cookies as (name, value) pairs.
fn cookies(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(header::COOKIE)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
}

/// Where to go after signing in: `next` if it is a local path, else `/` (never an error, so a
/// bad `next` cannot make signing in fail).
///
/// Local: starts with one `/` not followed by `/` or `\` (browsers read `//host` and `/\host`
/// as another site), and holds visible ASCII only: no control character (browsers drop tabs
/// and newlines, turning `/\t/host` into `//host`; CR/LF would break the header), no space,
/// no DEL, no backslash anywhere. Links built by the pages are percent-encoded, so they pass.
pub fn local_path(next: Option<&str>) -> String {
    match next {
        Some(p) if is_local_path(p) => p.to_owned(),
        _ => "/".to_owned(),
    }
}

fn is_local_path(p: &str) -> bool {
    let mut bytes = p.bytes();
    bytes.next() == Some(b'/')
        && !matches!(bytes.next(), Some(b'/' | b'\\'))
        && p.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_followed_after_sign_in() {
        for ok in [
            "/",
            "/queue",
            "/tasks/a%20b?done=x",
            "/executions/e/%E2%80%AE",
        ] {
            assert_eq!(local_path(Some(ok)), ok, "{ok:?}");
        }
        for bad in [
            "",
            "queue",
            "//evil.example",
            "/\\evil.example",
            "/\t/evil.example/x",
            "/\n/evil",
            "/x\r\nSet-Cookie: a=b",
            "/x\u{7f}",
            "/a b",
            "/a\\b",
            "/\u{e9}",
            " /x",
            "https://evil.example/",
            "/\u{202e}x",
        ] {
            assert_eq!(local_path(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(local_path(None), "/");
    }
}
