//! `ctx.wait_condition(pred)`: waits until a predicate over the state holds, re-checked after
//! every state change, optionally bounded by a durable timer; and the waits built on it.

use super::blocked::{BlockSlot, Wait};
use super::cancel::Interruption;
use super::context::WorkflowContext;
use super::timer::Sleep;
use crate::data::blocked::BlockKind;
use crate::error::{WaitKind, WaitTimeout};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, UNIX_EPOCH};

impl<W: 'static> WorkflowContext<W> {
    /// Waits until `pred(state)` holds; re-checked after every state change. Add
    /// [`.timeout(d)`](WaitCondition::timeout) to get a `bool` instead of waiting forever.
    ///
    /// In `run`, a wait pending when the run's cancellation is requested is interrupted: the
    /// run ends as cancelled (as an uncaught cancellation error would end it), unless the
    /// predicate then holds, e.g. because it looks at `ctx.cancel_requested()`, in which case
    /// the wait resolves and the code can clean up. A timed wait resolves to `false` instead.
    #[track_caller]
    pub fn wait_condition<F: Fn(&W) -> bool>(&self, pred: F) -> WaitCondition<W, F> {
        let index = {
            let mut core = self.core.borrow_mut();
            core.waits += 1;
            core.waits
        };
        WaitCondition {
            ctx: self.clone(),
            pred,
            index,
            interruption: Interruption::default(),
            block: BlockSlot::at(std::panic::Location::caller()),
        }
    }

    /// True when no async signal or update handler is running.
    pub fn all_handlers_finished(&self) -> bool {
        self.core.borrow().live_handlers.is_empty()
    }

    /// Waits until every async handler has finished: call before returning or continuing as
    /// new, so no update caller is left without an answer.
    #[track_caller]
    pub fn handlers_drained(&self) -> WaitCondition<W, impl Fn(&W) -> bool> {
        let core = self.core.clone();
        self.wait_condition(move |_| core.borrow().live_handlers.is_empty())
    }
}

/// Future of [`WorkflowContext::wait_condition`].
pub struct WaitCondition<W, F> {
    ctx: WorkflowContext<W>,
    pred: F,
    /// Its `WaitTimeout::call_index`.
    index: u32,
    /// Whether the run's cancellation interrupted it (see `cancel.rs`).
    interruption: Interruption,
    /// Its entry in what the run is blocked on (see `blocked.rs`).
    block: BlockSlot,
}

impl<W, F> Drop for WaitCondition<W, F> {
    fn drop(&mut self) {
        self.block.release(&self.ctx.core);
        if self.interruption.happened() {
            if let Ok(mut core) = self.ctx.core.try_borrow_mut() {
                self.interruption.release(&mut core);
            }
        }
    }
}

impl<W: 'static, F: Fn(&W) -> bool> WaitCondition<W, F> {
    /// Gives up after `duration` of engine time (a durable timer); resolves to whether the
    /// condition held.
    pub fn timeout(self, duration: Duration) -> TimedCondition<W, F> {
        let deadline_ms = self
            .ctx
            .core
            .borrow()
            .task_time_ms
            .saturating_add(duration.as_millis() as i64);
        TimedCondition {
            cond: self,
            duration,
            deadline_ms,
            timer: None,
        }
    }

    fn check(&self, cx: &mut Context<'_>) -> bool {
        if (self.pred)(&self.ctx.state.borrow()) {
            return true;
        }
        self.ctx.core.borrow_mut().wait_for_change(cx.waker());
        false
    }
}

impl<W: 'static, F: Fn(&W) -> bool> Future for WaitCondition<W, F> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let poll = this.poll_wait(cx);
        let mut core = this.ctx.core.borrow_mut();
        this.block
            .track(&mut core, poll, || Wait::of(BlockKind::Condition))
    }
}

impl<W: 'static, F: Fn(&W) -> bool> WaitCondition<W, F> {
    fn poll_wait(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if (self.pred)(&self.ctx.state.borrow()) {
            return Poll::Ready(());
        }
        let mut core = self.ctx.core.borrow_mut();
        // In the main method, a cancellation request interrupts the wait: the run ends as
        // cancelled once the main method is blocked on it (see `cancel.rs`).
        if core.polling_main && (self.interruption.happened() || core.interrupts_wait(self.index)) {
            self.interruption.record(&mut core);
            return Poll::Pending;
        }
        core.wait_for_change(cx.waker());
        Poll::Pending
    }
}

impl<W, F> Unpin for WaitCondition<W, F> {}

/// Future of [`WaitCondition::timeout`]: `true` if the condition held, `false` on timeout.
pub struct TimedCondition<W: 'static, F: Fn(&W) -> bool> {
    cond: WaitCondition<W, F>,
    duration: Duration,
    deadline_ms: i64,
    timer: Option<Sleep>,
}

impl<W: 'static, F: Fn(&W) -> bool> TimedCondition<W, F> {
    /// Fails with a [`WaitTimeout`] (kind [`WaitKind::Condition`], its call index and
    /// deadline) instead of resolving to `false`; returned from `run` with `?`, it fails the
    /// run with the error code `wait_timeout`.
    ///
    /// ```ignore
    /// ctx.wait_condition(|s| s.approved).timeout(Duration::from_secs(3600)).or_timeout().await?;
    /// ```
    pub async fn or_timeout(self) -> Result<(), WaitTimeout> {
        let (index, deadline_ms) = (self.cond.index, self.deadline_ms);
        if self.await {
            return Ok(());
        }
        Err(WaitTimeout {
            kind: WaitKind::Condition,
            name: String::new(),
            call_index: index,
            deadline: UNIX_EPOCH + Duration::from_millis(deadline_ms.max(0) as u64),
        })
    }
}

impl<W: 'static, F: Fn(&W) -> bool> Unpin for TimedCondition<W, F> {}

impl<W: 'static, F: Fn(&W) -> bool> Future for TimedCondition<W, F> {
    type Output = bool;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = &mut *self;
        let poll = this.poll_wait(cx);
        let deadline_ms = this.deadline_ms;
        let mut core = this.cond.ctx.core.borrow_mut();
        this.cond.block.track(&mut core, poll, || Wait {
            deadline_ms: Some(deadline_ms),
            ..Wait::of(BlockKind::Condition)
        })
    }
}

impl<W: 'static, F: Fn(&W) -> bool> TimedCondition<W, F> {
    fn poll_wait(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        if self.cond.check(cx) {
            // Dropping the timer cancels it (a `TimerCancelled` command).
            self.timer = None;
            return Poll::Ready(true);
        }
        let (core, duration) = (&self.cond.ctx.core, self.duration);
        let timer = self
            .timer
            .get_or_insert_with(|| Sleep::new(core.clone(), duration));
        match Pin::new(timer).poll(cx) {
            Poll::Ready(_) => Poll::Ready(false),
            Poll::Pending => Poll::Pending,
        }
    }
}
