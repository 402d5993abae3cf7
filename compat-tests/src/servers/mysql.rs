//! MySQL/MariaDB server for the live compatibility suite.
//!
//! Resolution order, done once per test process and cached (errors included):
//!
//! 1. `DOCKET_MYSQL_URL`, when set and non-empty, is used as is. The suite sets the session
//!    time zone `America/New_York`, so that server needs its time zone tables loaded
//!    (`mariadb-tzinfo-to-sql /usr/share/zoneinfo | mariadb mysql`, or `mysql_tzinfo_to_sql`).
//! 2. Otherwise a throwaway server is started from the locally installed binaries (`mariadbd`
//!    or `mysqld`, initialized with `mariadb-install-db`/`mysql_install_db`, or
//!    `mysqld --initialize-insecure` for Oracle MySQL) in a fresh temporary directory on a free
//!    port and its own socket, as root with `--user=root` when the test process is root. Its
//!    time zone tables are loaded from `/usr/share/zoneinfo`. A detached watchdog shell stops
//!    the server and removes the directory once the test process has gone, however it ended.
//! 3. Otherwise, when a Docker engine is reachable, a MariaDB (or, with
//!    `DOCKET_TC_MYSQL_FLAVOR=mysql`, MySQL 8) container through testcontainers
//!    ([`super::containers`]; `DOCKET_TESTCONTAINERS=1` makes this step 2, `=0` skips it).
//! 4. If none works, [`Server::admin_url`] returns a [`NotRun`](super::NotRun) saying what was tried and what failed.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::containers::Backend;
use super::{
    keep_temp_dir, launch, log_tail, run, running_as_root, shell_quote, spawn_watchdog, Resolved,
    Server, ThrowawayServer,
};

/// Environment variable naming an existing server to use instead of a throwaway one.
const ENV_VAR: &str = "DOCKET_MYSQL_URL";
/// Where the time zone tables are loaded from.
const ZONEINFO: &str = "/usr/share/zoneinfo";
/// Upper bound on waiting for the server to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The server (a base URL without a database, e.g. `mysql://root@127.0.0.1:PORT`; append `/<database>` to use one) on
/// which the suite may CREATE DATABASE: `DOCKET_MYSQL_URL` when set and non-empty, otherwise a throwaway
/// server started from the local MariaDB/MySQL binaries, otherwise a container.
pub static SERVER: Server = Server::new(ENV_VAR, Backend::Mysql, Some(start_throwaway));

/// Starts a throwaway server; the error completes the sentence "DOCKET_MYSQL_URL unset and ...".
fn start_throwaway() -> Result<Resolved, String> {
    launch("mysql", Throwaway::new(Tools::find()?)?)
}

/// The local binaries a throwaway server needs.
struct Tools {
    /// `mariadbd` or `mysqld`.
    server: PathBuf,
    /// `mariadb-install-db`/`mysql_install_db`; `None` means `mysqld --initialize-insecure`.
    install_db: Option<PathBuf>,
    /// `mariadb` or `mysql` (loads the time zone tables).
    client: PathBuf,
    /// `mariadb-tzinfo-to-sql` or `mysql_tzinfo_to_sql`.
    tzinfo_to_sql: PathBuf,
}

impl Tools {
    fn find() -> Result<Self, String> {
        let server = find_exe(&["mariadbd", "mysqld"])
            .ok_or("no mariadbd or mysqld found on PATH, /usr/sbin or /usr/bin")?;
        let is_mariadb = Command::new(&server)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).contains("MariaDB"))
            .map_err(|e| format!("{} --version failed: {e}", server.display()))?;
        let install_db = find_exe(&["mariadb-install-db", "mysql_install_db"]);
        if is_mariadb && install_db.is_none() {
            return Err(format!(
                "{} is MariaDB but no mariadb-install-db or mysql_install_db was found",
                server.display()
            ));
        }
        let client = find_exe(&["mariadb", "mysql"])
            .ok_or("no mariadb or mysql client found (needed to load the time zone tables)")?;
        let tzinfo_to_sql = find_exe(&["mariadb-tzinfo-to-sql", "mysql_tzinfo_to_sql"])
            .ok_or("no mariadb-tzinfo-to-sql or mysql_tzinfo_to_sql found")?;
        Ok(Self {
            server,
            // Oracle MySQL 8 initializes with `mysqld --initialize-insecure` instead.
            install_db: install_db.filter(|_| is_mariadb),
            client,
            tzinfo_to_sql,
        })
    }
}

/// The first of `names` found on `PATH`, then in `/usr/sbin`, `/usr/bin`.
fn find_exe(names: &[&str]) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"].map(PathBuf::from));
    names
        .iter()
        .find_map(|name| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()))
}

/// A throwaway server's layout: `dir/data`, `dir/error.log`, `dir/mysqld.sock`,
/// `dir/server.pid` (written by us right after spawning the server, for the watchdog).
struct Throwaway {
    tools: Tools,
    dir: PathBuf,
    data: PathBuf,
    log: PathBuf,
    socket: PathBuf,
    pid_file: PathBuf,
    as_root: bool,
    /// The running server process (so an outage can stop and reap it).
    child: Mutex<Option<Child>>,
}

impl Throwaway {
    /// A throwaway server's layout in a fresh temporary directory (nothing started yet).
    fn new(tools: Tools) -> Result<Self, String> {
        let dir = keep_temp_dir("docket-mysql-")?;
        Ok(Self {
            data: dir.join("data"),
            log: dir.join("error.log"),
            socket: dir.join("mysqld.sock"),
            pid_file: dir.join("server.pid"),
            dir,
            tools,
            as_root: running_as_root(),
            child: Mutex::new(None),
        })
    }
}

impl ThrowawayServer for Throwaway {
    fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the server (TERM, then KILL after 30 s) and removes the directory once this
    /// process is gone.
    fn spawn_watchdog(&self) -> Result<(), String> {
        let stop = format!(
            "if [ -f {pid_file} ]; then \
               p=$(cat {pid_file}); kill -TERM \"$p\" 2>/dev/null; n=0; \
               while kill -0 \"$p\" 2>/dev/null && [ $n -lt 30 ]; do sleep 1; n=$((n+1)); done; \
               kill -KILL \"$p\" 2>/dev/null; \
             fi",
            pid_file = shell_quote(&self.pid_file)?,
        );
        spawn_watchdog(&stop, &self.dir)
    }

    /// Creates the data directory with a passwordless `root`. The bootstrap server gets the
    /// throwaway's own `--tmpdir` as the running server does: a MariaDB server starting up
    /// deletes every `#sql*` file in its tmpdir as left over from an earlier run, and with the
    /// default `/tmp` those were the live temporary tables of the machine's own MariaDB (its
    /// queries failed with `Error on delete of '/tmp/#sql-temptable-...MAI' (Errcode: 2)`
    /// whenever the suite started a throwaway server).
    fn prepare(&self) -> Result<(), String> {
        let tmpdir = format!("--tmpdir={}", self.dir.display());
        let mut cmd = match &self.tools.install_db {
            Some(install_db) => {
                let mut cmd = Command::new(install_db);
                cmd.arg("--no-defaults")
                    .arg(format!("--datadir={}", self.data.display()))
                    .args(self.user_args())
                    .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
                    .arg(&tmpdir);
                cmd
            }
            None => {
                let mut cmd = Command::new(&self.tools.server);
                cmd.arg("--no-defaults")
                    .arg("--initialize-insecure")
                    .arg(format!("--datadir={}", self.data.display()))
                    .args(self.user_args())
                    .arg(&tmpdir);
                cmd
            }
        };
        cmd.current_dir(&self.dir).stdin(Stdio::null());
        run(cmd).map(drop)
    }

    /// Starts the server on `port` (keeping its process handle) and waits until it accepts
    /// connections.
    fn start_on(&self, port: u16) -> Result<(), String> {
        let log_before = fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0);
        let mut cmd = Command::new(&self.tools.server);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", self.data.display()))
            .arg(format!("--socket={}", self.socket.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--log-error={}", self.log.display()))
            .arg(format!(
                "--pid-file={}",
                self.dir.join("mysqld.pid").display()
            ))
            .arg(format!("--tmpdir={}", self.dir.display()))
            .args(self.user_args())
            .args([
                "--bind-address=127.0.0.1",
                "--skip-log-bin",
                "--skip-name-resolve",
                "--innodb-flush-log-at-trx-commit=2",
                "--innodb-buffer-pool-size=128M",
                "--max-connections=500",
            ])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: Ctrl-C on the test run leaves it to the watchdog.
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not run {cmd:?}: {e}"))?;
        fs::write(&self.pid_file, child.id().to_string())
            .map_err(|e| format!("writing {} failed: {e}", self.pid_file.display()))?;
        match self.wait_ready(&mut child) {
            Ok(()) => {
                *self.child.lock().unwrap_or_else(PoisonError::into_inner) = Some(child);
                Ok(())
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("{e}; server log: {}", self.log_since(log_before)))
            }
        }
    }

    /// Stops the server (SIGTERM: a normal shutdown that cuts every session) and reaps it.
    fn stop(&self) -> Result<(), String> {
        let mut guard = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        let mut child = guard.take().ok_or("the server is not running")?;
        let mut term = Command::new("kill");
        term.args(["-TERM", &child.id().to_string()]);
        run(term)?;
        child
            .wait()
            .map(drop)
            .map_err(|e| format!("waiting for the server to stop: {e}"))
    }

    /// Loads the time zone tables (named session time zones need them). The converter warns
    /// about files in the zoneinfo tree that are not zones; those warnings are ignored.
    fn after_start(&self) -> Result<(), String> {
        let mut client = self.client();
        client.arg("mysql");
        let mut tz = Command::new(&self.tools.tzinfo_to_sql);
        tz.arg(ZONEINFO)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut producer = tz
            .spawn()
            .map_err(|e| format!("could not run {tz:?}: {e}"))?;
        let sql = producer
            .stdout
            .take()
            .ok_or("the time zone converter has no stdout")?;
        client.stdin(Stdio::from(sql));
        let loaded = run(client).map(drop);
        let _ = producer.wait();
        loaded.map_err(|e| format!("loading the time zone tables from {ZONEINFO} failed: {e}"))
    }

    fn source(&self, port: u16) -> String {
        format!(
            "throwaway {} server at {} port {port}",
            self.tools.server.display(),
            self.dir.display()
        )
    }

    fn url(&self, port: u16) -> String {
        format!("mysql://root@127.0.0.1:{port}")
    }
}

impl Throwaway {
    fn user_args(&self) -> Vec<&'static str> {
        if self.as_root {
            vec!["--user=root"]
        } else {
            Vec::new()
        }
    }

    /// A client command talking to the server over its socket as root.
    fn client(&self) -> Command {
        let mut cmd = Command::new(&self.tools.client);
        cmd.arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .arg("--user=root")
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        cmd
    }

    /// Polls `SELECT 1` over the socket until it succeeds, the server exits, or
    /// [`READY_TIMEOUT`] passes.
    fn wait_ready(&self, child: &mut Child) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("the server exited at start-up ({status})"));
            }
            let mut ping = self.client();
            ping.args(["--execute", "SELECT 1"]);
            match run(ping) {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    return Err(format!(
                        "not accepting connections on {} after {}s ({e})",
                        self.socket.display(),
                        READY_TIMEOUT.as_secs()
                    ));
                }
                Err(_) => thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    fn log_since(&self, from: u64) -> String {
        log_tail(&self.log, from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Creating a throwaway's data directory starts a bootstrap server; it must not delete the
    /// temporary tables of other servers sharing the system temp dir (the machine's own
    /// MariaDB keeps them in `/tmp`).
    #[test]
    fn preparing_a_throwaway_leaves_other_servers_temporary_tables_alone() {
        let tools = Tools::find().unwrap_or_else(|e| panic!("NOT RUN: {e}"));
        let canary = std::env::temp_dir().join(format!(
            "#sql-temptable-docket-canary-{}.MAI",
            std::process::id()
        ));
        fs::write(&canary, b"").expect("canary written");
        let server = Throwaway::new(tools).expect("directory");
        let prepared = server.prepare();
        let survived = canary.exists();
        let _ = fs::remove_file(&canary);
        let _ = fs::remove_dir_all(&server.dir);
        prepared.expect("data directory created");
        assert!(
            survived,
            "the bootstrap server deleted {}",
            canary.display()
        );
    }
}
