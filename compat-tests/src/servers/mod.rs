//! Provisioning of the database servers the live compatibility suites run against.
//!
//! Each backend has a submodule that resolves, once per test process, a server the suite may
//! use. When no server can be obtained the submodule reports a [`NotRun`] explaining why, and the
//! tests turn it into a failing panic so that a skipped suite is never mistaken for a passing one.

use std::fmt;
use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

pub mod containers;
pub mod mysql;
pub mod postgres;
pub mod remote;

/// Why a backend's live suite could not run; tests turn it into a failing panic with
/// "NOT RUN: BACKEND: REASON".
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

/// One backend's server, resolved once per test process (its URL variable, else a throwaway
/// server, else a container) and cached, a failure too: every test of the process sees the
/// same server or the same [`NotRun`].
pub struct Server {
    env_var: &'static str,
    backend: containers::Backend,
    start_throwaway: Option<fn() -> Result<Resolved, String>>,
    resolved: OnceLock<Result<Resolved, NotRun>>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("env_var", &self.env_var)
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// The server named by `env_var`, else (see [`resolve`]) a throwaway one from
    /// `start_throwaway` or a container for `backend`.
    pub(crate) const fn new(
        env_var: &'static str,
        backend: containers::Backend,
        start_throwaway: Option<fn() -> Result<Resolved, String>>,
    ) -> Self {
        Self {
            env_var,
            backend,
            start_throwaway,
            resolved: OnceLock::new(),
        }
    }

    fn resolved(&self) -> &Result<Resolved, NotRun> {
        self.resolved
            .get_or_init(|| resolve(self.env_var, self.start_throwaway, self.backend))
    }

    /// Admin connection URL of a server on which the suite may create and drop its spaces:
    /// the URL variable when set and non-empty, otherwise a throwaway server or a container.
    /// Resolved once per process and cached, a failure too; never panics.
    pub fn admin_url(&self) -> Result<&str, NotRun> {
        match self.resolved() {
            Ok(r) => Ok(r.url.as_str()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Where the URL came from, for the log line: the variable's name, "throwaway server at
    /// DIR port PORT" or "testcontainers: ..."; `None` when no server could be obtained.
    pub fn source(&self) -> Option<&str> {
        self.resolved().as_ref().ok().map(|r| r.source.as_str())
    }

    /// Stops this process's throwaway server for `down_for`, then starts it again on the
    /// same port (for the outage test). A server given by its URL variable is not stopped:
    /// the result is a [`NotRun`].
    pub fn outage(&self, down_for: Duration) -> Result<(), NotRun> {
        match self.resolved() {
            Ok(r) => r.outage(self.backend.name(), down_for),
            Err(e) => Err(e.clone()),
        }
    }
}

/// A server the suite runs from local binaries in a temporary directory of its own.
pub(crate) trait ThrowawayServer: Send + Sync + 'static {
    /// The temporary directory (data, log, socket).
    fn dir(&self) -> &Path;
    /// Arms a detached watchdog that stops the server and removes the directory once this
    /// process is gone, however it ended.
    fn spawn_watchdog(&self) -> Result<(), String>;
    /// Initializes the data directory.
    fn prepare(&self) -> Result<(), String>;
    /// Starts the server on `port` and waits until it accepts connections.
    fn start_on(&self, port: u16) -> Result<(), String>;
    /// What the suite needs loaded once the server runs (default: nothing).
    fn after_start(&self) -> Result<(), String> {
        Ok(())
    }
    /// Stops the server, keeping its data.
    fn stop(&self) -> Result<(), String>;
    /// Where the server is, for the log line (e.g. "throwaway server at DIR port PORT").
    fn source(&self, port: u16) -> String;
    /// Its admin URL when it listens on `port`.
    fn url(&self, port: u16) -> String;
}

/// Starts `server` (the `backend`'s): the watchdog first, so that the directory is cleaned up
/// whatever happens next, then its data directory, then the server on a free port; logs where
/// it runs. The outage of the result stops it and starts it again on the same port.
pub(crate) fn launch(backend: &str, server: impl ThrowawayServer) -> Result<Resolved, String> {
    let fail = |what: String| {
        format!(
            "the throwaway server at {} could not be started: {what}",
            server.dir().display()
        )
    };
    if let Err(e) = server.spawn_watchdog() {
        let _ = fs::remove_dir_all(server.dir());
        return Err(fail(e));
    }
    server.prepare().map_err(fail)?;
    let port = start_on_free_port(|port| server.start_on(port)).map_err(fail)?;
    server.after_start().map_err(fail)?;
    let source = server.source(port);
    eprintln!("docket compat-tests: {backend} {source}");
    Ok(Resolved {
        url: server.url(port),
        source,
        outage: Some(Box::new(move |down_for| {
            server.stop()?;
            std::thread::sleep(down_for);
            server.start_on(port)
        })),
    })
}

/// Starts a throwaway server on a free port with `start_on`, trying another port when the
/// chosen one was taken between [`free_port`] and the bind; returns the port.
pub(crate) fn start_on_free_port(
    start_on: impl Fn(u16) -> Result<(), String>,
) -> Result<u16, String> {
    let mut last_error = String::new();
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port().map_err(|e| format!("finding a free port failed: {e}"))?;
        match start_on(port) {
            Ok(()) => return Ok(port),
            Err(e) => {
                // Someone else took the port between free_port() and the bind: try another.
                let retry = e.contains("already in use");
                last_error = e;
                if !retry {
                    break;
                }
            }
        }
    }
    Err(last_error)
}

/// How many fresh ports a throwaway server tries when the chosen one was taken in the meantime.
pub(crate) const PORT_ATTEMPTS: usize = 3;

/// Takes a throwaway server down for a while and brings it back on the same port.
pub(crate) type Outage = Box<dyn Fn(Duration) -> Result<(), String> + Send + Sync>;

/// A resolved server: its URL, where it came from, and (for throwaway servers, which the
/// suite owns) how to take it down.
pub(crate) struct Resolved {
    pub url: String,
    pub source: String,
    pub outage: Option<Outage>,
}

impl Resolved {
    /// Runs an outage of `down_for` on this server; a server given by URL is not ours to stop.
    pub(crate) fn outage(&self, backend: &str, down_for: Duration) -> Result<(), NotRun> {
        let outage = self.outage.as_ref().ok_or_else(|| {
            NotRun(format!(
                "{backend}: the outage test stops and restarts its server, and {} is not a \
                 throwaway server it owns",
                self.source
            ))
        })?;
        outage(down_for).map_err(|e| NotRun(format!("{backend}: outage failed: {e}")))
    }
}

/// Resolves a server in the order of SPEC section 7: the URL in `env_var` when set and
/// non-empty; else `start_throwaway()` (when the backend has one; its error completes the
/// sentence "`env_var` unset and ..."); else a container for `backend` when a Docker engine is
/// reachable. `DOCKET_TESTCONTAINERS=1` goes to the container right after the URL (and never
/// falls back, so a run meant to use containers cannot pass on something else);
/// `DOCKET_TESTCONTAINERS=0` never starts one.
pub(crate) fn resolve(
    env_var: &str,
    start_throwaway: Option<fn() -> Result<Resolved, String>>,
    backend: containers::Backend,
) -> Result<Resolved, NotRun> {
    if let Some(value) = std::env::var_os(env_var).filter(|v| !v.is_empty()) {
        return match value.into_string() {
            Ok(url) => Ok(Resolved {
                url,
                source: env_var.to_string(),
                outage: None,
            }),
            Err(_) => Err(NotRun(format!("{env_var} is set but is not valid UTF-8"))),
        };
    }
    let mode = containers::mode().map_err(|e| NotRun(format!("{env_var} unset and {e}")))?;
    if mode == containers::Mode::Prefer {
        return containers::start(backend).map_err(|e| {
            NotRun(format!(
                "{env_var} unset and {}=1 asks for a container: {e}",
                containers::MODE_VAR
            ))
        });
    }
    let throwaway = match start_throwaway {
        Some(start) => match start() {
            Ok(resolved) => return Ok(resolved),
            Err(reason) => reason,
        },
        None => "no throwaway server exists for this backend".to_owned(),
    };
    if mode == containers::Mode::Off {
        return Err(NotRun(format!(
            "{env_var} unset and {throwaway} (containers are off: {}=0)",
            containers::MODE_VAR
        )));
    }
    containers::start(backend).map_err(|e| {
        NotRun(format!(
            "{env_var} unset and {throwaway}; testcontainers: {e}"
        ))
    })
}

/// A fresh directory under the system temp dir that outlives its handle (the watchdog removes it).
pub(crate) fn keep_temp_dir(prefix: &str) -> Result<PathBuf, String> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map(tempfile::TempDir::keep)
        .map_err(|e| {
            format!(
                "creating a temporary directory for a throwaway server under {} failed: {e}",
                std::env::temp_dir().display()
            )
        })
}

/// Whether the effective user id is 0 (servers refuse root, or need to be told).
pub(crate) fn running_as_root() -> bool {
    let from_proc = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                // Real, effective, saved set, filesystem.
                .and_then(|ids| ids.split_whitespace().nth(1))
                .map(|euid| euid == "0")
        });
    from_proc.unwrap_or_else(|| {
        Command::new("id")
            .arg("-u")
            .stdin(Stdio::null())
            .output()
            .map(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "0")
            .unwrap_or(false)
    })
}

/// Detached shell that waits for this process to end, runs `stop` (a shell snippet that stops
/// the server), then removes `dir`. Double-forked (the outer shell exits at once) and in its own
/// process group with the usual termination signals ignored, so neither Ctrl-C nor a killed
/// test process stops it.
pub(crate) fn spawn_watchdog(stop: &str, dir: &Path) -> Result<(), String> {
    let script = format!(
        "( trap '' HUP INT QUIT TERM PIPE; \
         while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
         {stop}; \
         rm -rf {dir} ) </dev/null >/dev/null 2>&1 &",
        pid = std::process::id(),
        dir = shell_quote(dir)?,
    );
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .status()
        .map_err(|e| format!("spawning the cleanup watchdog (sh) failed: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "spawning the cleanup watchdog (sh) failed: {status}"
        ))
    }
}

/// Runs a command to completion; a spawn failure or non-zero exit becomes a message naming the
/// command and carrying its output.
pub(crate) fn run(mut cmd: Command) -> Result<Output, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("could not run {cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(out);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let output = [stderr.trim(), stdout.trim()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" | ");
    Err(format!("{cmd:?} failed ({}): {output}", out.status))
}

/// Single-quotes a path for `sh`.
pub(crate) fn shell_quote(path: &Path) -> Result<String, String> {
    let s = path
        .to_str()
        .ok_or_else(|| format!("path {} is not valid UTF-8", path.display()))?;
    Ok(format!("'{}'", s.replace('\'', r"'\''")))
}

/// The last lines of a server log after byte offset `from`, for error messages.
pub(crate) fn log_tail(log: &Path, from: u64) -> String {
    match fs::read(log) {
        Ok(bytes) => {
            let start = usize::try_from(from).unwrap_or(0).min(bytes.len());
            let text = String::from_utf8_lossy(&bytes[start..]);
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join(" | ");
            if tail.trim().is_empty() {
                "(empty)".to_string()
            } else {
                tail
            }
        }
        Err(e) => format!("({} unreadable: {e})", log.display()),
    }
}
