//! Repairs of runs by an operator: reset, fork, resume. What a repair records of itself (who,
//! why, from which run and event) in the history of the run it makes, and where a reset
//! points in the history it starts from.

use serde::{Deserialize, Serialize};

/// What kind of repair made a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairKind {
    /// A reset: the run replaced the run it was reset from, under the same workflow id.
    Reset,
    /// A fork: a new workflow id started from a prefix of another run's history, which was
    /// left untouched.
    Fork,
    /// A resume: a reset of a closed run to its last good workflow task.
    Resume,
}

impl RepairKind {
    /// Stable text form: `"reset"`, `"fork"`, `"resume"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairKind::Reset => "reset",
            RepairKind::Fork => "fork",
            RepairKind::Resume => "resume",
        }
    }
}

impl std::fmt::Display for RepairKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a repaired run came from, recorded in its `WorkflowStarted` event: the run whose
/// history prefix it starts from, the last event kept, and who asked and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairOrigin {
    /// Reset, fork or resume.
    pub kind: RepairKind,
    /// The workflow id of the run it came from.
    pub workflow_id: String,
    /// The run it came from.
    pub run_id: String,
    /// The last event of that run's history it kept (its history is that prefix, then its own).
    pub at_event: u64,
    /// Why, as the operator said.
    pub reason: String,
    /// Who: the caller's identity (over HTTP, its token's role).
    pub identity: String,
    /// When, engine-clock ms since the epoch.
    pub at_ms: i64,
}

/// Which workflow task of a run's history a reset or a fork starts from: the new run keeps
/// the history up to it, and everything after it runs again on today's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResetPoint {
    /// Before the first workflow task: only `WorkflowStarted` is kept, the whole run runs again.
    FirstTask,
    /// The last workflow task that completed before the run's first failure (a failed,
    /// cancelled, terminated or timed-out close), or the last one if the run has none; before
    /// the first task if none completed.
    LastGoodTask,
    /// Up to event `N`, which must be `WorkflowStarted` (1) or a `WorkflowTaskCompleted`.
    Event(u64),
}

impl std::fmt::Display for ResetPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResetPoint::FirstTask => f.write_str("first-task"),
            ResetPoint::LastGoodTask => f.write_str("last-good-task"),
            ResetPoint::Event(n) => write!(f, "event {n}"),
        }
    }
}
