//! Failed token attempts, counted per client address and in total: past a limit in a window,
//! sign-in and API writes answer `429` with `Retry-After` until the window ends.
//!
//! Memory is bounded: at most [`Limits::max_clients`] addresses are tracked; past that, new
//! addresses count only towards the total. Behind a proxy every client has the proxy's address
//! (no `X-Forwarded-For` is trusted), so the per-client limit becomes a second total.

use crate::error::WebError;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many failures are allowed, and for how long they count.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Failures from one address per window.
    pub per_client: u32,
    /// Failures from everyone per window.
    pub total: u32,
    /// The window, counted from its first failure.
    pub window: Duration,
    /// Addresses tracked at once.
    pub max_clients: usize,
}

impl Default for Limits {
    /// 10 failures per address and 100 in total per 5 minutes; 10,000 addresses tracked.
    fn default() -> Self {
        Self {
            per_client: 10,
            total: 100,
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

#[derive(Debug)]
struct Counts {
    total: Window,
    by_client: HashMap<IpAddr, Window>,
}

/// Failed attempts, shared by every request.
#[derive(Debug)]
pub struct FailureLimit {
    limits: Limits,
    counts: Mutex<Counts>,
}

impl FailureLimit {
    /// Nothing counted yet.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            counts: Mutex::new(Counts {
                total: Window::new(Instant::now()),
                by_client: HashMap::new(),
            }),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `429` while `client` (or everyone) is past the limit.
    pub fn check(&self, client: Option<IpAddr>) -> Result<(), WebError> {
        let now = Instant::now();
        let l = self.limits;
        let mut counts = self.counts();
        let mine = client
            .and_then(|ip| counts.by_client.get_mut(&ip))
            .and_then(|w| w.blocked(now, l.window, l.per_client));
        let all = counts.total.blocked(now, l.window, l.total);
        match mine.into_iter().chain(all).max() {
            None => Ok(()),
            Some(retry_after_secs) => Err(WebError::TooManyRequests {
                message: format!(
                    "too many wrong tokens{}; try again in {retry_after_secs} s",
                    if mine.is_some() {
                        " from this address"
                    } else {
                        ""
                    }
                ),
                retry_after_secs,
            }),
        }
    }

    /// Counts a wrong token from `client`.
    pub fn failed(&self, client: Option<IpAddr>) {
        let now = Instant::now();
        let l = self.limits;
        let mut counts = self.counts();
        counts.total.current(now, l.window).failures += 1;
        let Some(ip) = client else { return };
        if !counts.by_client.contains_key(&ip) && counts.by_client.len() >= l.max_clients {
            counts
                .by_client
                .retain(|_, w| now.duration_since(w.start) < l.window);
            if counts.by_client.len() >= l.max_clients {
                return; // Counted in the total only.
            }
        }
        let w = counts
            .by_client
            .entry(ip)
            .or_insert_with(|| Window::new(now));
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
            total: 5,
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

    #[test]
    fn the_total_limit_holds_across_clients_and_memory_is_bounded() {
        let l = small(Duration::from_secs(60));
        for n in 0..5 {
            l.failed(ip(n));
        }
        assert!(l.check(ip(99)).is_err(), "everyone waits past the total");
        assert!(l.check(None).is_err());
        assert_eq!(l.counts().by_client.len(), 3, "at most max_clients tracked");
    }
}
