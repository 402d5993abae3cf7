//! `docket`: migrate, inspect and explain docket tables from a shell, feed the work queue a CSV
//! file, watch a scheduler run with `docket demo` (no database needed), or serve a dashboard
//! with `docket web`.

/// `println!` that returns an error instead of panicking when stdout is closed (e.g. piped
/// into `head`); use in functions returning `Result<_, CliError>`.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

mod args;
mod backends;
mod bench;
mod demo;
mod enqueue;
mod error;
mod explain;
mod fair_demo;
mod index;
mod limits;
mod mode;
mod progress;
mod queue;
mod web;

use args::{store_config, Target};
use clap::{Parser, Subcommand};
use docket_core::StoreConfig;
use error::CliError;
use std::process::ExitCode;

/// Persistent, cluster-safe task scheduling in the database you already run.
#[derive(Debug, Parser)]
#[command(name = "docket", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Apply pending migrations to a docket table and print the versions applied (with --adopt:
    /// take over an existing table, such as db-scheduler's, first).
    Migrate(MigrateArgs),
    /// Show what would be handed out next: due, unpicked executions in hand-out order (and how
    /// many work-queue items the table holds), or with --worker the work-queue items a worker
    /// would get.
    Queue(queue::Args),
    /// Enqueue a CSV file as one batch of work-queue items (all rows or none).
    Enqueue(enqueue::Args),
    /// Create (or with --drop, drop) the index serving a task type's custom work-queue order.
    Index(index::Args),
    /// List, set or clear the limits the whole cluster keeps per task (at most N running, at
    /// most N starts per window, per task or per key; needs 0009_limits).
    Limits(limits::Args),
    /// Print the SQL a backend's dialect emits (and, with --database-url, the query plan).
    Explain(explain::Args),
    /// Run a real scheduler on an embedded SQLite file and narrate the order of execution.
    Demo(DemoArgs),
    /// Benchmarks (`docket bench priority`: what the priority toggle costs).
    Bench(bench::Args),
    /// Serve the operator dashboard and the worker pages (and their JSON API) over HTTP.
    Web(web::Args),
}

/// Arguments of `docket demo`.
#[derive(Debug, clap::Args)]
struct DemoArgs {
    /// Instead: strict, weighted and aging priority side by side under a continuous
    /// high-priority feed (manual clock), and when each hands out a waiting low-priority task.
    #[arg(long)]
    fair: bool,
}

#[derive(Debug, clap::Args)]
struct MigrateArgs {
    #[command(flatten)]
    target: Target,
    /// Stop after this migration (e.g. 0001_base); default: all.
    #[arg(long, value_name = "NAME")]
    to: Option<String>,
    /// Adopt an existing table without docket's migration history (e.g. one created by
    /// db-scheduler's DDL): check its columns and types, record the migrations it already
    /// satisfies, create only the indexes it lacks, then migrate as usual. Never re-creates or
    /// rewrites the table; an incompatible table is an error naming the column.
    #[arg(long)]
    adopt: bool,
}

fn migrate(args: &MigrateArgs) -> Result<(), CliError> {
    let backend = backends::for_url(&args.target.database_url)?;
    let known = backend.migration_names();
    if let Some(to) = &args.to {
        if !known.contains(&to.as_str()) {
            return Err(CliError::UnknownMigration {
                name: to.clone(),
                backend: backend.name(),
                known: known.join(", "),
            });
        }
    }
    let config = store_config(&args.target.table, false);
    if args.adopt {
        return adopt(args, backend, config);
    }
    let applied = progress::while_running(
        format!("migrating {} ({})", args.target.table, backend.name()),
        || backend.migrate(&args.target.database_url, config, args.to.as_deref()),
    )?;
    if applied.is_empty() {
        say!(
            "{} is up to date: no migration to apply ({} known: {})",
            args.target.table,
            backend.name(),
            known.join(", ")
        );
    }
    for version in applied {
        say!("applied {version}");
    }
    Ok(())
}

fn adopt(
    args: &MigrateArgs,
    backend: &dyn docket_core::backend::Backend,
    config: StoreConfig,
) -> Result<(), CliError> {
    let url = &args.target.database_url;
    let done = progress::while_running(
        format!("adopting {} ({})", args.target.table, backend.name()),
        || backend.connect(url, config)?.adopt(args.to.as_deref()),
    )?;
    for version in &done.adopted {
        say!("adopted {version} (the table already has it; recorded, not run)");
    }
    for index in &done.created_indexes {
        say!("created index {index}");
    }
    for version in &done.applied {
        say!("applied {version}");
    }
    if done.adopted.is_empty() && done.applied.is_empty() {
        say!(
            "{} is up to date: nothing to adopt or apply",
            args.target.table
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Migrate(args) => migrate(args),
        Command::Queue(args) => queue::run(args),
        Command::Enqueue(args) => enqueue::run(args),
        Command::Index(args) => index::run(args),
        Command::Limits(args) => limits::run(args),
        Command::Explain(args) => explain::run(args),
        Command::Demo(a) if a.fair => fair_demo::run(),
        Command::Demo(_) => demo::run(),
        Command::Bench(args) => bench::run(args),
        Command::Web(args) => web::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`docket explain --all | head`): not an error.
        Err(CliError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
