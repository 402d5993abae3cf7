//! The executions table's operations ([`ExecutionStore`]): each one statement, or one
//! transaction of chunks. The hand-out (a poll's due rows or claim) goes through the planner,
//! which calls back the statements in `due.rs`; the writes that can make work due tell it.

use super::*;
use crate::planner::{retried_up_to, COMPLETION_CONTENTION_RETRIES};

impl<C: SqlConnector> ExecutionStore for SqlStore<C> {
    fn check_schema(&self) -> Result<(), StoreError> {
        let missing = |name, feature| StoreError::MissingMigration {
            table: self.config.table.to_string(),
            name,
            feature,
        };
        if !self.has_column("task_name")? {
            return Err(missing(MIGRATION_BASE, "the scheduler"));
        }
        if self.config.ordering.priority && !self.has_column("priority")? {
            return Err(missing(MIGRATION_PRIORITY, "priority"));
        }
        self.learn_paused_table()?;
        self.learn_limits_table()?;
        self.learn_indexes()
    }

    // "Already exists" is decided here for every backend: an insert that adds no row (an
    // insert-if-absent clause) or that violates the key (backends without one) inserted nothing.
    fn execution_insert(&self, row: &NewExecution) -> Result<bool, StoreError> {
        if row.limit_key.is_some() {
            self.need_limits_table("limit keys")?;
        }
        let inserted = absent_if_duplicate(self.execute(self.statements.insert(row)))? == 1;
        if inserted {
            self.planner
                .wrote(Some(row.priority), Some(row.execution_time));
        }
        Ok(inserted)
    }

    fn execution_insert_batch(&self, rows: &[NewExecution]) -> Result<u64, StoreError> {
        if rows.iter().any(|r| r.limit_key.is_some()) {
            self.need_limits_table("limit keys")?;
        }
        let inserted = self.insert_batch(rows)?;
        for row in rows {
            self.planner
                .wrote(Some(row.priority), Some(row.execution_time));
        }
        Ok(inserted)
    }

    fn execution_get(&self, key: &ExecutionKey) -> Result<Option<Execution>, StoreError> {
        Ok(self
            .executions(self.statements.get(key))?
            .into_iter()
            .next())
    }

    fn execution_list(&self, filter: &ListFilter) -> Result<Vec<Execution>, StoreError> {
        self.executions(self.statements.list(filter))
    }

    fn execution_fetch_due(&self, p: &DueParams<'_>) -> Result<Vec<Execution>, StoreError> {
        self.planner.due(self, p)
    }

    fn execution_lock_and_fetch_due(
        &self,
        p: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError> {
        if self.capabilities().lock_and_fetch.is_none() {
            return Err(StoreError::Unsupported {
                backend: self.backend(),
                capability: "lock-and-fetch",
            });
        }
        self.planner.claim(self, p, picked_by)
    }

    fn execution_update(
        &self,
        key: &ExecutionKey,
        guard: Guard,
        changes: &Changes,
    ) -> Result<bool, StoreError> {
        let updated = self.update_row(key, guard, changes)?;
        if updated {
            self.planner.updated(changes);
        }
        Ok(updated)
    }

    fn execution_complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError> {
        // One transaction: a batch ended by contention wrote nothing and is run again.
        let written = retried_up_to(COMPLETION_CONTENTION_RETRIES, || self.complete_batch(batch))?;
        for (completion, done) in batch.iter().zip(&written) {
            if let (Some(changes), true) = (&completion.update, done) {
                self.planner.updated(changes);
            }
        }
        Ok(written)
    }
    fn execution_heartbeat(
        &self,
        key: &ExecutionKey,
        version: i64,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.heartbeat(key, version, now))? == 1)
    }

    // One statement per chunk of keys. A chunk that does not change every row it names (some
    // were completed or revived meanwhile) is followed by one read of which rows it reached
    // (row by row, over a 200 ms link, a round of 40 took 10 s of a 4 s dead window); one that
    // fails (one row held by a lock, a trigger) is written row by row, so one row's failure is
    // its own.
    fn execution_heartbeat_batch(
        &self,
        rows: &[(ExecutionKey, i64)],
        now: DateTime<Utc>,
    ) -> Vec<Result<bool, StoreError>> {
        let most = self.connector.dialect().syntax().max_key_terms.max(1);
        let mut answers = Vec::with_capacity(rows.len());
        for chunk in rows.chunks(most) {
            let keys: Vec<_> = chunk.iter().map(|(k, v)| (k, *v)).collect();
            let stmt = self.statements.heartbeat_versions(&keys, now);
            let reached = match self.execute(stmt) {
                Ok(n) if n == chunk.len() as u64 => Ok(None),
                Ok(_) => self
                    .keys_of(&self.statements.picked_at_versions(&keys))
                    .map(Some),
                Err(e) => Err(e),
            };
            match reached {
                Ok(None) => answers.extend(chunk.iter().map(|_| Ok(true))),
                Ok(Some(reached)) => {
                    answers.extend(chunk.iter().map(|(key, _)| Ok(reached.contains(key))));
                }
                Err(_) => answers.extend(
                    chunk
                        .iter()
                        .map(|(key, version)| self.execution_heartbeat(key, *version, now)),
                ),
            }
        }
        answers
    }

    fn execution_remove(&self, key: &ExecutionKey, guard: Guard) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.delete(key, guard))? == 1)
    }

    fn execution_dead_page(
        &self,
        page: &DeadPage,
    ) -> Result<(Vec<Execution>, Option<DeadCursor>), StoreError> {
        // A dead row that does not decode is reported, not a failed dead-execution check.
        let (dead, next) = self.dead_rows(page)?;
        self.planner.hold_back(dead.poison, page.older_than);
        Ok((dead.rows, next))
    }

    fn execution_dead_counts(
        &self,
        older_than: DateTime<Utc>,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        decode_all(self.rows(&self.statements.dead_counts(older_than))?, |r| {
            Ok((r.text("task_name")?, r.i64("dead")?))
        })
    }

    fn paused_list(&self) -> Result<Vec<PausedTask>, StoreError> {
        if !self.has_paused_table() {
            return Ok(Vec::new());
        }
        decode_all(self.rows(&self.statements.paused_list())?, |r| {
            Ok(PausedTask {
                task_name: r.text("task_name")?,
                paused_at: r.timestamp("paused_at")?,
                paused_by: r.opt_text("paused_by")?,
            })
        })
    }

    fn paused_page(&self, limit: i64) -> Result<PausedPage, StoreError> {
        if !self.has_paused_table() {
            return Ok(PausedPage::default());
        }
        let tasks = paused_rows(self.rows(&self.statements.paused_page(limit))?)?;
        let read = i64::try_from(tasks.len()).unwrap_or(i64::MAX);
        // A page that is not full holds every paused task: no count needed.
        let total = if read < limit {
            read
        } else {
            decode_all(self.rows(&self.statements.paused_count())?, |r| {
                r.i64("paused")
            })?
            .into_iter()
            .next()
            .unwrap_or(read)
        };
        Ok(PausedPage { tasks, total })
    }

    fn paused_among(&self, names: &[String]) -> Result<Vec<PausedRead>, StoreError> {
        if !self.has_paused_table() || names.is_empty() {
            return Ok(Vec::new());
        }
        let mut read = Vec::new();
        for chunk in names.chunks(PAUSED_NAMES_PER_STATEMENT) {
            let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
            read.extend(paused_rows(
                self.rows(&self.statements.paused_among(&chunk))?,
            )?);
        }
        read.sort_by(|a, b| a.task_name().cmp(b.task_name()));
        Ok(read)
    }

    fn paused_set(
        &self,
        task_name: &str,
        at: DateTime<Utc>,
        by: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.need_paused_table()?;
        let inserted =
            absent_if_duplicate(self.execute(self.statements.paused_insert(task_name, at, by)))?;
        Ok(inserted == 1)
    }

    fn paused_clear(&self, task_name: &str) -> Result<bool, StoreError> {
        self.need_paused_table()?;
        Ok(self.execute(self.statements.paused_delete(task_name))? == 1)
    }

    fn limit_list(&self) -> Result<Vec<TaskLimit>, StoreError> {
        self.limits_read()
    }

    fn limit_set(&self, limit: &TaskLimit, now: DateTime<Utc>) -> Result<(), StoreError> {
        self.limits_write(limit, now)
    }

    fn limit_clear(&self, task_name: &str) -> Result<bool, StoreError> {
        self.limits_remove(task_name)
    }

    fn limit_usage(&self, now: DateTime<Utc>, cap: i64) -> Result<Vec<LimitUse>, StoreError> {
        self.limits_used(now, cap)
    }

    fn limit_start_window(&self, task_name: &str) -> Option<std::time::Duration> {
        self.start_margin(task_name)
    }

    fn execution_claim_limited(
        &self,
        params: &DueParams<'_>,
        picked_by: &str,
    ) -> Result<Vec<Execution>, StoreError> {
        self.claim_limited(params, picked_by)
    }

    fn execution_names_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut names: Vec<String> = Vec::new();
        while names.len() < limit {
            let stmt = self
                .statements
                .lag_next_name(names.last().map(String::as_str).or(after));
            // `MIN` over no rows is one NULL row: no name after it.
            let next = decode_all(self.rows(&stmt)?, |r| r.opt_text("task_name"))?;
            match next.into_iter().flatten().next() {
                Some(name) => names.push(name),
                None => break,
            }
        }
        Ok(names)
    }

    fn execution_name_lag(&self, q: &LagQuery<'_>) -> Result<NameLag, StoreError> {
        let LagQuery {
            name,
            now,
            cap,
            items,
        } = *q;
        let cap = cap.max(1);
        let queue_type = items && {
            let kind = self.rows(&self.statements.lag_name_kind(name))?;
            decode_all(kind, |r| r.opt_i64("max_assignments"))?
                .into_iter()
                .any(|m| m.is_some())
        };
        let priority = self.config.ordering.priority;
        let head = decode_all(
            self.rows(&self.statements.lag_head(name, queue_type, now, cap + 1))?,
            |r| {
                let level = if priority {
                    r.opt_i16("priority")?
                } else {
                    None
                };
                Ok((r.timestamp("execution_time")?, level))
            },
        )?;
        let waiting = CappedCount::of(head.len() as i64, cap);
        // Rows come in time order: a level's first row is its oldest.
        let mut levels: Vec<LevelLag> = Vec::new();
        for &(at, priority) in head.iter().take(cap as usize) {
            match levels.iter_mut().find(|l| l.priority == priority) {
                Some(level) => level.count += 1,
                None => levels.push(LevelLag {
                    priority,
                    oldest: at,
                    count: 1,
                }),
            }
        }
        // Highest first, NULL last.
        levels.sort_by_key(|l| std::cmp::Reverse(l.priority.map_or(i32::MIN, i32::from)));
        let count = |range| -> Result<CappedCount, StoreError> {
            let rows = self.rows(&self.statements.lag_count(name, range, now, cap + 1))?;
            let n = decode_all(rows, |r| r.i64("n"))?
                .into_iter()
                .next()
                .unwrap_or(0);
            Ok(CappedCount::of(n, cap))
        };
        let scheduled = count(LagRange::Scheduled)?;
        let picked = if queue_type {
            CappedCount::default()
        } else {
            count(LagRange::Picked)?
        };
        Ok(NameLag {
            name: name.to_owned(),
            queue_type,
            oldest: head.first().map(|(at, _)| *at),
            waiting,
            levels,
            scheduled,
            picked,
        })
    }

    fn execution_summary(&self) -> Result<Vec<TaskSummary>, StoreError> {
        decode_all(
            self.rows(&self.statements.summary())?,
            TaskSummary::from_row,
        )
    }

    fn execution_unresolved_names(&self, known: &[String]) -> Result<Vec<String>, StoreError> {
        let items = self.has_column("max_assignments")?;
        self.names(self.statements.unresolved_names(known, items))
    }

    fn execution_delete_unresolved(
        &self,
        known: &[String],
        before: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        // Asked each time (this runs rarely): a table migrated to the work queue while a
        // scheduler runs must never lose items to the unknown-task clean-up.
        let items = self.has_column("max_assignments")?;
        self.execute(self.statements.delete_unresolved(known, before, items))
    }
    fn execution_poisoned(&self) -> Vec<PoisonRow> {
        self.planner.poisoned()
    }

    fn server_time(&self) -> Result<DateTime<Utc>, StoreError> {
        let rows = self.rows(&self.statements.server_time())?;
        decode_all(rows, |r| r.timestamp("server_time"))?
            .into_iter()
            .next()
            .map(crate::clock::to_micros)
            .ok_or_else(|| StoreError::NotFound {
                source: "the server-time query returned no row".into(),
            })
    }
}

/// The statements under the operations that tell the planner (it hears of the write once).
impl<C: SqlConnector> SqlStore<C> {
    // Multi-row inserts in chunks, all in one transaction. New keys are the common case, so the
    // first attempt inserts without skipping existing ones (`Statements::insert_many_new`: on
    // PostgreSQL a skip clause costs about a quarter of the insert). An existing key fails its
    // statement. Where the dialect can skip existing keys in the statement itself, the
    // transaction is rolled back and the batch inserted again with that clause; rows affected
    // count the new rows. Elsewhere the failed statement is the only thing rolled back (InnoDB,
    // SQL Server without XACT_ABORT, Oracle): its chunk is inserted row by row, each existing
    // key skipped as in `execution_insert`. (MySQL's `INSERT IGNORE` would skip duplicates
    // too, but it also turns other errors, such as an over-long value, into warnings.)
    fn insert_batch(&self, rows: &[NewExecution]) -> Result<u64, StoreError> {
        let skips_existing = !self
            .connector
            .dialect()
            .syntax()
            .insert_if_absent
            .is_empty();
        let chunks = self.insert_chunks(rows);
        let insert = |render: &dyn Fn(&[NewExecution]) -> Rendered| {
            let stmts: Vec<_> = chunks.iter().map(|chunk| (render(chunk), chunk)).collect();
            self.connector.in_transaction(&mut |s| {
                stmts.iter().try_fold(0, |n, (stmt, chunk)| {
                    Ok(n + match s.execute(stmt) {
                        Err(StoreError::Duplicate { .. }) if !skips_existing => {
                            chunk.iter().try_fold(0, |n, row| {
                                let one = self.statements.insert(row);
                                Ok(n + absent_if_duplicate(s.execute(&one))?)
                            })?
                        }
                        other => other?,
                    })
                })
            })
        };
        match insert(&|chunk| self.statements.insert_many_new(chunk)) {
            Err(StoreError::Duplicate { .. }) if skips_existing => {
                insert(&|chunk| self.statements.insert_many(chunk))
            }
            other => other,
        }
    }

    fn update_row(
        &self,
        key: &ExecutionKey,
        guard: Guard,
        changes: &Changes,
    ) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.update(key, guard, changes))? == 1)
    }

    // Every chunk's statements in one transaction that must change every row it names: a
    // failure (a deadlock, a lost connection) leaves nothing written, so the caller's retry
    // writes the whole batch again, never a part twice (chunks committed one by one had their
    // rows fenced out on the retry). When some executions were changed by someone else
    // (fenced out), it is rolled back and each completion is written on its own, so the
    // answer for each is exact.
    fn complete_batch(&self, batch: &[Completion]) -> Result<Vec<bool>, StoreError> {
        let dialect = self.connector.dialect();
        let most = (dialect.syntax().max_binds / COMPLETION_BINDS_PER_ROW)
            .min(dialect.syntax().max_key_terms)
            .clamp(1, COMPLETION_CHUNK);
        let stmts: Vec<_> = batch
            .chunks(most)
            .flat_map(|chunk| self.completion_statements(chunk))
            .collect();
        let all = self.connector.in_transaction(&mut |s| {
            for (stmt, rows) in &stmts {
                let changed = s.execute(stmt)?;
                if changed != *rows {
                    return Err(StoreError::conflict(format!(
                        "a batched completion changed {changed} of {rows} rows"
                    )));
                }
            }
            Ok(())
        });
        match all {
            Ok(()) => Ok(vec![true; batch.len()]),
            Err(StoreError::Conflict { .. }) => batch
                .iter()
                .map(|c| {
                    let guard = Guard::Version(c.version);
                    match &c.update {
                        None => self.execution_remove(&c.key, guard),
                        Some(changes) => self.update_row(&c.key, guard, changes),
                    }
                })
                .collect(),
            Err(e) => Err(e),
        }
    }

    // The rows that do not decode come back apart, for the planner's hold-back.
    fn dead_rows(&self, page: &DeadPage) -> Result<(Decoded, Option<DeadCursor>), StoreError> {
        let rows = self.rows(&self.statements.dead_page(page))?;
        let full = rows.len() as i64 >= page.limit;
        let (rows, bad) = poison::decode_executions(rows);
        let next = if full {
            rows.last()
                .and_then(|e| e.last_heartbeat.map(|at| (at, e.key())))
        } else {
            None
        };
        let poison = bad.into_iter().map(|b| b.row).collect();
        Ok((Decoded { rows, poison }, next))
    }
}

/// Rows of the paused tasks, each decoded on its own: a row holding a value docket cannot
/// decode (a `paused_at` out of range) is [`PausedRead::Unreadable`], named by its task.
fn paused_rows(rows: Vec<Row>) -> Result<Vec<PausedRead>, StoreError> {
    rows.into_iter()
        .map(|mut r| {
            // The name first, read without taking it: the primary key, never NULL.
            let task_name = r.lossy_text("task_name").unwrap_or_default();
            let decoded = (|| {
                Ok(PausedTask {
                    task_name: r.text("task_name")?,
                    paused_at: r.timestamp("paused_at")?,
                    paused_by: r.opt_text("paused_by")?,
                })
            })();
            match decoded {
                Ok(p) => Ok(PausedRead::Paused(p)),
                Err(StoreError::Decode { column, reason }) => {
                    Ok(PausedRead::Unreadable(UnreadablePaused {
                        task_name,
                        column,
                        reason,
                    }))
                }
                Err(e) => Err(e),
            }
        })
        .collect()
}
