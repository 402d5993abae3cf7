//! PostgreSQL server for the live compatibility suite.
//!
//! Resolution order, done once per test process and cached (errors included):
//!
//! 1. `DOCKET_POSTGRES_URL`, when set and non-empty, is used as is.
//! 2. Otherwise a throwaway server is started from the locally installed PostgreSQL binaries
//!    (`pg_config --bindir`, else the highest version under `/usr/lib/postgresql/*/bin`) in a
//!    fresh temporary directory on a free port. When running as root, `initdb` and `pg_ctl` are
//!    run as the `postgres` OS user through `runuser`. A detached watchdog shell stops the server
//!    and removes the directory once the test process has gone, however it ended.
//! 3. If neither works, [`admin_url`] returns a [`NotRun`] saying what was tried and what failed.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use super::{free_port, NotRun};

/// Environment variable naming an existing server to use instead of a throwaway one.
const ENV_VAR: &str = "DOCKET_POSTGRES_URL";
/// Where distribution packages (Debian/Ubuntu layout) install the server binaries.
const PACKAGE_ROOT: &str = "/usr/lib/postgresql";
/// OS user the server runs as when the test process is root.
const PG_OS_USER: &str = "postgres";
/// Database superuser created by `initdb` and used in the URL.
const PG_SUPERUSER: &str = "postgres";
/// Upper bound on waiting for the server to start or to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How many fresh ports to try when the chosen one was taken in the meantime.
const PORT_ATTEMPTS: usize = 3;

/// A resolved server: its URL and where it came from.
struct Resolved {
    url: String,
    source: String,
}

static RESOLVED: OnceLock<Result<Resolved, NotRun>> = OnceLock::new();

fn resolved() -> &'static Result<Resolved, NotRun> {
    RESOLVED.get_or_init(resolve)
}

/// Base connection URL (e.g. "postgres://postgres@127.0.0.1:PORT/postgres") of a server on which
/// the suite may CREATE DATABASE / CREATE SCHEMA.
///
/// Resolved once per process and cached, including a cached `Err`: `DOCKET_POSTGRES_URL` when set
/// and non-empty, otherwise a throwaway server started from the local PostgreSQL installation.
/// Never panics; every failure is reported as a [`NotRun`] with its reason.
pub fn admin_url() -> Result<&'static str, NotRun> {
    match resolved() {
        Ok(r) => Ok(r.url.as_str()),
        Err(e) => Err(e.clone()),
    }
}

/// Where the URL came from, for the log line: "DOCKET_POSTGRES_URL" or
/// "throwaway server at DIR port PORT".
///
/// Resolves the server like [`admin_url`] if that has not happened yet; `None` when no server
/// could be obtained.
pub fn source() -> Option<&'static str> {
    resolved().as_ref().ok().map(|r| r.source.as_str())
}

fn resolve() -> Result<Resolved, NotRun> {
    if let Some(value) = std::env::var_os(ENV_VAR).filter(|v| !v.is_empty()) {
        return match value.into_string() {
            Ok(url) => Ok(Resolved {
                url,
                source: ENV_VAR.to_string(),
            }),
            Err(_) => Err(NotRun(format!("{ENV_VAR} is set but is not valid UTF-8"))),
        };
    }
    start_throwaway().map_err(|reason| NotRun(format!("{ENV_VAR} unset and {reason}")))
}

/// Starts a throwaway server; the error completes the sentence "DOCKET_POSTGRES_URL unset and ...".
fn start_throwaway() -> Result<Resolved, String> {
    let bin = find_bin_dir()?;
    let as_postgres = running_as_root();

    let dir = tempfile::Builder::new()
        .prefix("docket-pg-")
        .tempdir()
        .map_err(|e| {
            format!(
                "creating a temporary directory for a throwaway server under {} failed: {e}",
                std::env::temp_dir().display()
            )
        })?
        .keep();
    let server = Throwaway {
        data: dir.join("data"),
        log: dir.join("logfile"),
        dir,
        bin,
        as_postgres,
    };
    let fail = |what: String| {
        format!(
            "the throwaway server at {} could not be started: {what}",
            server.dir.display()
        )
    };

    // The watchdog goes first so that the directory is cleaned up whatever happens next.
    if let Err(e) = server.spawn_watchdog() {
        let _ = fs::remove_dir_all(&server.dir);
        return Err(fail(e));
    }
    server.prepare().map_err(fail)?;
    let port = server.start().map_err(fail)?;

    let source = format!("throwaway server at {} port {port}", server.dir.display());
    eprintln!("docket compat-tests: postgres {source}");
    Ok(Resolved {
        url: format!("postgres://{PG_SUPERUSER}@127.0.0.1:{port}/postgres"),
        source,
    })
}

/// Finds a directory holding `initdb` and `pg_ctl`.
fn find_bin_dir() -> Result<PathBuf, String> {
    let has_server_tools =
        |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();

    let pg_config = match Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if has_server_tools(&dir) {
                return Ok(dir);
            }
            format!("pg_config --bindir gave {} without them", dir.display())
        }
        Ok(out) => format!("pg_config --bindir failed ({})", out.status),
        Err(e) => format!("pg_config not runnable: {e}"),
    };

    let mut versions: Vec<(Vec<u64>, PathBuf)> = fs::read_dir(PACKAGE_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = name
                .split('.')
                .map(|part| part.parse::<u64>().unwrap_or(0))
                .collect();
            (key, entry.path().join("bin"))
        })
        .collect();
    versions.sort();
    versions
        .into_iter()
        .rev()
        .map(|(_, dir)| dir)
        .find(|dir| has_server_tools(dir))
        .ok_or_else(|| {
            format!("no initdb and pg_ctl found ({pg_config}; none under {PACKAGE_ROOT}/*/bin)")
        })
}

/// Whether the effective user id is 0; PostgreSQL refuses to run as root.
fn running_as_root() -> bool {
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

/// A throwaway server's layout: `dir/data` (cluster), `dir/logfile`, socket in `dir`.
struct Throwaway {
    bin: PathBuf,
    dir: PathBuf,
    data: PathBuf,
    log: PathBuf,
    as_postgres: bool,
}

impl Throwaway {
    /// A command running one of the server tools, as the `postgres` OS user when we are root.
    fn tool(&self, name: &str) -> Command {
        let exe = self.bin.join(name);
        let mut cmd = if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", PG_OS_USER, "--"]).arg(exe);
            cmd
        } else {
            Command::new(exe)
        };
        // The caller's working directory may not be readable by the postgres user.
        cmd.current_dir(&self.dir).stdin(Stdio::null());
        cmd
    }

    /// Detached shell that waits for this process to end, then stops the server and removes the
    /// directory. Double-forked (the outer shell exits at once) and in its own process group with
    /// the usual termination signals ignored, so neither Ctrl-C nor a killed test process stops it.
    fn spawn_watchdog(&self) -> Result<(), String> {
        let mut stop = Vec::new();
        if self.as_postgres {
            stop.extend(["runuser", "-u", PG_OS_USER, "--"].map(String::from));
        }
        stop.push(shell_quote(&self.bin.join("pg_ctl"))?);
        stop.extend(["stop", "-m", "immediate", "-w", "-t", "30", "-D"].map(String::from));
        stop.push(shell_quote(&self.data)?);
        let script = format!(
            "( trap '' HUP INT QUIT TERM PIPE; \
             while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             {stop} >/dev/null 2>&1; \
             rm -rf {dir} ) </dev/null >/dev/null 2>&1 &",
            pid = std::process::id(),
            stop = stop.join(" "),
            dir = shell_quote(&self.dir)?,
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

    /// Hands the directory to the postgres user if needed and creates the cluster.
    fn prepare(&self) -> Result<(), String> {
        if self.as_postgres {
            let mut chown = Command::new("chown");
            chown
                .arg("-R")
                .arg(format!("{PG_OS_USER}:{PG_OS_USER}"))
                .arg(&self.dir)
                .stdin(Stdio::null());
            run(chown)?;
        }
        let mut initdb = self.tool("initdb");
        initdb
            .arg("-D")
            .arg(&self.data)
            .args(["-A", "trust", "-U", PG_SUPERUSER, "--no-sync", "-E", "UTF8"])
            // Independent of whatever LANG/LC_* the test runs under (and of installed locales).
            .arg("--locale=C");
        run(initdb).map(drop)
    }

    /// Starts the server on a free port and waits until it accepts connections.
    fn start(&self) -> Result<u16, String> {
        let socket_dir = shell_quote(&self.dir)?;
        let mut last_error = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port().map_err(|e| format!("finding a free port failed: {e}"))?;
            let log_before = fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0);
            let mut pg_ctl = self.tool("pg_ctl");
            pg_ctl
                .arg("start")
                .args(["-w", "-t", "30", "-D"])
                .arg(&self.data)
                .arg("-l")
                .arg(&self.log)
                .arg("-o")
                .arg(format!(
                    "-p {port} -k {socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off \
                     -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
                     -c shared_buffers=128MB"
                ));
            match run(pg_ctl) {
                Ok(_) => {
                    self.wait_ready(port)?;
                    return Ok(port);
                }
                Err(e) => {
                    let log = self.log_since(log_before);
                    last_error = format!("{e}; server log: {log}");
                    // Someone else took the port between free_port() and the bind: try another.
                    if !log.contains("already in use") {
                        break;
                    }
                }
            }
        }
        Err(last_error)
    }

    /// Polls `pg_isready` until the server accepts connections, for at most [`READY_TIMEOUT`].
    /// `pg_ctl -w` normally already guarantees this; the poll covers slow TCP listener set-up.
    fn wait_ready(&self, port: u16) -> Result<(), String> {
        let local = self.bin.join("pg_isready");
        let exe = if local.is_file() {
            local
        } else {
            PathBuf::from("pg_isready")
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let out = Command::new(&exe)
                .args([
                    "-q",
                    "-h",
                    "127.0.0.1",
                    "-U",
                    PG_SUPERUSER,
                    "-d",
                    "postgres",
                    "-p",
                ])
                .arg(port.to_string())
                .stdin(Stdio::null())
                .output();
            match out {
                Ok(out) if out.status.success() => return Ok(()),
                // No pg_isready at all: rely on pg_ctl -w.
                Err(_) => return Ok(()),
                Ok(out) if Instant::now() >= deadline => {
                    return Err(format!(
                        "server started but not accepting connections on 127.0.0.1:{port} after \
                         {}s (pg_isready: {}); server log: {}",
                        READY_TIMEOUT.as_secs(),
                        out.status,
                        self.log_since(0)
                    ));
                }
                Ok(_) => thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// The last lines the server logged after byte offset `from`, for error messages.
    fn log_since(&self, from: u64) -> String {
        match fs::read(&self.log) {
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
            Err(e) => format!("({} unreadable: {e})", self.log.display()),
        }
    }
}

/// Runs a command to completion; a spawn failure or non-zero exit becomes a message naming the
/// command and carrying its output.
fn run(mut cmd: Command) -> Result<Output, String> {
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

/// Single-quotes a path for `sh` (and for the option string `pg_ctl` hands to `sh`).
fn shell_quote(path: &Path) -> Result<String, String> {
    let s = path
        .to_str()
        .ok_or_else(|| format!("path {} is not valid UTF-8", path.display()))?;
    Ok(format!("'{}'", s.replace('\'', r"'\''")))
}
