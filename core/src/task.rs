//! The task model: descriptors, instances and their builder, tasks with handlers, priorities,
//! and the policies applied on failure and on dead executions.

use crate::error::DocketError;
use crate::records::{Execution, NewExecution};
use crate::schedule::Schedule;
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

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

/// A named kind of work, typed by its data. Usable in `const`/`static` items:
/// `const SEND: TaskDescriptor<Email> = TaskDescriptor::new("send-email");`
pub struct TaskDescriptor<T = ()> {
    name: &'static str,
    _data: PhantomData<fn() -> T>,
}

impl<T> TaskDescriptor<T> {
    /// A descriptor for the task called `name`.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            _data: PhantomData,
        }
    }

    /// The task name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Starts building the instance `id` of this task.
    pub fn instance(&self, id: impl Into<String>) -> TaskInstance<T> {
        TaskInstance {
            task_name: self.name.to_owned(),
            id: id.into(),
            data: Ok(None),
            execution_time: None,
            priority: None,
            _data: PhantomData,
        }
    }
}

impl<T> Clone for TaskDescriptor<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for TaskDescriptor<T> {}
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

/// Error returned by a task handler: the execution failed and the failure policy applies.
#[derive(Debug, Clone)]
pub struct TaskError {
    message: String,
}

impl TaskError {
    /// A failure with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
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

impl<E: std::error::Error> From<E> for TaskError {
    fn from(e: E) -> Self {
        TaskError::new(e.to_string())
    }
}

/// What the handler gets besides the execution.
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    /// The scheduler running it.
    pub scheduler_name: String,
    /// When it was picked, by the scheduler's clock.
    pub started_at: DateTime<Utc>,
}

/// How long to wait before a retry.
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
            retry: Retry::Fixed(Duration::minutes(5)),
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
                let micros =
                    initial.num_microseconds().unwrap_or(i64::MAX) as f64 * factor.powi(exp);
                // Cap at ~100 years so the addition below can never overflow.
                let capped = micros.min(3.15e15);
                Some(Duration::microseconds(capped as i64))
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

/// The handler signature.
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

/// The instance id of a recurring task's single execution.
pub const RECURRING_INSTANCE: &str = "recurring";

impl Task {
    /// A one-time task: each instance runs once and is removed on success.
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
mod tests {
    use super::*;
    use chrono::TimeZone;

    const EMAIL: TaskDescriptor<String> = TaskDescriptor::new("email");

    #[test]
    fn builder_fills_defaults_and_validates() {
        let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let row = EMAIL
            .instance("1")
            .data("hi".to_owned())
            .into_new_execution(now, Priority::MEDIUM)
            .unwrap();
        assert_eq!((row.execution_time, row.priority), (now, Some(50)));
        assert_eq!(row.task_data.as_deref(), Some(&b"\"hi\""[..]));
        let err = EMAIL
            .instance("")
            .into_new_execution(now, Priority::LOW)
            .unwrap_err();
        assert!(matches!(
            err,
            DocketError::InvalidName {
                what: "instance id",
                ..
            }
        ));
        assert!(Priority::try_from_i64(40_000).is_err());
    }

    #[test]
    fn exponential_backoff_and_max_retries() {
        let p = FailurePolicy::exponential(Duration::seconds(10), 2.0).max_retries(3);
        assert_eq!(p.delay(1), Some(Duration::seconds(10)));
        assert_eq!(p.delay(3), Some(Duration::seconds(40)));
        assert!(!p.gives_up(3) && p.gives_up(4));
        assert!(
            p.delay(10_000).is_some(),
            "huge exponents are capped, not overflowing"
        );
    }
}
