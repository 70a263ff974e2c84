//! Run cancellation from the workflow's side: a cancellation request cancels every pending
//! activity and timer (their futures see `Cancelled`) and asks running children to cancel;
//! the code may clean up and should end with `Err(WorkflowError::Cancelled)`.

use super::commands::Commands;
use super::condition::WaitCondition;
use super::context::WorkflowContext;

impl Commands {
    /// Applies a cancellation request (an input of the task), once.
    pub fn request_cancel(&mut self, reason: String) {
        if self.cancel_requested.is_some() {
            return;
        }
        self.cancel_requested = Some(reason);
        self.cancel_activities();
        self.cancel_timers_by_request();
        self.request_children_cancel();
        self.state_changed();
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// True once cancellation of the run was requested. Pending activities and timers were
    /// cancelled then; code may still run cleanup (new activities and timers work normally)
    /// and should end by returning `Err(WorkflowError::Cancelled)`.
    pub fn cancel_requested(&self) -> bool {
        self.core.borrow().cancel_requested.is_some()
    }

    /// Resolves once cancellation of the run is requested (to race against other work).
    pub fn cancelled(&self) -> WaitCondition<W, impl Fn(&W) -> bool> {
        let core = self.core.clone();
        self.wait_condition(move |_| core.borrow().cancel_requested.is_some())
    }
}
