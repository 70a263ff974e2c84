//! Run cancellation from the workflow's side: a cancellation request cancels every pending
//! activity and timer (their futures see `Cancelled`), asks running children to cancel, and
//! interrupts the waits (`wait_condition`, `wait_for_signal` without a deadline) pending at
//! that moment; the code may clean up and should end with `Err(WorkflowError::Cancelled)`.
//!
//! A wait has no error to return, so an interrupted wait of the main method ends the run as
//! cancelled, as an uncaught cancellation error would (Temporal's `condition()` throws a
//! `CancelledFailure`): a run blocked only on its own condition cannot miss its cancellation.
//! A wait whose predicate observes the request (`|s| s.done || ctx.cancel_requested()`)
//! resolves instead, and the code after it cleans up. Waits of handlers are not interrupted;
//! they are abandoned when the run ends.
//!
//! The request reaches the main method once: if none of its pending activities, timers,
//! children or waits received it (the awaited activity resolved in the same task, say), the
//! first activity, timer or wait it starts afterwards gets it, unless the code looked at
//! `ctx.cancel_requested()` first. Later ones run normally, so cleanup can use activities and
//! timers.

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
        // Until the main method receives it (a cancelled activity, timer or child, an
        // interrupted wait, a look at `ctx.cancel_requested()`).
        self.cancel_undelivered = true;
        self.waits_before_cancel = self.waits;
        self.cancel_activities();
        self.cancel_timers_by_request();
        self.request_children_cancel();
        self.state_changed();
    }

    /// Takes the cancellation request the main method has not received yet, for the activity,
    /// timer or wait it is starting: true once.
    pub fn take_undelivered_cancel(&mut self) -> bool {
        std::mem::take(&mut self.cancel_undelivered)
    }

    /// Notes that the code being polled received the cancellation (a cancelled activity,
    /// timer or child resolved its future): if it is the main method, later activities and
    /// timers run normally.
    pub fn cancel_received(&mut self) {
        if self.polling_main {
            self.cancel_undelivered = false;
        }
    }

    /// Whether a wait with call index `index` that does not resolve now is interrupted by the
    /// run's cancellation: it was made before the request, or it is the first thing started
    /// after a request that reached nothing.
    pub fn interrupts_wait(&mut self, index: u32) -> bool {
        self.cancel_requested.is_some()
            && (index <= self.waits_before_cancel || self.take_undelivered_cancel())
    }
}

/// The interruption of one wait future: counted while it lives if it belongs to the main
/// method (see [`Commands::interrupted_main_waits`]).
#[derive(Debug, Default)]
pub(crate) struct Interruption {
    state: Option<bool>,
}

impl Interruption {
    /// Whether the wait was interrupted.
    pub fn happened(&self) -> bool {
        self.state.is_some()
    }

    /// Records the interruption of a pending wait (once).
    pub fn record(&mut self, core: &mut Commands) {
        if self.state.is_none() {
            let main = core.polling_main;
            if main {
                core.interrupted_main_waits += 1;
            }
            self.state = Some(main);
        }
    }

    /// Forgets it as the wait is dropped.
    pub fn release(&mut self, core: &mut Commands) {
        if self.state.take() == Some(true) {
            core.interrupted_main_waits = core.interrupted_main_waits.saturating_sub(1);
        }
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// True once cancellation of the run was requested. Pending activities and timers were
    /// cancelled then; code may still run cleanup (new activities and timers work normally)
    /// and should end by returning `Err(WorkflowError::Cancelled)`. Looking counts as
    /// receiving the request (see the module notes).
    pub fn cancel_requested(&self) -> bool {
        let mut core = self.core.borrow_mut();
        let requested = core.cancel_requested.is_some();
        if requested {
            core.cancel_undelivered = false;
        }
        requested
    }

    /// Resolves once cancellation of the run is requested (to race against other work).
    pub fn cancelled(&self) -> WaitCondition<W, impl Fn(&W) -> bool> {
        let core = self.core.clone();
        self.wait_condition(move |_| {
            let mut core = core.borrow_mut();
            core.cancel_undelivered = false;
            core.cancel_requested.is_some()
        })
    }
}
