//! A worker process a benchmark starts (`bench latency`, `bench throughput --processes`):
//! lines to its stdin, lines from its stdout, its exit status checked at the end.

use crate::args::parse_table;
use crate::error::CliError;
use docket_core::TableName;
use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// Where a benchmark's worker process works: the arguments every worker command takes.
#[derive(Debug, clap::Args)]
pub struct WorkerTarget {
    /// The backend.
    #[arg(long)]
    pub(super) backend: String,
    /// Its URL.
    #[arg(long)]
    pub(super) database_url: String,
    /// The table.
    #[arg(long, value_parser = parse_table)]
    pub(super) table: TableName,
}

/// This executable's `bench <command>` worker process on `table` of `backend` at `url` (the
/// [`WorkerTarget`] arguments), `more` arguments after them.
pub(super) fn worker_command(
    command: &str,
    backend: &str,
    url: &str,
    table: &TableName,
    more: &[&str],
) -> Result<Command, CliError> {
    let mut worker = Command::new(std::env::current_exe()?);
    worker.args([
        "bench",
        command,
        "--backend",
        backend,
        "--database-url",
        url,
    ]);
    worker.args(["--table", &table.to_string()]).args(more);
    Ok(worker)
}

/// A started worker process.
pub(super) struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Worker {
    /// Starts `command` (stdin and stdout piped, stderr inherited) and waits until it says
    /// `ready`.
    pub(super) fn spawn(command: &mut Command) -> Result<Self, CliError> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| CliError::Bench(format!("cannot start a worker process: {e}")))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| CliError::Bench("a worker process's stdout".into()))?;
        let stdin = child.stdin.take();
        let mut worker = Self {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        };
        worker.until("ready")?;
        Ok(worker)
    }

    /// The process id.
    pub(super) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Reads lines until one equal to `word` (or starting with it and a space); returns it.
    pub(super) fn until(&mut self, word: &str) -> Result<String, CliError> {
        for line in self.lines.by_ref() {
            let line = line?;
            if line == word || line.starts_with(&format!("{word} ")) {
                return Ok(line);
            }
        }
        Err(CliError::Bench(format!(
            "a worker process ended before saying {word:?}"
        )))
    }

    /// Writes `line` to the worker's stdin.
    pub(super) fn say(&mut self, line: &str) -> Result<(), CliError> {
        if let Some(stdin) = &mut self.stdin {
            writeln!(stdin, "{line}")?;
            stdin.flush()?;
        }
        Ok(())
    }

    /// Closes stdin, hands every further line to `each`, and waits for the process: an error
    /// unless it exited successfully.
    pub(super) fn finish(mut self, mut each: impl FnMut(&str)) -> Result<(), CliError> {
        drop(self.stdin.take());
        for line in self.lines.by_ref() {
            each(&line?);
        }
        let status = self.child.wait()?;
        if !status.success() {
            return Err(CliError::Bench(format!(
                "a worker process failed: {status}"
            )));
        }
        Ok(())
    }
}
