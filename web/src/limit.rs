//! Failed token attempts, counted per source: past a limit in a window, sign-in and API writes
//! from that source answer `429` with `Retry-After` until the window ends. There is no global
//! limit: wrong tokens from some addresses never lock out another.
//!
//! A source is the client's address; IPv6 addresses count by their `/64` prefix (what one
//! host or site is usually given), so an attacker cannot get a fresh limit per address of its
//! prefix. Requests without a recorded address (no `ConnectInfo`) share one source. Memory is
//! bounded: at most [`Limits::max_clients`] sources are tracked; past that, the source whose
//! window started first is forgotten. Behind a proxy every client has the proxy's address (no
//! `X-Forwarded-For` is trusted), so the limit then acts on all of them together.

use crate::error::WebError;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many failures are allowed, and for how long they count.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Failures from one source per window.
    pub per_client: u32,
    /// The window, counted from its first failure.
    pub window: Duration,
    /// Sources tracked at once.
    pub max_clients: usize,
}

impl Default for Limits {
    /// 10 failures per source per 5 minutes; 10,000 sources tracked.
    fn default() -> Self {
        Self {
            per_client: 10,
            window: Duration::from_secs(300),
            max_clients: 10_000,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

impl Window {
    fn new(now: Instant) -> Self {
        Self {
            start: now,
            failures: 0,
        }
    }

    /// Starts over once the window has passed.
    fn current(&mut self, now: Instant, length: Duration) -> &mut Self {
        if now.duration_since(self.start) >= length {
            *self = Self::new(now);
        }
        self
    }

    /// Seconds until the window ends, when `limit` failures are reached.
    fn blocked(&mut self, now: Instant, length: Duration, limit: u32) -> Option<u64> {
        let w = self.current(now, length);
        (w.failures >= limit).then(|| {
            let left = length.saturating_sub(now.duration_since(w.start));
            left.as_secs() + u64::from(left.subsec_nanos() > 0)
        })
    }
}

/// Whom failures are counted for: an IPv4 address, an IPv6 `/64`, or "no address known".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    Ip(IpAddr),
    Unknown,
}

impl Source {
    fn of(client: Option<IpAddr>) -> Self {
        match client {
            None => Source::Unknown,
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => Source::Ip(IpAddr::V4(v4)),
                None => {
                    let s = v6.segments();
                    Source::Ip(IpAddr::V6(Ipv6Addr::new(
                        s[0], s[1], s[2], s[3], 0, 0, 0, 0,
                    )))
                }
            },
            Some(v4) => Source::Ip(v4),
        }
    }
}

/// Failed attempts, shared by every request.
#[derive(Debug)]
pub struct FailureLimit {
    limits: Limits,
    by_source: Mutex<HashMap<Source, Window>>,
}

impl FailureLimit {
    /// Nothing counted yet.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            by_source: Mutex::new(HashMap::new()),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<Source, Window>> {
        self.by_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `429` while `client`'s source is past the limit.
    pub fn check(&self, client: Option<IpAddr>) -> Result<(), WebError> {
        let now = Instant::now();
        let l = self.limits;
        let mut counts = self.counts();
        let blocked = counts
            .get_mut(&Source::of(client))
            .and_then(|w| w.blocked(now, l.window, l.per_client));
        match blocked {
            None => Ok(()),
            Some(retry_after_secs) => Err(WebError::TooManyRequests {
                message: format!(
                    "too many wrong tokens from this address; try again in {retry_after_secs} s"
                ),
                retry_after_secs,
            }),
        }
    }

    /// Counts a wrong token from `client`.
    pub fn failed(&self, client: Option<IpAddr>) {
        let now = Instant::now();
        let l = self.limits;
        let source = Source::of(client);
        let mut counts = self.counts();
        if !counts.contains_key(&source) && counts.len() >= l.max_clients.max(1) {
            counts.retain(|_, w| now.duration_since(w.start) < l.window);
            while counts.len() >= l.max_clients.max(1) {
                let oldest = counts.iter().min_by_key(|(_, w)| w.start).map(|(s, _)| *s);
                match oldest {
                    Some(s) => counts.remove(&s),
                    None => break,
                };
            }
        }
        let w = counts.entry(source).or_insert_with(|| Window::new(now));
        w.current(now, l.window).failures += 1;
    }
}

/// The client's address, when the server recorded it (`ConnectInfo`); tests may leave it out.
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([10, 0, 0, last]))
    }

    fn small(window: Duration) -> FailureLimit {
        FailureLimit::new(Limits {
            per_client: 2,
            window,
            max_clients: 3,
        })
    }

    #[test]
    fn a_client_past_its_limit_waits_for_the_window() {
        let l = small(Duration::from_secs(60));
        l.failed(ip(1));
        assert!(l.check(ip(1)).is_ok());
        l.failed(ip(1));
        match l.check(ip(1)) {
            Err(WebError::TooManyRequests {
                retry_after_secs, ..
            }) => assert!((59..=60).contains(&retry_after_secs)),
            other => panic!("{other:?}"),
        }
        assert!(l.check(ip(2)).is_ok(), "others are not blocked");
        let l = small(Duration::ZERO);
        l.failed(ip(1));
        l.failed(ip(1));
        assert!(l.check(ip(1)).is_ok(), "the window passed");
    }

    /// Finding 7: 100 wrong tokens from 100 addresses locked everyone out for 5 minutes (a
    /// total limit). Now no number of sources blocks another; memory stays bounded. Without
    /// the fix `check(ip(250))` below was refused.
    #[test]
    fn wrong_tokens_from_many_sources_never_lock_out_another() {
        let l = FailureLimit::new(Limits::default());
        for n in 0..200u8 {
            l.failed(ip(n));
        }
        assert!(l.check(ip(250)).is_ok(), "a new address is not blocked");
        assert!(l.check(None).is_ok(), "nor an unknown one");
        let l = small(Duration::from_secs(60));
        for n in 0..50 {
            l.failed(ip(n));
        }
        assert!(l.counts().len() <= 3, "at most max_clients tracked");
    }

    #[test]
    fn an_ipv6_prefix_is_one_source() {
        let l = small(Duration::from_secs(60));
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        l.failed(Some(a));
        l.failed(Some(b));
        assert!(l.check(Some(a)).is_err() && l.check(Some(b)).is_err());
        assert!(l.check(Some(other)).is_ok());
        let mapped: IpAddr = "::ffff:10.0.0.7".parse().unwrap();
        l.failed(Some(mapped));
        l.failed(ip(7));
        assert!(
            l.check(ip(7)).is_err(),
            "IPv4-mapped counts as the IPv4 address"
        );
    }
}
