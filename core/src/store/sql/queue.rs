//! The work queue's operations ([`QueueStore`]): intake in chunks, the item queries and
//! claims, assignments, and the custom-order indexes. `next_for` and the listing for a worker
//! go through the planner, which calls back the statements of [`ItemSource`] here.

use super::*;

/// Candidates a two-phase `next_for` reads per round (see `Capabilities::claim_locks_examined_rows`).
const CANDIDATES: i64 = 8;

/// Rounds of candidates a two-phase `next_for` tries before it gives up (each failed round
/// means other workers claimed or locked every candidate meanwhile).
const MAX_CANDIDATE_ROUNDS: usize = 100;

impl<C: SqlConnector> QueueStore for SqlStore<C> {
    fn check_queue_schema(&self) -> Result<(), StoreError> {
        if !self.capabilities().work_queue {
            return Err(StoreError::Unsupported {
                backend: self.backend(),
                capability: "the work queue",
            });
        }
        self.check_schema()?;
        let missing = |name, feature| StoreError::MissingMigration {
            table: self.config.table.to_string(),
            name,
            feature,
        };
        if !self.has_column("record_order")? {
            return Err(missing(MIGRATION_ORDERING, "the work queue"));
        }
        if !self.has_column("assignable")?
            || !self.exists(self.statements.assignments_column_exists("worker"))?
        {
            return Err(missing(MIGRATION_WORK_QUEUE, "the work queue"));
        }
        Ok(())
    }

    fn item_insert_stream(
        &self,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
    ) -> Result<u64, StoreError> {
        let per = self.statements.item_rows_per_insert();
        let Some(load) = self.connector.dialect().file_load() else {
            return self.insert_in_chunks(rows, per);
        };
        // A batch that fits one multi-row insert gains nothing from a file.
        let head: Vec<_> = (&mut *rows).take(per + 1).collect();
        let large = head.len() > per;
        let mut rows = head.into_iter().chain(rows);
        if large {
            if let Staged::Inserted(n) = self.item_insert_staged(load, &mut rows)? {
                return Ok(n);
            }
        }
        self.insert_in_chunks(&mut rows, per)
    }

    fn item_counts(&self) -> Result<Vec<ItemCount>, StoreError> {
        if !self.has_column("max_assignments")? {
            return Ok(Vec::new());
        }
        decode_all(self.rows(&self.statements.item_counts())?, |r| {
            Ok(ItemCount {
                task_type: r.text("task_name")?,
                items: r.opt_i64("items")?.unwrap_or(0),
                open: r.opt_i64("open_items")?.unwrap_or(0),
            })
        })
    }

    // The planner forgets its custom-order choice whether or not the change went through: a
    // failed one may have done part of it.
    fn order_index_create(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError> {
        let change = self.statements.order_index(keys).and_then(|index| {
            let steps = index.columns.iter().map(|c| (&c.exists, &c.add));
            let steps: Vec<_> = steps.chain([(&index.exists, &index.create)]).collect();
            self.converge(&index.name, &steps, true)
        });
        self.planner.forget_order_index(keys);
        change
    }

    fn order_index_drop(&self, keys: &[CustomKey]) -> Result<IndexChange, StoreError> {
        let change = self.statements.order_index(keys).and_then(|index| {
            let columns = index.columns.iter().map(|c| (&c.exists, &c.drop));
            let steps: Vec<_> = [(&index.exists, &index.drop)]
                .into_iter()
                .chain(columns)
                .collect();
            self.converge(&index.name, &steps, false)
        });
        self.planner.forget_order_index(keys);
        change
    }

    fn order_index_exists(&self, keys: &[CustomKey]) -> Result<(String, bool), StoreError> {
        let index = self.statements.order_index(keys)?;
        let exists = self.exists(index.exists.clone())?;
        Ok((index.name, exists))
    }

    fn item_get(&self, key: &ExecutionKey) -> Result<Option<Item>, StoreError> {
        Ok(self
            .items(self.statements.item_get(key))?
            .into_iter()
            .next())
    }

    fn item_next_for(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
    ) -> Result<Option<Item>, StoreError> {
        self.planner.next_for(self, q, deadline)
    }

    fn item_list_for(&self, q: &ForWorker<'_>, limit: i64) -> Result<Vec<Item>, StoreError> {
        self.planner.list_for(self, q, limit)
    }

    fn item_extend(&self, key: &ExecutionKey, n: i32) -> Result<bool, StoreError> {
        Ok(self.execute(self.statements.item_extend(key, n))? == 1)
    }

    fn assignment_finish(&self, f: &Finishing<'_>) -> Result<bool, StoreError> {
        let finish = self.statements.assignment_finish(f);
        let release = self
            .statements
            .item_release(f.key, f.worker, !f.how.status().counts());
        self.connector.in_transaction(&mut |s| {
            if s.execute(&finish)? == 0 {
                return Ok(false);
            }
            Self::one_row(s, &release, "releasing the item")?;
            Ok(true)
        })
    }

    fn assignment_expired(&self, now: DateTime<Utc>) -> Result<Vec<Assignment>, StoreError> {
        self.assignments(self.statements.assignment_expired(now))
    }

    fn assignment_list(&self, key: &ExecutionKey) -> Result<Vec<Assignment>, StoreError> {
        self.assignments(self.statements.assignment_list(key))
    }

    fn item_list_assigned(&self, q: &ItemsQuery<'_>) -> Result<Vec<ItemRead>, StoreError> {
        let mut listed: Vec<ItemRead> = Vec::new();
        for mut row in self.rows(&self.statements.item_list_assigned(q))? {
            // The key first, read without taking it: a row that fails to decode is still
            // named (the key is the primary key, never NULL).
            let key = ExecutionKey::new(
                row.lossy_text("task_name").unwrap_or_default(),
                row.lossy_text("task_instance").unwrap_or_default(),
            );
            // An item's rows (one per kept assignment) are consecutive.
            let same = listed.last().is_some_and(|l| match l {
                ItemRead::Listed(l) => l.item.key == key,
                ItemRead::Unreadable(u) => u.key == key,
            });
            let version = row.peek_i64("version");
            let decoded = Self::listed_row(&mut row, q);
            match (decoded, listed.last_mut()) {
                (Err(StoreError::Decode { column, reason }), last) => {
                    // One item whose row cannot be decoded (a NULL record_date written by
                    // SQL) is named in its place; the others are listed.
                    let unreadable = ItemRead::Unreadable(UnreadableItem {
                        key,
                        version,
                        column,
                        reason,
                    });
                    match last {
                        Some(last) if same => *last = unreadable,
                        _ => listed.push(unreadable),
                    }
                }
                (Err(e), _) => return Err(e),
                (Ok(_), Some(ItemRead::Unreadable(_))) if same => {}
                (Ok((_, _, _, assignment)), Some(ItemRead::Listed(last))) if same => {
                    if let Some(a) = assignment {
                        last.assignments.push(a);
                    }
                }
                (Ok((item, version, total, assignment)), _) => {
                    listed.push(ItemRead::Listed(ListedItem {
                        item,
                        version,
                        assignments: assignment.into_iter().collect(),
                        assignments_total: total,
                    }));
                }
            }
        }
        Ok(listed)
    }
}

impl<C: SqlConnector> ItemSource for SqlStore<C> {
    fn item_levels(&self, q: &ForWorker<'_>) -> Result<Vec<(Level, DateTime<Utc>)>, StoreError> {
        let mut levels = decode_all(self.rows(&self.statements.item_levels(q))?, |r| {
            let level = r.opt_i16("priority")?.map_or(Level::Null, Level::Exactly);
            Ok((level, r.timestamp("oldest")?))
        })?;
        // Highest first, NULL last.
        levels.sort_by_key(|(l, _)| std::cmp::Reverse(l.priority().map_or(i32::MIN, i32::from)));
        Ok(levels)
    }

    fn item_claim(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
        index: Option<&OrderIndex>,
    ) -> Result<Option<Item>, StoreError> {
        self.next_for_sorted(q, deadline, index)
    }

    fn item_list(
        &self,
        q: &ForWorker<'_>,
        limit: i64,
        index: Option<&OrderIndex>,
    ) -> Result<Vec<Item>, StoreError> {
        self.items(
            self.statements
                .item_eligible_indexed(q, Some(limit), false, index),
        )
    }

    fn named_order_index(&self, keys: &[CustomKey]) -> Result<Option<OrderIndex>, StoreError> {
        if self.connector.dialect().syntax().order_index_style != OrderIndexStyle::GeneratedColumns
        {
            return Ok(None);
        }
        self.statements.order_index(keys).map(Some)
    }

    fn order_index_present(&self, index: &OrderIndex) -> Result<bool, StoreError> {
        self.exists(index.exists.clone())
    }
}

/// The work queue's helpers: intake in chunks and indexed custom orders.
impl<C: SqlConnector> SqlStore<C> {
    /// One row of [`Statements::item_list_assigned`]: the item, its version, its assignments
    /// in all and the assignment the row carries (NULL worker: none kept).
    fn listed_row(
        row: &mut Row,
        q: &ItemsQuery<'_>,
    ) -> Result<(Item, i64, i64, Option<ListedAssignment>), StoreError> {
        let item = Item::from_row(row)?;
        let version = row.i64("version")?;
        let worker = row.opt_text("worker")?;
        let total = row.opt_i64("n_assignments")?.unwrap_or(0);
        let assignment = match worker {
            Some(worker) if q.assignments > 0 => Some(ListedAssignment {
                worker,
                status: StatusRead::from_stored(row.text("status")?),
                deadline: row.timestamp("deadline")?,
                updated_at: row.timestamp("updated_at")?,
            }),
            _ => None,
        };
        Ok((item, version, total, assignment))
    }

    /// [`QueueStore::item_next_for`] with the eligible items sorted as `index` says (see
    /// [`Statements::item_eligible_indexed`]).
    fn next_for_sorted(
        &self,
        q: &ForWorker<'_>,
        deadline: DateTime<Utc>,
        index: Option<&OrderIndex>,
    ) -> Result<Option<Item>, StoreError> {
        if !self.capabilities().claim_locks_examined_rows {
            return self.claim_first(
                &self
                    .statements
                    .item_eligible_indexed(q, Some(1), true, index),
                q,
                deadline,
            );
        }
        // The database would lock every row its locking read examines (for a sort: every
        // eligible row), and concurrent claimers would skip them all. Read the candidates in
        // order without locks, then lock and claim the first that is still eligible, by key.
        let candidates = self
            .statements
            .item_eligible_indexed(q, Some(CANDIDATES), false, index);
        for _ in 0..MAX_CANDIDATE_ROUNDS {
            let found = self.items(candidates.clone())?;
            if found.is_empty() {
                return Ok(None);
            }
            for item in &found {
                let one = ForWorker {
                    key: Some(&item.key),
                    ..*q
                };
                let lock = self
                    .statements
                    .item_eligible_indexed(&one, Some(1), true, index);
                if let Some(claimed) = self.claim_first(&lock, q, deadline)? {
                    return Ok(Some(claimed));
                }
            }
        }
        tracing::warn!(
            worker = q.worker,
            task_type = q.task_type,
            "every candidate was taken by others; none claimed"
        );
        Ok(None)
    }

    /// Runs, in order, each step's statement whose object's existence (its query returns a
    /// row) is not `wanted` yet: an order index and its columns created or dropped, resumably
    /// (MySQL DDL is not transactional).
    fn converge(
        &self,
        index: &str,
        steps: &[(&Rendered, &Rendered)],
        wanted: bool,
    ) -> Result<IndexChange, StoreError> {
        let mut run = Vec::new();
        for (exists, statement) in steps {
            if self.exists((*exists).clone())? != wanted {
                self.execute((*statement).clone())?;
                run.push(statement.sql.clone());
            }
        }
        Ok(IndexChange {
            index: index.to_owned(),
            changed: !run.is_empty(),
            statements: run,
        })
    }

    /// Inserts the items of `rows` in one transaction, `per` at a time, each chunk one
    /// multi-row insert ([`QueueStore::item_insert_stream`]).
    fn insert_in_chunks(
        &self,
        rows: &mut dyn Iterator<Item = Result<NewItem, DocketError>>,
        per: usize,
    ) -> Result<u64, StoreError> {
        let mut chunk = Vec::with_capacity(per);
        let mut read = 0u64;
        let result = self.connector.in_caller_paced_transaction(&mut |s| {
            let mut inserted = 0;
            loop {
                chunk.clear();
                for row in (&mut *rows).take(per) {
                    chunk.push(row.map_err(|e| StoreError::Input(Box::new(e)))?);
                    read += 1;
                }
                if chunk.is_empty() {
                    return Ok(inserted);
                }
                inserted += self.insert_item_chunk(s, &chunk)?;
            }
        });
        match result {
            // The database rejected a duplicate and ended the transaction (PostgreSQL), so
            // the id could not be asked there: ask now, rolled back, whether one of the
            // chunk's ids came from an earlier batch; if none did, it repeats an earlier chunk.
            Err(StoreError::Duplicate { .. }) if !chunk.is_empty() => {
                let existing = self
                    .connector
                    .with_session(&mut |s| self.existing_id(s, &chunk))?;
                Err(match existing {
                    Some(key) => duplicate_item(&key),
                    None => StoreError::RepeatedItem {
                        task: chunk[0].key.task_name.clone(),
                        from: read + 1 - chunk.len() as u64,
                        to: read,
                    },
                })
            }
            other => other,
        }
    }

    /// Inserts one chunk of a stream in the caller's transaction with one multi-row insert.
    /// An id repeated within the chunk is found in memory first. If the insert hits an id the
    /// table has (from an earlier batch, or an earlier chunk of this one), the transaction is
    /// asked which, where it is still usable (MySQL and SQLite undo only the failed
    /// statement); where it is not (PostgreSQL), the plain [`StoreError::Duplicate`] goes up
    /// and [`QueueStore::item_insert_stream`] asks after the rollback.
    fn insert_item_chunk(
        &self,
        s: &mut dyn SqlSession,
        chunk: &[NewItem],
    ) -> Result<u64, StoreError> {
        let mut seen = HashSet::with_capacity(chunk.len());
        if let Some(row) = chunk.iter().find(|r| !seen.insert(&r.key)) {
            return Err(duplicate_item(&row.key));
        }
        let inserted = match s.execute(&self.statements.item_insert_rows(chunk)) {
            Err(duplicate @ StoreError::Duplicate { .. }) => {
                return Err(match self.existing_id(s, chunk) {
                    Ok(Some(key)) => duplicate_item(&key),
                    _ => duplicate,
                })
            }
            Err(check @ StoreError::CheckViolation { .. }) => {
                return Err(rejected_item(s, &self.statements, chunk, check))
            }
            other => other?,
        };
        if inserted != chunk.len() as u64 {
            return Err(StoreError::conflict(format!(
                "inserted {inserted} of {} items",
                chunk.len()
            )));
        }
        Ok(inserted)
    }

    /// The first key of `chunk` (in its order) that the table has, one query per task type.
    fn existing_id(
        &self,
        s: &mut dyn SqlSession,
        chunk: &[NewItem],
    ) -> Result<Option<ExecutionKey>, StoreError> {
        // A chunk of one batch has one task type; `item_insert_batch` callers may mix them.
        let mut types: Vec<&str> = chunk.iter().map(|r| r.key.task_name.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        let mut present = HashSet::new();
        for task in types {
            let ids: Vec<&str> = chunk
                .iter()
                .filter(|r| r.key.task_name == task)
                .map(|r| r.key.task_instance.as_str())
                .collect();
            let stmt = self.statements.item_ids_present(task, &ids);
            for id in decode_all(s.query(&stmt)?, |r| r.text("name"))? {
                present.insert(ExecutionKey::new(task, id));
            }
        }
        Ok(chunk
            .iter()
            .find(|r| present.contains(&r.key))
            .map(|r| r.key.clone()))
    }
}

pub(super) fn duplicate_item(key: &ExecutionKey) -> StoreError {
    StoreError::DuplicateItem {
        task: key.task_name.clone(),
        item: key.task_instance.clone(),
    }
}

/// The item of `chunk` whose row the database refused by a CHECK constraint (`violation`,
/// from the chunk's insert) as [`StoreError::RejectedItem`]: the chunk's one row, or else the
/// first row refused when the rows are inserted again one at a time in the same transaction
/// (which the caller rolls back: nothing stays inserted). The backends whose columns carry
/// such a check (SQL Server, Oracle) end only the failed statement, so the transaction can go
/// on; where it cannot (another error while trying), or no single row is refused, `violation`
/// is returned as it was.
fn rejected_item(
    s: &mut dyn SqlSession,
    statements: &Statements<'_>,
    chunk: &[NewItem],
    violation: StoreError,
) -> StoreError {
    let rejected = |row: &NewItem, reason: String| StoreError::RejectedItem {
        task: row.key.task_name.clone(),
        item: row.key.task_instance.clone(),
        reason,
    };
    let StoreError::CheckViolation { source } = &violation else {
        return violation;
    };
    if let [row] = chunk {
        return rejected(row, source.to_string());
    }
    for row in chunk {
        match s.execute(&statements.item_insert(row)) {
            Ok(_) => {}
            Err(StoreError::CheckViolation { source }) => return rejected(row, source.to_string()),
            Err(_) => return violation,
        }
    }
    violation
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{Ansi, Value};
    use crate::records::RecordKey;

    /// A session whose CHECK refuses rows with `"bad"` in their attributes, statement by
    /// statement (the transaction goes on, as on SQL Server and Oracle); `broken` fails every
    /// statement after the first refusal with another error instead.
    struct Checking {
        broken: bool,
        refused: bool,
        statements: Vec<usize>,
    }

    impl SqlSession for Checking {
        fn execute(&mut self, stmt: &Rendered) -> Result<u64, StoreError> {
            if self.broken && self.refused {
                return Err(StoreError::database("current transaction is aborted"));
            }
            let rows = stmt.sql.matches("), (").count() + 1;
            self.statements.push(rows);
            let bad = stmt
                .binds
                .iter()
                .any(|v| matches!(v, Value::Text(Some(t)) if t.contains("bad")));
            if bad {
                self.refused = true;
                return Err(StoreError::CheckViolation {
                    source: "The INSERT statement conflicted with the CHECK constraint".into(),
                });
            }
            Ok(rows as u64)
        }

        fn query(&mut self, _stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
            Ok(Vec::new())
        }
    }

    fn item(id: &str, attributes: &str) -> NewItem {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        NewItem {
            key: ExecutionKey::new("label", id),
            data: None,
            available_at: at,
            record: RecordKey { order: 1, date: at },
            custom_attributes: Some(attributes.to_owned()),
            max_assignments: 1,
            priority: None,
        }
    }

    fn statements() -> Statements<'static> {
        Statements::new(
            &Ansi,
            TableName::parse("jobs").unwrap(),
            crate::ordering::OrderingPolicy::default(),
        )
    }

    fn session(broken: bool, refused: bool) -> Checking {
        Checking {
            broken,
            refused,
            statements: Vec::new(),
        }
    }

    fn violation() -> StoreError {
        StoreError::CheckViolation {
            source: "check".into(),
        }
    }

    #[test]
    fn the_refused_row_of_a_chunk_is_named() {
        let statements = statements();
        let chunk = [
            item("a", "{}"),
            item("b", r#"{"x":"bad"}"#),
            item("c", "{}"),
        ];
        let mut s = session(false, false);
        let err = rejected_item(&mut s, &statements, &chunk, violation());
        assert!(
            matches!(&err, StoreError::RejectedItem { task, item, reason }
                if task == "label" && item == "b" && reason.contains("CHECK constraint")),
            "{err:?}"
        );
        assert_eq!(
            s.statements,
            vec![1, 1],
            "row by row, up to the refused one"
        );
        let one = rejected_item(&mut s, &statements, &chunk[2..], violation());
        assert!(
            matches!(&one, StoreError::RejectedItem { item, .. } if item == "c"),
            "a chunk of one row is that row: {one:?}"
        );
    }

    #[test]
    fn a_transaction_that_cannot_go_on_keeps_the_violation() {
        let statements = statements();
        let chunk = [item("a", r#"{"x":"bad"}"#), item("b", "{}")];
        let mut s = session(true, true);
        let err = rejected_item(&mut s, &statements, &chunk, violation());
        assert!(matches!(err, StoreError::CheckViolation { .. }), "{err:?}");
        let other = rejected_item(&mut s, &statements, &chunk, StoreError::conflict("x"));
        assert!(matches!(other, StoreError::Conflict { .. }), "{other:?}");
        let mut fine = session(false, false);
        let good = [item("a", "{}"), item("b", "{}")];
        let err = rejected_item(&mut fine, &statements, &good, violation());
        assert!(
            matches!(err, StoreError::CheckViolation { .. }),
            "no row refused alone: {err:?}"
        );
    }
}
