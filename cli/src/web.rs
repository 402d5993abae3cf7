//! `docket web`: the dashboard (`docket-web`) served by the docket binary on its own listener,
//! in token mode (`--token-file`; without one the site is read-only). See `docs/WEB.md`.

use crate::args::{store_config, Target};
use crate::backends;
use crate::error::CliError;
use docket_core::{PrimaryOrder, QueueConfig, Store, StoreConfig};
use docket_web::{serve, Access, Concurrency, Dashboard, Hosts, MIN_TOKEN_LEN};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `docket web`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    target: Target,
    /// Address to serve on (port 0: any free port; the address is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// File holding the token that run now, reschedule, cancel and the worker actions need
    /// (surrounding whitespace is ignored). Without it the site is read-only.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Read and hand out in priority order, as a scheduler or work queue with priority on does
    /// (needs 0002_priority); the backlog chart then has one bar per priority level.
    #[arg(long)]
    priority: bool,
    /// Custom order of a work-queue task type instead of FIFO: `TYPE=KEYS`, KEYS as in
    /// `docket queue --order`. Repeatable.
    #[arg(long = "order", value_name = "TYPE=KEYS", value_parser = parse_type_order)]
    orders: Vec<(String, PrimaryOrder)>,
    /// Another host name the dashboard is reached by (NAME or NAME:PORT), e.g. behind a proxy.
    /// Requests with any other `Host` are refused (421). By default only the listen address and,
    /// on loopback, localhost, 127.0.0.1 and `[::1]` with the port. Repeatable.
    #[arg(long = "public-host", value_name = "NAME[:PORT]", value_parser = docket_web::parse_public_host)]
    public_hosts: Vec<String>,
    /// Mark the session cookie `Secure` (browsers then send it over HTTPS only). Use it when a
    /// proxy serves the dashboard over HTTPS; docket web itself speaks plain HTTP.
    #[arg(long)]
    secure_cookies: bool,
    /// With --token-file: let anyone who reaches the port read every page, the JSON API and
    /// /metrics (only writes need the token). By default every read needs the token too (a
    /// session from the sign-in page, or `Authorization: Bearer`): an execution's page shows
    /// its task data.
    #[arg(long)]
    open_reads: bool,
    /// Page and API requests doing database work at once (1 to 64; default 2). `/metrics` (2)
    /// and execution pages (1) have turns of their own; on PostgreSQL and MySQL/MariaDB the
    /// pool is sized to hold them all (at least 10 connections).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,
    /// Page and API requests that may wait for a turn (0 to 1024; default 8), at most 0.75 s
    /// each; past that a request is answered 503 "busy" with `Retry-After: 1` at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(0..=1024))]
    concurrency_queue: u16,
}

/// Connections a dashboard pool needs besides the page turns: `/metrics`' 2 and the execution
/// pages' 1, plus 1 spare.
const OTHER_CONNECTIONS: u32 = 4;

fn parse_type_order(value: &str) -> Result<(String, PrimaryOrder), String> {
    let (task, keys) = value
        .split_once('=')
        .ok_or_else(|| "expected TYPE=KEYS, e.g. label=team,score:number:desc".to_owned())?;
    let order = PrimaryOrder::parse_custom(keys).map_err(|e| e.to_string())?;
    Ok((task.to_owned(), order))
}

fn read_token(path: &PathBuf) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::File {
        path: path.clone(),
        source,
    })?;
    let token = text.trim();
    let len = token.chars().count();
    if len < MIN_TOKEN_LEN {
        return Err(CliError::Web(format!(
            "the token in {} has {len} characters; at least {MIN_TOKEN_LEN} are needed \
             (e.g. head -c 24 /dev/urandom | base64 > {})",
            path.display(),
            path.display()
        )));
    }
    Ok(token.to_owned())
}

/// The dashboard's own store. On PostgreSQL and MariaDB its sessions carry the request
/// timeout as a server-side statement bound (`statement_timeout`, `max_statement_time`): a
/// request answered `503` at its timeout does not leave its statement running (the store API is
/// synchronous and has no cancel). Other backends: a plain store (docs/WEB.md, "Bounded time
/// and memory").
/// The pool holds `connections` (PostgreSQL and MySQL/MariaDB; others: their default).
fn connect(url: &str, config: StoreConfig, connections: u32) -> Result<Arc<dyn Store>, CliError> {
    let backend = backends::for_url(url)?;
    #[cfg(feature = "postgres")]
    if backend.name() == "postgres" {
        let options = docket_postgres::PgOptions {
            statement_timeout: Some(serve::REQUEST_TIMEOUT),
            max_connections: connections,
            ..docket_postgres::PgOptions::default()
        };
        return Ok(Arc::new(docket_postgres::connect_with(
            url, config, &options,
        )?));
    }
    #[cfg(feature = "mysql")]
    if backend.name() == "mysql" {
        let options = docket_mysql::MysqlOptions {
            max_statement_time: Some(serve::REQUEST_TIMEOUT),
            max_connections: connections,
            ..docket_mysql::MysqlOptions::default()
        };
        return Ok(Arc::new(docket_mysql::connect_with(url, config, &options)?));
    }
    // Other backends size their pools themselves.
    let _ = connections;
    Ok(backend.connect(url, config)?)
}

/// Runs `docket web` until interrupted.
pub fn run(args: &Args) -> Result<(), CliError> {
    let token = args.token_file.as_ref().map(read_token).transpose()?;
    let concurrency = Concurrency {
        work: usize::from(args.concurrency),
        queue: usize::from(args.concurrency_queue),
    };
    let store = connect(
        &args.target.database_url,
        store_config(&args.target.table, args.priority),
        (u32::from(args.concurrency) + OTHER_CONNECTIONS).max(10),
    )?;
    let mut queue_config = QueueConfig::default();
    queue_config.orders.extend(args.orders.iter().cloned());
    let read_only = token.is_none();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        // Bound first: with port 0 the allowed `Host` values need the port picked.
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let addr = listener.local_addr()?;
        let access = Access::Token {
            token,
            hosts: Hosts::new(addr, &args.public_hosts),
            secure_cookies: args.secure_cookies,
        };
        let web = Dashboard::new(store, access)
            .queue_config(queue_config)
            .open_reads(args.open_reads)
            .concurrency(concurrency)
            .build()
            .map_err(|e| CliError::Web(e.to_string()))?;
        say!(
            "docket web: serving {} ({}) on http://{addr}/ ({}; host names: {})",
            web.table(),
            web.backend(),
            if read_only {
                "read-only: no --token-file"
            } else if args.open_reads {
                "actions need the token, reads are open"
            } else {
                "reads and actions need the token"
            },
            web.hosts().unwrap_or_default().join(", ")
        );
        let shutdown = async {
            // Without a signal handler the process is stopped by the signal itself.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        serve::serve(
            listener,
            docket_web::router(web),
            serve::HEADER_READ_TIMEOUT,
            shutdown,
        )
        .await;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        web: super::Args,
    }

    fn parse(extra: &[&str]) -> Result<super::Args, clap::Error> {
        let args = ["docket", "--database-url", "sqlite://x.db"]
            .iter()
            .chain(extra)
            .copied();
        Cli::try_parse_from(args).map(|c| c.web)
    }

    /// `--concurrency` and `--concurrency-queue` set the dashboard's page turns; their
    /// defaults are the library's (`Concurrency::default`), and a bound of 0 turns (every
    /// request refused) or past 64 is refused when parsing.
    #[test]
    fn concurrency_flags_default_to_the_library_and_are_bounded() {
        let default = parse(&[]).unwrap();
        assert_eq!(
            (
                usize::from(default.concurrency),
                usize::from(default.concurrency_queue)
            ),
            (
                docket_web::Concurrency::default().work,
                docket_web::Concurrency::default().queue
            )
        );
        let set = parse(&["--concurrency", "6", "--concurrency-queue", "0"]).unwrap();
        assert_eq!((set.concurrency, set.concurrency_queue), (6, 0));
        for bad in [
            &["--concurrency", "0"][..],
            &["--concurrency", "65"],
            &["--concurrency-queue", "1025"],
            &["--concurrency", "-1"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    /// A token shorter than 16 characters is refused at start-up with a clear error.
    #[test]
    fn short_tokens_are_refused_at_start_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        for (text, ok) in [
            ("", false),
            ("short\n", false),
            ("  fifteen-chars!  \n", false),
            ("sixteen-chars-ok\n", true),
        ] {
            std::fs::write(&path, text).unwrap();
            match super::read_token(&path) {
                Ok(t) => assert!(ok && t == text.trim(), "{text:?}"),
                Err(e) => {
                    assert!(!ok, "{text:?}: {e}");
                    assert!(e.to_string().contains("at least 16"), "{e}");
                }
            }
        }
    }
}
