//! `docket demo`: a real scheduler (worker threads, polling, lock-and-fetch, priority on) on an
//! embedded SQLite file in a temporary directory, narrated. No flags, no database server.
//!
//! The account of *why* things ran in that order is computed from what the database actually
//! handed out: a listener records every lock-and-fetch batch ([`SchedulerEvent::Handed`], in
//! hand-out order), and each execution is compared with the one handed out before it.

use crate::error::CliError;
use crate::progress;
use chrono::{DateTime, Duration, Utc};
use docket_core::{
    Execution, FailurePolicy, ListFilter, PollingStrategy, Priority, Schedule, Scheduler,
    SchedulerConfig, SchedulerEvent, StoreConfig, Task, TaskDescriptor, TaskError,
};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration as StdDuration, Instant};

const REPORT: TaskDescriptor = TaskDescriptor::new("report");
const UPLOAD: TaskDescriptor = TaskDescriptor::new("flaky-upload");
const HEARTBEAT: &str = "heartbeat";
const THREADS: usize = 3;
/// Simulated work per execution, so that several threads are busy at once.
const WORK: StdDuration = StdDuration::from_millis(60);
const HEARTBEAT_EVERY_MS: u64 = 300;
const HEARTBEAT_RUNS: u32 = 3;
const UPLOAD_FAILURES: u32 = 2;
const BACKOFF_MS: u64 = 200;
/// The demo gives up (and fails) if the scheduler has not done everything by then.
const PATIENCE: StdDuration = StdDuration::from_secs(20);

/// One lock-and-fetch batch, as the database returned it.
#[derive(Debug)]
struct Claim {
    /// Since the demo started.
    at: StdDuration,
    /// The `now` the due-query ran with.
    now: DateTime<Utc>,
    /// The claimed rows, in hand-out order.
    rows: Vec<Execution>,
}

/// What the handlers and the listener report to the main thread.
enum Event {
    Completed(StdDuration, Execution),
    Failed(StdDuration, Execution, String, Option<DateTime<Utc>>),
}

fn name(e: &Execution) -> String {
    if e.task_name == HEARTBEAT {
        format!("{HEARTBEAT} (recurring)")
    } else {
        e.task_instance.clone()
    }
}

fn priority(e: &Execution) -> String {
    e.priority
        .map_or_else(|| "no priority".to_owned(), |p| format!("priority {p}"))
}

fn secs(d: Duration) -> String {
    format!("{:+.2}s", d.num_milliseconds() as f64 / 1000.0)
}

/// How a poll of `config` claims, in words: the strategy and its claim size.
fn claim_rule(config: &SchedulerConfig) -> String {
    let (_, upper) = config.polling.limits(config.threads);
    match config.polling {
        PollingStrategy::LockAndFetch { .. } => format!(
            "lock-and-fetch claims up to {upper} per poll, less what is still queued, in one \
             UPDATE ... RETURNING"
        ),
        PollingStrategy::FetchAndLockOnExecute { .. } => format!(
            "fetch-and-lock-on-execute reads up to {upper} due executions per poll and claims \
             each right before it runs"
        ),
    }
}

/// Why `cur` was handed out right after `prev`, which was claimed by a due-query run at
/// `prev_now`.
fn why(
    prev: Option<(&Execution, DateTime<Utc>)>,
    cur: &Execution,
    origin: DateTime<Utc>,
) -> String {
    let Some((prev, prev_now)) = prev else {
        return "first: the highest priority among the due executions".to_owned();
    };
    if cur.execution_time > prev_now {
        // It was not due yet when the one before it was handed out.
        let reason = if cur.consecutive_failures > 0 {
            format!(
                "a retry after {} failure(s), held back by exponential backoff until {}",
                cur.consecutive_failures,
                secs(cur.execution_time - origin)
            )
        } else if cur.task_name == HEARTBEAT {
            format!("its next run (every {HEARTBEAT_EVERY_MS} ms) became due only now")
        } else {
            format!(
                "scheduled for {}: not due before then, whatever its priority",
                secs(cur.execution_time - origin)
            )
        };
        return format!("after {}: {reason}", name(prev));
    }
    let (p, c) = (prev.priority, cur.priority);
    if p > c {
        return format!(
            "after {} because higher priority goes first ({} > {})",
            name(prev),
            p.unwrap_or_default(),
            c.map_or_else(|| "NULL".to_owned(), |c| c.to_string())
        );
    }
    format!(
        "same priority as {}, due later ({} vs {}): the earlier due time breaks the tie",
        name(prev),
        secs(cur.execution_time - origin),
        secs(prev.execution_time - origin)
    )
}

/// Runs the demo.
pub fn run() -> Result<(), CliError> {
    let dir = tempfile::Builder::new().prefix("docket-demo-").tempdir()?;
    let file = dir.path().join("demo.db");
    let url = format!("sqlite://{}", file.display());
    say!("docket demo: a real scheduler on an embedded SQLite file ({url})\n");

    let sqlite = docket_sqlite::connect(&url, StoreConfig::with_priority(true))?;
    let applied = docket_sqlite::migrate(&sqlite, None)?;
    say!("migrated: {}", applied.join(", "));
    let started = Instant::now();
    let claims = Arc::new(Mutex::new(Vec::<Claim>::new()));
    let recorded = Arc::clone(&claims);

    let (tx, rx) = mpsc::channel::<Event>();
    let report = Task::one_time(REPORT, |_, _| {
        std::thread::sleep(WORK);
        Ok(())
    });
    let attempts = Arc::new(AtomicU32::new(0));
    let tries = Arc::clone(&attempts);
    let upload = Task::one_time(UPLOAD, move |_, _| {
        std::thread::sleep(WORK);
        let attempt = tries.fetch_add(1, Ordering::SeqCst) + 1;
        if attempt <= UPLOAD_FAILURES {
            return Err(TaskError::new(format!(
                "upstream timeout (attempt {attempt})"
            )));
        }
        Ok(())
    })
    .on_failure(
        FailurePolicy::exponential(std::time::Duration::from_millis(BACKOFF_MS), 2.0)
            .max_retries(5),
    );
    let heartbeat = Task::recurring(
        HEARTBEAT,
        Schedule::fixed_delay(std::time::Duration::from_millis(HEARTBEAT_EVERY_MS))?,
        |_, _| {
            std::thread::sleep(WORK);
            Ok(())
        },
    );
    let events = Mutex::new(tx);
    let config = SchedulerConfig {
        threads: THREADS,
        polling: PollingStrategy::lock_and_fetch(),
        polling_interval: StdDuration::from_millis(50),
        shutdown_max_wait: StdDuration::from_secs(10),
        scheduler_name: "demo".to_owned(),
        ..SchedulerConfig::default()
    };
    // The narration reads the configuration the scheduler runs, never a copy of it.
    let (threads, claim) = (config.threads, claim_rule(&config));
    let scheduler = Scheduler::builder(Arc::new(sqlite))
        .tasks([report, upload, heartbeat])
        .config(config)
        .listener(Arc::new(move |e: &SchedulerEvent| {
            let at = started.elapsed();
            let event = match e {
                SchedulerEvent::Handed { now, executions } => {
                    recorded
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(Claim {
                            at,
                            now: *now,
                            rows: executions.clone(),
                        });
                    return;
                }
                SchedulerEvent::ExecutionCompleted { execution, .. } => {
                    Event::Completed(at, execution.clone())
                }
                SchedulerEvent::ExecutionFailed {
                    execution,
                    error,
                    retry_at,
                } => Event::Failed(at, execution.clone(), error.clone(), *retry_at),
                _ => return,
            };
            let _ = events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .send(event);
        }))
        .build()?;

    // Everything is scheduled before the scheduler starts, so the first poll sees it all.
    let origin = Utc::now();
    let client = scheduler.client();
    let reports: [(&str, i16, i64); 7] = [
        ("report-1", Priority::LOW.0, -6000),
        ("report-2", Priority::MEDIUM.0, -5000),
        ("report-3", Priority::HIGH.0, -4000),
        ("report-4", Priority::MEDIUM.0, -3000),
        ("report-5", Priority::HIGH.0, -2000),
        ("report-6", Priority::LOW.0, -1000),
        ("report-urgent-later", 99, 1000),
    ];
    say!("\nscheduled (priority on: higher priority first, then earlier due time):");
    for (id, p, offset) in reports {
        let at = origin + Duration::milliseconds(offset);
        client.schedule(REPORT.instance(id).priority(p).scheduled_to(at))?;
        say!("  {id:<22} priority {p:<3} due {}", secs(at - origin));
    }
    let upload_at = origin - Duration::milliseconds(1500);
    client.schedule(
        UPLOAD
            .instance("nightly-upload")
            .priority(70)
            .scheduled_to(upload_at),
    )?;
    say!(
        "  {:<22} priority 70  due {}  fails {UPLOAD_FAILURES}x, then succeeds; \
         backoff {BACKOFF_MS} ms, doubling",
        "nightly-upload",
        secs(upload_at - origin)
    );
    say!(
        "  {:<22} priority 90  (recurring default) every {HEARTBEAT_EVERY_MS} ms, created at start",
        "heartbeat (recurring)"
    );

    let expected =
        reports.len() as u64 + u64::from(UPLOAD_FAILURES) + 1 + u64::from(HEARTBEAT_RUNS);
    let bar = progress::bar(expected, "running");
    scheduler.start()?;
    let mut log = Vec::new();
    let (mut reports_done, mut upload_done, mut beats) = (0, false, 0);
    let deadline = Instant::now() + PATIENCE;
    while reports_done < reports.len() || !upload_done || beats < HEARTBEAT_RUNS {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(event) = rx.recv_timeout(left) else {
            scheduler.stop();
            return Err(CliError::Demo(format!(
                "not finished within {PATIENCE:?}: {reports_done} reports, upload done: \
                 {upload_done}, {beats} heartbeats"
            )));
        };
        if let Event::Completed(_, e) = &event {
            match e.task_name.as_str() {
                HEARTBEAT => beats += 1,
                "report" => reports_done += 1,
                _ => upload_done = true,
            }
        }
        bar.inc(1);
        log.push(event);
    }
    let all_stopped = scheduler.stop();
    bar.finish_and_clear();
    let elapsed = started.elapsed();

    let claims: Vec<Claim> = claims
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    say!("\nhand-out order, as the database claimed it ({threads} worker threads; {claim}):");
    let mut prev: Option<(&Execution, DateTime<Utc>)> = None;
    let mut seen = HashSet::new();
    let mut n = 0;
    for claim in &claims {
        say!(
            "  poll at +{:.2}s claimed {}:",
            claim.at.as_secs_f64(),
            claim.rows.len()
        );
        for e in &claim.rows {
            n += 1;
            if !seen.insert((e.key(), e.version)) {
                return Err(CliError::Demo(format!(
                    "{} was claimed twice at version {}",
                    name(e),
                    e.version
                )));
            }
            say!(
                "  {n:>3}. {:<22} {:<12} {}",
                name(e),
                priority(e),
                why(prev, e, origin)
            );
            prev = Some((e, claim.now));
        }
    }

    say!("\nwhat happened:");
    for event in &log {
        match event {
            Event::Completed(at, e) => {
                say!("  +{:.2}s  {} completed", at.as_secs_f64(), name(e));
            }
            Event::Failed(at, e, error, retry_at) => {
                let retry = retry_at.map_or_else(
                    || "gave up".to_owned(),
                    |t| format!("retry at {}", secs(t - origin)),
                );
                say!(
                    "  +{:.2}s  {} failed: {error}; {retry}",
                    at.as_secs_f64(),
                    name(e)
                );
            }
        }
    }
    let left = scheduler.client().list_scheduled(&ListFilter::default())?;
    let left: Vec<_> = left
        .iter()
        .map(|e| format!("{}/{}", e.task_name, e.task_instance))
        .collect();
    say!(
        "\nran {n} executions in {:.2}s on {threads} threads; none was claimed twice. Left in the \
         table: {} (a recurring task always keeps its next run). Scheduler stopped{}.",
        elapsed.as_secs_f64(),
        if left.is_empty() {
            "nothing".to_owned()
        } else {
            left.join(", ")
        },
        if all_stopped {
            " cleanly"
        } else {
            " (some threads still busy)"
        }
    );
    say!("next: `docket explain --backend sqlite --priority` shows the SQL behind this order.");
    Ok(())
}
