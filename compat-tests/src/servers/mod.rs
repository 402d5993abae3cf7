//! Provisioning of the database servers the live compatibility suites run against.
//!
//! Each backend has a submodule that resolves, once per test process, a server the suite may
//! use. When no server can be obtained the submodule reports a [`NotRun`] explaining why, and the
//! tests turn it into a failing panic so that a skipped suite is never mistaken for a passing one.

use std::fmt;
use std::net::{Ipv4Addr, TcpListener};

pub mod mysql;
pub mod postgres;

/// Why a backend's live suite could not run; tests turn it into a failing panic with
/// "NOT RUN: <backend>: <reason>".
#[derive(Debug, Clone)]
pub struct NotRun(pub String);

impl fmt::Display for NotRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NOT RUN: {}", self.0)
    }
}

impl std::error::Error for NotRun {}

/// A free TCP port on 127.0.0.1 (bind port 0, read it, drop the listener).
///
/// The port is only known to be free at the moment of the call; another process may take it
/// before the caller binds it, so callers should be prepared to retry with a fresh port.
pub fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = listener.local_addr()?.port();
    drop(listener);
    Ok(port)
}
