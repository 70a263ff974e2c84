//! Cancelling and terminating runs, and the schedule operations (carried out by the engine's
//! scheduler, once their ids, names and notes passed their limits).

use super::InProcessTransport;
use crate::client::{NewSchedule, ScheduleChange};
use crate::data::limits::{check_reason, Ident};
use crate::data::message::Message;
use crate::error::WfError;
use crate::runtime::scheduler::Scheduler;
use crate::runtime::worker::DirectReply;
use crate::schedule::ACTION_ID_SUFFIX_BYTES;
use crate::store::Delivery;

impl InProcessTransport {
    /// Requests cancellation. A run this engine runs gets the request in memory: one commit
    /// records it in history before this returns, so that a signal sent after it is refused
    /// (a run whose cancellation was requested takes no more
    /// signals; see `worker/task.rs`). Otherwise it goes to the run's inbox, and
    /// signals are refused once a worker recorded it.
    pub(super) async fn cancel(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        check_reason("cancellation reason", reason)?;
        let core = &self.core;
        let message = Message::CancelRequested {
            reason: reason.to_string(),
        };
        let run = self.latest(workflow_id).await?;
        match self.hand_over(&run, message.clone()).await {
            // Recorded by the worker, or delivered through the store by it.
            Some(DirectReply::Recorded | DirectReply::Fallback) => return Ok(()),
            // That run closed meanwhile: the store answers for the latest run.
            Some(DirectReply::Failed(WfError::RunFinished { .. })) => {}
            Some(DirectReply::Failed(e)) => return Err(e),
            // Not run here, or the worker went away without answering: through the inbox
            // (requesting cancellation twice is harmless: the run applies it once).
            Some(DirectReply::Update(_)) | None => {}
        }
        core.store
            .deliver(Delivery::new(workflow_id, message, core.now_ms()))
            .await?;
        core.wake.workflow.notify_one();
        Ok(())
    }

    pub(super) async fn terminate(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        check_reason("termination reason", reason)?;
        let core = &self.core;
        // The store tells the parent and applies the children's close policies in the same
        // transaction.
        core.store
            .terminate(workflow_id, reason, core.now_ms())
            .await?;
        core.wake.waiters.publish(workflow_id);
        core.wake.workflow.notify_one();
        crate::runtime::activity_worker::after_terminate(core, workflow_id);
        Ok(())
    }

    /// Makes a build current for a task queue; wakes the engines that may now have work.
    pub(super) async fn set_current_build(
        &self,
        task_queue: &str,
        build_id: &str,
    ) -> Result<(), WfError> {
        Ident::TaskQueue.check(task_queue)?;
        Ident::BuildId.check(build_id)?;
        let core = &self.core;
        core.store
            .admin()
            .set_current_build(task_queue, build_id)
            .await?;
        core.wake.workflow.notify_one();
        Ok(())
    }

    /// Moves a run to another build; this engine forgets its copy (it may no longer run it).
    pub(super) async fn move_to_build(
        &self,
        workflow_id: &str,
        build_id: &str,
    ) -> Result<(), WfError> {
        Ident::WorkflowId.check(workflow_id)?;
        Ident::BuildId.check(build_id)?;
        let core = &self.core;
        let run = core
            .store
            .admin()
            .move_to_build(workflow_id, build_id)
            .await?;
        core.worker.forget_runs(&[run.run_id]);
        core.wake.workflow.notify_one();
        Ok(())
    }

    /// Creates a schedule. Its actions' workflow ids are the prefix and a fire time, so the
    /// prefix leaves room for the time under the id limit.
    pub(super) async fn create_schedule(
        &self,
        schedule_id: &str,
        schedule: NewSchedule,
    ) -> Result<(), WfError> {
        Ident::ScheduleId.check(schedule_id)?;
        let action = &schedule.action;
        Ident::WorkflowType.check(&action.workflow_type)?;
        Ident::WorkflowId.check_prefix(&action.workflow_id_prefix, ACTION_ID_SUFFIX_BYTES)?;
        if let Some(queue) = &action.task_queue {
            Ident::TaskQueue.check(queue)?;
        }
        self.scheduler().create(schedule_id, schedule).await
    }

    /// Pauses, unpauses or triggers a schedule.
    pub(super) async fn change_schedule(
        &self,
        schedule_id: &str,
        change: ScheduleChange,
    ) -> Result<(), WfError> {
        if let ScheduleChange::Pause(note) | ScheduleChange::Unpause(note) = &change {
            check_reason("schedule note", note)?;
        }
        self.scheduler().change(schedule_id, change).await
    }

    pub(super) fn scheduler(&self) -> Scheduler<'_> {
        Scheduler::new(&self.core)
    }
}
