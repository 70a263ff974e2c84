//! Updates. Without an update id, an update waited on to completion for a run this engine
//! runs is handed to its workflow worker: the validator and handler run at once and one commit
//! records the outcome (a rejected one records nothing). Otherwise it goes through the store's
//! inbox and dedupe, and the caller waits for its record to reach the stage asked for.

use super::{check_size, check_update, InProcessTransport};
use crate::client::{update_timed_out, UpdateRequest, UpdateStage};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::RunStatus;
use crate::data::update::{UpdateOutcome, UpdateState};
use crate::error::WfError;
use crate::runtime::worker::DirectReply;
use crate::store::{DeliverOutcome, Delivery};
use crate::workflow::Role;
use tokio::time::Instant;

/// The caller's result for an update in a final state.
fn update_result(workflow_id: &str, run_id: &str, state: UpdateState) -> Result<Payload, WfError> {
    match state {
        UpdateState::Completed(UpdateOutcome::Completed(p)) => Ok(p),
        UpdateState::Completed(UpdateOutcome::Failed(msg)) => Err(WfError::UpdateFailed(msg)),
        UpdateState::Rejected(msg) => Err(WfError::Rejected(msg)),
        UpdateState::Abandoned | UpdateState::Requested | UpdateState::Accepted => {
            Err(WfError::RunFinished {
                workflow_id: workflow_id.to_string(),
                run_id: run_id.to_string(),
                status: RunStatus::Completed,
            })
        }
    }
}

impl InProcessTransport {
    /// Sends an update and waits for its stage, at most its timeout (or the engine's
    /// `update_timeout`). The update is handed over or delivered before the clock matters:
    /// when the wait runs out it stays queued, and the same update id later returns its
    /// outcome.
    pub(super) async fn update(
        &self,
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
        let timeout = timeout.unwrap_or(self.core.config.update_timeout);
        let deadline = Instant::now() + timeout;
        let direct = update_id.is_none() && stage == UpdateStage::Completed;
        let update_id = update_id.unwrap_or_else(crate::data::ids::new_id);
        let timed_out = || update_timed_out(workflow_id, name, &update_id, stage, timeout);
        // Waits until the update reaches `stage`, or the deadline.
        let wait = || async {
            let wait = self.wait_update(workflow_id, &update_id, stage);
            match tokio::time::timeout_at(deadline, wait).await {
                Ok(value) => Ok((update_id.clone(), value?)),
                Err(_) => Err(timed_out()),
            }
        };
        // A run held in this engine's cache takes the update at once, without a store read.
        let mut via_store = false;
        if let Some((run_id, def)) = self.hot_run(workflow_id).filter(|_| direct) {
            check_size("update", &args)?;
            def.check_message(Role::Update, name, &args)?;
            let message = Message::update(update_id.clone(), name, args.clone());
            let handed = self.hand_over_to(&run_id, workflow_id, None, message);
            // Once handed over, the worker applies it whether or not this caller still waits.
            let Ok(reply) = tokio::time::timeout_at(deadline, handed).await else {
                return Err(timed_out());
            };
            match reply {
                Some(DirectReply::Update(state)) => {
                    return Ok((
                        update_id.clone(),
                        update_result(workflow_id, &run_id, state)?,
                    ))
                }
                Some(DirectReply::Fallback) => return wait().await,
                // That run closed meanwhile: nothing was recorded; the update is for the
                // workflow id's latest run.
                Some(DirectReply::Failed(WfError::RunFinished { .. })) => {
                    self.core.worker.forget_run(workflow_id, &run_id)
                }
                Some(DirectReply::Failed(e)) => return Err(e),
                // The worker went away without answering: see below.
                Some(DirectReply::Recorded) | None => via_store = true,
            }
        }
        let run = self.latest(workflow_id).await?;
        if run.status == RunStatus::Running {
            self.check(&run, Role::Update, name, &args)?;
        }
        if stage == UpdateStage::Admitted {
            return self.admit(workflow_id, update_id, name, args).await;
        }
        if direct && !via_store && run.status == RunStatus::Running {
            let message = Message::update(update_id.clone(), name, args.clone());
            let handed = self.hand_over(&run, message);
            let Ok(reply) = tokio::time::timeout_at(deadline, handed).await else {
                return Err(timed_out());
            };
            match reply {
                Some(DirectReply::Update(state)) => {
                    return Ok((
                        update_id.clone(),
                        update_result(workflow_id, &run.run_id, state)?,
                    ))
                }
                Some(DirectReply::Fallback) => return wait().await,
                Some(DirectReply::Failed(e)) => return Err(e),
                // The worker went away without answering: it may or may not have recorded the
                // update, so deliver it through the store under the same id; the store's dedupe
                // makes sure it applies once either way.
                Some(DirectReply::Recorded) | None => {}
            }
        }
        let core = &self.core;
        let message = Message::update(update_id.clone(), name, args);
        loop {
            let outcome = core
                .store
                .deliver(Delivery::new(workflow_id, message.clone(), core.now_ms()))
                .await?;
            if matches!(outcome, DeliverOutcome::Enqueued { .. }) {
                core.wake.workflow.notify_one();
            }
            match wait().await {
                // The delivery is gone: written without waiting for the disk (see
                // `Store::deliver`), it was lost when the store crashed or restarted before a
                // durable commit followed. Deliver it again under the same id (the dedupe
                // applies it once).
                Err(WfError::NotFound { .. }) if Instant::now() < deadline => {
                    tracing::info!(workflow_id, update_id = %update_id, "an update's delivery was lost; delivering it again");
                }
                other => return other,
            }
        }
    }

    /// Records an update durably in the store and returns: the `Admitted` stage. The worker
    /// that takes the run validates and applies it; its outcome is awaited by id. A second
    /// admission with the same id answers as the first (the store's dedupe, which also knows
    /// the ids of closed runs); a closed run refuses a new one with `RunFinished`.
    async fn admit(
        &self,
        workflow_id: &str,
        update_id: String,
        name: &str,
        args: Payload,
    ) -> Result<(String, Payload), WfError> {
        let core = &self.core;
        let message = Message::update(update_id.clone(), name, args);
        let outcome = core
            .store
            .deliver_durable(Delivery::new(workflow_id, message, core.now_ms()))
            .await?;
        if matches!(outcome, DeliverOutcome::Enqueued { .. }) {
            core.wake.workflow.notify_one();
        }
        Ok((update_id, Payload::default()))
    }

    /// Waits until update `update_id` reaches `stage`.
    pub(super) async fn wait_update(
        &self,
        workflow_id: &str,
        update_id: &str,
        stage: UpdateStage,
    ) -> Result<Payload, WfError> {
        loop {
            let notify = self.core.wake.waiters.subscribe(workflow_id);
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let record = self
                .core
                .store
                .get_update(workflow_id, update_id)
                .await?
                .ok_or_else(|| WfError::NotFound {
                    workflow_id: workflow_id.to_string(),
                    update_id: Some(update_id.to_string()),
                })?;
            match record.state {
                UpdateState::Rejected(msg) => return Err(WfError::Rejected(msg)),
                UpdateState::Completed(UpdateOutcome::Completed(p)) => return Ok(p),
                UpdateState::Completed(UpdateOutcome::Failed(msg)) => {
                    return Err(WfError::UpdateFailed(msg))
                }
                UpdateState::Abandoned => {
                    let run = self.latest(workflow_id).await?;
                    let status = if run.run_id == record.run_id {
                        run.status
                    } else {
                        RunStatus::ContinuedAsNew
                    };
                    return Err(WfError::RunFinished {
                        workflow_id: workflow_id.to_string(),
                        run_id: record.run_id,
                        status,
                    });
                }
                UpdateState::Accepted if stage != UpdateStage::Completed => {
                    return Ok(Payload::default())
                }
                UpdateState::Requested if stage == UpdateStage::Admitted => {
                    return Ok(Payload::default())
                }
                UpdateState::Accepted | UpdateState::Requested => {}
            }
            self.wait(notified).await?;
        }
    }
}
