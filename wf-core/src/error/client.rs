//! [`WfError`]: every error a client call or the engine can return — the ones users match on
//! (`RunFinished`, `NotFound`, `Rejected`, `UpdateFailed`, `QueryError`, `Timeout`,
//! `NonDeterminism`, `PayloadError`) and the failures underneath (the store, the engine).

use super::store::StoreError;
use crate::data::limits::LimitError;
use crate::data::payload::PayloadError;
use crate::data::run::RunStatus;

/// Every error a [`Client`](crate::Client) call or the engine can return.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WfError {
    /// No run has this workflow id (or run id), or, with `update_id`, the workflow has no
    /// update of that id.
    #[error("{}", not_found(workflow_id, update_id.as_deref()))]
    NotFound {
        /// The workflow id.
        workflow_id: String,
        /// The update id looked up, when it is the update that is not found.
        update_id: Option<String>,
    },
    /// The run is closed; it takes no more signals or updates.
    #[error("workflow {workflow_id:?} (run {run_id}) has already finished ({status})")]
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
    /// The workflow id's latest run is closed and the start's
    /// [`IdReusePolicy`](crate::IdReusePolicy) refuses a new run after it.
    #[error("workflow {workflow_id:?} already ran as run {run_id} ({status}); the id-reuse policy refuses another run: pick another id, or start with IdReusePolicy::AllowDuplicate")]
    DuplicateRejected {
        /// The workflow id.
        workflow_id: String,
        /// The closed latest run.
        run_id: String,
        /// How it closed.
        status: RunStatus,
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
    #[error("unknown {kind} {name:?}{}", join_hint(.hint))]
    Unknown {
        /// `"workflow type"`, `"signal"`, `"query"`, `"update"`, `"activity"` or `"schedule"`.
        kind: &'static str,
        /// The name asked for.
        name: String,
        /// How to fix it: a sentence without a leading separator (empty when there is no
        /// advice); the message joins it after `; `.
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
    /// The run timed out: its run timeout (with no retry left) or its chain's execution timeout
    /// passed. The message names the timeout.
    #[error("workflow timed out: {0}")]
    TimedOut(String),
    /// The activity attempt an activity task token names is not open any more: it completed,
    /// failed or timed out, a later attempt replaced it, its run closed, or it was purged. The
    /// message says which; a token is good for one attempt only.
    #[error("activity not pending: {0}")]
    ActivityNotPending(String),
    /// An argument is invalid (an id or a name out of its limits, a bad schedule spec...); the
    /// message names the argument and what is wrong with it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The engine's configuration is invalid (two workflow types with one name, a handler
    /// table with a duplicate...).
    #[error("invalid engine configuration: {0}")]
    InvalidConfig(String),
    /// Something changed under the call again and again (a schedule edited concurrently);
    /// trying again is safe.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The engine stopped before it could confirm the call: it may or may not have taken
    /// effect (send messages with an id to retry them safely).
    #[error("interrupted: {0}")]
    Interrupted(String),
    /// The engine could not start (a thread or runtime the operating system refused).
    #[error("the engine could not start: {0}")]
    Startup(String),
    /// The engine has shut down.
    #[error("the engine has shut down")]
    Shutdown,
    /// The store failed; [`WfError::is_retryable`] says whether trying again may help.
    #[error("store: {0}")]
    Store(#[source] StoreError),
}

/// The message of [`WfError::NotFound`].
fn not_found(workflow_id: &str, update_id: Option<&str>) -> String {
    match update_id {
        Some(update_id) => format!(
            "workflow {workflow_id:?} has no update with update id {update_id:?}: no update was \
             sent with that id to this workflow id (or its run was purged)"
        ),
        None => format!("workflow {workflow_id:?} not found"),
    }
}

impl WfError {
    /// Whether trying the same call again may succeed (the store was busy, an I/O error or a
    /// full disk may clear, the engine's answer was interrupted). Outcomes such as
    /// `RunFinished`, `Rejected` or `NotFound` do not change by retrying.
    pub fn is_retryable(&self) -> bool {
        match self {
            WfError::Store(e) => e.is_retryable(),
            WfError::Conflict(_) | WfError::Interrupted(_) | WfError::Timeout(_) => true,
            _ => false,
        }
    }
}

impl From<LimitError> for WfError {
    fn from(e: LimitError) -> Self {
        WfError::InvalidArgument(e.to_string())
    }
}

impl From<StoreError> for WfError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { workflow_id, .. } => WfError::NotFound {
                workflow_id,
                update_id: None,
            },
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
            StoreError::DuplicateRejected {
                workflow_id,
                run_id,
                status,
                ..
            } => WfError::DuplicateRejected {
                workflow_id,
                run_id,
                status,
            },
            other => WfError::Store(other),
        }
    }
}

/// `"; " + hint`, or nothing for an empty hint (a hint written with its own leading `"; "`
/// still reads once).
fn join_hint(hint: &str) -> String {
    let hint = hint.trim_start_matches(';').trim_start();
    if hint.is_empty() {
        String::new()
    } else {
        format!("; {hint}")
    }
}
