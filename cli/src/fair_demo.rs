//! `docket demo --fair`: strict, weighted and aging priority side by side on an embedded SQLite
//! file, driven by a manual clock: one level-10 execution waits while level 90 receives three
//! fresh executions every second and each poll claims three. Narrates when (and why) the
//! level-10 execution is handed out in each mode.

use crate::error::CliError;
use chrono::Duration;
use docket_core::store::{DueParams, Guard, NewExecution};
use docket_core::{Aging, ExecutionStore, OrderingPolicy, PriorityMode, StoreConfig, Weights};

/// Executions fed per second, and claimed per poll.
const PER_SECOND: usize = 3;
/// How long each mode runs (simulated seconds).
const SECONDS: i64 = 100;

/// Runs the three modes and narrates them.
pub fn run() -> Result<(), CliError> {
    let dir = tempfile::Builder::new().prefix("docket-fair-").tempdir()?;
    say!(
        "docket demo --fair: one level-10 execution due at 0 s; level 90 receives {PER_SECOND} \
         fresh executions every second; each poll (one per second) claims {PER_SECOND}."
    );
    let modes = [
        PriorityMode::Strict,
        PriorityMode::Weighted(Weights::new(&[(90, 70), (10, 10)])?),
        PriorityMode::Aging(Aging::new(std::time::Duration::from_secs(1), 100)?),
    ];
    for (i, mode) in modes.into_iter().enumerate() {
        let url = format!(
            "sqlite://{}",
            dir.path().join(format!("fair-{i}.db")).display()
        );
        let config = StoreConfig {
            ordering: OrderingPolicy {
                priority: true,
                mode: mode.clone(),
                ..OrderingPolicy::default()
            },
            ..StoreConfig::default()
        };
        let store = docket_sqlite::connect(&url, config)?;
        docket_sqlite::migrate(&store, None)?;
        let served = starve_or_serve(&store)?;
        say!("\n{}", crate::mode::describe(&mode));
        say!("  {}", narrate(&mode, served));
    }
    Ok(())
}

/// The second at which the level-10 execution was handed out, if it was.
fn starve_or_serve(store: &dyn ExecutionStore) -> Result<Option<i64>, CliError> {
    let start = chrono::Utc::now();
    let row = |id: String, priority: i16, at| NewExecution {
        task_name: "fair".to_owned(),
        task_instance: id,
        task_data: None,
        execution_time: at,
        priority: Some(priority),
        limit_key: None,
    };
    store.execution_insert(&row("waiting".to_owned(), 10, start))?;
    let names = ["fair".to_owned()];
    for second in 1..=SECONDS {
        let now = start + Duration::seconds(second);
        let feed: Vec<_> = (0..PER_SECOND)
            .map(|j| row(format!("fresh-{second}-{j}"), 90, now))
            .collect();
        store.execution_insert_batch(&feed)?;
        let p = DueParams {
            now,
            task_names: &names,
            limit: PER_SECOND as i64,
            claim_for: None,
            clock: None,
            include_limited: false,
        };
        let claimed = store.execution_lock_and_fetch_due(&p, "fair-demo")?;
        for e in &claimed {
            store.execution_remove(&e.key(), Guard::Any)?;
        }
        if claimed.iter().any(|e| e.task_instance == "waiting") {
            return Ok(Some(second));
        }
    }
    Ok(None)
}

fn narrate(mode: &PriorityMode, served: Option<i64>) -> String {
    match (mode, served) {
        (_, None) => format!(
            "the level-10 execution was never handed out in {SECONDS} s: level 90 always had \
             due work"
        ),
        (PriorityMode::Weighted(w), Some(s)) => format!(
            "handed out at {s} s: level 10 (weight {}) had received nothing, so it was the \
             level furthest behind its share",
            w.weight_of(Some(10))
        ),
        (PriorityMode::Aging(a), Some(s)) => {
            let now = chrono::Utc::now();
            format!(
                "handed out at {s} s: after {s} s due its effective priority was {}, above the \
                 fresh executions' 90 (at 90, a tie, the higher level goes first)",
                a.effective(10, now - Duration::seconds(s), now)
            )
        }
        (PriorityMode::Strict, Some(s)) => format!("handed out at {s} s"),
    }
}
