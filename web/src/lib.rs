//! `docket web`: an operator dashboard and a worker page, served by the docket binary.
//!
//! Every page is rendered on the server (`pages`) from the same data the JSON API returns
//! (`api`, `model`); the store is synchronous, so every database call runs in
//! `tokio::task::spawn_blocking`. Writes need the token from `--token-file` (`auth`); without
//! one the site is read-only. See `docs/WEB.md`.

mod api;
mod auth;
mod chart;
mod error;
mod hosts;
mod layers;
mod limit;
mod metrics;
mod model;
mod pages;
mod serve;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_metrics;

use crate::error::CliError;
use crate::{backends, store_config, Target};
use axum::routing::{get, post};
use axum::Router;
use docket_core::{PrimaryOrder, QueueConfig, SystemClock};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use state::{Access, AppState, Web};

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
    #[arg(long = "public-host", value_name = "NAME[:PORT]", value_parser = hosts::parse_public_host)]
    public_hosts: Vec<String>,
    /// Mark the session cookie `Secure` (browsers then send it over HTTPS only). Use it when a
    /// proxy serves the dashboard over HTTPS; docket web itself speaks plain HTTP.
    #[arg(long)]
    secure_cookies: bool,
}

fn parse_type_order(value: &str) -> Result<(String, PrimaryOrder), String> {
    let (task, keys) = value
        .split_once('=')
        .ok_or_else(|| "expected TYPE=KEYS, e.g. label=team,score:number:desc".to_owned())?;
    let order = PrimaryOrder::parse_custom(keys).map_err(|e| e.to_string())?;
    Ok((task.to_owned(), order))
}

/// Every page and API route, behind the request timeout, the `Host` check and the security
/// headers.
pub fn router(web: AppState) -> Router {
    Router::new()
        .route("/", get(pages::overview))
        .route("/style.css", get(pages::stylesheet))
        .route("/login", get(pages::login_form).post(pages::login))
        .route("/logout", post(pages::logout))
        .route("/search", get(pages::search))
        .route("/tasks/{task}", get(pages::task))
        .route("/tasks/{task}/{action}", post(pages::task_action))
        .route("/tasks/{task}/bulk", get(pages::bulk_preview))
        .route("/tasks/{task}/bulk/{action}", post(pages::bulk_apply))
        .route("/executions/{task}/{instance}", get(pages::execution))
        .route(
            "/executions/{task}/{instance}/{action}",
            post(pages::execution_action),
        )
        .route("/queue", get(pages::queue))
        .route("/queue/{task_type}", get(pages::queue_type))
        .route("/queue/{task_type}/items/{item}", get(pages::item))
        .route("/queue/{task_type}/workers", get(pages::worker_lookup))
        .route("/queue/{task_type}/workers/{worker}", get(pages::worker))
        .route(
            "/queue/{task_type}/workers/{worker}/next",
            post(pages::worker_next),
        )
        .route(
            "/queue/{task_type}/workers/{worker}/items/{item}/{action}",
            post(pages::worker_action),
        )
        .route("/metrics", get(metrics::metrics))
        .route("/api/overview", get(api::overview))
        .route("/api/lag", get(api::lag))
        .route("/api/search", get(api::search))
        .route("/api/tasks/{task}", get(api::task))
        .route("/api/tasks/{task}/{action}", post(api::task_action))
        .route("/api/tasks/{task}/bulk", get(api::bulk_preview))
        .route("/api/tasks/{task}/bulk/{action}", post(api::bulk_apply))
        .route("/api/executions/{task}/{instance}", get(api::execution))
        .route(
            "/api/executions/{task}/{instance}/{action}",
            post(api::execution_action),
        )
        .route("/api/queue", get(api::queue))
        .route("/api/queue/{task_type}", get(api::queue_type))
        .route("/api/queue/{task_type}/items/{item}", get(api::item))
        .route("/api/queue/{task_type}/workers/{worker}", get(api::worker))
        .route(
            "/api/queue/{task_type}/workers/{worker}/next",
            post(api::worker_next),
        )
        .route(
            "/api/queue/{task_type}/workers/{worker}/items/{item}/{action}",
            post(api::worker_action),
        )
        .fallback(pages::not_found)
        .with_state(web.clone())
        .layer(axum::middleware::from_fn_with_state(
            serve::REQUEST_TIMEOUT,
            serve::request_timeout,
        ))
        .layer(axum::middleware::from_fn_with_state(
            web,
            layers::check_host,
        ))
        .layer(axum::middleware::from_fn(layers::security_headers))
}

/// Shortest token accepted: a short one could be guessed despite the sign-in rate limit.
pub const MIN_TOKEN_LEN: usize = 16;

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

/// Runs `docket web` until interrupted.
pub fn run(args: &Args) -> Result<(), CliError> {
    let backend = backends::for_url(&args.target.database_url)?;
    let token = args.token_file.as_ref().map(read_token).transpose()?;
    let store = backend.connect(
        &args.target.database_url,
        store_config(&args.target.table, args.priority),
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
        let hosts = hosts::Hosts::new(addr, &args.public_hosts);
        let access = Access {
            token,
            hosts,
            secure_cookies: args.secure_cookies,
        };
        let web = Arc::new(Web::new(
            store,
            Arc::new(SystemClock),
            queue_config,
            access,
        )?);
        say!(
            "docket web: serving {} ({}) on http://{addr}/ ({}; host names: {})",
            web.table,
            web.backend,
            if read_only {
                "read-only: no --token-file"
            } else {
                "actions need the token"
            },
            web.hosts.list().join(", ")
        );
        let shutdown = async {
            // Without a signal handler the process is stopped by the signal itself.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        serve::serve(listener, router(web), serve::HEADER_READ_TIMEOUT, shutdown).await;
        Ok(())
    })
}
