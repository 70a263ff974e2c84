//! Updates. An update without an update id, waited on to completion, for a run this engine
//! runs, is handed to its workflow worker: the validator and handler run at once and one
//! commit records the outcome (a rejected one records nothing). Otherwise it goes through the
//! store's inbox and dedupe (`route.rs` picks which), and the caller waits for its record to
//! reach the stage asked for.

use super::reads::until_changed;
use super::route::{outcome, pick, send, Outgoing, Route, Sent};
use super::{check_update, Core};
use crate::client::{update_timed_out, UpdateRequest, UpdateStage};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::update::UpdateState;
use crate::error::WfError;
use crate::workflow::Role;
use tokio::time::Instant;

/// Sends an update and waits for its stage, at most its timeout (or the engine's
/// `update_timeout`). The update is handed over or delivered before the clock matters: when
/// the wait runs out it stays queued, and the same update id later returns its outcome.
pub(super) async fn send_update(
    core: &Core,
    request: UpdateRequest<'_>,
) -> Result<(String, Payload), WfError> {
    let UpdateRequest {
        workflow_id,
        name,
        args,
        update_id,
        stage,
        timeout,
    } = request;
    check_update(name, update_id.as_deref())?;
    let timeout = timeout.unwrap_or(core.config.update_timeout);
    let deadline = Instant::now() + timeout;
    let outgoing = Outgoing {
        handler: Some((Role::Update, name, &args)),
        // Only the store dedupes update ids, and only its record says when an update was
        // admitted or accepted: the worker answers a handed-over update at its final state.
        hand_over: update_id.is_none() && stage == UpdateStage::Completed,
        cached: true,
    };
    let update_id = update_id.unwrap_or_else(crate::data::ids::new_id);
    let timed_out = || update_timed_out(workflow_id, name, &update_id, stage, timeout);
    let message = || Message::update(update_id.clone(), name, args.clone());
    let mut route = pick(core, workflow_id, &outgoing).await?;
    loop {
        let sending = send(
            core,
            workflow_id,
            &route,
            message(),
            stage == UpdateStage::Admitted,
        );
        // Once handed over, the worker applies it whether or not this caller still waits; a
        // delivery to the store is let finish.
        let sent = if route.hands_over() {
            match tokio::time::timeout_at(deadline, sending).await {
                Ok(sent) => sent?,
                Err(_) => return Err(timed_out()),
            }
        } else {
            sending.await?
        };
        match sent {
            Sent::Update(state) => {
                let run_id = route.run_id().unwrap_or_default();
                if let Some(answer) = outcome(core, workflow_id, run_id, state).await {
                    return answer.map(|p| (update_id.clone(), p));
                }
                // Not final yet: its record says when it is.
                break;
            }
            Sent::Inbox if stage == UpdateStage::Admitted => {
                return Ok((update_id.clone(), Payload::default()))
            }
            Sent::Inbox => break,
            Sent::Closed => route = route.after_closed(core, workflow_id, &outgoing).await?,
            // The worker went away without answering: it may or may not have recorded the
            // update, so deliver it through the store under the same id; the store's dedupe
            // makes sure it applies once either way.
            Sent::Recorded | Sent::Unknown => route = route.into_inbox(),
        }
    }
    loop {
        let waiting = wait_for_stage(core, workflow_id, &update_id, stage);
        match tokio::time::timeout_at(deadline, waiting).await {
            // The delivery is gone: written without waiting for the disk (see
            // `Store::deliver`), it was lost when the store crashed or restarted before a
            // durable commit followed. Deliver it again under the same id (the dedupe applies
            // it once).
            Ok(Err(WfError::NotFound { .. })) if Instant::now() < deadline => {
                tracing::info!(workflow_id, update_id = %update_id, "an update's delivery was lost; delivering it again");
                let inbox = Route::Store {
                    run_id: None,
                    def: None,
                };
                // To the latest run's inbox: `Sent::Inbox`, or an error.
                send(core, workflow_id, &inbox, message(), false).await?;
            }
            Ok(answer) => return answer.map(|p| (update_id.clone(), p)),
            Err(_) => return Err(timed_out()),
        }
    }
}

/// Waits until update `update_id` reaches `stage`. An admitted update is one the store holds
/// (`Requested` or later); an accepted one passed its validator (`Accepted` or later).
pub(super) async fn wait_for_stage(
    core: &Core,
    workflow_id: &str,
    update_id: &str,
    stage: UpdateStage,
) -> Result<Payload, WfError> {
    loop {
        let notify = core.wake.waiters.subscribe(workflow_id);
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let record = core
            .store
            .get_update(workflow_id, update_id)
            .await?
            .ok_or_else(|| WfError::NotFound {
                workflow_id: workflow_id.to_string(),
                update_id: Some(update_id.to_string()),
            })?;
        let reached = match (&record.state, stage) {
            (UpdateState::Accepted, UpdateStage::Admitted | UpdateStage::Accepted) => true,
            (UpdateState::Requested, UpdateStage::Admitted) => true,
            (UpdateState::Accepted | UpdateState::Requested, _) => false,
            _ => true,
        };
        if reached {
            return match outcome(core, workflow_id, &record.run_id, record.state).await {
                Some(answer) => answer,
                None => Ok(Payload::default()),
            };
        }
        until_changed(core, notified).await?;
    }
}
