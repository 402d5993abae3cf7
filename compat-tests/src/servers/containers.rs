//! Servers in containers, through `testcontainers` and `testcontainers-modules`: the last step of
//! the resolution order (`DOCKET_<BACKEND>_URL`, then a throwaway server from local binaries,
//! then a container when a Docker engine is reachable), or the first after the URL when
//! `DOCKET_TESTCONTAINERS=1`.
//!
//! One container per backend per test process, started on first use and reused by every case
//! (the callers cache the resolved server in a `OnceLock`). Its port is published on 127.0.0.1 only,
//! on a fixed host port so that an outage (stop, start) keeps the URL. Nothing in Rust runs at
//! process exit and a static is never dropped, so testcontainers' remove-on-drop cannot clean up
//! here (and testcontainers-rs has no Ryuk reaper); instead:
//!
//! - the started container is kept in a static holder, so its handle is never dropped mid-run;
//! - a detached watchdog shell removes it (`docker rm -f -v`, else the Engine API over the unix
//!   socket with `curl`) once this process has ended, however it ended (normal exit after
//!   failed tests, a panic, a signal, SIGKILL);
//! - every container carries labels naming the host, boot and process that started it, and each
//!   start first removes containers whose process is gone (for a machine without the docker CLI
//!   and curl, or a watchdog that was killed).
//!
//! Images (name and tag) are overridable: `DOCKET_TC_POSTGRES_IMAGE`, `DOCKET_TC_MARIADB_IMAGE`,
//! `DOCKET_TC_MYSQL_IMAGE` (MySQL 8), `DOCKET_TC_MSSQL_IMAGE`, `DOCKET_TC_ORACLE_IMAGE`;
//! `DOCKET_TC_MYSQL_FLAVOR` picks MariaDB (default) or MySQL 8 for the `mysql` backend. Every
//! wait is bounded: engine ping 10 s, image pull `DOCKET_TC_PULL_TIMEOUT` (default 900 s;
//! `DOCKET_TC_PULL=0` never pulls), readiness `DOCKET_TC_STARTUP_TIMEOUT` (default per backend,
//! 120 s to 600 s), then a real connection within 60 s. Each failure names what was tried.

use std::fmt;
use std::time::Duration;

/// `DOCKET_TESTCONTAINERS`: `1` prefers containers for every backend (after the URL), `0` never
/// uses them; unset or empty uses them only when neither a URL nor a throwaway server is there.
pub const MODE_VAR: &str = "DOCKET_TESTCONTAINERS";
/// `DOCKET_TC_MYSQL_FLAVOR`: `mariadb` (default) or `mysql` (MySQL 8) for the `mysql` backend.
pub const MYSQL_FLAVOR_VAR: &str = "DOCKET_TC_MYSQL_FLAVOR";
/// `DOCKET_TC_MSSQL_ACCEPT_EULA=Y` accepts the SQL Server image's EULA; the suite does not
/// accept it on anyone's behalf.
pub const MSSQL_EULA_VAR: &str = "DOCKET_TC_MSSQL_ACCEPT_EULA";
/// `DOCKET_TC_PULL=0` never pulls a missing image.
pub const PULL_VAR: &str = "DOCKET_TC_PULL";
/// `DOCKET_TC_PULL_TIMEOUT`: seconds a missing image may take to pull (default 900).
pub const PULL_TIMEOUT_VAR: &str = "DOCKET_TC_PULL_TIMEOUT";
/// `DOCKET_TC_STARTUP_TIMEOUT`: seconds a container may take to log that it is ready (default
/// per backend: see [`Kind::startup_timeout`]).
pub const STARTUP_TIMEOUT_VAR: &str = "DOCKET_TC_STARTUP_TIMEOUT";

/// How `DOCKET_TESTCONTAINERS` asks servers to be resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `1`: a container for every backend (a `DOCKET_<BACKEND>_URL` still wins).
    Prefer,
    /// Unset or empty: a container only when there is neither a URL nor a throwaway server.
    Fallback,
    /// `0`: never a container.
    Off,
}

/// Reads [`MODE_VAR`]; an unknown value is an error naming the accepted ones.
pub fn mode() -> Result<Mode, String> {
    match std::env::var(MODE_VAR) {
        Err(std::env::VarError::NotPresent) => Ok(Mode::Fallback),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{MODE_VAR} is not valid UTF-8")),
        Ok(value) => match value.trim().to_ascii_lowercase().as_str() {
            "" => Ok(Mode::Fallback),
            "1" | "true" | "yes" | "on" => Ok(Mode::Prefer),
            "0" | "false" | "no" | "off" => Ok(Mode::Off),
            other => Err(format!(
                "{MODE_VAR}={other:?} is neither 1 (prefer containers) nor 0 (never)"
            )),
        },
    }
}

/// A backend of the compat suite, as far as servers go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// PostgreSQL.
    Postgres,
    /// MySQL or MariaDB ([`MYSQL_FLAVOR_VAR`] picks the image).
    Mysql,
    /// SQL Server.
    Mssql,
    /// Oracle Database Free.
    Oracle,
}

/// The server image a container runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// PostgreSQL (`testcontainers_modules::postgres`).
    Postgres,
    /// MariaDB (`testcontainers_modules::mariadb`).
    Mariadb,
    /// MySQL 8 (`testcontainers_modules::mysql`).
    Mysql8,
    /// SQL Server (`testcontainers_modules::mssql_server`).
    Mssql,
    /// Oracle Database Free (`testcontainers_modules::oracle::free`).
    Oracle,
}

impl Backend {
    /// Name as in test names and `NOT RUN` messages.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Mysql => "mysql",
            Backend::Mssql => "mssql",
            Backend::Oracle => "oracle",
        }
    }

    /// The image kind for this backend; for `mysql`, [`MYSQL_FLAVOR_VAR`] decides.
    pub fn kind(self) -> Result<Kind, String> {
        Ok(match self {
            Backend::Postgres => Kind::Postgres,
            Backend::Mssql => Kind::Mssql,
            Backend::Oracle => Kind::Oracle,
            Backend::Mysql => match std::env::var(MYSQL_FLAVOR_VAR) {
                Err(std::env::VarError::NotPresent) => Kind::Mariadb,
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(format!("{MYSQL_FLAVOR_VAR} is not valid UTF-8"))
                }
                Ok(flavor) => match flavor.trim().to_ascii_lowercase().as_str() {
                    "" | "mariadb" => Kind::Mariadb,
                    "mysql" | "mysql8" => Kind::Mysql8,
                    other => {
                        return Err(format!(
                            "{MYSQL_FLAVOR_VAR}={other:?} is neither mariadb nor mysql"
                        ))
                    }
                },
            },
        })
    }
}

impl Kind {
    /// The environment variable overriding the image (`name:tag`).
    pub fn image_var(self) -> &'static str {
        match self {
            Kind::Postgres => "DOCKET_TC_POSTGRES_IMAGE",
            Kind::Mariadb => "DOCKET_TC_MARIADB_IMAGE",
            Kind::Mysql8 => "DOCKET_TC_MYSQL_IMAGE",
            Kind::Mssql => "DOCKET_TC_MSSQL_IMAGE",
            Kind::Oracle => "DOCKET_TC_ORACLE_IMAGE",
        }
    }

    /// The official image used when [`Kind::image_var`] is unset.
    pub fn default_image(self) -> &'static str {
        match self {
            Kind::Postgres => "postgres:16",
            Kind::Mariadb => "mariadb:11.4",
            Kind::Mysql8 => "mysql:8.4",
            Kind::Mssql => "mcr.microsoft.com/mssql/server:2022-latest",
            Kind::Oracle => "gvenzl/oracle-free:23-slim-faststart",
        }
    }

    /// The image to run: [`Kind::image_var`] when set and non-empty, else the default.
    pub fn image(self) -> Result<ImageRef, String> {
        let var = self.image_var();
        match std::env::var(var) {
            Ok(value) if !value.trim().is_empty() => ImageRef::parse(value.trim())
                .map_err(|e| format!("{var}={value:?} is not an image reference: {e}")),
            Ok(_) | Err(std::env::VarError::NotPresent) => ImageRef::parse(self.default_image()),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{var} is not valid UTF-8")),
        }
    }

    /// Name in messages.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Postgres => "PostgreSQL",
            Kind::Mariadb => "MariaDB",
            Kind::Mysql8 => "MySQL 8",
            Kind::Mssql => "SQL Server",
            Kind::Oracle => "Oracle Database Free",
        }
    }

    /// The server's port inside the container.
    pub fn container_port(self) -> u16 {
        match self {
            Kind::Postgres => 5432,
            Kind::Mariadb | Kind::Mysql8 => 3306,
            Kind::Mssql => 1433,
            Kind::Oracle => 1521,
        }
    }

    /// How long the container may take to log that it is ready: [`STARTUP_TIMEOUT_VAR`] when
    /// set, else 120 s (PostgreSQL, MariaDB), 180 s (MySQL 8), 300 s (SQL Server), 600 s
    /// (Oracle, whose first start creates its database).
    pub fn startup_timeout(self) -> Result<Duration, String> {
        let default = match self {
            Kind::Postgres | Kind::Mariadb => 120,
            Kind::Mysql8 => 180,
            Kind::Mssql => 300,
            Kind::Oracle => 600,
        };
        seconds_var(STARTUP_TIMEOUT_VAR, Duration::from_secs(default))
    }
}

/// An image reference `name[:tag]` (the tag defaults to `latest`); `name` may carry a registry
/// with a port (`localhost:5000/postgres:16`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// Repository, with registry if any.
    pub name: String,
    /// Tag.
    pub tag: String,
}

impl ImageRef {
    /// Parses `name[:tag]`. Digests (`@sha256:...`) are not supported by testcontainers' image
    /// descriptor and are rejected.
    pub fn parse(reference: &str) -> Result<Self, String> {
        if reference.is_empty() || reference.chars().any(char::is_whitespace) {
            return Err("expected name[:tag] without spaces".to_owned());
        }
        if reference.contains('@') {
            return Err("digests are not supported, use name:tag".to_owned());
        }
        let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match reference[last_slash..].rfind(':') {
            Some(i) => {
                let split = last_slash + i;
                (&reference[..split], &reference[split + 1..])
            }
            None => (reference, "latest"),
        };
        if name.is_empty() || tag.is_empty() {
            return Err("expected name[:tag]".to_owned());
        }
        Ok(Self {
            name: name.to_owned(),
            tag: tag.to_owned(),
        })
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.tag)
    }
}

/// A duration in whole seconds from `var`, else `default`; zero or garbage is an error.
fn seconds_var(var: &str, default: Duration) -> Result<Duration, String> {
    match std::env::var(var) {
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{var} is not valid UTF-8")),
        Ok(value) if value.trim().is_empty() => Ok(default),
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(secs) if secs > 0 => Ok(Duration::from_secs(secs)),
            _ => Err(format!(
                "{var}={value:?} is not a positive number of seconds"
            )),
        },
    }
}

#[cfg(feature = "testcontainers")]
pub(crate) use engine::start;

/// Without the `testcontainers` feature there is no container step; the reason says how to get
/// one.
#[cfg(not(feature = "testcontainers"))]
pub(crate) fn start(backend: Backend) -> Result<super::Resolved, String> {
    let _ = backend;
    Err(
        "docket-compat-tests was built without its `testcontainers` feature (it is a default \
         feature: drop --no-default-features)"
            .to_owned(),
    )
}

#[cfg(feature = "testcontainers")]
mod engine {
    //! The part that talks to the Docker engine.

    use super::{seconds_var, Backend, ImageRef, Kind, MSSQL_EULA_VAR, PULL_TIMEOUT_VAR, PULL_VAR};
    use crate::servers::{free_port, keep_temp_dir, spawn_watchdog, Resolved, PORT_ATTEMPTS};
    use diesel::connection::SimpleConnection;
    use diesel::Connection;
    use futures_util::StreamExt;
    use std::any::Any;
    use std::collections::HashMap;
    use std::collections::VecDeque;
    use std::fs;
    use std::io::Write;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};
    use std::thread;
    use std::time::{Duration, Instant};
    use testcontainers::bollard::models::{HostConfig, PortBinding};
    use testcontainers::bollard::query_parameters::{
        CreateImageOptions, ListContainersOptions, LogsOptions, RemoveContainerOptions,
        StartContainerOptions, StopContainerOptions,
    };
    use testcontainers::bollard::Docker;
    use testcontainers::core::client::docker_client_instance;
    use testcontainers::core::logs::LogFrame;
    use testcontainers::core::ContainerPort;
    use testcontainers::runners::AsyncRunner;
    use testcontainers::{ContainerRequest, Image, ImageExt};
    use testcontainers_modules::{mariadb, mssql_server, mysql, oracle, postgres};
    use tokio::runtime::Runtime;

    /// Label on every container this module starts; the others name host, boot and process.
    const LABEL: &str = "org.docket.compat-tests";
    const LABEL_HOST: &str = "org.docket.compat-tests.host";
    const LABEL_BOOT: &str = "org.docket.compat-tests.boot";
    const LABEL_PID: &str = "org.docket.compat-tests.pid";
    /// Unique per start attempt, to find (and remove) a container whose start failed.
    const LABEL_ATTEMPT: &str = "org.docket.compat-tests.attempt";

    /// Upper bound on reaching the Docker engine.
    const ENGINE_TIMEOUT: Duration = Duration::from_secs(10);
    /// Upper bound on the first real connection once the container logged that it is ready.
    const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
    /// Default upper bound on pulling a missing image.
    const DEFAULT_PULL_TIMEOUT: Duration = Duration::from_secs(900);

    /// Lines of a container's log kept for an error message.
    const LOG_LINES: usize = 20;

    /// Credentials set on the containers; they listen on 127.0.0.1 only.
    const POSTGRES_PASSWORD: &str = "postgres";
    const MSSQL_SA_PASSWORD: &str = "Docket_tc_Passw0rd";
    const ORACLE_SYSTEM_PASSWORD: &str = "testsys";

    /// Container handles, kept for the life of the process (see the module docs).
    static HELD: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());

    /// The runtime every engine call runs on.
    fn runtime() -> Result<&'static Runtime, String> {
        static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
        RUNTIME
            .get_or_init(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("building a tokio runtime failed: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Starts (once per process: callers cache the result) a container for `backend`, waits
    /// until it accepts a real connection, and arranges its removal at process exit. The error
    /// says what was tried and why it failed.
    pub(crate) fn start(backend: Backend) -> Result<Resolved, String> {
        let kind = backend.kind()?;
        let image = kind.image()?;
        let started = Instant::now();
        let failed = |e: String| format!("{} container from {image}: {e}", kind.label());
        // Before pulling gigabytes: the SQL Server image is only usable with its EULA accepted.
        if kind == Kind::Mssql
            && !std::env::var(MSSQL_EULA_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("y"))
        {
            return Err(failed(format!(
                "the image needs its EULA accepted, which the suite does not do on anyone's \
                 behalf; set {MSSQL_EULA_VAR}=Y to accept it"
            )));
        }
        let rt = runtime().map_err(failed)?;
        let docker = rt.block_on(engine()).map_err(&failed)?;
        rt.block_on(sweep_stale(&docker));
        rt.block_on(ensure_image(&docker, &image))
            .map_err(&failed)?;
        let running = start_container(rt, &docker, kind, &image).map_err(&failed)?;
        let url = running.url.clone();
        if let Err(e) = wait_connectable(kind, &url, CONNECT_TIMEOUT) {
            let logs = rt.block_on(logs_tail(&docker, &running.id));
            rt.block_on(remove(&docker, &running.id));
            return Err(failed(format!(
                "it logged that it was ready but {e}; container log: {logs}"
            )));
        }
        let short_id: String = running.id.chars().take(12).collect();
        let source = format!(
            "testcontainers: {} image {image}, container {short_id} on 127.0.0.1:{}",
            kind.label(),
            running.host_port
        );
        // Past the test harness' output capture, so that every run shows where its server is.
        let _ = writeln!(
            std::io::stderr(),
            "docket compat-tests: {} via {source} (ready in {:.1} s; removed when this process \
             exits)",
            backend.name(),
            started.elapsed().as_secs_f64()
        );
        let id = running.id;
        Ok(Resolved {
            url: url.clone(),
            source,
            outage: Some(Box::new(move |down_for| {
                let rt = runtime()?;
                rt.block_on(async {
                    let options = StopContainerOptions {
                        t: Some(30),
                        ..Default::default()
                    };
                    docker
                        .stop_container(&id, Some(options))
                        .await
                        .map_err(|e| format!("stopping container {id} failed: {e}"))
                })?;
                thread::sleep(down_for);
                rt.block_on(async {
                    docker
                        .start_container(&id, None::<StartContainerOptions>)
                        .await
                        .map_err(|e| format!("starting container {id} again failed: {e}"))
                })?;
                let timeout = kind.startup_timeout()?;
                wait_connectable(kind, &url, timeout)
            })),
        })
    }

    /// The engine testcontainers is configured for (`DOCKER_HOST`, `~/.testcontainers.properties`,
    /// else the default socket), answering a ping within [`ENGINE_TIMEOUT`].
    async fn engine() -> Result<Docker, String> {
        let target = engine_description();
        let ping = async {
            let docker = docker_client_instance().await.map_err(|e| e.to_string())?;
            docker.ping().await.map_err(|e| e.to_string())?;
            Ok::<_, String>(docker)
        };
        match tokio::time::timeout(ENGINE_TIMEOUT, ping).await {
            Ok(Ok(docker)) => Ok(docker),
            Ok(Err(e)) => Err(format!("no Docker engine reachable at {target}: {e}")),
            Err(_) => Err(format!(
                "no Docker engine answered at {target} within {} s",
                ENGINE_TIMEOUT.as_secs()
            )),
        }
    }

    /// Where the engine is looked for, for messages.
    fn engine_description() -> String {
        match std::env::var("DOCKER_HOST") {
            Ok(host) if !host.is_empty() => format!("DOCKER_HOST={host}"),
            _ => "unix:///var/run/docker.sock (DOCKER_HOST unset)".to_owned(),
        }
    }

    /// Pulls `image` unless the engine has it; bounded by [`PULL_TIMEOUT_VAR`], refused when
    /// [`PULL_VAR`] is `0`.
    async fn ensure_image(docker: &Docker, image: &ImageRef) -> Result<(), String> {
        let reference = image.to_string();
        match docker.inspect_image(&reference).await {
            Ok(_) => return Ok(()),
            Err(testcontainers::bollard::errors::Error::DockerResponseServerError {
                status_code: 404,
                ..
            }) => {}
            Err(e) => return Err(format!("inspecting image {reference} failed: {e}")),
        }
        if std::env::var(PULL_VAR).is_ok_and(|v| v.trim() == "0") {
            return Err(format!(
                "image {reference} is not on the Docker engine and pulling is off ({PULL_VAR}=0)"
            ));
        }
        let timeout = seconds_var(PULL_TIMEOUT_VAR, DEFAULT_PULL_TIMEOUT)?;
        let pull = async {
            let options = CreateImageOptions {
                from_image: Some(image.name.clone()),
                tag: Some(image.tag.clone()),
                ..Default::default()
            };
            let mut progress = docker.create_image(Some(options), None, None);
            while let Some(step) = progress.next().await {
                step.map_err(|e| e.to_string())?;
            }
            Ok::<_, String>(())
        };
        match tokio::time::timeout(timeout, pull).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!(
                "image {reference} is not on the Docker engine and pulling it failed: {e}"
            )),
            Err(_) => Err(format!(
                "image {reference} is not on the Docker engine and pulling it took longer than \
                 {} s ({PULL_TIMEOUT_VAR})",
                timeout.as_secs()
            )),
        }
    }

    /// A started container: its id, host port and URL.
    struct Running {
        id: String,
        host_port: u16,
        url: String,
    }

    /// Starts the container on a free 127.0.0.1 port (another one if that port was taken in the
    /// meantime), and has it removed once this process is gone.
    fn start_container(
        rt: &Runtime,
        docker: &Docker,
        kind: Kind,
        image: &ImageRef,
    ) -> Result<Running, String> {
        let timeout = kind.startup_timeout()?;
        let mut last_error = String::new();
        for attempt in 0..PORT_ATTEMPTS {
            let host_port = free_port().map_err(|e| format!("finding a free port failed: {e}"))?;
            let attempt_label = format!(
                "{}-{}-{attempt}-{}",
                std::process::id(),
                kind.container_port(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0)
            );
            let attempt = Attempt {
                kind,
                image,
                host_port,
                timeout,
                label: &attempt_label,
            };
            let started = rt.block_on(async {
                match kind {
                    Kind::Postgres => {
                        attempt
                            .run(
                                postgres::Postgres::default()
                                    .with_password(POSTGRES_PASSWORD)
                                    .with_cmd([
                                        "-c",
                                        "fsync=off",
                                        "-c",
                                        "synchronous_commit=off",
                                        "-c",
                                        "full_page_writes=off",
                                        "-c",
                                        "max_connections=300",
                                        "-c",
                                        "shared_buffers=128MB",
                                    ])
                                    .with_shm_size(256 * 1024 * 1024),
                            )
                            .await
                    }
                    Kind::Mariadb => {
                        attempt
                            .run(mariadb::Mariadb::default().with_cmd(MARIADB_ARGS))
                            .await
                    }
                    Kind::Mysql8 => {
                        attempt
                            .run(
                                mysql::Mysql::default()
                                    .with_cmd(MARIADB_ARGS.into_iter().chain(["--skip-log-bin"])),
                            )
                            .await
                    }
                    Kind::Mssql => {
                        attempt
                            .run(
                                mssql_server::MssqlServer::default()
                                    .with_sa_password(MSSQL_SA_PASSWORD)
                                    .with_accept_eula(),
                            )
                            .await
                    }
                    Kind::Oracle => attempt.run(oracle::free::Oracle::default()).await,
                }
            });
            match started {
                Ok(id) => {
                    return Ok(Running {
                        id,
                        host_port,
                        url: url(kind, host_port),
                    })
                }
                Err(e) => {
                    // Whatever the failure, no container of this attempt stays behind; its log
                    // tells why it never became ready.
                    let logs = rt.block_on(remove_attempt(docker, &attempt_label));
                    let port_taken = e.contains("address already in use")
                        || e.contains("port is already allocated");
                    last_error = match logs {
                        Some(logs) if !e.contains("container log:") => {
                            format!("{e}; container log: {logs}")
                        }
                        _ => e,
                    };
                    if !port_taken {
                        break;
                    }
                }
            }
        }
        Err(last_error)
    }

    /// One attempt to start a container: what it runs, where its port is published, how long
    /// it may take to become ready, and the label that finds it again.
    struct Attempt<'a> {
        kind: Kind,
        image: &'a ImageRef,
        host_port: u16,
        timeout: Duration,
        label: &'a str,
    }

    /// The server flags MariaDB and MySQL 8 share: room for the suite's connections, and
    /// durability traded for speed.
    const MARIADB_ARGS: [&str; 3] = [
        "--max-connections=500",
        "--innodb-flush-log-at-trx-commit=2",
        "--innodb-buffer-pool-size=128M",
    ];

    impl Attempt<'_> {
        /// Runs `request` from the image with the port published on 127.0.0.1:`host_port`, the
        /// labels that let this module find and remove it, and the startup bound; keeps the
        /// handle.
        async fn run<I: Image + 'static>(
            &self,
            request: impl Into<ContainerRequest<I>>,
        ) -> Result<String, String> {
            let Attempt {
                kind,
                image,
                host_port,
                timeout,
                label: attempt,
            } = *self;
            // testcontainers removes a container that timed out before we can read its log: keep
            // the last lines as they come.
            let log = Arc::new(Mutex::new(VecDeque::<String>::new()));
            let sink = Arc::clone(&log);
            let container_port = kind.container_port();
            let binding = format!("{container_port}/tcp");
            let request: ContainerRequest<I> = request
                .into()
                .with_name(image.name.clone())
                .with_tag(image.tag.clone())
                .with_mapped_port(host_port, ContainerPort::Tcp(container_port))
                .with_host_config_modifier(move |config: &mut HostConfig| {
                    config.publish_all_ports = Some(false);
                    config.port_bindings = Some(HashMap::from([(
                        binding.clone(),
                        Some(vec![PortBinding {
                            host_ip: Some("127.0.0.1".to_owned()),
                            host_port: Some(host_port.to_string()),
                        }]),
                    )]));
                })
                .with_labels(labels(attempt))
                .with_log_consumer(move |frame: &LogFrame| {
                    let mut lines = sink.lock().unwrap_or_else(PoisonError::into_inner);
                    for line in String::from_utf8_lossy(frame.bytes()).lines() {
                        if !line.trim().is_empty() {
                            if lines.len() == LOG_LINES {
                                lines.pop_front();
                            }
                            lines.push_back(line.to_owned());
                        }
                    }
                })
                .with_startup_timeout(timeout);
            let container = request.start().await.map_err(|e| {
                let e = e.to_string();
                let reason = if e.to_ascii_lowercase().contains("timeout") {
                    format!(
                        "it did not log that it was ready within {} s ({}; raise \
                         DOCKET_TC_STARTUP_TIMEOUT for a slow machine)",
                        timeout.as_secs(),
                        e
                    )
                } else {
                    format!("starting it failed: {e}")
                };
                let lines = log.lock().unwrap_or_else(PoisonError::into_inner);
                if lines.is_empty() {
                    reason
                } else {
                    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
                    format!("{reason}; container log: {}", lines.join(" | "))
                }
            })?;
            let id = container.id().to_owned();
            arrange_removal(&id)?;
            HELD.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Box::new(container));
            Ok(id)
        }
    }

    /// The labels of a container started by this process in this attempt.
    fn labels(attempt: &str) -> HashMap<String, String> {
        HashMap::from([
            (LABEL.to_owned(), "1".to_owned()),
            (LABEL_HOST.to_owned(), host_name()),
            (LABEL_BOOT.to_owned(), boot_id()),
            (LABEL_PID.to_owned(), std::process::id().to_string()),
            (LABEL_ATTEMPT.to_owned(), attempt.to_owned()),
        ])
    }

    fn host_name() -> String {
        fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    }

    fn boot_id() -> String {
        fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    }

    /// A detached watchdog removes container `id` once this process has ended.
    fn arrange_removal(id: &str) -> Result<(), String> {
        if !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!("unexpected container id {id:?}"));
        }
        let socket = match std::env::var("DOCKER_HOST") {
            Ok(host) => host.strip_prefix("unix://").map(str::to_owned),
            Err(_) => Some("/var/run/docker.sock".to_owned()),
        };
        let mut stop = format!("docker rm -f -v {id} >/dev/null 2>&1");
        if let Some(socket) = socket {
            let socket = super::super::shell_quote(std::path::Path::new(&socket))?;
            stop.push_str(&format!(
                " || curl -fsS --max-time 60 --unix-socket {socket} -X DELETE \
                 'http://localhost/containers/{id}?force=true&v=true' >/dev/null 2>&1"
            ));
        }
        let dir = keep_temp_dir("docket-tc-")?;
        spawn_watchdog(&stop, &dir)
    }

    /// Removes containers of this host whose process is gone (this boot: no such pid; another
    /// boot: all). Best effort: errors are ignored, the watchdogs are the main path.
    async fn sweep_stale(docker: &Docker) {
        let host = host_name();
        let boot = boot_id();
        let options = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([(
                "label".to_owned(),
                vec![format!("{LABEL_HOST}={host}")],
            )])),
            ..Default::default()
        };
        let Ok(containers) = docker.list_containers(Some(options)).await else {
            return;
        };
        for container in containers {
            let (Some(id), Some(labels)) = (container.id, container.labels) else {
                continue;
            };
            let same_boot = labels.get(LABEL_BOOT).is_some_and(|b| *b == boot);
            let alive = labels
                .get(LABEL_PID)
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| fs::metadata(format!("/proc/{pid}")).is_ok());
            if !(same_boot && alive) {
                remove(docker, &id).await;
            }
        }
    }

    /// Removes the container(s) of a failed start attempt, returning the tail of the log of the
    /// first one.
    async fn remove_attempt(docker: &Docker, attempt: &str) -> Option<String> {
        let options = ListContainersOptions {
            all: true,
            filters: Some(HashMap::from([(
                "label".to_owned(),
                vec![format!("{LABEL_ATTEMPT}={attempt}")],
            )])),
            ..Default::default()
        };
        let containers = docker.list_containers(Some(options)).await.ok()?;
        let mut logs = None;
        for id in containers.into_iter().filter_map(|c| c.id) {
            if logs.is_none() {
                logs = Some(logs_tail(docker, &id).await);
            }
            remove(docker, &id).await;
        }
        logs
    }

    async fn remove(docker: &Docker, id: &str) {
        let options = RemoveContainerOptions {
            force: true,
            v: true,
            ..Default::default()
        };
        let _ = docker.remove_container(id, Some(options)).await;
    }

    /// The last 20 lines of a container's stdout and stderr, joined for a message.
    async fn logs_tail(docker: &Docker, id: &str) -> String {
        let options = LogsOptions {
            stdout: true,
            stderr: true,
            tail: "20".to_owned(),
            ..Default::default()
        };
        let mut stream = docker.logs(id, Some(options));
        let mut text = String::new();
        let read = async {
            while let Some(Ok(chunk)) = stream.next().await {
                text.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(10), read).await;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.is_empty() {
            "(empty)".to_owned()
        } else {
            lines.join(" | ")
        }
    }

    /// The admin URL of a container of `kind` published on 127.0.0.1:`port`.
    fn url(kind: Kind, port: u16) -> String {
        match kind {
            Kind::Postgres => {
                format!("postgres://postgres:{POSTGRES_PASSWORD}@127.0.0.1:{port}/postgres")
            }
            // Both modules set an empty root password for root@'%'.
            Kind::Mariadb | Kind::Mysql8 => format!("mysql://root@127.0.0.1:{port}"),
            Kind::Mssql => format!(
                "mssql://127.0.0.1:{port};user=sa;password={MSSQL_SA_PASSWORD};\
                 trustServerCertificate=true"
            ),
            Kind::Oracle => {
                format!("oracle://system:{ORACLE_SYSTEM_PASSWORD}@127.0.0.1:{port}/FREEPDB1")
            }
        }
    }

    /// Connects and runs a trivial statement until it works or `timeout` passes.
    fn wait_connectable(kind: Kind, url: &str, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let attempt = match kind {
                Kind::Postgres => diesel::PgConnection::establish(url)
                    .map_err(|e| e.to_string())
                    .and_then(|mut c| c.batch_execute("SELECT 1").map_err(|e| e.to_string())),
                Kind::Mariadb | Kind::Mysql8 => diesel::MysqlConnection::establish(url)
                    .map_err(|e| e.to_string())
                    .and_then(|mut c| c.batch_execute("SELECT 1").map_err(|e| e.to_string())),
                Kind::Mssql => docket_mssql::connect(url, docket_core::StoreConfig::default())
                    .map_err(|e| e.to_string())
                    .and_then(|store| {
                        store
                            .connector()
                            .batch_execute("SELECT 1")
                            .map_err(|e| e.to_string())
                    }),
                Kind::Oracle => diesel_oci::OciConnection::establish(url)
                    .map_err(|e| e.to_string())
                    .and_then(|mut c| {
                        c.batch_execute("SELECT 1 FROM DUAL")
                            .map_err(|e| e.to_string())
                    }),
            };
            match attempt {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() >= deadline => {
                    return Err(format!(
                        "no connection to 127.0.0.1 worked within {} s (last error: {e})",
                        timeout.as_secs()
                    ))
                }
                Err(_) => thread::sleep(Duration::from_millis(250)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_references_split_at_the_tag() {
        let parsed = |s: &str| ImageRef::parse(s).map(|r| (r.name, r.tag));
        assert_eq!(
            parsed("postgres:16"),
            Ok(("postgres".to_owned(), "16".to_owned()))
        );
        assert_eq!(
            parsed("postgres"),
            Ok(("postgres".to_owned(), "latest".to_owned()))
        );
        assert_eq!(
            parsed("localhost:5000/docket-tc/postgres:bookworm"),
            Ok((
                "localhost:5000/docket-tc/postgres".to_owned(),
                "bookworm".to_owned()
            ))
        );
        assert_eq!(
            parsed("localhost:5000/postgres"),
            Ok(("localhost:5000/postgres".to_owned(), "latest".to_owned()))
        );
        assert!(parsed("postgres@sha256:abc").is_err());
        assert!(parsed("postgres:").is_err());
        assert!(parsed("").is_err());
        assert!(parsed("a b").is_err());
    }

    #[test]
    fn every_kind_has_a_default_image() {
        for kind in [
            Kind::Postgres,
            Kind::Mariadb,
            Kind::Mysql8,
            Kind::Mssql,
            Kind::Oracle,
        ] {
            assert!(ImageRef::parse(kind.default_image()).is_ok(), "{kind:?}");
        }
    }

    /// Set in the environment of a child test process: the backend whose server it resolves.
    const CHILD_VAR: &str = "DOCKET_TC_RESOLVE_CHILD";
    /// Starts the child's outcome line.
    const OUTCOME: &str = "docket-tc-outcome: ";

    /// Resolves one backend's server in this process and prints the outcome on one line,
    /// `docket-tc-outcome: RESOLVED <source>` or `docket-tc-outcome: NOT-RESOLVED <reason>`. It acts only in a child started by
    /// [`resolve_in_child`] (resolution is cached per process and reads the environment, which
    /// these tests set per child); in a normal run it has nothing to do. The script
    /// `scripts/testcontainers-suite.sh` also uses it to report why SQL Server and Oracle do
    /// not run.
    #[test]
    fn resolve_in_this_process() {
        let Ok(backend) = std::env::var(CHILD_VAR) else {
            return;
        };
        let outcome = match backend.as_str() {
            "postgres" => crate::servers::postgres::SERVER.admin_url().map(|_| {
                crate::servers::postgres::SERVER
                    .source()
                    .unwrap_or_default()
                    .to_owned()
            }),
            "mysql" => crate::servers::mysql::SERVER.admin_url().map(|_| {
                crate::servers::mysql::SERVER
                    .source()
                    .unwrap_or_default()
                    .to_owned()
            }),
            "mssql" => remote(&crate::servers::remote::MSSQL),
            "oracle" => remote(&crate::servers::remote::ORACLE),
            other => panic!("{CHILD_VAR}={other:?} names no backend"),
        };
        match outcome {
            Ok(source) => println!("\n{OUTCOME}RESOLVED {source}"),
            Err(e) => println!("\n{OUTCOME}NOT-RESOLVED {e}"),
        }
    }

    /// A remote backend's outcome: where its server came from, or why there is none.
    fn remote(r: &crate::servers::Server) -> Result<String, crate::servers::NotRun> {
        r.admin_url()
            .map(|_| r.source().unwrap_or_default().to_owned())
    }

    /// Runs [`resolve_in_this_process`] for `backend` in a child test process with containers
    /// preferred, no server URL, and `env`; returns the outcome line and the child's run time.
    fn resolve_in_child(backend: &str, env: &[(&str, &str)]) -> (String, std::time::Duration) {
        let exe = std::env::current_exe().expect("the test binary knows its path");
        let started = std::time::Instant::now();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "servers::containers::tests::resolve_in_this_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_VAR, backend)
            .env(MODE_VAR, "1")
            .env_remove("DOCKET_POSTGRES_URL")
            .env_remove("DOCKET_MYSQL_URL")
            .env_remove("DOCKET_MSSQL_URL")
            .env_remove("DOCKET_ORACLE_URL")
            .envs(env.iter().copied())
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix(OUTCOME))
            .unwrap_or_else(|| {
                panic!(
                    "the child printed no outcome: {stdout} {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
            .to_owned();
        (line, started.elapsed())
    }

    /// With `DOCKET_TESTCONTAINERS=1` and no engine at `DOCKER_HOST`, the reason names the
    /// engine that was tried, and comes quickly.
    #[test]
    fn a_missing_engine_is_named_quickly() {
        let (line, took) = resolve_in_child(
            "postgres",
            &[
                ("DOCKER_HOST", "unix:///nonexistent/docket-tc/docker.sock"),
                ("DOCKET_TC_POSTGRES_IMAGE", "docket-tc/postgres:probe"),
            ],
        );
        assert!(line.starts_with("NOT-RESOLVED "), "{line}");
        assert!(line.contains("DOCKET_POSTGRES_URL unset"), "{line}");
        assert!(line.contains("DOCKET_TESTCONTAINERS=1"), "{line}");
        if cfg!(feature = "testcontainers") {
            assert!(
                line.contains("no Docker engine")
                    && line.contains("unix:///nonexistent/docket-tc/docker.sock"),
                "{line}"
            );
            assert!(
                line.contains("docket-tc/postgres:probe"),
                "names the image: {line}"
            );
        } else {
            assert!(line.contains("`testcontainers` feature"), "{line}");
        }
        assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
    }

    /// A missing image (with pulling off) is named; so is the engine when there is none.
    #[test]
    fn a_missing_image_is_named() {
        let image = "docket-tc/no-such-image:none";
        let (line, took) = resolve_in_child(
            "mysql",
            &[
                ("DOCKET_TC_MARIADB_IMAGE", image),
                ("DOCKET_TC_MYSQL_FLAVOR", "mariadb"),
                (PULL_VAR, "0"),
            ],
        );
        assert!(line.starts_with("NOT-RESOLVED "), "{line}");
        assert!(line.contains(image), "{line}");
        if cfg!(feature = "testcontainers") {
            assert!(
                line.contains("no Docker engine")
                    || line.contains("is not on the Docker engine and pulling is off"),
                "{line}"
            );
        }
        assert!(took < std::time::Duration::from_secs(60), "took {took:?}");
    }

    /// A container that does not log readiness within the bound is reported with its log and
    /// removed; without an engine or the image, that is what the reason says. The image is the
    /// configured MariaDB one, whose first start (data directory, time zone tables, restart)
    /// takes seconds.
    #[test]
    fn a_container_that_never_gets_ready_is_bounded() {
        let (line, took) = resolve_in_child(
            "mysql",
            &[
                ("DOCKET_TC_MYSQL_FLAVOR", "mariadb"),
                (STARTUP_TIMEOUT_VAR, "1"),
                (PULL_VAR, "0"),
            ],
        );
        assert!(line.starts_with("NOT-RESOLVED "), "{line}");
        if cfg!(feature = "testcontainers") {
            assert!(
                line.contains("no Docker engine")
                    || line.contains("is not on the Docker engine")
                    || (line.contains("did not log that it was ready within 1 s")
                        && line.contains("container log:")),
                "{line}"
            );
        }
        assert!(took < std::time::Duration::from_secs(60), "took {took:?}");
    }

    /// SQL Server's EULA is never accepted on the user's behalf.
    #[test]
    fn sql_server_needs_its_eula_accepted() {
        let (line, _) = resolve_in_child("mssql", &[(MSSQL_EULA_VAR, "")]);
        assert!(line.starts_with("NOT-RESOLVED "), "{line}");
        assert!(line.contains("DOCKET_MSSQL_URL unset"), "{line}");
        if cfg!(feature = "testcontainers") {
            assert!(line.contains(MSSQL_EULA_VAR), "{line}");
        }
    }
}
