//! The task model: descriptors, instances and their builder, tasks with handlers, priorities,
//! and the policies applied on failure and on dead executions.

use crate::error::{BoxError, DocketError, StoreError};
use crate::records::{Execution, ExecutionKey, NewExecution};
use crate::schedule::Schedule;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// Longest task name accepted (the column is `VARCHAR(100)` on every backend).
pub const MAX_TASK_NAME_LEN: usize = 100;
/// Longest instance id accepted (the column is `VARCHAR(250)` on every backend).
pub const MAX_INSTANCE_ID_LEN: usize = 250;

/// A priority: higher values are handed out first. Any `i16` is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(pub i16);

impl Priority {
    /// 90: recurring tasks' default.
    pub const HIGH: Priority = Priority(90);
    /// 50: one-time tasks' default.
    pub const MEDIUM: Priority = Priority(50);
    /// 10.
    pub const LOW: Priority = Priority(10);

    /// Checked conversion from a wider integer (CSV, CLI, JSON input).
    pub fn try_from_i64(value: i64) -> Result<Self, DocketError> {
        i16::try_from(value).map(Priority).map_err(|_| {
            DocketError::InvalidConfig(format!(
                "priority {value} is out of range ({}..={})",
                i16::MIN,
                i16::MAX
            ))
        })
    }
}

impl From<i16> for Priority {
    fn from(v: i16) -> Self {
        Priority(v)
    }
}

/// A named kind of work, typed by its data `T` (serialized as JSON by
/// [`TaskInstance::data`], handed to a handler registered with [`Task::typed`]).
///
/// Usable in `const`/`static` items with a literal name:
/// `const SEND: TaskDescriptor<Email> = TaskDescriptor::new("send-email");`, or built at run
/// time from any string with [`TaskDescriptor::named`] (names read from configuration,
/// one task per tenant, ...).
pub struct TaskDescriptor<T = ()> {
    name: Cow<'static, str>,
    _data: PhantomData<fn() -> T>,
}

impl<T> TaskDescriptor<T> {
    /// A descriptor for the task called `name` (a literal; usable in `const` items).
    pub const fn new(name: &'static str) -> Self {
        Self {
            name: Cow::Borrowed(name),
            _data: PhantomData,
        }
    }

    /// A descriptor for a task whose name is only known at run time.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: Cow::Owned(name.into()),
            _data: PhantomData,
        }
    }

    /// The task name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts building the instance `id` of this task.
    pub fn instance(&self, id: impl Into<String>) -> TaskInstance<T> {
        TaskInstance {
            task_name: self.name.clone().into_owned(),
            id: id.into(),
            data: Ok(None),
            execution_time: None,
            priority: None,
            limit_key: None,
            _data: PhantomData,
        }
    }
}

impl<T> Clone for TaskDescriptor<T> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            _data: PhantomData,
        }
    }
}
impl<T> fmt::Debug for TaskDescriptor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskDescriptor({})", self.name)
    }
}

/// A task instance being built: `(task_name, id)` plus data, execution time and priority.
#[derive(Debug)]
pub struct TaskInstance<T = ()> {
    task_name: String,
    id: String,
    data: Result<Option<Vec<u8>>, String>,
    execution_time: Option<DateTime<Utc>>,
    priority: Option<Priority>,
    limit_key: Option<String>,
    _data: PhantomData<fn() -> T>,
}

impl<T: Serialize> TaskInstance<T> {
    /// Attaches data, stored as JSON bytes. A serialization error is reported when scheduled.
    pub fn data(mut self, data: T) -> Self {
        self.data = serde_json::to_vec(&data)
            .map(Some)
            .map_err(|e| e.to_string());
        self
    }
}

impl<T> TaskInstance<T> {
    /// Attaches already-encoded data bytes (any encoding the handler understands).
    pub fn raw_data(mut self, bytes: Vec<u8>) -> Self {
        self.data = Ok(Some(bytes));
        self
    }

    /// Sets the priority (used only when the priority toggle is on).
    pub fn priority(mut self, priority: impl Into<Priority>) -> Self {
        self.priority = Some(priority.into());
        self
    }

    /// Sets the key its task's per-key limits count it under (e.g. a customer id; at most 100
    /// characters). Needs `0009_limits`; without a per-key limit on the task it changes nothing.
    pub fn limit_key(mut self, key: impl Into<String>) -> Self {
        self.limit_key = Some(key.into());
        self
    }

    /// Sets when the instance becomes due (default: now).
    pub fn scheduled_to(mut self, at: DateTime<Utc>) -> Self {
        self.execution_time = Some(at);
        self
    }

    /// The task name.
    pub fn task_name(&self) -> &str {
        &self.task_name
    }

    /// The instance id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Validates and turns the instance into a row to insert. `now` fills a missing execution
    /// time; `default_priority` a missing priority.
    pub fn into_new_execution(
        self,
        now: DateTime<Utc>,
        default_priority: Priority,
    ) -> Result<NewExecution, DocketError> {
        validate_name("task name", &self.task_name, MAX_TASK_NAME_LEN)?;
        validate_name("instance id", &self.id, MAX_INSTANCE_ID_LEN)?;
        if let Some(key) = &self.limit_key {
            validate_name("limit key", key, crate::records::MAX_LIMIT_KEY_LEN)?;
        }
        let data = self.data.map_err(|reason| DocketError::Data {
            task: self.task_name.clone(),
            instance: self.id.clone(),
            reason,
        })?;
        Ok(NewExecution {
            task_name: self.task_name,
            task_instance: self.id,
            task_data: data,
            execution_time: crate::clock::to_micros(self.execution_time.unwrap_or(now)),
            priority: Some(self.priority.unwrap_or(default_priority).0),
            limit_key: self.limit_key,
        })
    }
}

/// Validates a task name and instance id (or item id) as the table stores them: each not
/// empty, at most [`MAX_TASK_NAME_LEN`] and [`MAX_INSTANCE_ID_LEN`] characters, without control
/// characters.
pub fn validate_key(task_name: &str, id: &str) -> Result<(), DocketError> {
    validate_name("task name", task_name, MAX_TASK_NAME_LEN)?;
    validate_name("instance id", id, MAX_INSTANCE_ID_LEN)
}

/// Validates a name stored in a text column of `max` characters: not empty, at most `max`
/// characters, no control characters. The error is [`DocketError::InvalidName`] naming `what`.
pub fn validate_name(what: &'static str, value: &str, max: usize) -> Result<(), DocketError> {
    let reason = if value.is_empty() {
        "must not be empty"
    } else if value.chars().count() > max {
        "too long"
    } else if value.chars().any(char::is_control) {
        "must not contain control characters"
    } else {
        return Ok(());
    };
    Err(DocketError::InvalidName {
        what,
        value: value.to_owned(),
        reason,
    })
}

/// Error returned by a task handler: the execution failed and its [`FailurePolicy`] applies.
/// Its message is what the scheduler logs and reports
/// ([`SchedulerEvent::ExecutionFailed`](crate::SchedulerEvent)).
///
/// A [`std::error::Error`]: an error it was made from is its
/// [`source`](std::error::Error::source). `?` converts the errors handlers meet most
/// (docket's own, I/O, JSON, number and UTF-8 parsing, boxed errors, strings); any other error
/// converts with [`TaskError::from_error`]:
///
/// ```
/// use docket_core::TaskError;
///
/// fn parse(text: &str) -> Result<u16, TaskError> {
///     Ok(text.trim().parse::<u16>()?)
/// }
///
/// fn other(result: Result<(), std::env::VarError>) -> Result<(), TaskError> {
///     result.map_err(TaskError::from_error)
/// }
///
/// assert_eq!(parse(" 8080 ").unwrap(), 8080);
/// let err = parse("eighty").unwrap_err();
/// assert_eq!(err.to_string(), "invalid digit found in string");
/// assert!(std::error::Error::source(&err).is_some());
/// assert!(other(Err(std::env::VarError::NotPresent)).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct TaskError {
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

impl TaskError {
    /// A failure with a message and no source.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// A failure caused by `error`: its message is the error's, and the error is kept as the
    /// source.
    pub fn from_error(error: impl Into<BoxError>) -> Self {
        let error: BoxError = error.into();
        Self {
            message: error.to_string(),
            source: Some(Arc::from(error)),
        }
    }

    /// A failure with a message of its own, caused by `error` (kept as the source).
    pub fn with_source(message: impl Into<String>, error: impl Into<BoxError>) -> Self {
        let error: BoxError = error.into();
        Self {
            message: message.into(),
            source: Some(Arc::from(error)),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TaskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<String> for TaskError {
    fn from(message: String) -> Self {
        TaskError::new(message)
    }
}

impl From<&str> for TaskError {
    fn from(message: &str) -> Self {
        TaskError::new(message)
    }
}

impl From<BoxError> for TaskError {
    fn from(error: BoxError) -> Self {
        TaskError::from_error(error)
    }
}

/// `From` for the errors a handler commonly meets, so `?` works on them.
macro_rules! task_error_from {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for TaskError {
            fn from(error: $error) -> Self {
                TaskError::from_error(error)
            }
        }
    )*};
}

task_error_from!(
    DocketError,
    StoreError,
    std::io::Error,
    serde_json::Error,
    std::fmt::Error,
    std::num::ParseIntError,
    std::num::ParseFloatError,
    std::str::ParseBoolError,
    std::str::Utf8Error,
    std::string::FromUtf8Error,
    chrono::ParseError,
);

/// What the handler gets besides the execution (or, for a [typed](Task::typed) handler,
/// besides the decoded data).
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    /// The scheduler running it.
    pub scheduler_name: String,
    /// When it was picked, by the scheduler's clock.
    pub started_at: DateTime<Utc>,
    /// Which execution runs: task name and instance id.
    pub key: ExecutionKey,
    /// How many runs of this execution failed in a row before this one (0 on a first try).
    pub consecutive_failures: i32,
}

/// How long to wait before a retry. Durations are [`std::time::Duration`], as everywhere in
/// docket's API.
#[derive(Debug, Clone, PartialEq)]
pub enum Retry {
    /// A fixed delay.
    Fixed(Duration),
    /// `initial * factor^(failures - 1)`.
    Exponential {
        /// Delay after the first failure.
        initial: Duration,
        /// Growth per further failure.
        factor: f64,
    },
    /// Next time on the task's recurring schedule (one-time tasks: retry now).
    NextScheduled,
}

/// What happens when a handler fails (returns an error or panics).
#[derive(Debug, Clone, PartialEq)]
pub struct FailurePolicy {
    /// When to retry.
    pub retry: Retry,
    /// Give up after this many consecutive failures (`None`: never). A one-time task that gives
    /// up is removed (after its give-up hook); a recurring one goes back to its schedule.
    pub max_retries: Option<u32>,
}

impl FailurePolicy {
    /// db-scheduler's default for one-time tasks: retry in 5 minutes, forever.
    pub fn retry_later() -> Self {
        Self {
            retry: Retry::Fixed(Duration::from_secs(5 * 60)),
            max_retries: None,
        }
    }

    /// Exponential backoff: `initial * factor^(n-1)` after the n-th consecutive failure.
    pub fn exponential(initial: Duration, factor: f64) -> Self {
        Self {
            retry: Retry::Exponential { initial, factor },
            max_retries: None,
        }
    }

    /// Limits the number of retries.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = Some(n);
        self
    }

    /// The delay after the `failures`-th consecutive failure (`None` for [`Retry::NextScheduled`]).
    pub fn delay(&self, failures: u32) -> Option<Duration> {
        match &self.retry {
            Retry::Fixed(d) => Some(*d),
            Retry::Exponential { initial, factor } => {
                let exp = i32::try_from(failures.saturating_sub(1)).unwrap_or(i32::MAX);
                let secs = initial.as_secs_f64() * factor.powi(exp);
                // Cap at ~100 years so adding it to a time can never overflow (and a NaN or
                // negative product from an odd factor is no delay).
                let capped = if secs.is_nan() {
                    0.0
                } else {
                    secs.clamp(0.0, 3.15e9)
                };
                Some(Duration::from_secs_f64(capped))
            }
            Retry::NextScheduled => None,
        }
    }

    /// True when `failures` consecutive failures exhaust the retries.
    pub fn gives_up(&self, failures: u32) -> bool {
        self.max_retries.is_some_and(|max| failures > max)
    }
}

/// What happens to an execution whose scheduler stopped heart-beating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeadExecutionPolicy {
    /// Reschedule it now, counted as a failure (the default).
    #[default]
    Revive,
    /// Remove it.
    Cancel,
}

/// The handler signature: the raw execution (its data still encoded) and the context. A
/// [typed](Task::typed) handler is wrapped into one that decodes the data first.
pub type Handler = dyn Fn(&Execution, &ExecutionContext) -> Result<(), TaskError> + Send + Sync;
/// Called when a one-time task gives up after its last retry, before it is removed.
pub type GiveUpHook = dyn Fn(&Execution) + Send + Sync;

/// A one-time or recurring task with its handler and policies.
#[derive(Clone)]
pub struct Task {
    pub(crate) name: String,
    pub(crate) schedule: Option<Schedule>,
    pub(crate) handler: Arc<Handler>,
    pub(crate) failure: FailurePolicy,
    pub(crate) dead: DeadExecutionPolicy,
    pub(crate) default_priority: Priority,
    pub(crate) give_up: Option<Arc<GiveUpHook>>,
}

/// The data of `execution` decoded as `T`; a failure message that says which execution, which
/// type and why.
pub(crate) fn decode<T: DeserializeOwned>(execution: &Execution) -> Result<T, TaskError> {
    let expected = std::any::type_name::<T>();
    let decoded = match execution.data::<T>() {
        Ok(Some(data)) => return Ok(data),
        Ok(None) => serde_json::from_value::<T>(serde_json::Value::Null),
        Err(e) => {
            let reason = match &e {
                DocketError::Data { reason, .. } => reason.clone(),
                other => other.to_string(),
            };
            return Err(TaskError::with_source(
                format!(
                    "task data for {}/{} does not decode as {expected}: {reason}",
                    execution.task_name, execution.task_instance
                ),
                e,
            ));
        }
    };
    decoded.map_err(|e| {
        TaskError::with_source(
            format!(
                "task data for {}/{} is missing; the handler expects {expected}",
                execution.task_name, execution.task_instance
            ),
            e,
        )
    })
}

/// The instance id of a recurring task's single execution.
pub const RECURRING_INSTANCE: &str = "recurring";

impl Task {
    /// A one-time task: each instance runs once and is removed on success. The handler gets
    /// the raw [`Execution`] (decode its data with [`Execution::data`]); [`Task::typed`] hands
    /// it the decoded data instead.
    pub fn one_time<T>(
        descriptor: TaskDescriptor<T>,
        handler: impl Fn(&Execution, &ExecutionContext) -> Result<(), TaskError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: descriptor.name().to_owned(),
            schedule: None,
            handler: Arc::new(handler),
            failure: FailurePolicy::retry_later(),
            dead: DeadExecutionPolicy::Revive,
            default_priority: Priority::MEDIUM,
            give_up: None,
        }
    }

    /// A one-time task whose handler gets the instance's data decoded as the descriptor's `T`
    /// (JSON, as [`TaskInstance::data`] wrote it):
    ///
    /// ```
    /// use docket_core::{Task, TaskDescriptor};
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Email { to: String }
    /// const SEND: TaskDescriptor<Email> = TaskDescriptor::new("send-email");
    ///
    /// let task = Task::typed(SEND, |email: Email, ctx| {
    ///     println!("{}: mail to {}", ctx.key.task_instance, email.to);
    ///     Ok(())
    /// });
    /// # let _ = task;
    /// ```
    ///
    /// An instance without data is decoded from JSON `null`, so `T = ()` and `T = Option<_>`
    /// accept it. Data that does not decode as `T` (or is missing for a `T` that needs it) fails
    /// that execution only, as an ordinary failure whose message names the task, the
    /// instance, the expected type and serde's reason; the handler is not called and the
    /// task's [`FailurePolicy`] applies.
    pub fn typed<T: DeserializeOwned + 'static>(
        descriptor: TaskDescriptor<T>,
        handler: impl Fn(T, &ExecutionContext) -> Result<(), TaskError> + Send + Sync + 'static,
    ) -> Self {
        Self::one_time(descriptor, move |execution, ctx| {
            handler(decode::<T>(execution)?, ctx)
        })
    }

    /// A recurring task: one execution (instance `recurring`), created at start-up if missing and
    /// rescheduled by `schedule` after every run. Failures go back to the schedule by default.
    pub fn recurring(
        name: impl Into<String>,
        schedule: Schedule,
        handler: impl Fn(&Execution, &ExecutionContext) -> Result<(), TaskError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            schedule: Some(schedule),
            handler: Arc::new(handler),
            failure: FailurePolicy {
                retry: Retry::NextScheduled,
                max_retries: None,
            },
            dead: DeadExecutionPolicy::Revive,
            default_priority: Priority::HIGH,
            give_up: None,
        }
    }

    /// Sets the failure policy.
    pub fn on_failure(mut self, policy: FailurePolicy) -> Self {
        self.failure = policy;
        self
    }

    /// Sets what happens to dead executions of this task.
    pub fn on_dead_execution(mut self, policy: DeadExecutionPolicy) -> Self {
        self.dead = policy;
        self
    }

    /// Sets the priority new instances get when none is given.
    pub fn default_priority(mut self, priority: impl Into<Priority>) -> Self {
        self.default_priority = priority.into();
        self
    }

    /// Called when a one-time execution exhausts its retries, before removal.
    pub fn on_give_up(mut self, hook: impl Fn(&Execution) + Send + Sync + 'static) -> Self {
        self.give_up = Some(Arc::new(hook));
        self
    }

    /// The task name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The recurring schedule, if any.
    pub fn schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref()
    }

    /// The priority given to instances that name none.
    pub fn priority_default(&self) -> Priority {
        self.default_priority
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("name", &self.name)
            .field("schedule", &self.schedule)
            .field("failure", &self.failure)
            .field("dead", &self.dead)
            .field("default_priority", &self.default_priority)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
