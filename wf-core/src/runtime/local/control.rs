//! Cancelling and terminating runs, and the schedule operations (carried out by the engine's
//! scheduler).

use super::LocalTransport;
use crate::data::message::Message;
use crate::error::WfError;
use crate::runtime::scheduler::Scheduler;

impl LocalTransport {
    pub(super) async fn cancel(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        let core = &self.core;
        let message = Message::CancelRequested {
            reason: reason.to_string(),
        };
        core.store
            .deliver(workflow_id, None, message, core.now_ms())
            .await?;
        core.wake.workflow.notify_one();
        Ok(())
    }

    pub(super) async fn terminate(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        let core = &self.core;
        // The store tells the parent and applies the children's close policies in the same
        // transaction.
        core.store
            .terminate(workflow_id, reason, core.now_ms())
            .await?;
        core.wake.waiters.publish(workflow_id);
        core.wake.workflow.notify_one();
        Ok(())
    }

    pub(super) fn scheduler(&self) -> Scheduler<'_> {
        Scheduler::new(&self.core)
    }
}
