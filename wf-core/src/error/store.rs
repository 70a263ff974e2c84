//! The store layer's errors: the outcomes callers act on (not found, finished, conflicts) and
//! failures of the database itself, which say whether a retry can help.

use crate::data::run::RunStatus;
use std::sync::Arc;

/// Errors of the store layer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No run has this workflow id (or run id).
    #[error("no workflow with id {workflow_id:?}{}", run_id.as_ref().map(|r| format!(" and run id {r:?}")).unwrap_or_default())]
    NotFound {
        /// The workflow id asked for.
        workflow_id: String,
        /// The run id asked for, if any.
        run_id: Option<String>,
    },
    /// The run is closed and accepts no more messages.
    #[error("workflow {workflow_id:?} run {run_id} is already {status}")]
    RunFinished {
        /// The workflow id.
        workflow_id: String,
        /// The closed run.
        run_id: String,
        /// How it closed.
        status: RunStatus,
    },
    /// A run with this workflow id is running and the id-conflict policy says fail.
    #[error("workflow {workflow_id:?} is already running as run {run_id}")]
    AlreadyStarted {
        /// The workflow id.
        workflow_id: String,
        /// The running run.
        run_id: String,
    },
    /// The workflow id's latest run is closed and the start's id-reuse policy refuses a new
    /// run after it.
    #[error("workflow {workflow_id:?} already ran as run {run_id} ({status}) and the id-reuse policy {policy} refuses another run")]
    DuplicateRejected {
        /// The workflow id.
        workflow_id: String,
        /// The closed latest run.
        run_id: String,
        /// How it closed.
        status: RunStatus,
        /// The policy that refused (`as_str` form).
        policy: &'static str,
    },
    /// The caller's view of the run is stale: it lost its lease, or the history moved on.
    #[error("run {run_id}: {reason}")]
    Conflict {
        /// The run.
        run_id: String,
        /// What did not match.
        reason: String,
    },
    /// The run cannot close because messages arrived after the workflow task read its inbox;
    /// the task must run again with them.
    #[error("run {run_id}: new messages arrived while the workflow task ran")]
    NewMessages {
        /// The run.
        run_id: String,
    },
    /// A schedule with this id exists.
    #[error("a schedule with id {0:?} already exists")]
    ScheduleExists(String),
    /// The database itself failed (I/O, a full disk, corruption, a lock held too long).
    #[error("storage failure: {0}")]
    Backend(#[source] BackendError),
}

impl StoreError {
    /// Whether trying the same call again may succeed: the database was busy, an I/O error
    /// or a full disk may clear. Outcomes (not found, finished, conflicts) and corruption do
    /// not change by retrying.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Backend(e) if e.is_retryable())
    }

    /// A backend failure of `kind`.
    pub fn backend(kind: BackendErrorKind, message: impl Into<String>) -> StoreError {
        StoreError::Backend(BackendError::new(kind, message))
    }

    /// Data read from the database does not decode: the file is damaged or was written by
    /// something else.
    pub fn corrupt(message: impl Into<String>) -> StoreError {
        Self::backend(BackendErrorKind::Corrupt, message)
    }

    /// An invariant of the store failed: a bug, not a fault of the disk or the caller.
    pub fn bug(message: impl Into<String>) -> StoreError {
        Self::backend(BackendErrorKind::Bug, message)
    }

    /// The store is closed (shut down) and takes no more calls.
    pub fn closed(message: impl Into<String>) -> StoreError {
        Self::backend(BackendErrorKind::Closed, message)
    }

    /// A conflict on `run_id`.
    pub fn conflict(run_id: &str, reason: impl Into<String>) -> StoreError {
        StoreError::Conflict {
            run_id: run_id.to_string(),
            reason: reason.into(),
        }
    }
}

/// What kind of database failure a [`BackendError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendErrorKind {
    /// Another connection or process held a lock longer than the busy timeout; retry.
    Busy,
    /// The database cannot be reached (a dropped connection, a server restarting); retry.
    Unavailable,
    /// An I/O error from the operating system; a retry may succeed once it clears.
    Io,
    /// The disk (or the database's quota) is full; a retry succeeds once space is freed.
    Full,
    /// The data on disk is damaged or is not a wf database; retrying does not help.
    Corrupt,
    /// The store was shut down.
    Closed,
    /// The request cannot be done as asked (e.g. a run id that already exists).
    Invalid,
    /// An invariant of the store failed: a bug.
    Bug,
    /// A stored payload could not be encoded or decoded by the engine's payload codecs (a
    /// wrong key, a codec that is not installed); retrying does not help until the codec
    /// configuration is fixed.
    Codec,
}

/// A failure of the database under a store, with its cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct BackendError {
    kind: BackendErrorKind,
    message: String,
    #[source]
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl BackendError {
    /// A failure of `kind` described by `message`.
    pub fn new(kind: BackendErrorKind, message: impl Into<String>) -> BackendError {
        BackendError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same failure, caused by `source` (kept as the error's source).
    pub fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> BackendError {
        self.source = Some(Arc::new(source));
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> BackendErrorKind {
        self.kind
    }

    /// What happened, for people.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether trying again may succeed (busy, unavailable, I/O, full disk).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            BackendErrorKind::Busy
                | BackendErrorKind::Unavailable
                | BackendErrorKind::Io
                | BackendErrorKind::Full
        )
    }
}

impl PartialEq for BackendError {
    /// Two failures are equal when their kinds and messages are (the source is not compared).
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.message == other.message
    }
}
