//! Typed errors. Stores return [`StoreError`]; the scheduler and client return [`DocketError`].

use thiserror::Error;

/// A boxed error from a driver or pool, kept as the source of a [`StoreError`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a store (a backend) can report. Backends map their driver errors onto these variants in
/// their own `error.rs`, so the engine and the shared test suite never see a driver type.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The schema lacks a migration the configured features need.
    #[error("the table {table} lacks migration {name}: run it (e.g. `docket migrate`) before enabling {feature}")]
    MissingMigration {
        /// Table that was checked.
        table: String,
        /// Name of the migration that adds what is missing, e.g. `0002_priority`.
        name: &'static str,
        /// The feature that needs it, e.g. `priority`.
        feature: &'static str,
    },
    /// The backend cannot do what was asked (a capability it lacks).
    #[error("{backend} does not support {capability}")]
    Unsupported {
        /// Backend name.
        backend: &'static str,
        /// The missing capability.
        capability: &'static str,
    },
    /// Could not get a connection (server down, refused, bad URL or credentials, pool
    /// exhausted).
    #[error("connection failed: {source}")]
    Connection {
        /// The driver's or pool's error.
        #[source]
        source: BoxError,
    },
    /// The database ended a statement or transaction to break a deadlock or a serialization
    /// conflict with concurrent work (MySQL/MariaDB 1213 and 1205, PostgreSQL 40001 and
    /// 40P01): nothing was written, and running it again may succeed.
    #[error("contention with concurrent work (retryable): {source}")]
    Contention {
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// The database rejected a statement or the driver failed.
    #[error("database error: {source}")]
    Database {
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// A unique key was violated (normalized by every session, whatever the driver's code).
    #[error("duplicate key: {source}")]
    Duplicate {
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// A CHECK constraint refused a row (normalized by the sessions that report it: SQL
    /// Server's error 547, Oracle's ORA-02290). The work queue's intake turns it into
    /// [`StoreError::RejectedItem`].
    #[error("check constraint violated: {source}")]
    CheckViolation {
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// A work-queue item whose row the database refused by a CHECK constraint: the JSON check
    /// on `custom_attributes` (SQL Server's `ISJSON`, Oracle's `IS JSON`) rejected its
    /// attributes. Its batch was rolled back; nothing was inserted.
    #[error("item {item} of {task}: the database refused its row ({reason}); batch rolled back")]
    RejectedItem {
        /// Task type.
        task: String,
        /// Item id.
        item: String,
        /// What the database said.
        reason: String,
    },
    /// A statement expected to return a row returned none.
    #[error("not found: {source}")]
    NotFound {
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// A transaction found the rows in another state than it needs (another process changed
    /// them meanwhile); it was rolled back and nothing changed.
    #[error("{what}; rolled back")]
    Conflict {
        /// What did not hold, e.g. "claimed 3 of 4 locked rows".
        what: String,
    },
    /// A work-queue item id that already exists; its batch was rolled back.
    #[error("item {item} of {task} already exists; batch rolled back")]
    DuplicateItem {
        /// Task type.
        task: String,
        /// Item id.
        item: String,
    },
    /// An item id of a batch repeats one given earlier in the same batch, more than a chunk
    /// before: the database found it and ended the transaction before it could say which. It
    /// is the id of one of the batch's records `from..=to` (1-based, in batch order). The
    /// batch was rolled back. The work queue names the item where it can
    /// ([`DuplicateItem`](StoreError::DuplicateItem) for a typed batch, a CSV line range).
    #[error("an item id of {task} among records {from} to {to} repeats one given earlier in the batch; batch rolled back")]
    RepeatedItem {
        /// Task type.
        task: String,
        /// First record of the range (1-based).
        from: u64,
        /// Last record of the range.
        to: u64,
    },
    /// The input of a streaming insert failed (a record was rejected, or reading it failed);
    /// the transaction was rolled back and nothing was inserted. Carries the caller's error,
    /// which the work queue hands back as it was.
    #[error(transparent)]
    Input(Box<DocketError>),
    /// A migration name that the backend does not ship.
    #[error("unknown migration {name:?}; known: {known}")]
    UnknownMigration {
        /// The name asked for.
        name: String,
        /// The names the backend ships.
        known: String,
    },
    /// A migration failed to apply (nothing of it is recorded as applied).
    #[error("migration failed: {source}")]
    Migration {
        /// The harness's or database's error.
        #[source]
        source: BoxError,
    },
    /// An existing table cannot be adopted: a column docket needs is missing or has a type
    /// docket cannot read and write exactly.
    #[error("table {table} cannot be adopted: column {column} {reason}")]
    Incompatible {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// What is wrong with it, e.g. "is missing" or "has type timestamp; docket needs ...".
        reason: String,
    },
    /// `migrate` found the table already there without docket's migration history (a table
    /// made by db-scheduler's DDL, or by hand): adopting it is the way, and nothing was run.
    #[error(
        "table {table} exists but docket's migration history does not know it (a table made by \
         db-scheduler or by hand?): adopt it with `docket migrate --adopt` (library: \
         `StoreInfo::adopt`), which checks its columns and records what it already has; \
         nothing was changed"
    )]
    NeedsAdopt {
        /// The table.
        table: String,
    },
    /// A stored value could not be turned into the model (e.g. out-of-range number).
    #[error("invalid stored value in column {column}: {reason}")]
    Decode {
        /// Column name.
        column: &'static str,
        /// Why decoding failed.
        reason: String,
    },
}

impl StoreError {
    /// A [`StoreError::Database`] from a driver error or a message.
    pub fn database(source: impl Into<BoxError>) -> Self {
        Self::Database {
            source: source.into(),
        }
    }

    /// A [`StoreError::Connection`] from a driver or pool error or a message.
    pub fn connection(source: impl Into<BoxError>) -> Self {
        Self::Connection {
            source: source.into(),
        }
    }

    /// A [`StoreError::Conflict`].
    pub fn conflict(what: impl Into<String>) -> Self {
        Self::Conflict { what: what.into() }
    }
}

/// Errors of the client API and the scheduler.
#[derive(Debug, Error)]
pub enum DocketError {
    /// A store operation failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A table name (or other identifier) failed validation.
    #[error("invalid identifier {value:?}: {reason}")]
    InvalidIdentifier {
        /// The rejected input.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A custom-attribute name failed validation.
    #[error("invalid attribute name {name:?}: {reason}")]
    InvalidAttribute {
        /// The rejected input.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A work-queue record was rejected at intake; nothing of its batch was written.
    #[error("invalid item {item:?}: {reason}")]
    InvalidItem {
        /// Item id.
        item: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A CSV file was rejected at intake; nothing of it was written.
    #[error("CSV line {line}, column {column:?}: {reason}")]
    Csv {
        /// 1-based line in the file (the header is line 1).
        line: u64,
        /// Column name (or number when there is no header for it).
        column: String,
        /// What was wrong.
        reason: String,
    },
    /// A work-queue operation found the item or assignment in another state.
    #[error("{task}/{item}: {reason}")]
    Queue {
        /// Task type.
        task: String,
        /// Item id.
        item: String,
        /// What was wrong, e.g. "worker w1 holds no accepted assignment".
        reason: String,
    },
    /// A task name the scheduler does not know.
    #[error("unknown task {0:?}: register it with the scheduler before use")]
    UnknownTask(String),
    /// A task limit that cannot be stored ([`TaskLimit::validate`](crate::TaskLimit::validate)).
    #[error("invalid limit of task {task:?}: {reason}")]
    InvalidLimit {
        /// The task.
        task: String,
        /// What is wrong.
        reason: String,
    },
    /// An empty or over-long task name or instance id.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidName {
        /// "task name" or "instance id".
        what: &'static str,
        /// The rejected input.
        value: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// Task data could not be serialized or deserialized.
    #[error("task data for {task}/{instance} could not be (de)serialized: {reason}")]
    Data {
        /// Task name.
        task: String,
        /// Instance id.
        instance: String,
        /// serde's message.
        reason: String,
    },
    /// A cron expression did not parse.
    #[error("invalid cron expression {expression:?}: {reason}")]
    InvalidCron {
        /// The expression.
        expression: String,
        /// The parser's message.
        reason: String,
    },
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// The execution does not exist.
    #[error("no execution {task}/{instance}")]
    NotFound {
        /// Task name.
        task: String,
        /// Instance id.
        instance: String,
    },
    /// The execution is currently picked by a scheduler and cannot be changed by the client.
    #[error("execution {task}/{instance} is running (picked by {picked_by:?}); it cannot be changed now")]
    Running {
        /// Task name.
        task: String,
        /// Instance id.
        instance: String,
        /// Who holds it.
        picked_by: Option<String>,
    },
    /// The scheduler is already running or has been shut down.
    #[error("scheduler state: {0}")]
    State(&'static str),
    /// Scheduling inside the caller's transaction was given a connection outside any
    /// transaction (there the insert would commit on its own); nothing was written.
    #[error("schedule_in needs a connection inside an open transaction (begin one with diesel's Connection::transaction); nothing was scheduled")]
    NotInTransaction,
}

/// Shorthand for results of the client API and scheduler.
pub type Result<T, E = DocketError> = std::result::Result<T, E>;
