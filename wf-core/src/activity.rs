//! Activities: the side-effecting work a workflow schedules. Their definitions (`#[activities]`
//! implements [`ActivityGroup`]), their context, their errors, and the typed call path that
//! makes `ctx.activity(Tools::next_step, goal)` check argument and result types.

use crate::history::TimeoutKind;
use crate::payload::{Payload, PayloadError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::TypeId;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A `Send` boxed future (activities run on the tokio runtime).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Runs one activity attempt: decodes the input, calls the method, encodes the result.
pub type ActivityInvoker = Arc<
    dyn Fn(ActivityContext, Payload) -> BoxFuture<Result<Payload, ActivityError>> + Send + Sync,
>;

/// A struct whose `#[activity]` methods are activities. Implemented by `#[activities]`.
pub trait ActivityGroup: Send + Sync + 'static {
    /// The wire name of the method whose fn-item type is `f`, if it is an `#[activity]`.
    fn activity_name(f: TypeId) -> Option<&'static str>
    where
        Self: Sized;

    /// Adds one invoker per activity to the registry.
    fn register(self: Arc<Self>, registry: &mut ActivityRegistry);
}

/// Activities by wire name, as one engine runs them.
#[derive(Default, Clone)]
pub struct ActivityRegistry {
    invokers: HashMap<&'static str, ActivityInvoker>,
}

impl ActivityRegistry {
    /// Registers `invoker` under `name` (a later registration of the same name replaces it).
    pub fn add(&mut self, name: &'static str, invoker: ActivityInvoker) {
        self.invokers.insert(name, invoker);
    }

    /// The invoker for `name`.
    pub fn get(&self, name: &str) -> Option<&ActivityInvoker> {
        self.invokers.get(name)
    }

    /// Registered names.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.invokers.keys().copied()
    }
}

/// The `TypeId` of a value's type; `#[activities]` uses it to map a method to its wire name.
pub fn type_id_of_val<F: 'static>(_: &F) -> TypeId {
    TypeId::of::<F>()
}

/// The typing of an activity method, inferred from the method itself: its group, argument and
/// result types. `M` is an inference marker; users never name it.
///
/// One argument is sent as itself; none as `()`; several as a tuple.
pub trait ActivityFn<M>: 'static {
    /// The `#[activities]` type the method belongs to.
    type Group: ActivityGroup;
    /// What the workflow passes.
    type Args: Serialize;
    /// What the activity returns on success.
    type Output: DeserializeOwned;
}

macro_rules! activity_fn_impl {
    ($args:ty; $($a:ident),*) => {
        impl<T, R, F, $($a,)*> ActivityFn<(T, ($($a,)*), R)> for F
        where
            F: AsyncFn(&T, ActivityContext, $($a),*) -> Result<R, ActivityError> + 'static,
            T: ActivityGroup,
            R: Serialize + DeserializeOwned,
            $($a: Serialize,)*
        {
            type Group = T;
            type Args = $args;
            type Output = R;
        }
    };
}

activity_fn_impl!((); );
activity_fn_impl!(A; A);
activity_fn_impl!((A, B); A, B);
activity_fn_impl!((A, B, C); A, B, C);
activity_fn_impl!((A, B, C, D); A, B, C, D);
activity_fn_impl!((A, B, C, D, E); A, B, C, D, E);

/// An activity attempt's error: retryable (the default) or not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ActivityError {
    /// A kind that retry policies can name in `non_retryable_error_types`.
    pub kind: String,
    /// What went wrong.
    pub message: String,
    /// Never retry this error.
    pub non_retryable: bool,
}

impl ActivityError {
    /// An error retried per the retry policy (kind `"retryable"`).
    pub fn retryable(message: impl Into<String>) -> Self {
        ActivityError {
            kind: "retryable".into(),
            message: message.into(),
            non_retryable: false,
        }
    }

    /// An error never retried, with a kind the workflow can match on.
    pub fn non_retryable(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ActivityError {
            kind: kind.into(),
            message: message.into(),
            non_retryable: true,
        }
    }

    /// A retryable error with a kind (which a retry policy may still list as non-retryable).
    pub fn with_kind(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ActivityError {
            kind: kind.into(),
            message: message.into(),
            non_retryable: false,
        }
    }
}

impl From<PayloadError> for ActivityError {
    fn from(e: PayloadError) -> Self {
        ActivityError::non_retryable("payload", e.to_string())
    }
}

/// How an activity ended for the workflow that awaited it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActivityCallError {
    /// It failed for good (non-retryable, or retries exhausted).
    #[error("activity {activity} failed after {attempts} attempt(s): {kind}: {message}")]
    Failed {
        /// Activity wire name.
        activity: String,
        /// The last error's kind.
        kind: String,
        /// The last error's message.
        message: String,
        /// Attempts made.
        attempts: u32,
    },
    /// It timed out for good.
    #[error("activity {activity} timed out ({timeout:?}) after {attempts} attempt(s)")]
    TimedOut {
        /// Activity wire name.
        activity: String,
        /// Which timeout.
        timeout: TimeoutKind,
        /// Attempts made.
        attempts: u32,
    },
    /// The input could not be encoded or the result decoded.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The run's cancellation was requested while the activity was pending; its task was
    /// dropped.
    #[error("activity {activity} cancelled")]
    Cancelled {
        /// Activity wire name.
        activity: String,
    },
}

/// Facts about the running attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityInfo {
    /// The scheduling run's workflow id.
    pub workflow_id: String,
    /// The scheduling run.
    pub run_id: String,
    /// The scheduling command's sequence number in that run.
    pub seq: u32,
    /// Activity wire name.
    pub name: String,
    /// Attempt number, from 1.
    pub attempt: u32,
}

/// Reports heartbeats for one attempt (implemented by the engine over its store).
pub(crate) trait HeartbeatSink: Send + Sync {
    fn heartbeat(&self, info: &ActivityInfo, details: Payload) -> BoxFuture<bool>;
}

/// What an activity receives: its identity, heartbeats, and the details the previous attempt
/// last reported.
#[derive(Clone)]
pub struct ActivityContext {
    info: ActivityInfo,
    last_heartbeat: Option<Payload>,
    sink: Option<Arc<dyn HeartbeatSink>>,
}

impl std::fmt::Debug for ActivityContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivityContext")
            .field("info", &self.info)
            .finish()
    }
}

impl ActivityContext {
    pub(crate) fn new(
        info: ActivityInfo,
        last_heartbeat: Option<Payload>,
        sink: Arc<dyn HeartbeatSink>,
    ) -> Self {
        ActivityContext {
            info,
            last_heartbeat,
            sink: Some(sink),
        }
    }

    /// A context for calling an activity method directly in a unit test (heartbeats go
    /// nowhere).
    pub fn for_test(info: ActivityInfo) -> Self {
        ActivityContext {
            info,
            last_heartbeat: None,
            sink: None,
        }
    }

    /// Facts about this attempt.
    pub fn info(&self) -> &ActivityInfo {
        &self.info
    }

    /// The attempt number, from 1.
    pub fn attempt(&self) -> u32 {
        self.info.attempt
    }

    /// A key that is the same for every attempt of this activity and unique across runs: use it
    /// as the idempotency key of external calls.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.info.run_id, self.info.seq)
    }

    /// Records progress durably and extends the heartbeat timeout. The next attempt (after a
    /// crash or timeout) reads it with [`last_heartbeat`](Self::last_heartbeat). Returns an
    /// error when this attempt is no longer current (it timed out or the run closed): stop.
    pub async fn heartbeat<T: Serialize>(&self, details: &T) -> Result<(), ActivityError> {
        let payload = Payload::encode(details)?;
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        if sink.heartbeat(&self.info, payload).await {
            Ok(())
        } else {
            Err(ActivityError::non_retryable(
                "attempt_superseded",
                format!(
                    "attempt {} of activity {} is no longer current",
                    self.info.attempt, self.info.name
                ),
            ))
        }
    }

    /// The details of the last heartbeat of a previous attempt (or of this one).
    pub fn last_heartbeat<T: DeserializeOwned>(&self) -> Option<T> {
        self.last_heartbeat.as_ref().and_then(|p| p.decode().ok())
    }
}
