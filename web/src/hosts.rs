//! The `Host` header values the dashboard answers to (against DNS rebinding: a page of another
//! site whose name was re-pointed at 127.0.0.1 sends its own name as `Host`).

use std::net::SocketAddr;

/// Allowed `Host` values, lower-case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosts {
    allowed: Vec<String>,
}

impl Hosts {
    /// The defaults for `listen` plus every `--public-host`.
    ///
    /// - `listen`'s own `host:port`, unless it is 0.0.0.0 or `::` (no client sends that);
    /// - on a loopback or unspecified address: `localhost`, `127.0.0.1` and `[::1]` with the port;
    /// - `NAME:PORT` as given, and `NAME` without a port as `NAME` (a proxy on port 80 or
    ///   443) and `NAME:<listen port>`.
    ///
    /// On port 80 each `name:80` also allows the bare `name` (browsers leave the port out).
    pub fn new(listen: SocketAddr, public: &[String]) -> Self {
        let port = listen.port();
        let mut allowed = Vec::new();
        let ip = listen.ip();
        if !ip.is_unspecified() {
            allowed.push(listen.to_string());
        }
        if ip.is_loopback() || ip.is_unspecified() {
            for name in ["localhost", "127.0.0.1", "[::1]"] {
                allowed.push(format!("{name}:{port}"));
            }
        }
        for name in public {
            if has_port(name) {
                allowed.push(name.clone());
            } else {
                allowed.push(name.clone());
                allowed.push(format!("{name}:{port}"));
            }
        }
        if port == 80 {
            let bare: Vec<String> = allowed
                .iter()
                .filter_map(|h| h.strip_suffix(":80").map(str::to_owned))
                .collect();
            allowed.extend(bare);
        }
        let mut allowed: Vec<String> = allowed.iter().map(|h| h.to_ascii_lowercase()).collect();
        allowed.sort();
        allowed.dedup();
        Self { allowed }
    }

    /// Whether a request's `Host` header value is allowed (ASCII case ignored).
    pub fn allows(&self, host: &str) -> bool {
        self.allowed.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// The allowed values, for messages.
    pub fn list(&self) -> &[String] {
        &self.allowed
    }
}

/// `name:port` or `[v6]:port` (a bare IPv6 address in brackets has no port).
fn has_port(host: &str) -> bool {
    match host.rsplit_once(':') {
        Some((name, port)) => {
            !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!name.contains(':') || name.ends_with(']'))
        }
        None => false,
    }
}

/// Checks a `--public-host` value: a host name or address, with an optional port.
pub fn parse_public_host(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    if ok {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(format!(
            "{value:?} is not NAME or NAME:PORT (letters, digits, '.', '-', an IPv6 address in [])"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_allows_its_local_names_with_the_port() {
        let h = Hosts::new(addr("127.0.0.1:8080"), &[]);
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "localhost",
            "localhost:8081",
            "127.0.0.1",
            "",
        ] {
            assert!(!h.allows(bad), "{bad}");
        }
    }

    #[test]
    fn public_hosts_are_added_with_and_without_the_port() {
        let h = Hosts::new(
            addr("10.0.0.5:8080"),
            &["dash.example".into(), "other.example:9000".into()],
        );
        for ok in [
            "10.0.0.5:8080",
            "dash.example",
            "dash.example:8080",
            "other.example:9000",
        ] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in ["localhost:8080", "other.example", "other.example:8080"] {
            assert!(!h.allows(bad), "{bad}");
        }
        assert!(Hosts::new(addr("127.0.0.1:80"), &[]).allows("localhost"));
        assert!(Hosts::new(addr("[::1]:80"), &[]).allows("[::1]"));
        assert!(parse_public_host("a b").is_err());
        assert!(parse_public_host("dash.example:443").is_ok());
    }
}
