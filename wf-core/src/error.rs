//! The errors users match on, and the errors workflow and handler code return.

use crate::payload::PayloadError;
use crate::store::{RunStatus, StoreError};

/// Every error a [`Client`](crate::Client) call or the engine can return.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WfError {
    /// No run has this workflow id (or run id).
    #[error("workflow {workflow_id:?} not found")]
    NotFound {
        /// The workflow id.
        workflow_id: String,
    },
    /// The run is closed; it takes no more signals or updates.
    #[error("workflow {workflow_id:?} (run {run_id}) has already finished ({status:?})")]
    RunFinished {
        /// The workflow id.
        workflow_id: String,
        /// The closed run.
        run_id: String,
        /// How it closed.
        status: RunStatus,
    },
    /// A run with this workflow id is already running (id-conflict policy `Fail`).
    #[error("workflow {workflow_id:?} is already running (run {run_id}); pick another id or an id-conflict policy")]
    AlreadyStarted {
        /// The workflow id.
        workflow_id: String,
        /// The running run.
        run_id: String,
    },
    /// The update's validator refused it; nothing was recorded.
    #[error("update rejected: {0}")]
    Rejected(String),
    /// The update was accepted and its handler returned an error.
    #[error("update failed: {0}")]
    UpdateFailed(String),
    /// The query could not be answered (unknown name, handler panic, replay failure).
    #[error("query failed: {0}")]
    QueryError(String),
    /// A wait ran out of time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// Workflow code no longer matches the run's history.
    #[error("nondeterminism: {0}")]
    NonDeterminism(String),
    /// A value could not be encoded or decoded, or is too large.
    #[error(transparent)]
    PayloadError(#[from] PayloadError),
    /// The workflow type or handler name is not registered with this engine.
    #[error("unknown {kind} {name:?}{hint}")]
    Unknown {
        /// `"workflow type"`, `"signal"`, `"query"`, `"update"` or `"activity"`.
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// How to fix it.
        hint: String,
    },
    /// The run ended with an error.
    #[error("workflow failed: {0}")]
    WorkflowFailed(String),
    /// The run was terminated.
    #[error("workflow terminated: {0}")]
    Terminated(String),
    /// The run ended as cancelled.
    #[error("workflow cancelled: {0}")]
    Cancelled(String),
    /// An argument is invalid (empty workflow id...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The engine has shut down.
    #[error("the engine has shut down")]
    Shutdown,
    /// The store failed.
    #[error("store: {0}")]
    Store(String),
}

impl From<StoreError> for WfError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { workflow_id, .. } => WfError::NotFound { workflow_id },
            StoreError::RunFinished {
                workflow_id,
                run_id,
                status,
            } => WfError::RunFinished {
                workflow_id,
                run_id,
                status,
            },
            StoreError::AlreadyStarted {
                workflow_id,
                run_id,
            } => WfError::AlreadyStarted {
                workflow_id,
                run_id,
            },
            other => WfError::Store(other.to_string()),
        }
    }
}

/// The error a workflow's `run` returns; `?` converts activity, timer and payload errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkflowError {
    /// The run fails with this message.
    #[error("{0}")]
    Failed(String),
    /// An activity failed for good.
    #[error("activity failed: {0}")]
    Activity(#[from] crate::activity::ActivityCallError),
    /// A value could not be encoded or decoded.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// A child run failed.
    #[error(transparent)]
    Child(#[from] crate::context::ChildError),
    /// A bounded `wait_for_signal` timed out.
    #[error(transparent)]
    WaitTimeout(#[from] crate::context::WaitTimeout),
    /// The run was cancelled: returned from `run` (directly or through `?` on a cancelled
    /// activity or timer), it ends the run as cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Not an error: the run continues as a new run with this input (see
    /// [`WorkflowContext::continue_as_new`](crate::WorkflowContext::continue_as_new)).
    #[error("continue as new")]
    ContinueAsNew(crate::payload::Payload),
}

impl From<crate::context::SignalWaitError> for WorkflowError {
    fn from(e: crate::context::SignalWaitError) -> Self {
        match e {
            crate::context::SignalWaitError::Timeout(t) => WorkflowError::WaitTimeout(t),
            crate::context::SignalWaitError::Payload(p) => WorkflowError::Payload(p),
            crate::context::SignalWaitError::Cancelled(_) => WorkflowError::Cancelled,
        }
    }
}

impl From<crate::context::Cancelled> for WorkflowError {
    fn from(_: crate::context::Cancelled) -> Self {
        WorkflowError::Cancelled
    }
}

impl WorkflowError {
    /// Whether this error reports a cancellation (of the run, an activity or a timer).
    pub fn is_cancellation(&self) -> bool {
        matches!(
            self,
            WorkflowError::Cancelled
                | WorkflowError::Activity(crate::activity::ActivityCallError::Cancelled { .. })
        )
    }

    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        WorkflowError::Failed(message.into())
    }
}

/// The error an update handler returns; the caller sees [`WfError::UpdateFailed`] with its
/// message, and the run goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UpdateError {
    /// What went wrong.
    pub message: String,
}

impl UpdateError {
    /// An update failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        UpdateError {
            message: message.into(),
        }
    }
}

impl From<crate::activity::ActivityCallError> for UpdateError {
    fn from(e: crate::activity::ActivityCallError) -> Self {
        UpdateError::new(e.to_string())
    }
}

impl From<crate::context::Cancelled> for UpdateError {
    fn from(e: crate::context::Cancelled) -> Self {
        UpdateError::new(e.to_string())
    }
}

impl From<PayloadError> for UpdateError {
    fn from(e: PayloadError) -> Self {
        UpdateError::new(e.to_string())
    }
}

/// A validator's refusal; the caller sees [`WfError::Rejected`] with its message and nothing is
/// recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Rejection {
    /// Why the update was refused.
    pub message: String,
}

impl Rejection {
    /// A rejection with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Rejection {
            message: message.into(),
        }
    }
}
