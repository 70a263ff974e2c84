//! Cancellation scopes: cancel some of a run's work (one activity, one timer, one child, or a
//! group of them) without cancelling the run, as Temporal's `CancellationScope` does.
//!
//! A scope is explicit: `let scope = ctx.cancellation_scope();` then
//! `scope.run(fut)` wraps a future; every activity, timer and child started while that
//! future is polled belongs to the scope (and to every scope enclosing it). `scope.cancel()`
//! then cancels each member still pending, in start order so replay issues the same commands:
//!
//! ```text
//! activity  Scheduled --(cancel)--> CancelledByScope --(future polled)--> Err(Cancelled)
//!           ActivityCancelled recorded; the task row is dropped; a running attempt is told
//! timer     Started   --(cancel)--> CancelledByScope --(future polled)--> Err(Cancelled)
//!           TimerCancelled recorded
//! child     Started   --(cancel)--> (ChildCancelRequested recorded, delivered at commit)
//!           the child's future resolves when the child closes (as cancelled, if it obeys)
//! ```
//!
//! An activity or timer started in a scope that is already cancelled issues no command and
//! resolves with the cancellation at once; a child started in one is asked to cancel in the
//! same task. Cancelling a scope is not cancelling the run: the run goes on, and an uncaught
//! cancellation error returned from `run` fails it (it ends as cancelled only when the run's
//! own cancellation was requested).
//!
//! Dropping a future does not cancel an activity or a child: they run to their end and their
//! result is recorded and ignored. Dropping a timer's future cancels the timer (it has no
//! effect to wait for). To stop an activity or child, cancel its scope.

use super::commands::Commands;
use super::context::WorkflowContext;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// One scope's state: whether it was cancelled and the commands started in it that it has not
/// cancelled yet (sequence numbers, in start order).
#[derive(Debug, Default)]
pub(crate) struct ScopeState {
    cancelled: bool,
    members: Vec<u32>,
}

/// The scopes whose futures are being polled, innermost last.
#[derive(Debug, Default)]
pub(crate) struct ActiveScopes(Vec<Rc<RefCell<ScopeState>>>);

impl ActiveScopes {
    /// Records command `seq` (just started) as a member of every active scope.
    pub fn enlist(&mut self, seq: u32) {
        for scope in &self.0 {
            scope.borrow_mut().members.push(seq);
        }
    }

    /// Whether an active scope was cancelled: an activity or timer starting now is cancelled
    /// before it starts.
    pub fn cancelled(&self) -> bool {
        self.0.iter().any(|s| s.borrow().cancelled)
    }
}

impl Commands {
    /// Cancels the members of a cancelled scope that are still pending, in start order.
    fn cancel_members(&mut self, scope: &RefCell<ScopeState>) {
        let mut members = std::mem::take(&mut scope.borrow_mut().members);
        members.sort_unstable();
        members.dedup();
        for seq in members {
            if self.cancel_activity_by_scope(seq)
                || self.cancel_local_by_scope(seq)
                || self.cancel_timer_by_scope(seq)
            {
                continue;
            }
            self.request_child_cancel(seq);
        }
        self.state_changed();
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// A new cancellation scope: wrap work in it with [`CancellationScope::run`], stop that
    /// work with [`CancellationScope::cancel`] while the run goes on.
    ///
    /// ```ignore
    /// let scope = ctx.cancellation_scope();
    /// let mut slow = scope.run(ctx.activity(Tools::slow_step, input));
    /// // ... later, when the result is no longer wanted:
    /// scope.cancel();
    /// assert!(matches!(slow.await, Err(ActivityCallError::Cancelled { .. })));
    /// ```
    pub fn cancellation_scope(&self) -> CancellationScope {
        CancellationScope {
            core: self.core.clone(),
            state: Rc::new(RefCell::new(ScopeState::default())),
        }
    }
}

/// A group of activities, timers and children that can be cancelled together without
/// cancelling the run (see [`WorkflowContext::cancellation_scope`]). Clones share the scope.
#[derive(Clone)]
pub struct CancellationScope {
    core: Rc<RefCell<Commands>>,
    state: Rc<RefCell<ScopeState>>,
}

impl std::fmt::Debug for CancellationScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancellationScope")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancellationScope {
    /// Wraps `future`: the activities, timers and children it starts belong to this scope.
    pub fn run<F: Future>(&self, future: F) -> InScope<F> {
        InScope {
            scope: self.clone(),
            future: Box::pin(future),
        }
    }

    /// Cancels the scope's pending activities and timers (their futures resolve with a
    /// cancellation error; `ActivityCancelled` / `TimerCancelled` are recorded) and asks its
    /// running children to cancel (`ChildCancelRequested`). Activities and timers started in
    /// the scope afterwards are cancelled at once. Calling it again does nothing.
    pub fn cancel(&self) {
        if std::mem::replace(&mut self.state.borrow_mut().cancelled, true) {
            return;
        }
        // Workflow code, which calls this, holds no borrow of the core while it runs.
        self.core.borrow_mut().cancel_members(&self.state);
    }

    /// Whether [`cancel`](Self::cancel) was called on this scope.
    pub fn is_cancelled(&self) -> bool {
        self.state.borrow().cancelled
    }
}

/// Future of [`CancellationScope::run`]: the wrapped future, polled inside the scope.
pub struct InScope<F> {
    scope: CancellationScope,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for InScope<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let scope = &this.scope;
        scope.core.borrow_mut().scopes.0.push(scope.state.clone());
        let polled = this.future.as_mut().poll(cx);
        let mut core = scope.core.borrow_mut();
        core.scopes.0.pop();
        // A child started in a cancelled scope is asked to cancel in the same task.
        let late = {
            let st = scope.state.borrow();
            st.cancelled && !st.members.is_empty()
        };
        if late {
            core.cancel_members(&scope.state);
        }
        polled
    }
}
