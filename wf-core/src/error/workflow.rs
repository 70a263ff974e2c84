//! The errors of workflow code: what `run` returns, and what its awaits (timers, signal
//! waits, children) fail with.

use super::activity::ActivityCallError;
use crate::data::limits::LimitError;
use crate::data::payload::{Payload, PayloadError};
use std::time::SystemTime;

/// The error a workflow's `run` returns; `?` converts activity, timer and payload errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkflowError {
    /// The run fails with this message.
    #[error("{0}")]
    Failed(String),
    /// An activity failed for good.
    #[error("activity failed: {0}")]
    Activity(#[from] ActivityCallError),
    /// A value could not be encoded or decoded.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// A child run failed.
    #[error(transparent)]
    Child(#[from] ChildError),
    /// `ctx.signal_external` refused its arguments.
    #[error(transparent)]
    SignalExternal(#[from] SignalExternalError),
    /// A bounded `wait_for_signal` timed out.
    #[error(transparent)]
    WaitTimeout(#[from] WaitTimeout),
    /// The run was cancelled: returned from `run` (directly or through `?` on a cancelled
    /// activity or timer), it ends the run as cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Not an error: the run continues as a new run with this input (see
    /// [`WorkflowContext::continue_as_new`](crate::WorkflowContext::continue_as_new)).
    #[error("continue as new")]
    ContinueAsNew(Payload),
}

impl From<SignalWaitError> for WorkflowError {
    fn from(e: SignalWaitError) -> Self {
        match e {
            SignalWaitError::Timeout(t) => WorkflowError::WaitTimeout(t),
            SignalWaitError::Payload(p) => WorkflowError::Payload(p),
            SignalWaitError::Cancelled(_) => WorkflowError::Cancelled,
        }
    }
}

impl From<LimitError> for WorkflowError {
    /// A value out of the limits (a search attribute key, say) fails the run with its message.
    fn from(e: LimitError) -> Self {
        WorkflowError::Failed(e.to_string())
    }
}

impl From<crate::data::stream::StreamError> for WorkflowError {
    /// A refused stream write (a closed or full stream, an entry too large) fails the run with
    /// its message.
    fn from(e: crate::data::stream::StreamError) -> Self {
        WorkflowError::Failed(e.to_string())
    }
}

impl From<Cancelled> for WorkflowError {
    fn from(_: Cancelled) -> Self {
        WorkflowError::Cancelled
    }
}

impl WorkflowError {
    /// Whether this error reports a cancellation (of the run, an activity or a timer).
    pub fn is_cancellation(&self) -> bool {
        matches!(
            self,
            WorkflowError::Cancelled | WorkflowError::Activity(ActivityCallError::Cancelled { .. })
        )
    }

    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        WorkflowError::Failed(message.into())
    }

    /// The error code of a run that fails with this error (`"wait_timeout"` for a
    /// [`WaitTimeout`], the code the failure message starts with; `"activity_failed"`, `"child_failed"`,
    /// `"payload"`, `"cancelled"`, or `"failed"` for the rest).
    pub fn code(&self) -> &'static str {
        match self {
            WorkflowError::WaitTimeout(_) => "wait_timeout",
            WorkflowError::Activity(_) => "activity_failed",
            WorkflowError::Child(_) => "child_failed",
            WorkflowError::Payload(_) | WorkflowError::SignalExternal(_) => "payload",
            WorkflowError::Cancelled => "cancelled",
            WorkflowError::Failed(_) | WorkflowError::ContinueAsNew(_) => "failed",
        }
    }
}

/// A timer or wait was cut short because the run's cancellation was requested, or (a timer)
/// because its [`CancellationScope`](crate::CancellationScope) was cancelled. `?` turns it
/// into [`WorkflowError::Cancelled`], which ends the run as cancelled when the run's
/// cancellation was requested (and fails it otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled: the run's cancellation was requested, or the timer's scope was cancelled")]
pub struct Cancelled;

/// A bounded signal wait ran out of time, or its argument did not decode.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SignalWaitError {
    /// No signal arrived before the deadline.
    #[error(transparent)]
    Timeout(#[from] WaitTimeout),
    /// The signal's argument did not decode as the expected type.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The run's cancellation was requested during the wait.
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
}

/// A bounded wait ran out of time: no signal named `name` arrived before `deadline` (a signal
/// sent later is buffered for the next wait). Returned from `run` (through `?`), it fails the
/// run with the error code `wait_timeout` ([`WorkflowError::code`]), which starts the
/// recorded failure message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("wait_timeout: {kind} wait #{call_index} for {name:?} gave up at {deadline:?}")]
pub struct WaitTimeout {
    /// What was waited for.
    pub kind: WaitKind,
    /// The signal waited for (empty for a condition).
    pub name: String,
    /// Which wait of the run it was: its waits (`wait_for_signal`, `wait_condition`) are
    /// numbered from 1 in the order the code made them, the same on every replay.
    pub call_index: u32,
    /// When the wait gave up (workflow time).
    pub deadline: SystemTime,
}

/// What a [`WaitTimeout`] waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WaitKind {
    /// `ctx.wait_for_signal(name)`.
    Signal,
    /// `ctx.wait_condition(pred)`.
    Condition,
}

impl std::fmt::Display for WaitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WaitKind::Signal => "signal",
            WaitKind::Condition => "condition",
        })
    }
}

/// How a child run failed to produce its result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// The child's workflow id was already running.
    #[error("child could not start: {0}")]
    StartFailed(String),
    /// The child returned an error.
    #[error("child failed: {0}")]
    Failed(String),
    /// The child ended as cancelled.
    #[error("child cancelled: {0}")]
    Cancelled(String),
    /// The child was terminated.
    #[error("child terminated: {0}")]
    Terminated(String),
    /// The input could not be encoded or the result decoded.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The child's workflow id or task queue is out of its limits (`wf_core::data::limits`);
    /// no child was started.
    #[error("child not started: {0}")]
    InvalidArgument(String),
}

impl From<LimitError> for ChildError {
    fn from(e: LimitError) -> Self {
        ChildError::InvalidArgument(e.to_string())
    }
}

/// Why [`signal_external`](crate::WorkflowContext::signal_external) sent nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SignalExternalError {
    /// The arguments could not be encoded, or are too large.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The target workflow id or the signal name is out of its limits
    /// (`wf_core::data::limits`).
    #[error("signal not sent: {0}")]
    InvalidArgument(String),
}

impl From<LimitError> for SignalExternalError {
    fn from(e: LimitError) -> Self {
        SignalExternalError::InvalidArgument(e.to_string())
    }
}
