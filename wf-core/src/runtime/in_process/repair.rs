//! Repairing one run: reset, fork, resume, delete, each one store transaction
//! (`store/rules/repair.rs`), then the wake-ups that let the engine see what changed.

use super::Core;
use crate::client::{RepairAction, RepairReport, RepairRequest, DEFAULT_REPAIR_REASON};
use crate::data::ids::new_id;
use crate::data::limits::{check_reason, Ident};
use crate::data::repair::{RepairKind, ResetPoint};
use crate::error::{StoreError, WfError};
use crate::store::ResetRequest;

/// Who an in-process repair names when its request names nobody.
const IN_PROCESS: &str = "in-process";

/// Sends `request`'s repair to the store and wakes what it concerns.
pub(super) async fn repair(core: &Core, request: RepairRequest) -> Result<RepairReport, WfError> {
    repair_run(core, request, None).await
}

/// [`repair`] of run `run_id` of the request's workflow id (`None`: its latest run). A reset
/// or a resume of a run that is not the latest is refused (`WfError::Conflict`), which lets a
/// batch act on the runs it selected and never on a run it made.
pub(crate) async fn repair_run(
    core: &Core,
    request: RepairRequest,
    run_id: Option<String>,
) -> Result<RepairReport, WfError> {
    let RepairRequest {
        workflow_id,
        action,
        reason,
        identity,
    } = request;
    Ident::WorkflowId.check(&workflow_id)?;
    check_reason("repair reason", &reason)?;
    let reason = match reason.is_empty() {
        true => DEFAULT_REPAIR_REASON.to_string(),
        false => reason,
    };
    let identity = identity.unwrap_or_else(|| IN_PROCESS.to_string());
    check_reason("repair identity", &identity)?;
    let now_ms = core.now_ms();
    let admin = core.store.admin();
    let (kind, point, new_workflow_id, drop_messages) = match action {
        RepairAction::Delete => {
            let deleted = admin
                .delete_run(&workflow_id, run_id.as_deref(), &reason, now_ms)
                .await
                .map_err(|e| refused(&workflow_id, e))?;
            tracing::info!(workflow_id, identity, reason, run_id = ?deleted, "run deleted");
            after_change(core, &workflow_id);
            let run_id = deleted.into_iter().next().unwrap_or_default();
            return Ok(RepairReport {
                workflow_id,
                run_id,
            });
        }
        RepairAction::Reset { to, drop_messages } => (RepairKind::Reset, to, None, drop_messages),
        RepairAction::Fork {
            new_workflow_id,
            at_event,
        } => {
            Ident::WorkflowId.check(&new_workflow_id)?;
            if new_workflow_id == workflow_id {
                return Err(WfError::InvalidArgument(format!(
                    "a fork of workflow {workflow_id:?} needs a new workflow id (reset to stay on the same one)"
                )));
            }
            let point = ResetPoint::Event(at_event);
            (RepairKind::Fork, point, Some(new_workflow_id), true)
        }
        RepairAction::Resume => (RepairKind::Resume, ResetPoint::LastGoodTask, None, false),
    };
    let request = ResetRequest {
        workflow_id: workflow_id.clone(),
        run_id,
        point,
        kind,
        new_workflow_id,
        new_run_id: new_id(),
        drop_messages,
        reason,
        identity,
        now_ms,
    };
    let run = admin
        .reset_run(request)
        .await
        .map_err(|e| refused(&workflow_id, e))?;
    tracing::info!(workflow_id, %kind, run_id = %run.run_id, "run repaired");
    after_change(core, &workflow_id);
    after_change(core, &run.workflow_id);
    Ok(RepairReport {
        workflow_id: run.workflow_id,
        run_id: run.run_id,
    })
}

/// A repair the store refused for the state of the run (`Conflict`: a point that is no
/// workflow task, a run that is not the latest...) is the caller's to change: `WfError::Conflict`.
fn refused(workflow_id: &str, e: StoreError) -> WfError {
    match e {
        StoreError::Conflict { run_id, reason } => WfError::Conflict(format!(
            "cannot repair workflow {workflow_id:?}: run {run_id}: {reason}"
        )),
        other => other.into(),
    }
}

/// Wakes the result waiters of `workflow_id`, the workflow worker (a new run is ready), the
/// time keeper (timers armed again), and the activity worker's check of which attempts running
/// here are still current: the store tells the closed run's attempts from the ones to keep
/// (the new run's, which may already run here, and a forked original's). Telling every attempt
/// of the workflow id would drop the new run's result and leave its attempt leased until its
/// start-to-close timeout.
fn after_change(core: &Core, workflow_id: &str) {
    core.wake.waiters.publish(workflow_id);
    core.wake.feed_changed();
    core.wake.workflow.notify_one();
    core.wake.timer.notify_one();
    core.wake.cancelled.notify_one();
}
