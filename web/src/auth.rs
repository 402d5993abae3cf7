//! The token that writes need, the sessions a browser gets for it, and the cross-site request
//! checks every form POST passes.
//!
//! - Browsers sign in with the token (`POST /login`) and get a cookie holding a random session
//!   id (never the token itself), `HttpOnly; SameSite=Strict; Path=/` (and `Secure` with
//!   `--secure-cookies`). Sessions live in memory: at most [`MAX_SESSIONS`], each forgotten
//!   after [`SESSION_IDLE`] without a request, and at sign-out.
//! - Each session has its own CSRF value, carried by every form and checked on POST. Visitors
//!   who are not signed in get none; the sign-in form carries a per-visitor value that is also
//!   set as a short-lived cookie (`docket_login`) and is good for signing in only.
//! - API clients send `Authorization: Bearer <token>` (no cookie is read on `/api/`).
//! - A POST whose `Origin` names another host than `Host` is refused.
//!
//! A restart forgets every session: browsers sign in again and open forms must be reloaded.
//!
//! With [`Mode::Trusted`] (the dashboard mounted in an application that authenticates every
//! request itself) there is no token, no session and no sign-in page. Forms carry a CSRF value
//! derived from a random per-browser cookie (`docket_csrf`, under the base path) with a
//! per-router secret (HMAC-SHA256), checked on POST with the `Origin`; API writes need
//! `Content-Type: application/json` (which a cross-site page cannot send without a CORS
//! preflight, never approved here) and a same-origin `Origin` when one is sent.

use crate::error::{Error, WebError};
use crate::limit::{FailureLimit, Limits};
use axum::http::{header, HeaderMap, HeaderValue};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// Name of the session cookie.
pub const COOKIE: &str = "docket_session";
/// Name of the cookie holding the sign-in form's CSRF value.
pub const LOGIN_COOKIE: &str = "docket_login";
/// Name of the per-browser cookie the CSRF value is derived from in [`Mode::Trusted`].
pub const CSRF_COOKIE: &str = "docket_csrf";
/// Sessions kept at once; signing in past it forgets the least recently used one.
pub const MAX_SESSIONS: usize = 1000;
/// A session unused this long is forgotten.
pub const SESSION_IDLE: Duration = Duration::from_secs(8 * 3600);
/// How long the sign-in form's CSRF cookie lives.
const LOGIN_FORM_SECS: u64 = 3600;

/// One signed-in browser.
struct Session {
    csrf: String,
    last_seen: Instant,
}

/// Sessions by id, bounded in number and idle time.
struct Sessions {
    by_id: HashMap<String, Session>,
    max: usize,
    idle: Duration,
}

impl Sessions {
    fn expired(&self, s: &Session, now: Instant) -> bool {
        now.duration_since(s.last_seen) >= self.idle
    }

    /// The CSRF value of a live session (and marks it used).
    fn touch(&mut self, id: &str, now: Instant) -> Option<String> {
        // Ids are 256 random bits: a lookup's timing tells nothing usable about other ids.
        let expired = self.expired(self.by_id.get(id)?, now);
        if expired {
            self.by_id.remove(id);
            return None;
        }
        let s = self.by_id.get_mut(id)?;
        s.last_seen = now;
        Some(s.csrf.clone())
    }

    fn insert(&mut self, id: String, csrf: String, now: Instant) {
        if self.by_id.len() >= self.max {
            let idle = self.idle;
            self.by_id
                .retain(|_, s| now.duration_since(s.last_seen) < idle);
        }
        while self.by_id.len() >= self.max {
            let oldest = self
                .by_id
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.by_id.remove(&id),
                None => break,
            };
        }
        self.by_id.insert(
            id,
            Session {
                csrf,
                last_seen: now,
            },
        );
    }
}

/// Who may write, and how that is checked.
#[derive(Clone)]
pub enum Mode {
    /// `docket web`'s own: writes need the token (`None`: read-only); browsers sign in.
    Token(Option<String>),
    /// The host application authenticated the request before it reached the router.
    Trusted {
        /// Whether writes are allowed at all.
        writes: bool,
        /// The per-router secret the CSRF values are derived with.
        key: [u8; 32],
    },
}

/// The token and the sessions.
pub struct Secrets {
    mode: Mode,
    /// `Path` of the session and CSRF cookies: the base path, or `/`.
    cookie_path: String,
    /// `Path` of the sign-in form's cookie: the base path's `/login`.
    login_path: String,
    sessions: Mutex<Sessions>,
    /// Whether cookies get `Secure` (`--secure-cookies`: served over HTTPS by a proxy).
    secure_cookies: bool,
    /// Wrong tokens, per source (never in total: see `limit`).
    failures: FailureLimit,
    /// Token mode with a token: reads need no token either (`Dashboard::open_reads`).
    open_reads: bool,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets")
            .field("read_only", &self.read_only())
            .field("trusted", &self.trusted())
            .field("cookie_path", &self.cookie_path)
            .field("secure_cookies", &self.secure_cookies)
            .finish_non_exhaustive()
    }
}

fn random_hex() -> Result<String, WebError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| WebError::Internal(format!("no random numbers from the OS: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

impl Secrets {
    /// Token mode at the root, no session yet. `token`: what writes need (`None`: read-only).
    #[cfg(test)]
    pub fn new(token: Option<String>, secure_cookies: bool) -> Result<Self, Error> {
        Self::with_limits(token, secure_cookies, MAX_SESSIONS, SESSION_IDLE)
    }

    /// As [`Secrets::new`] with other session limits (tests).
    #[cfg(test)]
    pub fn with_limits(
        token: Option<String>,
        secure_cookies: bool,
        max: usize,
        idle: Duration,
    ) -> Result<Self, Error> {
        Self::build(Mode::Token(token), "", secure_cookies, max, idle)
    }

    /// Secrets for a router under `base` (`""` or `/a/b`): token mode with `token`
    /// (`trusted` = `None`), or trusted mode, writes allowed or not, with `key` (drawn here
    /// when `None`).
    pub fn for_mode(
        trusted: Option<bool>,
        key: Option<[u8; 32]>,
        token: Option<String>,
        base: &str,
        secure_cookies: bool,
    ) -> Result<Self, Error> {
        let mode = match trusted {
            None => Mode::Token(token),
            Some(writes) => {
                let key = match key {
                    Some(key) => key,
                    None => {
                        let mut key = [0u8; 32];
                        getrandom::fill(&mut key).map_err(|e| Error::Random(e.to_string()))?;
                        key
                    }
                };
                Mode::Trusted { writes, key }
            }
        };
        Self::build(mode, base, secure_cookies, MAX_SESSIONS, SESSION_IDLE)
    }

    fn build(
        mode: Mode,
        base: &str,
        secure_cookies: bool,
        max: usize,
        idle: Duration,
    ) -> Result<Self, Error> {
        // Fail at start-up, not at the first sign-in, if the OS has no random numbers.
        random_hex().map_err(|e| Error::Random(e.to_string()))?;
        Ok(Self {
            mode,
            cookie_path: if base.is_empty() {
                "/".to_owned()
            } else {
                base.to_owned()
            },
            login_path: format!("{base}/login"),
            sessions: Mutex::new(Sessions {
                by_id: HashMap::new(),
                max: max.max(1),
                idle,
            }),
            secure_cookies,
            failures: FailureLimit::new(Limits::default()),
            open_reads: false,
        })
    }

    /// Reads (pages, the JSON API, `/metrics`) need no token, only writes do.
    pub fn with_open_reads(mut self, open: bool) -> Self {
        self.open_reads = open;
        self
    }

    /// Whether every read needs the token (a session or `Authorization: Bearer`): token mode
    /// with a token, unless opened with [`Secrets::with_open_reads`].
    pub fn reads_need_token(&self) -> bool {
        matches!(self.mode, Mode::Token(Some(_))) && !self.open_reads
    }

    /// A read by `client`: allowed when reads are open, with a live session's cookie, or with
    /// `Authorization: Bearer <token>` (wrong tokens count as in [`Secrets::check_token`]).
    pub fn check_read(&self, headers: &HeaderMap, client: Option<IpAddr>) -> Result<(), WebError> {
        let Some(token) = self.token().filter(|_| self.reads_need_token()) else {
            return Ok(());
        };
        if self.session_csrf(headers).is_some() {
            return Ok(());
        }
        let given = bearer(headers).ok_or_else(|| {
            WebError::Unauthorized(
                "this dashboard's reads need the token: sign in, or send Authorization: Bearer \
                 <token>"
                    .into(),
            )
        })?;
        self.failures.check(client)?;
        self.compare(given, token, client)
    }

    /// Whether writes are impossible (no token configured, or mounted read-only).
    pub fn read_only(&self) -> bool {
        matches!(
            self.mode,
            Mode::Token(None) | Mode::Trusted { writes: false, .. }
        )
    }

    /// Whether the host application authenticates (no token, no sign-in).
    pub fn trusted(&self) -> bool {
        matches!(self.mode, Mode::Trusted { .. })
    }

    /// The token, if writes need one.
    fn token(&self) -> Option<&str> {
        match &self.mode {
            Mode::Token(token) => token.as_deref(),
            Mode::Trusted { .. } => None,
        }
    }

    /// Why the site is read-only, for messages.
    pub fn read_only_reason(&self) -> &'static str {
        if self.trusted() {
            "this dashboard was mounted read-only by its application"
        } else {
            "this dashboard is read-only: it was started without --token-file"
        }
    }

    /// The CSRF value of a browser's [`CSRF_COOKIE`] nonce (trusted mode).
    fn derived_csrf(&self, nonce: &str) -> Option<String> {
        let Mode::Trusted { key, .. } = &self.mode else {
            return None;
        };
        // 64 hex digits, as [`Secrets::csrf_cookie`] makes them; anything else is not ours.
        if nonce.len() != 64 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).ok()?;
        mac.update(nonce.as_bytes());
        Some(
            mac.finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// Trusted mode: whether the request lacks a usable [`CSRF_COOKIE`].
    pub fn needs_csrf_cookie(&self, headers: &HeaderMap) -> bool {
        self.trusted()
            && !cookie_values(headers, CSRF_COOKIE).any(|n| self.derived_csrf(n).is_some())
    }

    /// A fresh [`CSRF_COOKIE`] nonce: the `Cookie` pair to hand to the handler and the
    /// `Set-Cookie` value for the browser.
    pub fn csrf_cookie(&self) -> Result<(HeaderValue, HeaderValue), WebError> {
        let nonce = random_hex()?;
        let bad = |e: axum::http::header::InvalidHeaderValue| {
            WebError::Internal(format!("cookie header: {e}"))
        };
        let pair = HeaderValue::from_str(&format!("{CSRF_COOKIE}={nonce}")).map_err(bad)?;
        let set = HeaderValue::from_str(&self.cookie(CSRF_COOKIE, &nonce, &self.cookie_path, None))
            .map_err(bad)?;
        Ok((pair, set))
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        // A panic while holding the lock leaves the map consistent (no multi-step updates).
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cookie(&self, name: &str, value: &str, path: &str, max_age: Option<u64>) -> String {
        let mut c = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Strict");
        if let Some(secs) = max_age {
            c.push_str(&format!("; Max-Age={secs}"));
        }
        if self.secure_cookies {
            c.push_str("; Secure");
        }
        c
    }

    /// Starts a session (the token was checked); returns its `Set-Cookie` value.
    pub fn sign_in(&self) -> Result<String, WebError> {
        let id = random_hex()?;
        let csrf = random_hex()?;
        self.sessions().insert(id.clone(), csrf, Instant::now());
        Ok(self.cookie(COOKIE, &id, &self.cookie_path, None))
    }

    /// Ends the request's session, if any: its cookie no longer signs in.
    pub fn sign_out(&self, headers: &HeaderMap) {
        let mut sessions = self.sessions();
        for id in cookie_values(headers, COOKIE) {
            sessions.by_id.remove(id);
        }
    }

    /// The `Set-Cookie` value that removes the session cookie from the browser.
    pub fn clear_cookie(&self) -> String {
        self.cookie(COOKIE, "", &self.cookie_path, Some(0))
    }

    /// A fresh CSRF value for the sign-in form and the `Set-Cookie` value that pairs with it.
    pub fn login_form(&self) -> Result<(String, String), WebError> {
        let value = random_hex()?;
        let cookie = self.cookie(
            LOGIN_COOKIE,
            &value,
            &self.login_path,
            Some(LOGIN_FORM_SECS),
        );
        Ok((value, cookie))
    }

    /// The CSRF value of the request's live session; `None`: not signed in. Trusted mode: the
    /// value derived from the request's [`CSRF_COOKIE`].
    pub fn session_csrf(&self, headers: &HeaderMap) -> Option<String> {
        if self.trusted() {
            return cookie_values(headers, CSRF_COOKIE).find_map(|n| self.derived_csrf(n));
        }
        self.token()?;
        let now = Instant::now();
        let mut sessions = self.sessions();
        cookie_values(headers, COOKIE).find_map(|id| sessions.touch(id, now))
    }

    /// Whether the request carries the cookie of a live session.
    #[cfg(test)]
    pub fn signed_in(&self, headers: &HeaderMap) -> bool {
        self.session_csrf(headers).is_some()
    }

    /// The token writes need (`""` in trusted mode), or `403` when the site is read-only.
    fn writable(&self) -> Result<&str, WebError> {
        if self.read_only() {
            return Err(WebError::Forbidden(self.read_only_reason().into()));
        }
        Ok(self.token().unwrap_or(""))
    }

    /// The token of token mode: `403` in trusted mode (nothing to sign in to) or read-only.
    fn token_to_check(&self) -> Result<&str, WebError> {
        if self.trusted() {
            return Err(WebError::Forbidden(
                "this dashboard signs nobody in: its application authenticates".into(),
            ));
        }
        self.writable()
    }

    /// Checks a token typed into the sign-in form by `client` (`429` after too many wrong
    /// ones, even for the right one: a guess must not be told apart while blocked).
    pub fn check_token(&self, given: &str, client: Option<IpAddr>) -> Result<(), WebError> {
        let token = self.token_to_check()?;
        self.failures.check(client)?;
        self.compare(given, token, client)
    }

    fn compare(&self, given: &str, token: &str, client: Option<IpAddr>) -> Result<(), WebError> {
        if same(given.trim(), token) {
            Ok(())
        } else {
            self.failures.failed(client);
            Err(WebError::Unauthorized("wrong token".into()))
        }
    }

    /// A browser form POST: same origin, the site writable, signed in, and the session's CSRF
    /// value.
    pub fn check_form(&self, headers: &HeaderMap, csrf: &str) -> Result<(), WebError> {
        self.check_origin(headers)?;
        self.writable()?;
        let Some(expected) = self.session_csrf(headers) else {
            if self.trusted() {
                return Err(stale_csrf());
            }
            return Err(WebError::Unauthorized(
                "sign in with the dashboard's token first (or again: the session ended)".into(),
            ));
        };
        if same(csrf, &expected) {
            Ok(())
        } else {
            Err(stale_csrf())
        }
    }

    /// The sign-in form: same origin, the site writable, and the form's CSRF value equal to
    /// the `docket_login` cookie set with the form.
    pub fn check_login_form(&self, headers: &HeaderMap, csrf: &str) -> Result<(), WebError> {
        self.check_origin(headers)?;
        self.token_to_check()?;
        let paired =
            !csrf.is_empty() && cookie_values(headers, LOGIN_COOKIE).any(|v| same(v, csrf));
        if paired {
            Ok(())
        } else {
            Err(stale_csrf())
        }
    }

    /// Sign-out: same origin and, when the session is live, its CSRF value (a stale or missing
    /// session needs none: there is nothing left to end).
    pub fn check_logout(&self, headers: &HeaderMap, csrf: &str) -> Result<(), WebError> {
        self.check_origin(headers)?;
        match self.session_csrf(headers) {
            Some(expected) if !same(csrf, &expected) => Err(stale_csrf()),
            _ => Ok(()),
        }
    }

    /// An API write by `client`: `Authorization: Bearer <token>` (and a same-origin `Origin`,
    /// if any); wrong tokens count as in [`Secrets::check_token`]. Trusted mode: the
    /// application authenticated it; `Content-Type: application/json` shows it is no cross-site
    /// form.
    pub fn check_bearer(
        &self,
        headers: &HeaderMap,
        client: Option<IpAddr>,
    ) -> Result<(), WebError> {
        self.check_origin(headers)?;
        let token = self.writable()?;
        if self.trusted() {
            let json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(';').next())
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
            return if json {
                Ok(())
            } else {
                Err(WebError::Forbidden(
                    "API writes need the header Content-Type: application/json (even without a \
                     body)"
                        .into(),
                ))
            };
        }
        self.failures.check(client)?;
        let given = bearer(headers).ok_or_else(|| {
            WebError::Unauthorized("missing header Authorization: Bearer <token>".into())
        })?;
        self.compare(given, token, client)
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

/// The token of `Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 9110,
/// 11.1: `bearer` is `Bearer`).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .and_then(|(scheme, token)| {
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim_start())
        })
}

fn stale_csrf() -> WebError {
    WebError::Forbidden(
        "the form's CSRF token is missing or stale (signed out, or the server restarted?); \
         reload the page and try again"
            .into(),
    )
}

/// The values of the request's cookies named `name`.
fn cookie_values<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    cookies(headers)
        .filter(move |(n, _)| *n == name)
        .map(|(_, v)| v)
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

/// Where to go after signing in: `next` if it is a local path, else `root` (never an error, so
/// a bad `next` cannot make signing in fail).
///
/// Local: starts with one `/` not followed by `/` or `\` (browsers read `//host` and `/\host`
/// as another site), and holds visible ASCII only: no control character (browsers drop tabs
/// and newlines, turning `/\t/host` into `//host`; CR/LF would break the header), no space,
/// no DEL, no backslash anywhere. Links built by the pages are percent-encoded, so they pass.
pub fn local_path(next: Option<&str>, root: &str) -> String {
    match next {
        Some(p) if is_local_path(p) => p.to_owned(),
        _ => root.to_owned(),
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
    use axum::http::HeaderValue;

    fn with_cookie(set_cookie: &str) -> HeaderMap {
        let pair = set_cookie.split(';').next().unwrap_or_default();
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(pair).unwrap());
        h
    }

    #[test]
    fn sessions_are_random_per_sign_in_and_end_at_sign_out() {
        let s = Secrets::new(Some("0123456789abcdef".into()), false).unwrap();
        let (a, b) = (s.sign_in().unwrap(), s.sign_in().unwrap());
        assert_ne!(a, b);
        assert!(a.starts_with("docket_session=") && a.len() > 64 + 15);
        assert!(a.contains("; Path=/; HttpOnly; SameSite=Strict") && !a.contains("Secure"));
        let (ha, hb) = (with_cookie(&a), with_cookie(&b));
        let (ca, cb) = (s.session_csrf(&ha).unwrap(), s.session_csrf(&hb).unwrap());
        assert_ne!(ca, cb, "each session has its own CSRF value");
        assert!(s.check_form(&ha, &ca).is_ok());
        assert!(matches!(
            s.check_form(&ha, &cb),
            Err(WebError::Forbidden(_))
        ));
        s.sign_out(&ha);
        assert!(!s.signed_in(&ha));
        assert!(matches!(
            s.check_form(&ha, &ca),
            Err(WebError::Unauthorized(_))
        ));
        assert!(s.signed_in(&hb));
    }

    #[test]
    fn sessions_are_bounded_and_expire_when_idle() {
        let s = Secrets::with_limits(Some("t".into()), true, 2, Duration::from_secs(3600)).unwrap();
        let cookies: Vec<String> = (0..3).map(|_| s.sign_in().unwrap()).collect();
        assert!(cookies[0].ends_with("; Secure"));
        assert!(
            !s.signed_in(&with_cookie(&cookies[0])),
            "the oldest is forgotten"
        );
        assert!(s.signed_in(&with_cookie(&cookies[1])));
        assert!(s.signed_in(&with_cookie(&cookies[2])));
        assert_eq!(s.sessions().by_id.len(), 2);
        let s = Secrets::with_limits(Some("t".into()), false, 2, Duration::ZERO).unwrap();
        let c = s.sign_in().unwrap();
        assert!(!s.signed_in(&with_cookie(&c)), "idle for the limit: gone");
        assert!(s.sessions().by_id.is_empty());
    }

    #[test]
    fn the_sign_in_forms_value_is_good_for_signing_in_only() {
        let s = Secrets::new(Some("0123456789abcdef".into()), false).unwrap();
        let (value, cookie) = s.login_form().unwrap();
        assert!(cookie.contains("docket_login=") && cookie.contains("Path=/login"));
        let h = with_cookie(&cookie);
        assert!(s.check_login_form(&h, &value).is_ok());
        assert!(s.check_login_form(&h, "other").is_err());
        assert!(s.check_login_form(&HeaderMap::new(), &value).is_err());
        assert!(s.check_login_form(&HeaderMap::new(), "").is_err());
        // Not a session: no form write passes with it.
        assert!(matches!(
            s.check_form(&h, &value),
            Err(WebError::Unauthorized(_))
        ));
    }

    #[test]
    fn only_local_paths_are_followed_after_sign_in() {
        for ok in [
            "/",
            "/queue",
            "/tasks/a%20b?done=x",
            "/executions/e/%E2%80%AE",
        ] {
            assert_eq!(local_path(Some(ok), "/"), ok, "{ok:?}");
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
            assert_eq!(local_path(Some(bad), "/"), "/", "{bad:?}");
        }
        assert_eq!(local_path(None, "/"), "/");
        assert_eq!(local_path(Some("//x"), "/ops/docket"), "/ops/docket");
    }
}
