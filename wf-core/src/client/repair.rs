//! Repairing one run, for operators: [`Client::reset`], [`Client::fork`], [`Client::resume`],
//! [`Client::delete_run`], each a [`RepairRequest`] sent with [`Client::repair`].

use super::Client;
use crate::data::repair::ResetPoint;
use crate::error::WfError;

/// What a repair does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairAction {
    /// Close the latest run as `Reset` and go on in a new run of the same chain, from the
    /// history up to `to`, on today's code.
    Reset {
        /// The workflow task to start from.
        to: ResetPoint,
        /// Leave out the signals and updates received after the point (by default they are
        /// applied again, each once).
        drop_messages: bool,
    },
    /// Start `new_workflow_id` from the latest run's history up to event `at_event` (1, or a
    /// `WorkflowTaskCompleted`), leaving the run untouched.
    Fork {
        /// The new workflow id.
        new_workflow_id: String,
        /// The last event kept.
        at_event: u64,
    },
    /// A closed run (failed, timed out, cancelled, terminated) goes on from its last good
    /// workflow task, its later signals and updates applied again; a running run whose
    /// workflow task keeps failing retries that task now instead of after its backoff.
    Resume,
    /// Delete the latest run: its history, inbox, pending work, and its chain's dedupe ids
    /// once no run of the chain is left (a running run is terminated first).
    Delete,
}

/// A repair of the latest run of a workflow id, with who asks and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairRequest {
    /// The workflow id.
    pub workflow_id: String,
    /// What to do.
    pub action: RepairAction,
    /// Why (recorded in the history the repair writes; `"repaired by an operator"` if empty).
    pub reason: String,
    /// Who asks, as recorded (`None`: the transport's caller, e.g. `"in-process"`, or over
    /// HTTP the token's role).
    pub identity: Option<String>,
}

impl RepairRequest {
    /// A repair of `workflow_id` without a reason.
    pub fn new(workflow_id: impl Into<String>, action: RepairAction) -> Self {
        RepairRequest {
            workflow_id: workflow_id.into(),
            action,
            reason: String::new(),
            identity: None,
        }
    }

    /// With this reason.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }

    /// With this identity.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }
}

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// The workflow id of the run that goes on (a fork's new one), or of the deleted run.
    pub workflow_id: String,
    /// The run that goes on (the new run of a reset, fork or resume; the same run for a
    /// resume that retried a failing task), or the deleted run.
    pub run_id: String,
}

/// The reason recorded when the caller gives none.
pub const DEFAULT_REPAIR_REASON: &str = "repaired by an operator";

impl Client {
    /// Sends a repair (see [`RepairAction`]); operators' tools call this, programs the
    /// methods below.
    pub async fn repair(&self, request: RepairRequest) -> Result<RepairReport, WfError> {
        self.transport.repair(request).await
    }

    /// Resets the latest run of `workflow_id` to `to`: it closes with status `Reset` (its
    /// `WorkflowReset` event names the new run), and a new run of the same chain starts from
    /// its history up to that point, replayed by the code registered today, with the signals
    /// and updates received after the point applied again (each once: signal and update ids
    /// stay deduplicated). Activities pending at the point run again; timers pending at it
    /// fire at their time. `WfError::Conflict` for a point that is no workflow task of its
    /// history, or a history up to it with a child still open.
    pub async fn reset(
        &self,
        workflow_id: &str,
        to: ResetPoint,
        reason: &str,
    ) -> Result<RepairReport, WfError> {
        let action = RepairAction::Reset {
            to,
            drop_messages: false,
        };
        self.repair(RepairRequest::new(workflow_id, action).reason(reason))
            .await
    }

    /// Starts `new_workflow_id` from the history of `workflow_id`'s latest run up to event
    /// `at_event` (1, or a `WorkflowTaskCompleted`); the original run and its history are left
    /// as they are. The fork is a chain of its own, with no parent.
    pub async fn fork(
        &self,
        workflow_id: &str,
        new_workflow_id: &str,
        at_event: u64,
        reason: &str,
    ) -> Result<RepairReport, WfError> {
        let action = RepairAction::Fork {
            new_workflow_id: new_workflow_id.to_string(),
            at_event,
        };
        self.repair(RepairRequest::new(workflow_id, action).reason(reason))
            .await
    }

    /// Resumes the latest run of `workflow_id` (see [`RepairAction::Resume`]).
    pub async fn resume(&self, workflow_id: &str, reason: &str) -> Result<RepairReport, WfError> {
        self.repair(RepairRequest::new(workflow_id, RepairAction::Resume).reason(reason))
            .await
    }

    /// Deletes the latest run of `workflow_id` (see [`RepairAction::Delete`]); e.g. for a
    /// data-deletion request. Its earlier runs, if any, stay (delete again for each).
    pub async fn delete_run(
        &self,
        workflow_id: &str,
        reason: &str,
    ) -> Result<RepairReport, WfError> {
        self.repair(RepairRequest::new(workflow_id, RepairAction::Delete).reason(reason))
            .await
    }
}
