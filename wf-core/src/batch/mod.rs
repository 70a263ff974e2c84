//! Batches: one action (signal, cancel, terminate, reset, pause, unpause, delete) carried out
//! on every run a [`ListFilter`] selects, as a durable job in the store.
//!
//! A batch is started through [`Client::batches`](crate::Client::batches). Its state (filter,
//! action, progress, the cursor over the selected runs) is a row of the store, saved
//! version-checked after every chunk of runs; the engine carrying it out holds a lease on it,
//! and any engine on the store takes over an unfinished batch whose lease ran out. Each run is
//! acted on once: the runs of a chunk are recorded before they are acted on, and the actions
//! are idempotent (a signal carries the batch's dedupe id; a run that a cancel or terminate of
//! the batch already closed counts as done when a chunk is taken over, and a reset names the
//! run it resets, so that a run the batch already reset is not reset twice).

pub(crate) mod state;

use crate::data::payload::{Payload, PayloadError};
use crate::data::repair::ResetPoint;
use crate::data::run::{ListFilter, RunStatus};
use crate::data::search::SearchValue;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a batch does to each run it selects, each carried out by the client operation of the
/// same name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum BatchAction {
    /// Sends a signal (wire name, encoded argument tuple) to each run, with the batch's
    /// dedupe id: a run takes it once, however often the batch is taken over.
    Signal {
        /// The signal's wire name.
        name: String,
        /// The encoded arguments (a tuple).
        args: Payload,
    },
    /// Requests cancellation of each run.
    Cancel,
    /// Terminates each run.
    Terminate,
    /// Resets each selected run ([`Client::reset`](crate::Client::reset)) to the same named
    /// point of its own history: the run closes as reset (a closed one keeps its status) and a
    /// new run of its chain goes on from there on today's code. A run that is no longer its
    /// workflow id's latest when the batch reaches it counts as failed: the batch resets the
    /// runs it selected, never a later run of their chains.
    Reset {
        /// [`ResetPoint::FirstTask`] or [`ResetPoint::LastGoodTask`]; an event id means
        /// nothing across runs, so a batch with [`ResetPoint::Event`] is refused.
        to: ResetPoint,
        /// Leave out the signals and updates each run received after the point (by default
        /// they are applied again, each once).
        drop_messages: bool,
    },
    /// Pauses each run as an operator would ([`Client::pause`](crate::Client::pause)); a run
    /// already paused keeps its first pause.
    Pause,
    /// Unpauses each run ([`Client::unpause`](crate::Client::unpause)); a run that is not
    /// paused is left as it is.
    Unpause,
    /// Deletes each run's latest run, its history, inbox and dedupe ids
    /// ([`Client::delete_run`](crate::Client::delete_run)); a running run is terminated first.
    Delete,
}

impl BatchAction {
    /// A signal action with `args` (a tuple of the handler's arguments, `()` for none).
    pub fn signal<A: Serialize>(name: impl Into<String>, args: &A) -> Result<Self, PayloadError> {
        Ok(BatchAction::Signal {
            name: name.into(),
            args: Payload::encode(args)?,
        })
    }

    /// `"signal"`, `"cancel"`, `"terminate"`, `"reset"`, `"pause"`, `"unpause"` or `"delete"`.
    pub fn kind(&self) -> &'static str {
        match self {
            BatchAction::Signal { .. } => "signal",
            BatchAction::Cancel => "cancel",
            BatchAction::Terminate => "terminate",
            BatchAction::Reset { .. } => "reset",
            BatchAction::Pause => "pause",
            BatchAction::Unpause => "unpause",
            BatchAction::Delete => "delete",
        }
    }

    /// The action named `kind` that takes no arguments (every one but a signal and a reset);
    /// `None` for another name.
    pub fn plain(kind: &str) -> Option<Self> {
        Some(match kind {
            "cancel" => BatchAction::Cancel,
            "terminate" => BatchAction::Terminate,
            "pause" => BatchAction::Pause,
            "unpause" => BatchAction::Unpause,
            "delete" => BatchAction::Delete,
            _ => return None,
        })
    }
}

/// A batch to start: which runs, what to do to them, why, and how fast.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRequest {
    /// The batch's id; `None`: the engine makes a fresh one.
    pub batch_id: Option<String>,
    /// The runs it acts on (its `limit` and `after_run_id` are ignored: a batch acts on every
    /// run the filter selects).
    pub filter: ListFilter,
    /// What it does to each run.
    pub action: BatchAction,
    /// Why: recorded with the batch, and the reason of each cancel, terminate, reset and pause.
    pub reason: String,
    /// At most this many runs per second; `None`: as fast as the store allows.
    pub rate_per_s: Option<u32>,
}

impl BatchRequest {
    /// A request for `action` on the runs `filter` selects, with a fresh id, no reason and no
    /// rate limit.
    pub fn new(filter: ListFilter, action: BatchAction) -> Self {
        BatchRequest {
            batch_id: None,
            filter,
            action,
            reason: String::new(),
            rate_per_s: None,
        }
    }
}

/// Where a batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BatchStatus {
    /// Acting on its runs.
    Running,
    /// Every selected run was acted on.
    Completed,
    /// Cancelled before it finished; the runs acted on so far stay acted on.
    Cancelled,
    /// Stopped by an error that is not one run's (its filter can no longer be read, say).
    Failed,
}

impl BatchStatus {
    /// `"running"`, `"completed"`, `"cancelled"` or `"failed"`.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchStatus::Running => "running",
            BatchStatus::Completed => "completed",
            BatchStatus::Cancelled => "cancelled",
            BatchStatus::Failed => "failed",
        }
    }

    /// The status named by [`as_str`](Self::as_str)'s text.
    pub fn parse(s: &str) -> Option<BatchStatus> {
        [
            BatchStatus::Running,
            BatchStatus::Completed,
            BatchStatus::Cancelled,
            BatchStatus::Failed,
        ]
        .into_iter()
        .find(|b| b.as_str() == s)
    }
}

/// A batch as describe and list show it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchDescription {
    /// The batch's id.
    pub batch_id: String,
    /// What it does to each run.
    pub action: BatchAction,
    /// The runs it selects.
    pub filter: ListFilter,
    /// Why it was started.
    pub reason: String,
    /// Its rate limit (runs per second), if any.
    pub rate_per_s: Option<u32>,
    /// Where it stands.
    pub status: BatchStatus,
    /// How many runs the filter selected when the batch started.
    pub selected: u64,
    /// Runs acted on.
    pub done: u64,
    /// Runs whose action failed (see `last_error`).
    pub failed: u64,
    /// The last failure: which run, and what happened.
    pub last_error: Option<String>,
    /// When it started (engine clock, ms since the Unix epoch).
    pub created_ms: i64,
    /// When it finished, if it did.
    pub closed_ms: Option<i64>,
}

/// A filter in the stored form (times as engine-clock ms).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct StoredFilter {
    pub workflow_type: Option<String>,
    pub status: Option<RunStatus>,
    pub build_id: Option<String>,
    pub latest_only: bool,
    pub search: Vec<(String, SearchValue)>,
    pub times_ms: [Option<i64>; 4],
}

impl StoredFilter {
    pub fn from_filter(f: &ListFilter) -> Self {
        StoredFilter {
            workflow_type: f.workflow_type.clone(),
            status: f.status,
            build_id: f.build_id.clone(),
            latest_only: f.latest_only,
            search: f.search.clone(),
            times_ms: f.time_bounds_ms(),
        }
    }

    /// The filter, listing `limit` runs after `after_run_id`.
    pub fn to_filter(&self, after_run_id: Option<String>, limit: usize) -> ListFilter {
        let time = |ms: Option<i64>| {
            ms.map(|ms| {
                let d = Duration::from_millis(ms.unsigned_abs());
                if ms >= 0 {
                    UNIX_EPOCH + d
                } else {
                    UNIX_EPOCH.checked_sub(d).unwrap_or(UNIX_EPOCH)
                }
            })
        };
        let t: [Option<SystemTime>; 4] = self.times_ms.map(time);
        ListFilter {
            workflow_type: self.workflow_type.clone(),
            status: self.status,
            build_id: self.build_id.clone(),
            latest_only: self.latest_only,
            limit,
            search: self.search.clone(),
            started_after: t[0],
            started_before: t[1],
            closed_after: t[2],
            closed_before: t[3],
            after_run_id,
        }
    }
}
