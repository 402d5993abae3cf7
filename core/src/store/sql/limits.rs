//! Limits the cluster keeps (`0009_limits`): the limits' rows, and the claim of a limited task.
//!
//! A limited task is left out of every other claim (in the same statement, as a paused task
//! is) and claimed here, one transaction per task: lock its limit row (skipping it when another
//! claimer holds it), count what runs and what started in its windows, select its due rows with
//! its full keys left out (row locks skipped as in any claim), take them in hand-out order while
//! room is left, mark them picked, record their starts, count the claim on the limit row. The
//! count of what runs is the picked rows themselves, so a revived execution (its scheduler
//! died) gives its slot back with no bookkeeping to repair.

use super::poison::decode_executions;
use super::*;
use crate::records::{Due, LimitRoom, LimitUse, Limited, LimitedClaim, Rate, TaskLimit};
use std::time::{Duration, Instant};

/// Most full keys one claim leaves out by name; past them, rows of full keys are read and
/// passed over (the room is checked per row either way).
const FULL_KEYS_PER_CLAIM: usize = 200;

/// How long the list of limited tasks is reused between polls: a new limit holds at once (other
/// claims leave the task out in their statement), its own claim starts within this.
const LIMITS_TTL: Duration = Duration::from_secs(1);

/// The limits read last, and when; the limited tasks this store's last claim left at their
/// task-wide limit.
#[derive(Debug, Default)]
pub(super) struct LimitsCache {
    read: Option<(Instant, Vec<TaskLimit>)>,
    full: std::collections::HashSet<String>,
}

impl<C: SqlConnector> SqlStore<C> {
    /// Looks whether the table of limits exists.
    pub(super) fn learn_limits_table(&self) -> Result<(), StoreError> {
        let present = self.exists(self.statements.limits_table_exists())?;
        self.statements.set_limits_table(present);
        Ok(())
    }

    /// [`StoreError::MissingMigration`] unless the table of limits exists (looked up again
    /// first: it may have been migrated since `check_schema`).
    pub(super) fn need_limits_table(&self, feature: &'static str) -> Result<(), StoreError> {
        if !self.statements.limits_table() {
            self.learn_limits_table()?;
        }
        if self.statements.limits_table() {
            return Ok(());
        }
        Err(StoreError::MissingMigration {
            table: self.config.table.to_string(),
            name: crate::migrate::MIGRATION_LIMITS,
            feature,
        })
    }

    pub(super) fn limits_read(&self) -> Result<Vec<TaskLimit>, StoreError> {
        if !self.statements.limits_table() {
            return Ok(Vec::new());
        }
        decode_all(self.rows(&self.statements.limit_list())?, decode_limit)
    }

    pub(super) fn limits_write(
        &self,
        limit: &TaskLimit,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        limit
            .validate()
            .map_err(|e| StoreError::Input(Box::new(e)))?;
        self.need_limits_table("limits")?;
        let st = &self.statements;
        let write = || {
            self.connector.in_transaction(&mut |s| {
                if s.execute(&st.limit_update(limit, now))? == 0 {
                    s.execute(&st.limit_insert(limit, now))?;
                }
                Ok(())
            })
        };
        // Schedulers starting together each store their limit: two may both find no row and
        // both insert. The second insert's duplicate key means the row is there now, and the
        // update finds it on the second try.
        match write() {
            Err(StoreError::Duplicate { .. }) => write()?,
            other => other?,
        }
        self.forget_limits();
        Ok(())
    }

    pub(super) fn limits_remove(&self, task_name: &str) -> Result<bool, StoreError> {
        self.need_limits_table("limits")?;
        let removed = self.execute(self.statements.limit_delete(task_name))? == 1;
        self.forget_limits();
        Ok(removed)
    }

    pub(super) fn limits_used(
        &self,
        now: DateTime<Utc>,
        cap: i64,
    ) -> Result<Vec<LimitUse>, StoreError> {
        let st = &self.statements;
        let mut used = Vec::new();
        for limit in self.limits_read()? {
            let name = limit.task_name.as_str();
            let running = decode_all(self.rows(&st.limit_running(name))?, decode_running)?;
            let window = [limit.rate, limit.rate_per_key]
                .into_iter()
                .flatten()
                .next();
            let started_in_window = match window {
                Some(rate) => self
                    .rows(&st.limit_starts(name, since(now, rate.per)))?
                    .len(),
                None => 0,
            };
            // Counted up to `cap` in the task's lag-index range (one index read).
            let waiting = self.rows(&st.lag_count(name, LagRange::Due, now, cap))?;
            let waiting = decode_all(waiting, |r| r.i64("n"))?;
            used.push(LimitUse {
                running: running.iter().map(|(_, n)| n).sum(),
                running_keys: running.iter().filter(|(k, _)| k.is_some()).count() as i64,
                started_in_window: started_in_window as i64,
                due_waiting: waiting.first().copied().unwrap_or(0),
                limit,
            });
        }
        Ok(used)
    }

    /// The limited tasks among `names`, from the cache when it is fresh.
    fn limited_among(&self, names: &[String]) -> Result<Vec<TaskLimit>, StoreError> {
        Ok(self
            .cached_limits()?
            .into_iter()
            .filter(|l| names.contains(&l.task_name))
            .collect())
    }

    /// Every limit, from the cache when it is fresh.
    pub(super) fn cached_limits(&self) -> Result<Vec<TaskLimit>, StoreError> {
        if !self.statements.limits_table() {
            return Ok(Vec::new());
        }
        let mut cache = self.limits_cache();
        let fresh = matches!(&cache.read, Some((at, _)) if at.elapsed() < LIMITS_TTL);
        if !fresh {
            cache.read = Some((Instant::now(), self.limits_read()?));
        }
        Ok(cache.read.as_ref().map_or(Vec::new(), |(_, l)| l.clone()))
    }

    /// The start margin of `task_name`'s rate limits, from the limits read last.
    pub(super) fn start_margin(&self, task_name: &str) -> Option<Duration> {
        let cache = self.limits_cache();
        let limits = cache.read.as_ref().map_or(&[][..], |(_, l)| l.as_slice());
        limits
            .iter()
            .find(|l| l.task_name == task_name)
            .and_then(TaskLimit::start_margin)
    }

    fn limits_cache(&self) -> std::sync::MutexGuard<'_, LimitsCache> {
        self.limits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn forget_limits(&self) {
        self.limits_cache().read = None;
    }

    pub(super) fn claim_limited(
        &self,
        params: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError> {
        let mut claimed = Vec::new();
        if params.limit <= 0 {
            return Ok(claimed);
        }
        for limit in self.limited_among(params.task_names)? {
            let want = params.limit - claimed.len() as i64;
            if want <= 0 {
                break;
            }
            if self.still_full(&limit, params)? {
                continue;
            }
            let (rows, full) = self.claim_one_limited(&limit.task_name, want, params, picked_by)?;
            if let Some(full) = full {
                let mut cache = self.limits_cache();
                match full {
                    true => cache.full.insert(limit.task_name.clone()),
                    false => cache.full.remove(&limit.task_name),
                };
            }
            claimed.extend(rows);
        }
        Ok(claimed)
    }

    /// Whether a task that this store's last claim left at its task-wide limit is still there:
    /// one read without locks ([`Statements::limit_use`]) instead of the claim's transaction
    /// (a lock, the counts, a commit) in every poll while a limit holds a backlog back. Slots
    /// freed by any scheduler show in the next poll. False for a task not left full.
    fn still_full(&self, limit: &TaskLimit, params: &DueParams<'_>) -> Result<bool, StoreError> {
        if !self.limits_cache().full.contains(&limit.task_name) {
            return Ok(false);
        }
        let now = params.clock.map_or(params.now, |c| c.now());
        let since = limit.rate.map(|r| since(now, r.counted_for()));
        let counts = self.rows(&self.statements.limit_use(&limit.task_name, since))?;
        let (running, started) = decode_all(counts, |r| {
            let started = match since {
                Some(_) => r.i64("started")?,
                None => 0,
            };
            Ok((r.i64("running")?, started))
        })?
        .into_iter()
        .next()
        .unwrap_or_default();
        Ok(limit
            .task_room(running, started)
            .is_some_and(|room| room <= 0))
    }

    /// One limited task's claim of at most `want`, in one transaction.
    ///
    /// Its time is read from the clock once the limit row is locked (what ran and started is
    /// counted as of then), and the starts are stamped with the clock read again just before
    /// they are written: a start must not be stamped earlier than its handler begins by more
    /// than the window's margin ([`Rate::counted_for`]), and the statements of the claim itself
    /// can take longer than that margin (MariaDB: over 100 ms under load, which let 30 handlers
    /// start within 1 s under `rate_limit(20, 1 s)` when the starts carried the time read
    /// before the transaction).
    fn claim_one_limited(
        &self,
        task_name: &str,
        want: i64,
        params: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<(Vec<Execution>, Option<bool>), StoreError> {
        let read_clock = || params.clock.map_or(params.now, |c| c.now());
        let st = &self.statements;
        let names = [task_name.to_owned()];
        let max_key_terms = self.connector.dialect().syntax().max_key_terms.max(1);
        self.connector.in_transaction(&mut |s| {
            // Locked by another claimer: it is taking this task's room now.
            let Some(limit) = s
                .query(&st.limit_lock(task_name))?
                .into_iter()
                .next()
                .map(|mut r| decode_limit(&mut r))
                .transpose()?
            else {
                return Ok((Vec::new(), None));
            };
            let now = read_clock();
            let running = decode_all(s.query(&st.limit_running(task_name))?, decode_running)?;
            let starts = match limit.longest_window() {
                Some(per) => {
                    let since = since(now, per);
                    s.execute(&st.limit_starts_prune(task_name, since))?;
                    decode_all(s.query(&st.limit_starts(task_name, since))?, |r| {
                        Ok((r.opt_text("limit_key")?, r.timestamp("started_at")?))
                    })?
                }
                None => Vec::new(),
            };
            let mut room = LimitRoom::new(&limit, want, now, &running, &starts);
            // Whether the task-wide limits leave no room once `taken` more have started.
            let running_now: i64 = running.iter().map(|(_, n)| n).sum();
            let started_now = limit.rate.map_or(0, |r| {
                let since = since(now, r.counted_for());
                starts.iter().filter(|(_, at)| *at > since).count() as i64
            });
            let full_after = |taken: usize| {
                let taken = taken as i64;
                let room = limit.task_room(running_now + taken, started_now + taken);
                Some(room.is_some_and(|r| r <= 0))
            };
            if room.task == 0 {
                return Ok((Vec::new(), full_after(0)));
            }
            let (mut full_keys, no_key_full) = room.full_keys();
            full_keys.truncate(FULL_KEYS_PER_CLAIM);
            // Per-key limits: read past the rows of keys that fill up within this claim.
            let read = match room.per_key {
                Some(_) => (room.task * 4).min(room.task + 500),
                None => room.task,
            };
            let due = Due {
                limited: Limited::Claim(LimitedClaim {
                    full_keys: &full_keys,
                    no_key_full,
                }),
                ..Due::new(Level::Any, now, &names, read)
            };
            let rows = s.query(&st.due_for_update(&due))?;
            let mut taken = Vec::new();
            for mut row in rows {
                let key = row.opt_text("limit_key")?;
                let (mut decoded, bad) = decode_executions(vec![row]);
                for b in bad {
                    tracing::warn!(task = %b.row.key.task_name, instance = %b.row.key.task_instance,
                        "a due row of a limited task cannot be read; left as it is");
                }
                if let Some(e) = decoded.pop() {
                    if room.take(&key) {
                        taken.push((e, key));
                    }
                }
            }
            if taken.is_empty() {
                return Ok((Vec::new(), full_after(0)));
            }
            let keys: Vec<_> = taken.iter().map(|(e, _)| e.key()).collect();
            let mut changed = 0;
            for chunk in keys.chunks(max_key_terms) {
                changed += s.execute(&st.claim_keys(chunk, picked_by, now))?;
            }
            if changed != keys.len() as u64 {
                return Err(StoreError::conflict(format!(
                    "claimed {changed} of {} locked rows of limited task {task_name}",
                    keys.len()
                )));
            }
            if limit.longest_window().is_some() {
                let stamp = read_clock().max(now);
                let started: Vec<_> = keys
                    .iter()
                    .zip(&taken)
                    .map(|(k, (_, key))| (k, key.as_deref()))
                    .collect();
                for chunk in started.chunks(self.statements.rows_per_insert(4, 500)) {
                    s.execute(&st.limit_starts_insert(chunk, stamp))?;
                }
            }
            s.execute(&st.limit_claimed(task_name, taken.len() as i64))?;
            let full = full_after(taken.len());
            let rows = taken
                .into_iter()
                .map(|(mut e, _)| {
                    e.picked = true;
                    e.picked_by = Some(picked_by.to_owned());
                    e.last_heartbeat = Some(now);
                    e.version += 1;
                    e
                })
                .collect();
            Ok((rows, full))
        })
    }
}

/// `now - per`.
fn since(now: DateTime<Utc>, per: Duration) -> DateTime<Utc> {
    now - chrono::Duration::from_std(per).unwrap_or(chrono::Duration::MAX)
}

/// `(limit_key, running)`.
fn decode_running(r: &mut Row) -> Result<(Option<String>, i64), StoreError> {
    Ok((r.opt_text("limit_key")?, r.i64("running")?))
}

fn decode_limit(r: &mut Row) -> Result<TaskLimit, StoreError> {
    let count = |v: Option<i64>| v.map(|n| u32::try_from(n).unwrap_or(0));
    let rate = |n: Option<i64>, ms: Option<i64>| match (n, ms) {
        (Some(n), Some(ms)) => Some(Rate {
            count: u32::try_from(n).unwrap_or(0),
            per: Duration::from_millis(u64::try_from(ms).unwrap_or(0)),
        }),
        _ => None,
    };
    Ok(TaskLimit {
        task_name: r.text("task_name")?,
        max_running: count(r.opt_i64("max_running")?),
        rate: rate(r.opt_i64("rate_count")?, r.opt_i64("rate_per_ms")?),
        max_running_per_key: count(r.opt_i64("max_running_per_key")?),
        rate_per_key: rate(
            r.opt_i64("rate_per_key_count")?,
            r.opt_i64("rate_per_key_per_ms")?,
        ),
    })
}
