//! Runs as the engine and its users see them: lifecycle states, parents and children, id
//! conflicts, failed workflow tasks, the summary `describe()` shows, and list filters.

use super::payload::Payload;
use super::search::SearchValue;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// Lifecycle state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunStatus {
    /// Still running (possibly paused or waiting).
    Running,
    /// Returned a value.
    Completed,
    /// Returned an error.
    Failed,
    /// Continued as a new run of the same workflow id.
    ContinuedAsNew,
    /// Terminated from outside.
    Terminated,
    /// Ended as cancelled after a cancellation request.
    Cancelled,
    /// Closed by its run timeout or its chain's execution timeout.
    TimedOut,
    /// Reset by an operator: a new run of the same chain replaced it (its `WorkflowReset`
    /// event names it).
    Reset,
}

impl RunStatus {
    /// Every status, in declaration order.
    pub const ALL: [RunStatus; 8] = [
        RunStatus::Running,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::ContinuedAsNew,
        RunStatus::Terminated,
        RunStatus::Cancelled,
        RunStatus::TimedOut,
        RunStatus::Reset,
    ];

    /// Stable text form used in storage and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::ContinuedAsNew => "continued_as_new",
            RunStatus::Terminated => "terminated",
            RunStatus::Cancelled => "cancelled",
            RunStatus::TimedOut => "timed_out",
            RunStatus::Reset => "reset",
        }
    }

    /// Parses [`RunStatus::as_str`].
    pub fn parse(s: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether the run has closed (any status but `Running`).
    pub fn is_closed(self) -> bool {
        self != RunStatus::Running
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The parent of a child run: where its result goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentInfo {
    /// The parent's workflow id.
    pub workflow_id: String,
    /// The parent run that started the child.
    pub run_id: String,
    /// The sequence number of the parent's start command.
    pub seq: u32,
}

/// What a parent does with a still-running child when the parent closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ParentClosePolicy {
    /// Terminate the child (the default, as in Temporal).
    #[default]
    Terminate,
    /// Leave the child running.
    Abandon,
    /// Request the child's cancellation; it may clean up.
    RequestCancel,
}

/// How a child run ended, as its parent sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ChildOutcome {
    /// It returned a value.
    Completed(Payload),
    /// It returned an error.
    Failed(String),
    /// It ended as cancelled.
    Cancelled(String),
    /// It was terminated.
    Terminated(String),
    /// It could not start (its workflow id is running).
    StartFailed(String),
}

/// What to do when a run with the requested workflow id is already running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum IdConflictPolicy {
    /// Refuse the start with `AlreadyStarted` (the default).
    #[default]
    Fail,
    /// Keep the running run; deliver any start messages to it.
    UseExisting,
    /// Terminate the running run, then start a new one.
    TerminateExisting,
}

/// Whether a start may open a new run under a workflow id whose latest run is closed
/// (Temporal's workflow id reuse policy). A running run is the business of
/// [`IdConflictPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum IdReusePolicy {
    /// Start a new run whatever the closed run's status (the default).
    #[default]
    AllowDuplicate,
    /// Start a new run only if the latest run did not succeed: it failed, was terminated, was
    /// cancelled or timed out. After a completed run the start is refused with `DuplicateRejected`.
    AllowDuplicateFailedOnly,
    /// Never start a second run under the workflow id while a closed run of it is kept
    /// (retention's purge forgets it): the start is refused with `DuplicateRejected`.
    RejectDuplicate,
}

impl IdReusePolicy {
    /// Every policy, in declaration order.
    pub const ALL: [IdReusePolicy; 3] = [
        IdReusePolicy::AllowDuplicate,
        IdReusePolicy::AllowDuplicateFailedOnly,
        IdReusePolicy::RejectDuplicate,
    ];

    /// Whether a new run may follow a latest run closed with `status`.
    pub fn allows_after(self, status: RunStatus) -> bool {
        match self {
            IdReusePolicy::AllowDuplicate => true,
            IdReusePolicy::AllowDuplicateFailedOnly => matches!(
                status,
                RunStatus::Failed
                    | RunStatus::Terminated
                    | RunStatus::Cancelled
                    | RunStatus::TimedOut
            ),
            IdReusePolicy::RejectDuplicate => false,
        }
    }

    /// Stable text form used on the wire: `"allow_duplicate"`,
    /// `"allow_duplicate_failed_only"` or `"reject_duplicate"`.
    pub fn as_str(self) -> &'static str {
        match self {
            IdReusePolicy::AllowDuplicate => "allow_duplicate",
            IdReusePolicy::AllowDuplicateFailedOnly => "allow_duplicate_failed_only",
            IdReusePolicy::RejectDuplicate => "reject_duplicate",
        }
    }

    /// Parses [`IdReusePolicy::as_str`].
    pub fn parse(s: &str) -> Option<IdReusePolicy> {
        IdReusePolicy::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// The task queue of runs and workers that name none.
pub const DEFAULT_TASK_QUEUE: &str = "default";

/// The last failed workflow task of a run, kept until a task succeeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskFailure {
    /// What went wrong (panic message, nondeterminism report...).
    pub message: String,
    /// Whether the failure is a nondeterminism error.
    pub nondeterminism: bool,
    /// Consecutive failed attempts.
    pub attempts: u32,
    /// When the next attempt is due (engine-clock ms).
    pub retry_at_ms: i64,
}

/// What `describe()` shows of a run's in-memory state; the engine stores it with each commit
/// (an opaque payload to the store, which reads only `open_children` when it terminates the
/// run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Signals received with no handler for their name, oldest first.
    pub buffered_signals: Vec<String>,
    /// Async handlers still running ("update change_goal (id u-1)", "signal note").
    pub running_handlers: Vec<String>,
    /// Children still running, with their parent close policies (applied when the run is
    /// terminated from outside).
    #[serde(default)]
    pub open_children: Vec<(String, ParentClosePolicy)>,
    /// Whether the run's cancellation was requested (and recorded in its history): it takes no
    /// more signals.
    #[serde(default)]
    pub cancel_requested: bool,
}

impl RunSummary {
    /// The summary as stored. Not bound by the payload limit: it is the engine's own
    /// bookkeeping, and dropping it (as a failed encode once did) would make a terminated run
    /// skip its children's parent close policies.
    pub fn encode(&self) -> Payload {
        Payload::unchecked(
            rmp_serde::to_vec(self).expect("strings, lists and unit enums always encode"),
        )
    }

    /// Whether a stored summary says the run's cancellation was requested, read without
    /// building the rest (a summary may list thousands of buffered signals, and every signal
    /// delivered through the store asks this).
    pub fn cancel_requested_in(stored: &Payload) -> bool {
        #[derive(Deserialize)]
        struct Peek {
            #[serde(default)]
            _buffered_signals: serde::de::IgnoredAny,
            #[serde(default)]
            _running_handlers: serde::de::IgnoredAny,
            #[serde(default)]
            _open_children: serde::de::IgnoredAny,
            #[serde(default)]
            cancel_requested: bool,
        }
        !stored.is_empty() && stored.decode::<Peek>().is_ok_and(|p| p.cancel_requested)
    }

    /// The summary of a stored run: one that does not decode (an engine bug, or a file
    /// damaged on disk) reads as empty, which names no children and no handlers.
    pub fn of(stored: &Payload) -> RunSummary {
        if stored.is_empty() {
            return RunSummary::default();
        }
        stored.decode().unwrap_or_default()
    }
}

/// Filter for listing runs. Every condition set must hold.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use wf_core::SearchValue;
/// use wf_core::{ListFilter, RunStatus};
/// let page = ListFilter {
///     workflow_type: Some("order".into()),
///     status: Some(RunStatus::Running),
///     search: vec![("customer".into(), SearchValue::from("acme"))],
///     started_after: Some(SystemTime::now() - Duration::from_secs(3600)),
///     limit: 50,
///     ..ListFilter::default()
/// };
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    /// Only runs of this workflow type.
    pub workflow_type: Option<String>,
    /// Only runs in this state.
    pub status: Option<RunStatus>,
    /// Only runs on this build (worker versioning: pinned to it, or following it as their
    /// task queue's current build).
    pub build_id: Option<String>,
    /// Only the latest run of each workflow id.
    pub latest_only: bool,
    /// At most this many (newest first); 0 = no limit.
    pub limit: usize,
    /// Only runs whose search attributes hold each of these values (same kind, equal value).
    pub search: Vec<(String, SearchValue)>,
    /// Only runs started at or after this time.
    pub started_after: Option<SystemTime>,
    /// Only runs started before this time.
    pub started_before: Option<SystemTime>,
    /// Only runs closed at or after this time (running runs never match).
    pub closed_after: Option<SystemTime>,
    /// Only runs closed before this time (running runs never match).
    pub closed_before: Option<SystemTime>,
    /// Paging: only runs listed after this one (the run id of the last run of the previous
    /// page, with the same filter). A run id that names no run gives an empty page.
    pub after_run_id: Option<String>,
}

impl ListFilter {
    /// The time bounds in engine-clock ms, as stores compare them: started after, started
    /// before, closed after, closed before.
    pub fn time_bounds_ms(&self) -> [Option<i64>; 4] {
        let ms = |t: Option<SystemTime>| {
            t.map(|t| match t.duration_since(UNIX_EPOCH) {
                Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
                Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
            })
        };
        [
            ms(self.started_after),
            ms(self.started_before),
            ms(self.closed_after),
            ms(self.closed_before),
        ]
    }

    /// Whether a run started at `created_ms` and closed at `closed_ms` is within the time
    /// bounds.
    pub fn times_match(&self, created_ms: i64, closed_ms: Option<i64>) -> bool {
        let [sa, sb, ca, cb] = self.time_bounds_ms();
        sa.is_none_or(|t| created_ms >= t)
            && sb.is_none_or(|t| created_ms < t)
            && ca.is_none_or(|t| closed_ms.is_some_and(|c| c >= t))
            && cb.is_none_or(|t| closed_ms.is_some_and(|c| c < t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_over_the_payload_limit_still_encodes_and_decodes() {
        let summary = RunSummary {
            buffered_signals: vec!["s".repeat(1024); 3 * 1024],
            running_handlers: Vec::new(),
            open_children: vec![("child-1".into(), ParentClosePolicy::Terminate)],
            cancel_requested: true,
        };
        let stored = summary.encode();
        assert!(RunSummary::cancel_requested_in(&stored));
        let old = RunSummary {
            cancel_requested: false,
            ..summary.clone()
        };
        assert!(!RunSummary::cancel_requested_in(&old.encode()));
        assert!(!RunSummary::cancel_requested_in(&Payload::default()));
        // As older engines wrote it: three fields.
        let three = (
            vec!["s".to_string()],
            Vec::<String>::new(),
            Vec::<(String, ParentClosePolicy)>::new(),
        );
        let three = Payload::unchecked(rmp_serde::to_vec(&three).unwrap());
        assert!(!RunSummary::cancel_requested_in(&three));
        assert_eq!(RunSummary::of(&three).buffered_signals, ["s"]);
        assert!(stored.len() > crate::data::payload::MAX_PAYLOAD_BYTES);
        assert_eq!(RunSummary::of(&stored), summary);
    }
}
