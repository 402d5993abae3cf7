//! What a backend provides to the suite, and the per-test context built on it.

use chrono::{DateTime, TimeZone, Utc};
use docket_core::dialect::{Dialect, Rendered};
use docket_core::scheduler::SchedulerBuilder;
use docket_core::store::sql::{SqlConnector, SqlSession};
use docket_core::store::Row;
use docket_core::{
    ExecutionKey, ManualClock, PollingStrategy, Scheduler, SchedulerClient, SchedulerConfig, Store,
    StoreConfig, StoreError, TableName, Task,
};
use std::sync::Arc;
use std::time::Duration;

/// The priority toggle a suite instance runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toggle {
    /// Priority off: no statement touches the `priority` column.
    Off,
    /// Priority on.
    On,
}

impl Toggle {
    /// True when on.
    pub fn on(self) -> bool {
        self == Toggle::On
    }
}

/// A backend under test: hands out isolated spaces (own schema or database per test).
pub trait Harness: Sync {
    /// Backend name as in test names and `NOT RUN` messages.
    fn name(&self) -> &'static str;
    /// A fresh, empty space. Panics with `NOT RUN: <backend>: <reason>` when no server can be
    /// had, so the test fails loudly instead of passing.
    fn space(&self) -> Box<dyn Space>;
    /// The backend's migrations, in order (each prefix is a supported table state).
    fn migrations(&self) -> &'static [docket_core::migrate::MigrationFile];
}

/// One isolated space on a server; dropping it removes it.
pub trait Space: Send + Sync {
    /// A store on this space. `session_time_zone` sets the connections' session time zone.
    fn store(&self, config: StoreConfig, session_time_zone: Option<&str>) -> Arc<dyn Store>;
    /// Applies migrations for `config.table` up to `up_to` (all when `None`).
    fn migrate(&self, config: &StoreConfig, up_to: Option<&str>);
    /// A connection URL that selects this space, for other processes (see
    /// [`crate::backends::connect`]).
    fn url(&self) -> String;
    /// Plain SQL on this space, as another program (a db-scheduler node, an operator) sends
    /// it: pooled connections of the backend, no docket store in between. The diesel backends
    /// keep no prepared statements on them: db-scheduler's `SELECT *` changes result type
    /// when docket's migrations add columns, which a cached statement must not (PostgreSQL:
    /// "cached plan must not change result type"; MySQL: the result buffers no longer fit).
    fn foreign(&self) -> Box<dyn Foreign>;
    /// The column types and constraints of db-scheduler's published DDL for this database
    /// (`<database>_tables.sql` of its repository); [`DbSchedulerTypes::ddl`] writes it.
    fn db_scheduler_types(&self) -> DbSchedulerTypes;
    /// Every DDL db-scheduler published for this database that a team may bring (older
    /// releases' column types too), the current one first. Default: the current one.
    fn db_scheduler_variants(&self) -> Vec<DbSchedulerTypes> {
        vec![self.db_scheduler_types()]
    }
    /// [`Space::foreign`] with the session time zone `time_zone` (a fixed offset such as
    /// `-05:00`; `None` as `foreign`). Default: `foreign`, for databases whose time columns do
    /// not convert through the session's zone.
    fn foreign_in(&self, time_zone: Option<&str>) -> Box<dyn Foreign> {
        let _ = time_zone;
        self.foreign()
    }
    /// Statements that make the row `key` of `table` one docket cannot decode, with a value
    /// this database accepts (such as PostgreSQL's `-infinity`), and the column that fails.
    /// Run in one session ([`Foreign::transaction`]).
    fn poison(&self, table: &TableName, key: &ExecutionKey) -> (Vec<Rendered>, &'static str);
    /// DDL (run unprepared, in order) adding a trigger that makes every `UPDATE` of `table`'s
    /// rows with `task_instance = instance` fail with an error of the database's own: a row
    /// that one statement cannot write while its neighbours can. `instance` is this suite's
    /// constant, written as a literal.
    fn reject_updates(&self, table: &TableName, instance: &'static str) -> Vec<String>;
}

/// `table` as `dialect` writes it (quoted, maybe schema-qualified), for DDL this suite writes.
pub fn table_sql(dialect: &dyn Dialect, table: &TableName) -> String {
    let mut w = docket_core::dialect::SqlWriter::new(dialect);
    w.table(table);
    w.finish().sql
}

/// The message of the triggers of [`Space::reject_updates`].
pub const REJECTED: &str = "update rejected by the test trigger";

/// db-scheduler's DDL for one database, as data: the type of each column, which columns are
/// `NOT NULL`, the primary key and the prefix of index names.
#[derive(Debug, Clone, Copy)]
pub struct DbSchedulerTypes {
    /// `task_name`.
    pub name: &'static str,
    /// `task_instance`.
    pub instance: &'static str,
    /// `task_data`.
    pub data: &'static str,
    /// `execution_time`, `last_success`, `last_failure`, `last_heartbeat`.
    pub time: &'static str,
    /// `picked`.
    pub flag: &'static str,
    /// `picked_by`.
    pub picked_by: &'static str,
    /// `consecutive_failures`.
    pub failures: &'static str,
    /// `version`.
    pub version: &'static str,
    /// The columns declared `NOT NULL`.
    pub not_null: &'static [&'static str],
    /// The primary key's columns.
    pub primary_key: &'static str,
    /// Prefix of the index names.
    pub index_prefix: &'static str,
    /// The session time zone of the db-scheduler node writing into this DDL's table, as a
    /// fixed UTC offset such as `-05:00` (`None`: UTC). Its driver binds times as wall-clock
    /// values of that zone, as a JDBC driver in that session does; zone-converting columns
    /// (MySQL's `TIMESTAMP`) store the same instants whatever the zone.
    pub node_time_zone: Option<&'static str>,
}

impl DbSchedulerTypes {
    /// What most of db-scheduler's DDL files share; each database's differs in a few fields.
    pub const COMMON: DbSchedulerTypes = DbSchedulerTypes {
        name: "VARCHAR(100)",
        instance: "VARCHAR(100)",
        data: "BLOB",
        time: "TIMESTAMP",
        flag: "BOOLEAN",
        picked_by: "VARCHAR(50)",
        failures: "INT",
        version: "BIGINT",
        not_null: &[
            "task_name",
            "task_instance",
            "execution_time",
            "picked",
            "version",
        ],
        primary_key: "task_name, task_instance",
        index_prefix: "",
        node_time_zone: None,
    };

    /// The DDL of table `scheduled_tasks` (quoted by `dialect`), with or without `priority`.
    pub fn ddl(&self, dialect: &dyn Dialect, priority: bool) -> DbSchedulerDdl {
        let table = table_sql(dialect, &TableName::default());
        let mut columns = vec![
            ("task_name", self.name),
            ("task_instance", self.instance),
            ("task_data", self.data),
            ("execution_time", self.time),
            ("picked", self.flag),
            ("picked_by", self.picked_by),
            ("last_success", self.time),
            ("last_failure", self.time),
            ("consecutive_failures", self.failures),
            ("last_heartbeat", self.time),
            ("version", self.version),
        ];
        if priority {
            columns.push(("priority", "SMALLINT"));
        }
        let columns: Vec<String> = columns
            .into_iter()
            .map(|(name, ty)| match self.not_null.contains(&name) {
                true => format!("{name} {ty} NOT NULL"),
                false => format!("{name} {ty}"),
            })
            .collect();
        let index = |name: &str, keys: &str| {
            format!(
                "CREATE INDEX {}{name}_idx ON {table} ({keys})",
                self.index_prefix
            )
        };
        DbSchedulerDdl {
            table: vec![
                format!(
                    "CREATE TABLE {table} ({}, PRIMARY KEY ({}))",
                    columns.join(", "),
                    self.primary_key
                ),
                index("execution_time", "execution_time"),
                index("last_heartbeat", "last_heartbeat"),
            ],
            priority_index: priority.then(|| {
                index(
                    "priority_execution_time",
                    "priority DESC, execution_time ASC",
                )
            }),
        }
    }
}

/// Creates db-scheduler's table (its current DDL for the space's database, with or without
/// `priority`) through `foreign`, as a team moving from db-scheduler brings it.
pub fn create_db_scheduler_table(space: &dyn Space, foreign: &dyn Foreign, priority: bool) {
    for stmt in space
        .db_scheduler_types()
        .ddl(foreign.dialect(), priority)
        .all()
    {
        foreign.batch(&stmt).expect("db-scheduler's DDL runs");
    }
}

/// db-scheduler's DDL, one statement per entry.
#[derive(Debug, Clone)]
pub struct DbSchedulerDdl {
    /// The table and the indexes on `execution_time` and `last_heartbeat`.
    pub table: Vec<String>,
    /// The `(priority, execution_time)` index, when the table has `priority`.
    pub priority_index: Option<String>,
}

impl DbSchedulerDdl {
    /// The whole DDL, as db-scheduler ships it.
    pub fn all(&self) -> Vec<String> {
        self.table
            .iter()
            .chain(&self.priority_index)
            .cloned()
            .collect()
    }
}

/// `UPDATE <table> SET <column> = <literal> WHERE <key>` in `dialect`: the literal is SQL this
/// suite writes (a value such as `'-infinity'`), the key is bound.
pub fn set_literal(
    dialect: &dyn Dialect,
    table: &TableName,
    key: &ExecutionKey,
    column: &str,
    literal: &str,
) -> Rendered {
    let mut w = docket_core::dialect::SqlWriter::new(dialect);
    w.push("UPDATE ")
        .table(table)
        .push(&format!(" SET {column} = {literal} WHERE task_name = "))
        .bind(key.task_name.as_str())
        .push(" AND task_instance = ")
        .bind(key.task_instance.as_str());
    w.finish()
}

/// Literal SQL without binds.
pub fn literal(sql: &str) -> Rendered {
    Rendered::text(sql)
}

/// Plain SQL on a space (see [`Space::foreign`]), written with the backend's dialect so that
/// placeholders are numbered right and every value is bound.
pub trait Foreign: Send + Sync {
    /// The dialect to write statements in.
    fn dialect(&self) -> &'static dyn Dialect;
    /// Runs a statement; returns affected rows.
    fn execute(&self, stmt: &Rendered) -> Result<u64, StoreError>;
    /// Runs a query.
    fn query(&self, stmt: &Rendered) -> Result<Vec<Row>, StoreError>;
    /// Runs `f` in one transaction on one connection (committed when `f` returns `Ok`).
    fn transaction(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<(), StoreError>,
    ) -> Result<(), StoreError>;
    /// Runs literal SQL without binds (DDL).
    fn batch(&self, sql: &str) -> Result<u64, StoreError> {
        self.execute(&literal(sql))
    }
}

impl<C: SqlConnector> Foreign for C {
    fn dialect(&self) -> &'static dyn Dialect {
        SqlConnector::dialect(self)
    }

    fn execute(&self, stmt: &Rendered) -> Result<u64, StoreError> {
        self.with_session(&mut |s| s.execute(stmt))
    }

    fn query(&self, stmt: &Rendered) -> Result<Vec<Row>, StoreError> {
        self.with_session(&mut |s| s.query(stmt))
    }

    fn transaction(
        &self,
        f: &mut dyn FnMut(&mut dyn SqlSession) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.in_transaction(f)
    }
}

/// Panics with the suite's `NOT RUN` marker.
pub fn not_run(backend: &str, reason: impl std::fmt::Display) -> ! {
    panic!("NOT RUN: {backend}: {reason}")
}

/// What a case needs beyond the scheduler's basics; asked of the backend's
/// [`Capabilities`](docket_core::dialect::Capabilities), never of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The work queue.
    WorkQueue,
    /// Lock-and-fetch polling.
    LockAndFetch,
}

/// The running test's name (`postgres::priority_on::basic_flow`): the test harness names each
/// test's thread so.
fn case_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("this case")
        .to_owned()
}

/// Per-test context: a migrated space, a store with the toggle, and a manual clock.
pub struct Ctx {
    /// The space (kept alive for the test).
    pub space: Box<dyn Space>,
    /// The toggle.
    pub toggle: Toggle,
    /// The store (all migrations applied).
    pub store: Arc<dyn Store>,
    /// A manual clock at [`Ctx::t0`].
    pub clock: ManualClock,
}

impl Ctx {
    /// A space with every migration applied.
    pub fn new(harness: &dyn Harness, toggle: Toggle) -> Self {
        let space = harness.space();
        let config = StoreConfig::with_priority(toggle.on());
        space.migrate(&config, None);
        let store = space.store(config, None);
        Self {
            space,
            toggle,
            store,
            clock: ManualClock::new(Self::t0()),
        }
    }

    /// Fails the case loudly with `NOT RUN: <backend>/<case>: ...` when the backend cannot do
    /// what it needs: a case a backend cannot run is never a pass.
    pub fn require(&self, need: Need) {
        let caps = self.store.capabilities();
        let (has, what) = match need {
            Need::WorkQueue => (caps.work_queue, "the work queue"),
            Need::LockAndFetch => (caps.lock_and_fetch.is_some(), "lock-and-fetch"),
        };
        if !has {
            not_run(
                &format!("{}/{}", self.store.backend(), case_name()),
                format!("the backend does not support {what}"),
            );
        }
    }

    /// The manual clock's start: 2026-06-01T12:00:00Z.
    pub fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0)
            .single()
            .expect("valid literal")
    }

    /// The store's configuration.
    pub fn config(&self) -> StoreConfig {
        StoreConfig::with_priority(self.toggle.on())
    }

    /// A standalone client on the manual clock.
    pub fn client(&self) -> SchedulerClient {
        SchedulerClient::with_clock(self.store.clone(), Arc::new(self.clock.clone()))
            .expect("schema is migrated")
    }

    /// A scheduler builder on the manual clock with small, test-friendly settings.
    pub fn scheduler(&self, name: &str, polling: PollingStrategy) -> SchedulerBuilder {
        Scheduler::builder(self.store.clone())
            .clock(Arc::new(self.clock.clone()))
            .config(SchedulerConfig {
                threads: 4,
                polling,
                scheduler_name: name.to_owned(),
                heartbeat_interval: Duration::from_secs(60),
                polling_interval: Duration::from_millis(50),
                shutdown_max_wait: Duration::from_secs(30),
                ..SchedulerConfig::default()
            })
    }

    /// Builds a scheduler with the given tasks.
    pub fn build(&self, name: &str, polling: PollingStrategy, tasks: Vec<Task>) -> Scheduler {
        self.scheduler(name, polling)
            .tasks(tasks)
            .build()
            .expect("scheduler builds")
    }
}
