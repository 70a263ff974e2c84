//! What clients send and get back, whatever carries the call: start options, update stages,
//! and the descriptions of runs.

use crate::data::activity::RetryPolicy;
use crate::data::payload::Payload;
use crate::data::payload::PayloadError;
use crate::data::run::{IdConflictPolicy, IdReusePolicy, RunStatus, TaskFailure};
use crate::data::search::{Memo, SearchAttributes};
use std::time::{Duration, SystemTime};

/// Options of [`Client::start_with`](crate::Client::start_with). Build them field by field or
/// with the builder calls:
///
/// ```ignore
/// let options = StartOptions::new()
///     .request_id("order-7-attempt")                       // a retry returns the same run
///     .id_reuse_policy(IdReusePolicy::AllowDuplicateFailedOnly)
///     .id_conflict_policy(IdConflictPolicy::UseExisting);
/// let h = client.start_with::<Order>("order-7", input, options).await?;
/// ```
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// What to do if the workflow id is already running (default: fail with `AlreadyStarted`).
    pub id_conflict: IdConflictPolicy,
    /// Whether a new run may follow a closed run of the workflow id (default: it may).
    pub id_reuse: IdReusePolicy,
    /// The task queue to run it on (default: the engine's, see `EngineBuilder::task_queue`).
    pub task_queue: Option<String>,
    /// The start's request id: a start retried with the same request id (after a lost reply)
    /// whose first attempt succeeded returns the run that attempt started, running or closed,
    /// with `started == false`; it never starts a second run nor fails with
    /// `AlreadyStarted`. Kept per workflow id until retention purges the run's chain.
    pub request_id: Option<String>,
    /// Values shown with the run (describe, lists), set once at start: notes for operators
    /// that the workflow code never reads. Kept across continue-as-new.
    pub memo: Memo,
    /// The workflow execution timeout: how long the whole chain may run, from this start,
    /// continue-as-new and retries included. When it passes, the running run closes as
    /// `TimedOut` and is not retried. `None` (the default): no limit.
    pub execution_timeout: Option<Duration>,
    /// The workflow run timeout: how long one run of the chain may run. When it passes, the
    /// run closes as `TimedOut`; the retry policy, if any, retries it. `None`: no limit.
    pub run_timeout: Option<Duration>,
    /// How a run that fails (returns an error, or hits its run timeout) is retried: as a new
    /// run of the chain with the same input, after the policy's backoff, up to its maximum
    /// attempts and within the execution timeout. The error types it never retries are
    /// `WorkflowError::code`s (`"failed"`, `"activity_failed"`, `"child_failed"`,
    /// `"payload"`, `"wait_timeout"`) and `"run_timeout"`. `None` (the default): a failed run
    /// stays failed.
    pub retry_policy: Option<RetryPolicy>,
    /// How long the run waits before its first workflow task (Temporal's start delay): the
    /// run exists at once (describe and list show it, with its
    /// [`start_at`](Description::start_at); signals and updates sent to it are kept), but no
    /// engine runs it before the delay has passed, a signal included. `None` or zero (the
    /// default): at once. A continue-as-new or a retry of the run does not wait again.
    pub start_delay: Option<Duration>,
    /// Collapses repeated starts into one run (DBOS's debouncer): see [`Debounce`] and
    /// [`debounce`](Self::debounce). `None` (the default): every start is its own.
    pub debounce: Option<Debounce>,
    /// The queue of workflow starts the start goes on (DBOS's queues): the run is created at
    /// once (describe and list show it, with its [`queue`](Description::queue) and
    /// [`queue_position`](Description::queue_position); signals and updates sent to it are
    /// kept) but held until its queue admits it, at most the queue's
    /// [`concurrency`](crate::WorkflowQueue::concurrency) of its runs running at once over
    /// every engine sharing the store. A queue without settings admits at once. `None` (the
    /// default): no queue.
    pub queue: Option<String>,
    /// Among the held runs of its queue, lower numbers are admitted first; then the order of
    /// the starts. 0 by default. Only with [`queue`](Self::queue).
    pub queue_priority: i32,
    /// A deduplication id on the queue: the start fails with
    /// [`WfError::AlreadyStarted`](crate::WfError::AlreadyStarted), naming the run that holds
    /// the id, while a run of the queue started with the same id is held or running (DBOS's
    /// deduplication id). Only with [`queue`](Self::queue).
    pub dedupe_id: Option<String>,
    /// The fairness key the run waits under on its queue (a tenant, a user): among the held
    /// runs of one [`queue_priority`](Self::queue_priority), the keys are admitted in turns
    /// by [weight](Self::fairness_weight), whatever their backlogs (start-time fair queuing,
    /// as for activities); a key with 1,000 held runs does not make one with 10 wait behind
    /// them. `None` (the default) is the key `""`, shared by every start without one. Only
    /// with [`queue`](Self::queue).
    pub fairness_key: Option<String>,
    /// The weight of the run's fairness key: a key of weight 2 is admitted twice for once of a
    /// key of weight 1 while both have runs held. A finite number above 0; `None` (the
    /// default) is 1.0. Only with [`queue`](Self::queue).
    pub fairness_weight: Option<f64>,
}

/// A start's debounce ([`StartOptions::debounce`]): starts of one workflow type with one
/// debounce key, within the window of each other, make one run.
///
/// - The first start creates a run whose first workflow task waits `window` (a delayed start,
///   see [`StartOptions::start_delay`]), under the start's own workflow id.
/// - Each later start with the key, while that run has not begun its first workflow task,
///   replaces the run's input with its own and pushes its start to `window` from now (but no
///   later than `max_wait` after the first start, if set). It creates no run: it returns a
///   handle on the waiting run (its workflow id is the first start's, whatever id the later
///   call gave), with `started == false` in
///   [`start_outcome`](crate::WorkflowHandle::start_outcome). Signals it carries go to that
///   run. Its id policies, task queue, memo and limits are not applied: the first start's stay.
/// - Once the run has begun, the next start with the key starts a new debounced run, as the
///   first one did (with its own workflow id, under its id policies).
///
/// It is decided in the start's store transaction: engines sharing a store, starting at once,
/// make one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Debounce {
    /// What makes two starts (of one workflow type) the same: a user id, a document id.
    pub key: String,
    /// How long the run waits after the latest start.
    pub window: Duration,
    /// How long after the first start the run waits at most, however often it is pushed
    /// (DBOS's `debounce_timeout`); `None`: no bound.
    pub max_wait: Option<Duration>,
}

impl StartOptions {
    /// Debounces the start: starts of the same workflow type with the same `key` within
    /// `window` of each other make one run, which runs with the latest input once `window` has
    /// passed without another start (see [`Debounce`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = wf_core::StartOptions::new()
    ///     .debounce("user-42", Duration::from_secs(5))
    ///     .debounce_max(Duration::from_secs(60));
    /// let d = options.debounce.unwrap();
    /// assert_eq!((d.key.as_str(), d.max_wait), ("user-42", Some(Duration::from_secs(60))));
    /// ```
    pub fn debounce(mut self, key: impl Into<String>, window: Duration) -> Self {
        let max_wait = self.debounce.take().and_then(|d| d.max_wait);
        self.debounce = Some(Debounce {
            key: key.into(),
            window,
            max_wait,
        });
        self
    }

    /// Bounds how long a debounced run waits after its first start, however often later
    /// starts push it ([`Debounce::max_wait`]). Call it after [`debounce`](Self::debounce):
    /// without a debounce it does nothing.
    pub fn debounce_max(mut self, max_wait: Duration) -> Self {
        if let Some(d) = self.debounce.as_mut() {
            d.max_wait = Some(max_wait);
        }
        self
    }

    /// Sets [`queue`](Self::queue): the run waits on queue `name` until it admits it.
    ///
    /// ```
    /// let options = wf_core::StartOptions::new().queue("emails").queue_priority(1);
    /// assert_eq!(options.queue.as_deref(), Some("emails"));
    /// ```
    pub fn queue(mut self, name: impl Into<String>) -> Self {
        self.queue = Some(name.into());
        self
    }

    /// Sets [`queue_priority`](Self::queue_priority): lower is admitted first.
    pub fn queue_priority(mut self, priority: i32) -> Self {
        self.queue_priority = priority;
        self
    }

    /// Sets [`dedupe_id`](Self::dedupe_id).
    pub fn dedupe_id(mut self, id: impl Into<String>) -> Self {
        self.dedupe_id = Some(id.into());
        self
    }

    /// Sets [`fairness_key`](Self::fairness_key): the run's turns on its queue are its key's.
    ///
    /// ```
    /// let options = wf_core::StartOptions::new()
    ///     .queue("reports")
    ///     .fairness_key("tenant-7")
    ///     .fairness_weight(2.0);
    /// assert_eq!(options.fairness_key.as_deref(), Some("tenant-7"));
    /// assert_eq!(options.fairness_weight, Some(2.0));
    /// ```
    pub fn fairness_key(mut self, key: impl Into<String>) -> Self {
        self.fairness_key = Some(key.into());
        self
    }

    /// Sets [`fairness_weight`](Self::fairness_weight) (a finite number above 0; the start
    /// fails with `InvalidArgument` otherwise).
    pub fn fairness_weight(mut self, weight: f64) -> Self {
        self.fairness_weight = Some(weight);
        self
    }
}

impl StartOptions {
    /// The default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`request_id`](Self::request_id).
    pub fn request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Sets [`id_reuse`](Self::id_reuse).
    pub fn id_reuse_policy(mut self, policy: IdReusePolicy) -> Self {
        self.id_reuse = policy;
        self
    }

    /// Sets [`id_conflict`](Self::id_conflict).
    pub fn id_conflict_policy(mut self, policy: IdConflictPolicy) -> Self {
        self.id_conflict = policy;
        self
    }

    /// Sets [`execution_timeout`](Self::execution_timeout).
    pub fn execution_timeout(mut self, timeout: Duration) -> Self {
        self.execution_timeout = Some(timeout);
        self
    }

    /// Sets [`run_timeout`](Self::run_timeout).
    pub fn run_timeout(mut self, timeout: Duration) -> Self {
        self.run_timeout = Some(timeout);
        self
    }

    /// Sets [`retry_policy`](Self::retry_policy).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = wf_core::StartOptions::new()
    ///     .execution_timeout(Duration::from_secs(3600))
    ///     .run_timeout(Duration::from_secs(600))
    ///     .retry_policy(wf_core::RetryPolicy {
    ///         maximum_attempts: 3,
    ///         ..wf_core::RetryPolicy::default()
    ///     });
    /// assert_eq!(options.run_timeout, Some(Duration::from_secs(600)));
    /// ```
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = Some(policy);
        self
    }

    /// Sets [`start_delay`](Self::start_delay).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = wf_core::StartOptions::new().start_delay(Duration::from_secs(60));
    /// assert_eq!(options.start_delay, Some(Duration::from_secs(60)));
    /// ```
    pub fn start_delay(mut self, delay: Duration) -> Self {
        self.start_delay = Some(delay);
        self
    }

    /// Sets [`task_queue`](Self::task_queue).
    pub fn task_queue(mut self, queue: impl Into<String>) -> Self {
        self.task_queue = Some(queue.into());
        self
    }

    /// Adds the memo entry `key` (see [`memo`](Self::memo)).
    ///
    /// ```
    /// # fn main() -> Result<(), wf_core::PayloadError> {
    /// let options = wf_core::StartOptions::default()
    ///     .with_memo("requested_by", &"ops@example.com")?
    ///     .with_memo("ticket", &4711)?;
    /// assert_eq!(options.memo.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn with_memo<T: serde::Serialize + ?Sized>(
        mut self,
        key: impl Into<String>,
        value: &T,
    ) -> Result<Self, PayloadError> {
        self.memo.insert(key.into(), Payload::encode(value)?);
        Ok(self)
    }
}

/// How long an update call waits for its stage when neither the call
/// ([`UpdateCall::timeout`](crate::UpdateCall::timeout)) nor the engine
/// (`EngineBuilder::update_timeout`) says otherwise: 30 s.
pub const DEFAULT_UPDATE_TIMEOUT: Duration = Duration::from_secs(30);

/// What a signal call reports once the signal is durable: whether a handler method of the
/// run's workflow type takes it, or it waits in the run's history for `ctx.wait_for_signal`.
///
/// It is decided from the workflow type's handler table (the `#[signal]` methods), which the
/// sender knows when the type is registered with its engine or the call is typed (a
/// generated method, or [`WorkflowHandle::signal`](crate::WorkflowHandle::signal)):
///
/// ```ignore
/// assert_eq!(h.pause().await?, SignalStatus::Delivered);          // a #[signal] method
/// assert_eq!(h.signal("note", &"hi").await?, SignalStatus::Buffered); // for wait_for_signal
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SignalStatus {
    /// A `#[signal]` handler of the run's workflow type takes it.
    Delivered,
    /// No handler method has its name: the run keeps it, oldest first, until
    /// `ctx.wait_for_signal(name)` takes it (or a later version of the code has a handler).
    Buffered,
    /// Recorded for the run, by a sender that does not know the workflow type's handlers (an
    /// untyped call from an engine the type is not registered with).
    Recorded,
}

impl SignalStatus {
    /// `"delivered"`, `"buffered"` or `"recorded"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SignalStatus::Delivered => "delivered",
            SignalStatus::Buffered => "buffered",
            SignalStatus::Recorded => "recorded",
        }
    }

    /// The status for a type that has (`Some(true)`), has not (`Some(false)`) or may have
    /// (`None`) a handler with the signal's name.
    pub fn from_handled(handled: Option<bool>) -> Self {
        match handled {
            Some(true) => SignalStatus::Delivered,
            Some(false) => SignalStatus::Buffered,
            None => SignalStatus::Recorded,
        }
    }
}

/// Which stage an update call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateStage {
    /// Until the validator accepted it (or rejected it).
    Accepted,
    /// Until the handler finished.
    Completed,
    /// Until it is durably recorded in the store, before any validator ran (Temporal's
    /// `ADMITTED`): the update survives crashes from then on, and its outcome (acceptance,
    /// rejection, value) is awaited later by its update id.
    Admitted,
}

impl UpdateStage {
    /// `"accepted"`, `"completed"` or `"admitted"`: how errors and wf-http name it.
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateStage::Accepted => "accepted",
            UpdateStage::Completed => "completed",
            UpdateStage::Admitted => "admitted",
        }
    }
}

/// What [`WorkflowHandle::describe`](crate::WorkflowHandle::describe) reports about the
/// latest run of a workflow id.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    /// The workflow id.
    pub workflow_id: String,
    /// The latest run.
    pub run_id: String,
    /// Its workflow type.
    pub workflow_type: String,
    /// Its task queue.
    pub task_queue: String,
    /// Its lifecycle state.
    pub status: RunStatus,
    /// Events in its history.
    pub history_length: u64,
    /// Encoded size of its history.
    pub history_bytes: u64,
    /// When it started.
    pub started_at: SystemTime,
    /// When its first workflow task is due, for a run whose start was delayed
    /// ([`StartOptions::start_delay`]): no engine runs it before then. `None`: it was due at
    /// once.
    pub start_at: Option<SystemTime>,
    /// The queue of workflow starts the run was started on ([`StartOptions::queue`]), if any.
    pub queue: Option<String>,
    /// The run's place among the held runs of its queue, in admission order, 1 first; `None`
    /// once its queue admitted it (or for a run started on no queue).
    pub queue_position: Option<u64>,
    /// When it closed.
    pub closed_at: Option<SystemTime>,
    /// Activities scheduled and not yet resolved.
    pub pending_activities: Vec<PendingActivity>,
    /// Updates requested or running.
    pub pending_updates: Vec<PendingUpdate>,
    /// Signals received for which the code has no handler (oldest first).
    pub buffered_signals: Vec<String>,
    /// Async handlers still running.
    pub running_handlers: Vec<String>,
    /// The last failed workflow task, until a task succeeds.
    pub task_failure: Option<TaskFailure>,
    /// Its search attributes, as the workflow last upserted them.
    pub search_attributes: SearchAttributes,
    /// Its memo, as set at start.
    pub memo: Memo,
    /// Its attempt under the start's retry policy, from 1 (1 without a policy; a
    /// continue-as-new counts from 1 again).
    pub attempt: u32,
    /// The reset, fork or resume that made this run (who, why, from which run and event), if
    /// one did. A run closed by a reset says so in its status (`Reset`) and its failure text.
    pub repaired_from: Option<crate::data::repair::RepairOrigin>,
    /// How a completed run ended: its encoded result.
    pub result: Option<Payload>,
    /// How a failed, timed-out or terminated run ended: its error message (the reason of a
    /// termination).
    pub failure: Option<String>,
    /// The operator's pause of a running run, if it is paused (see
    /// [`Client::pause`](crate::Client::pause)); its status stays running.
    pub paused: Option<Paused>,
    /// What each part of a running run is blocked on: `run` (its main method) and every live
    /// async handler, each with its pending waits and where the code made them (its "stack
    /// trace"). Read from the engine's cached copy of the run, else from a copy rebuilt by
    /// replay; empty for a closed run, or when no engine here can rebuild it (its type is not
    /// registered, or its code no longer replays its history).
    pub blocked_on: Vec<crate::data::blocked::BlockedPart>,
}

/// An operator's pause of a run, in [`Description::paused`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paused {
    /// Who paused it: the caller's token role over HTTP (`admin`, also on a server that
    /// checks no token), `client` for an in-process client.
    pub by: String,
    /// Why (may be empty).
    pub reason: String,
    /// When.
    pub since: SystemTime,
}

/// An activity in [`Description::pending_activities`].
#[derive(Debug, Clone, PartialEq)]
pub struct PendingActivity {
    /// Command sequence number.
    pub seq: u32,
    /// Activity wire name.
    pub name: String,
    /// Current attempt.
    pub attempt: u32,
    /// The previous attempt's failure message.
    pub last_failure: Option<String>,
    /// The details of the last heartbeat (of this attempt or a previous one).
    pub heartbeat_details: Option<Payload>,
    /// When the running attempt times out (its start-to-close deadline, or the
    /// schedule-to-close one if earlier); `None` while no attempt runs. An activity scheduled
    /// with neither timeout gets a start-to-close of 5 minutes
    /// ([`DEFAULT_START_TO_CLOSE_MS`](crate::store::DEFAULT_START_TO_CLOSE_MS)): this shows
    /// it, for an attempt held for asynchronous completion too.
    pub attempt_deadline: Option<SystemTime>,
}

/// An update in [`Description::pending_updates`].
#[derive(Debug, Clone, PartialEq)]
pub struct PendingUpdate {
    /// Update id.
    pub update_id: String,
    /// Wire name.
    pub name: String,
    /// `true` once accepted (handler running), `false` while waiting for validation.
    pub accepted: bool,
}

/// A run in [`Client::list`](crate::Client::list).
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// The workflow id.
    pub workflow_id: String,
    /// The run id.
    pub run_id: String,
    /// Workflow type.
    pub workflow_type: String,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Events in its history.
    pub history_length: u64,
    /// Start time (engine clock).
    pub started_at: SystemTime,
    /// Close time, once closed: retention purges the run that long after it.
    pub closed_at: Option<SystemTime>,
    /// Its search attributes.
    pub search_attributes: SearchAttributes,
    /// Its memo.
    pub memo: Memo,
    /// The build whose engines run its workflow tasks (worker versioning: the build it is
    /// pinned to, or its task queue's current build), if it is on one.
    pub build_id: Option<String>,
    /// Whether an operator paused it (see [`Client::pause`](crate::Client::pause)).
    pub paused: bool,
    /// The queue of workflow starts the run was started on ([`StartOptions::queue`]), if any.
    pub queue: Option<String>,
    /// The run's place among the held runs of its queue, in admission order, 1 first, as
    /// [`Description::queue_position`] has it; `None` once its queue admitted it (or for a
    /// run started on no queue).
    pub queue_position: Option<u64>,
}
