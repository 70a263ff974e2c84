//! Signals. Without a signal id, a signal for a run this engine runs is handed to its
//! workflow worker: one commit records it in history (no inbox write, no poll) and the answer
//! comes once that commit is durable. With one, or for a run elsewhere, it goes through the
//! store's inbox and dedupe, and the answer comes once it is there. Either way a query sent
//! after the answer sees the signal: one on a run cached here looks in the inbox when this
//! engine put a signal there (the delivery marks the run) or another engine may have, and
//! one answered by replay applies the inbox's signals (see `query.rs`).

use super::{check_signal, check_size, InProcessTransport};
use crate::client::{SignalRequest, SignalStatus};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::RunStatus;
use crate::error::WfError;
use crate::runtime::worker::DirectReply;
use crate::store::{Delivery, RunRecord};
use crate::workflow::Role;

impl InProcessTransport {
    /// Sends a signal; the status comes from the run's workflow type when this engine knows
    /// it (else from what the caller knows, `handled`).
    pub(super) async fn signal(&self, request: SignalRequest<'_>) -> Result<SignalStatus, WfError> {
        let SignalRequest {
            workflow_id,
            name,
            args,
            signal_id,
            handled,
        } = request;
        check_signal(name, signal_id.as_deref())?;
        // A run held in this engine's cache needs no store read to check the message.
        if let Some((run_id, def)) = self.hot_run(workflow_id) {
            check_size("signal", &args)?;
            def.check_message(Role::Signal, name, &args)?;
            let status = SignalStatus::from_handled(Some(def.has_handler(Role::Signal, name)));
            match self
                .signal_here(workflow_id, &run_id, None, name, &args, &signal_id)
                .await
            {
                // That run closed meanwhile (a continue-as-new, say): the signal was not
                // recorded; it is for the workflow id's latest run.
                // Still running: its cancellation was requested, and it refuses signals.
                Err(
                    e @ WfError::RunFinished {
                        status: RunStatus::Cancelled,
                        ..
                    },
                ) if !self.closed(workflow_id, &run_id).await? => return Err(e),
                Err(WfError::RunFinished { .. }) => {
                    self.core.worker.forget_run(workflow_id, &run_id)
                }
                other => return other.map(|()| status),
            }
        }
        let run = self.latest(workflow_id).await?;
        self.check(&run, Role::Signal, name, &args)?;
        let status =
            SignalStatus::from_handled(match self.core.catalog.get(run.workflow_type.as_str()) {
                Some(def) => Some(def.has_handler(Role::Signal, name)),
                None => handled,
            });
        // A running run this engine's worker can run takes the signal in memory too: the
        // worker rebuilds the run from its history and records the signal in a task at once
        // (one write less than the inbox, and no poll).
        if self.runs_here(&run) {
            match self
                .signal_here(
                    workflow_id,
                    &run.run_id,
                    Some(&run),
                    name,
                    &args,
                    &signal_id,
                )
                .await
            {
                Err(
                    e @ WfError::RunFinished {
                        status: RunStatus::Cancelled,
                        ..
                    },
                ) if !self.closed(workflow_id, &run.run_id).await? => return Err(e),
                Err(WfError::RunFinished { .. }) => {}
                other => return other.map(|()| status),
            }
        }
        // Through the inbox: one group commit makes it durable; the sender does not wait for
        // the workflow task.
        let core = &self.core;
        let message = Message::signal(name, args, signal_id).sent_at(core.now_ms());
        // The run may be one this engine runs after all (a new run of the chain, say).
        let delivery = core
            .config
            .run_workers
            .then(|| core.worker.marks.deliver(workflow_id));
        core.store
            .deliver(Delivery::new(workflow_id, message, core.now_ms()))
            .await?;
        drop(delivery);
        core.wake.workflow.notify_one();
        Ok(status)
    }

    /// Whether run `run_id` of `workflow_id` is closed (else its cancellation was requested).
    async fn closed(&self, workflow_id: &str, run_id: &str) -> Result<bool, WfError> {
        Ok(self
            .core
            .store
            .get_run(workflow_id, Some(run_id))
            .await?
            .is_none_or(|r| r.status != RunStatus::Running))
    }

    /// Sends a signal to run `run_id`, which this engine's worker runs (`known`: its row as
    /// just read, when it is not held in memory).
    async fn signal_here(
        &self,
        workflow_id: &str,
        run_id: &str,
        known: Option<&RunRecord>,
        name: &str,
        args: &Payload,
        signal_id: &Option<String>,
    ) -> Result<(), WfError> {
        let core = &self.core;
        if signal_id.is_none() && core.config.run_workers {
            let message = Message::signal(name, args.clone(), None).sent_at(core.now_ms());
            return match self.hand_over_to(run_id, workflow_id, known, message).await {
                Some(DirectReply::Recorded | DirectReply::Fallback) => Ok(()),
                Some(DirectReply::Failed(e)) => Err(e),
                Some(DirectReply::Update(_)) | None => Err(WfError::Interrupted(
                    "the engine stopped before confirming the signal; it may or may not have \
                     been recorded (send it with a signal id to retry it safely)"
                        .into(),
                )),
            };
        }
        let message = Message::signal(name, args.clone(), signal_id.clone()).sent_at(core.now_ms());
        let delivery = core.worker.marks.deliver(workflow_id);
        core.store
            .deliver(Delivery::new(workflow_id, message, core.now_ms()).to_run(run_id))
            .await?;
        drop(delivery);
        core.wake.workflow.notify_one();
        Ok(())
    }
}
