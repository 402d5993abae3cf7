//! Async handlers: a handler that returns a future, run to completion on a tokio runtime
//! (one the application gives, or one docket owns), next to the synchronous handlers.
//!
//! The scheduler's worker thread that picked the execution waits for the future, so the
//! worker count still bounds how many executions run at once, heartbeats go on while it
//! runs, and a panic in the future fails the execution like a panic in a synchronous handler.

use crate::error::DocketError;
use crate::records::Execution;
use crate::task::{decode, ExecutionContext, Task, TaskDescriptor, TaskError};
use serde::de::DeserializeOwned;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use tokio::runtime::{Builder, Handle, Runtime};

/// The tokio runtime async handlers run on. Cheap to clone.
#[derive(Clone)]
pub struct AsyncRuntime(Inner);

#[derive(Clone)]
enum Inner {
    /// The application's runtime.
    Given(Handle),
    /// docket's own current-thread runtime, driven by whichever worker thread waits on it.
    Owned(Arc<Runtime>),
}

impl AsyncRuntime {
    /// A runtime of docket's own: a current-thread tokio runtime with I/O and timers,
    /// shared by the worker threads (each waits for its own handler's future; tokio lets
    /// several threads wait on one current-thread runtime and hands its drivers between
    /// them). For applications without a runtime of their own.
    pub fn owned() -> Result<Self, DocketError> {
        let runtime = Builder::new_current_thread()
            .enable_all()
            .thread_name("docket-async")
            .build()
            .map_err(|e| {
                DocketError::InvalidConfig(format!("cannot build a tokio runtime: {e}"))
            })?;
        Ok(Self(Inner::Owned(Arc::new(runtime))))
    }

    /// The application's runtime, by its handle. A multi-thread runtime drives the futures'
    /// I/O and timers itself; a current-thread runtime only while some thread of the
    /// application is blocked in its `block_on`.
    pub fn from_handle(handle: Handle) -> Self {
        Self(Inner::Given(handle))
    }

    /// The runtime the calling code runs in (inside `#[tokio::main]`, for example); an
    /// [`InvalidConfig`](DocketError::InvalidConfig) error outside any runtime.
    pub fn current() -> Result<Self, DocketError> {
        Handle::try_current()
            .map(Self::from_handle)
            .map_err(|e| DocketError::InvalidConfig(format!("no tokio runtime here: {e}")))
    }

    /// Runs `future` to completion on this runtime, blocking the calling (worker) thread.
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        match &self.0 {
            Inner::Given(handle) => handle.block_on(future),
            Inner::Owned(runtime) => runtime.block_on(future),
        }
    }
}

impl fmt::Debug for AsyncRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Inner::Given(_) => "AsyncRuntime(given)",
            Inner::Owned(_) => "AsyncRuntime(owned)",
        })
    }
}

impl Task {
    /// A one-time task with an async handler, given the raw execution and the context (owned,
    /// so the future may keep them), run on `runtime`.
    pub fn one_time_async<T, F, Fut>(
        descriptor: TaskDescriptor<T>,
        runtime: AsyncRuntime,
        handler: F,
    ) -> Self
    where
        F: Fn(Execution, ExecutionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), TaskError>>,
    {
        Self::one_time(descriptor, move |execution, ctx| {
            runtime.block_on(handler(execution.clone(), ctx.clone()))
        })
    }

    /// A one-time task with an async handler that gets the data decoded as the descriptor's
    /// `T`, as [`Task::typed`] (data that does not decode fails that execution only, and the
    /// handler is not called), run on `runtime`:
    ///
    /// ```
    /// use docket_core::{AsyncRuntime, Task, TaskDescriptor};
    /// const PING: TaskDescriptor<String> = TaskDescriptor::new("ping");
    ///
    /// let task = Task::typed_async(PING, AsyncRuntime::owned()?, |host: String, _ctx| async move {
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    ///     println!("pinged {host}");
    ///     Ok(())
    /// });
    /// # let _ = task;
    /// # Ok::<(), docket_core::DocketError>(())
    /// ```
    pub fn typed_async<T, F, Fut>(
        descriptor: TaskDescriptor<T>,
        runtime: AsyncRuntime,
        handler: F,
    ) -> Self
    where
        T: DeserializeOwned + 'static,
        F: Fn(T, ExecutionContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), TaskError>>,
    {
        Self::one_time(descriptor, move |execution, ctx| {
            let data = decode::<T>(execution)?;
            runtime.block_on(handler(data, ctx.clone()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const PING: TaskDescriptor<u64> = TaskDescriptor::new("ping");

    fn run(task: &Task, data: Option<&[u8]>) -> Result<(), TaskError> {
        let mut e = Execution::new("ping", "1", Utc::now());
        e.task_data = data.map(<[u8]>::to_vec);
        let ctx = ExecutionContext {
            scheduler_name: "test".into(),
            started_at: Utc::now(),
            key: e.key(),
            consecutive_failures: 0,
        };
        (task.handler)(&e, &ctx)
    }

    #[test]
    fn owned_runtime_runs_async_handlers_from_several_worker_threads() {
        let done = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&done);
        let runtime = AsyncRuntime::owned().expect("a runtime");
        let task = Task::typed_async(PING, runtime, move |ms: u64, ctx| {
            let counted = Arc::clone(&counted);
            async move {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                assert_eq!(ctx.key.task_instance, "1");
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        });
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| run(&task, Some(b"20")).expect("the handler succeeds"));
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 4);
        let err = run(&task, Some(b"\"twenty\"")).unwrap_err();
        assert!(err.message().contains("does not decode"), "{err}");
        assert_eq!(done.load(Ordering::SeqCst), 4, "not called on bad data");

        let failing = Task::one_time_async(
            PING,
            AsyncRuntime::owned().expect("a runtime"),
            |e, _| async move { Err(TaskError::new(format!("{} failed", e.task_instance))) },
        );
        assert_eq!(run(&failing, None).unwrap_err().message(), "1 failed");
    }

    #[test]
    fn a_given_runtime_is_used_and_current_needs_one() {
        assert!(
            AsyncRuntime::current().is_err(),
            "no runtime on a test thread"
        );
        let app = Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let runtime = app
            .block_on(async { AsyncRuntime::current() })
            .expect("inside the runtime");
        assert_eq!(format!("{runtime:?}"), "AsyncRuntime(given)");
        let task = Task::typed_async(PING, runtime, |n: u64, _| async move {
            tokio::task::yield_now().await;
            if n == 7 {
                Ok(())
            } else {
                Err(TaskError::new("not seven"))
            }
        });
        run(&task, Some(b"7")).expect("ran on the given runtime");
        assert!(run(&task, Some(b"8")).is_err());
    }
}
