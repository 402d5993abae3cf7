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
//! 3. Otherwise, when a Docker engine is reachable, a container through testcontainers
//!    ([`super::containers`]; `DOCKET_TESTCONTAINERS=1` makes this step 2, `=0` skips it).
//! 4. If none works, [`Server::admin_url`] returns a [`NotRun`](super::NotRun) saying what was tried and what failed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::containers::Backend;
use super::{
    keep_temp_dir, launch, log_tail, run, running_as_root, shell_quote, spawn_watchdog, Resolved,
    Server, ThrowawayServer,
};

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

/// The server (e.g. `postgres://postgres@127.0.0.1:PORT/postgres`) on
/// which the suite may CREATE DATABASE / CREATE SCHEMA: `DOCKET_POSTGRES_URL` when set and non-empty, otherwise a throwaway
/// server started from the local PostgreSQL installation, otherwise a container.
pub static SERVER: Server = Server::new(ENV_VAR, Backend::Postgres, Some(start_throwaway));

/// Starts a throwaway server; the error completes the sentence "DOCKET_POSTGRES_URL unset and ...".
fn start_throwaway() -> Result<Resolved, String> {
    let bin = find_bin_dir()?;
    let as_postgres = running_as_root();

    let dir = keep_temp_dir("docket-pg-")?;
    let server = Throwaway {
        data: dir.join("data"),
        log: dir.join("logfile"),
        dir,
        bin,
        as_postgres,
    };
    launch("postgres", server)
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

/// A throwaway server's layout: `dir/data` (cluster), `dir/logfile`, socket in `dir`.
struct Throwaway {
    bin: PathBuf,
    dir: PathBuf,
    data: PathBuf,
    log: PathBuf,
    as_postgres: bool,
}

impl ThrowawayServer for Throwaway {
    fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the server (immediately) and removes the directory once this process is gone.
    fn spawn_watchdog(&self) -> Result<(), String> {
        let mut stop = Vec::new();
        if self.as_postgres {
            stop.extend(["runuser", "-u", PG_OS_USER, "--"].map(String::from));
        }
        stop.push(shell_quote(&self.bin.join("pg_ctl"))?);
        stop.extend(["stop", "-m", "immediate", "-w", "-t", "30", "-D"].map(String::from));
        stop.push(shell_quote(&self.data)?);
        spawn_watchdog(&format!("{} >/dev/null 2>&1", stop.join(" ")), &self.dir)
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

    /// Starts the server on `port` and waits until it accepts connections.
    fn start_on(&self, port: u16) -> Result<(), String> {
        let socket_dir = shell_quote(&self.dir)?;
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
            Ok(_) => self.wait_ready(port),
            Err(e) => Err(format!("{e}; server log: {}", self.log_since(log_before))),
        }
    }

    /// Stops the server (fast shutdown: sessions are cut, as in a real outage).
    fn stop(&self) -> Result<(), String> {
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl
            .args(["stop", "-m", "fast", "-w", "-t", "30", "-D"])
            .arg(&self.data);
        run(pg_ctl).map(drop)
    }

    fn source(&self, port: u16) -> String {
        format!("throwaway server at {} port {port}", self.dir.display())
    }

    fn url(&self, port: u16) -> String {
        format!("postgres://{PG_SUPERUSER}@127.0.0.1:{port}/postgres")
    }
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

    fn log_since(&self, from: u64) -> String {
        log_tail(&self.log, from)
    }
}
