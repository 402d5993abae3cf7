//! What a db-scheduler node sends, statement shape by statement shape (as in its
//! `JdbcTaskRepository` and `JdbcCustomization`s), written with the space's dialect so that the
//! mixed-fleet and adoption cases can run db-scheduler's side next to docket schedulers on one
//! table. Only the shapes: no code of db-scheduler is reused.

use crate::harness::Foreign;
use chrono::{DateTime, FixedOffset, NaiveDateTime, Utc};
use docket_core::dialect::{LimitAt, LockAt, Rendered, SqlWriter, Value};
use docket_core::records::JAVA_SERIALIZATION_MAGIC;
use docket_core::{Execution, ExecutionKey, StoreError, TableName};

/// Task data as db-scheduler's default serializer writes it: a Java object stream (here the
/// string `"hello"`), which docket does not read.
pub fn java_serialized_hello() -> Vec<u8> {
    let mut data = JAVA_SERIALIZATION_MAGIC.to_vec();
    data.extend_from_slice(&[0x74, 0x00, 0x05]);
    data.extend_from_slice(b"hello");
    data
}

/// One db-scheduler node on a table.
pub struct DbSchedulerNode<'f> {
    foreign: &'f dyn Foreign,
    table: TableName,
    /// Written to `picked_by`.
    pub name: String,
    /// db-scheduler's `orderByPriority`: inserts name `priority`, due-queries order by it.
    pub priority: bool,
    /// The session's time zone, in which the node binds and reads times (see
    /// [`DbSchedulerNode::in_zone`]); `None`: UTC.
    zone: Option<FixedOffset>,
}

impl<'f> DbSchedulerNode<'f> {
    /// A node called `name` on `table`.
    pub fn new(foreign: &'f dyn Foreign, table: TableName, name: &str, priority: bool) -> Self {
        Self {
            foreign,
            table,
            name: name.to_owned(),
            priority,
            zone: None,
        }
    }

    /// The node with its session in `offset` (`-05:00`; the foreign connection must have that
    /// session time zone): times are bound and read as that zone's wall-clock values, as a
    /// JDBC driver in such a session does. `None`, or an offset that does not parse: UTC.
    pub fn in_zone(mut self, offset: Option<&str>) -> Self {
        self.zone = offset.and_then(|o| o.parse::<FixedOffset>().ok());
        self
    }

    /// `at` as the session zone's wall-clock value, carried in a UTC value for binding.
    fn wall_clock(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        match self.zone {
            Some(zone) => at.with_timezone(&zone).naive_local().and_utc(),
            None => at,
        }
    }

    /// The instant a wall-clock value read in the session's zone stands for.
    fn instant(&self, read: DateTime<Utc>) -> DateTime<Utc> {
        let naive: NaiveDateTime = read.naive_utc();
        match self.zone {
            Some(zone) => (naive - zone).and_utc(),
            None => read,
        }
    }

    fn writer(&self) -> SqlWriter<'static> {
        SqlWriter::new(self.foreign.dialect())
    }

    fn executions(&self, rows: Vec<docket_core::store::Row>) -> Result<Vec<Execution>, StoreError> {
        rows.into_iter()
            .map(|mut r| Execution::from_row(&mut r))
            .collect()
    }

    /// `createIfNotExists`: `insert into t (task_name, task_instance, task_data,
    /// execution_time, picked, version[, priority]) values (...)`; `consecutive_failures` is
    /// left NULL.
    pub fn insert(
        &self,
        key: &ExecutionKey,
        data: Option<Vec<u8>>,
        at: DateTime<Utc>,
        priority: Option<i16>,
    ) -> Result<u64, StoreError> {
        let mut w = self.writer();
        w.push("INSERT INTO ")
            .table(&self.table)
            .push(" (task_name, task_instance, task_data, execution_time, picked, version");
        let mut values = vec![
            Value::from(key.task_name.as_str()),
            Value::from(key.task_instance.as_str()),
            Value::Bytes(data),
            Value::from(self.wall_clock(at)),
            Value::Bool(false),
            Value::BigInt(1),
        ];
        if self.priority {
            w.push(", priority");
            values.push(Value::SmallInt(priority));
        }
        w.push(") VALUES ").bind_list(values);
        self.foreign.execute(&w.finish())
    }

    /// `select * from t where picked = ? and execution_time <= ? order by [priority desc,]
    /// execution_time asc` with the dialect's limit, and `for update skip locked` when
    /// `locking` (the generic lock-and-fetch's select).
    fn due_query(&self, now: DateTime<Utc>, limit: i64, locking: bool) -> Rendered {
        let d = self.foreign.dialect();
        let mut w = self.writer();
        w.push("SELECT ");
        d.limit(&mut w, limit, LimitAt::Head);
        w.push("* FROM ").table(&self.table);
        if locking {
            d.skip_locked(&mut w, LockAt::Table);
        }
        w.push(" WHERE picked = ")
            .bind(false)
            .push(" AND execution_time <= ")
            .bind(now)
            .push(" ORDER BY ");
        if self.priority {
            w.push("priority DESC, ");
        }
        w.push("execution_time ASC");
        d.limit(&mut w, limit, LimitAt::Tail);
        if locking {
            d.skip_locked(&mut w, LockAt::End);
        }
        w.finish()
    }

    /// `getDue`: due, unpicked executions (fetch-then-lock's candidates).
    pub fn due(&self, now: DateTime<Utc>, limit: i64) -> Result<Vec<Execution>, StoreError> {
        self.executions(self.foreign.query(&self.due_query(now, limit, false))?)
    }

    /// `pick`: `update t set picked = ?, picked_by = ?, last_heartbeat = ?, version = version
    /// + 1 where picked = ? and task_name = ? and task_instance = ? and version = ?`. Returns
    /// the execution as picked, or `None` when someone else was first.
    pub fn pick(&self, e: &Execution, now: DateTime<Utc>) -> Result<Option<Execution>, StoreError> {
        let mut w = self.writer();
        self.push_claim(&mut w, now);
        w.push(" WHERE picked = ")
            .bind(false)
            .push(" AND task_name = ")
            .bind(e.task_name.as_str())
            .push(" AND task_instance = ")
            .bind(e.task_instance.as_str())
            .push(" AND version = ")
            .bind(e.version);
        Ok((self.foreign.execute(&w.finish())? == 1).then(|| self.picked(e, now)))
    }

    fn push_claim(&self, w: &mut SqlWriter<'_>, now: DateTime<Utc>) {
        w.push("UPDATE ")
            .table(&self.table)
            .push(" SET picked = ")
            .bind(true)
            .push(", picked_by = ")
            .bind(self.name.as_str())
            .push(", last_heartbeat = ")
            .bind(now)
            .push(", version = version + 1");
    }

    fn picked(&self, e: &Execution, now: DateTime<Utc>) -> Execution {
        Execution {
            picked: true,
            picked_by: Some(self.name.clone()),
            last_heartbeat: Some(now),
            version: e.version + 1,
            ..e.clone()
        }
    }

    /// `lockAndFetchGeneric`: in one transaction, the due-query `for update skip locked`, then
    /// for each row `update t set picked = ?, picked_by = ?, last_heartbeat = ?, version =
    /// version + 1 where task_name = ? and task_instance = ?` (no version: the row is locked).
    pub fn lock_and_fetch(
        &self,
        now: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<Execution>, StoreError> {
        let select = self.due_query(now, limit, true);
        let mut claimed = Vec::new();
        self.foreign.transaction(&mut |s| {
            claimed.clear();
            for e in self.executions(s.query(&select)?)? {
                let mut w = self.writer();
                self.push_claim(&mut w, now);
                w.push(" WHERE task_name = ")
                    .bind(e.task_name.as_str())
                    .push(" AND task_instance = ")
                    .bind(e.task_instance.as_str());
                if s.execute(&w.finish())? != 1 {
                    return Err(StoreError::conflict("a locked row did not update"));
                }
                claimed.push(self.picked(&e, now));
            }
            Ok(())
        })?;
        Ok(claimed)
    }

    fn where_version(w: &mut SqlWriter<'_>, e: &Execution) {
        w.push(" WHERE task_name = ")
            .bind(e.task_name.as_str())
            .push(" AND task_instance = ")
            .bind(e.task_instance.as_str())
            .push(" AND version = ")
            .bind(e.version);
    }

    /// `updateHeartbeat`: `update t set last_heartbeat = ? where task_name = ? and
    /// task_instance = ? and version = ?`; `false` when the version moved on.
    pub fn heartbeat(&self, e: &Execution, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let mut w = self.writer();
        w.push("UPDATE ")
            .table(&self.table)
            .push(" SET last_heartbeat = ")
            .bind(now);
        Self::where_version(&mut w, e);
        Ok(self.foreign.execute(&w.finish())? == 1)
    }

    /// `remove` (a one-time task completed): `delete from t where task_name = ? and
    /// task_instance = ? and version = ?`; `false` when the version moved on.
    pub fn complete(&self, e: &Execution) -> Result<bool, StoreError> {
        let mut w = self.writer();
        w.push("DELETE FROM ").table(&self.table);
        Self::where_version(&mut w, e);
        Ok(self.foreign.execute(&w.finish())? == 1)
    }

    /// `reschedule` as dead-execution revival does it (`ReviveDeadExecution`): `update t set
    /// execution_time = ?, picked = ?, picked_by = ?, last_failure = ?, consecutive_failures =
    /// ?, last_heartbeat = ?, version = ? where task_name = ? and task_instance = ? and version
    /// = ?`, the new version being the old one plus one.
    pub fn revive(&self, e: &Execution, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let mut w = self.writer();
        w.push("UPDATE ")
            .table(&self.table)
            .push(" SET execution_time = ")
            .bind(now)
            .push(", picked = ")
            .bind(false)
            .push(", picked_by = ")
            .bind(Value::Text(None))
            .push(", last_failure = ")
            .bind(now)
            .push(", consecutive_failures = ")
            .bind(Value::Int(e.consecutive_failures.saturating_add(1)))
            .push(", last_heartbeat = ")
            .bind(Value::Timestamp(None))
            .push(", version = ")
            .bind(e.version + 1);
        Self::where_version(&mut w, e);
        Ok(self.foreign.execute(&w.finish())? == 1)
    }

    /// `getDeadExecutions`: `select * from t where picked = ? and last_heartbeat <= ? order
    /// by last_heartbeat asc`.
    pub fn dead(&self, older_than: DateTime<Utc>) -> Result<Vec<Execution>, StoreError> {
        let mut w = self.writer();
        w.push("SELECT * FROM ")
            .table(&self.table)
            .push(" WHERE picked = ")
            .bind(true)
            .push(" AND last_heartbeat <= ")
            .bind(older_than)
            .push(" ORDER BY last_heartbeat ASC");
        self.executions(self.foreign.query(&w.finish())?)
    }

    /// The number of rows in the table.
    pub fn count(&self) -> Result<i64, StoreError> {
        let mut w = self.writer();
        w.push("SELECT COUNT(*) AS n FROM ").table(&self.table);
        let rows = self.foreign.query(&w.finish())?;
        rows.into_iter().next().map_or(Ok(0), |mut r| r.i64("n"))
    }

    /// A row as stored (plain `select *` by key), or `None`.
    pub fn get(&self, key: &ExecutionKey) -> Result<Option<Execution>, StoreError> {
        let mut w = self.writer();
        w.push("SELECT * FROM ")
            .table(&self.table)
            .push(" WHERE task_name = ")
            .bind(key.task_name.as_str())
            .push(" AND task_instance = ")
            .bind(key.task_instance.as_str());
        let mut row = self.executions(self.foreign.query(&w.finish())?)?.pop();
        if let Some(e) = &mut row {
            e.execution_time = self.instant(e.execution_time);
            for t in [
                &mut e.last_success,
                &mut e.last_failure,
                &mut e.last_heartbeat,
            ] {
                *t = t.map(|t| self.instant(t));
            }
        }
        Ok(row)
    }
}
