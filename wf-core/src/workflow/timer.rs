//! Durable timers: `ctx.sleep(d)` records a timer that survives restarts and fires after `d`
//! of engine time.
//!
//! ```text
//! Started --(TimerFired input)--> Fired --(future polled)--> Done
//! Started --(future dropped, or its condition met first)--> Done    (TimerCancelled command)
//! Started --(run cancellation requested)--> CancelledByRequest --(future polled)--> Done
//! Started --(its scope cancelled)--> CancelledByScope --(future polled)--> Done
//! ```

use super::blocked::{BlockSlot, Wait};
use super::commands::Commands;
use super::context::WorkflowContext;
use crate::data::activity::duration_ms;
use crate::data::blocked::BlockKind;
use crate::data::history::EventKind;
use crate::error::Cancelled;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Lifecycle of one durable timer.
#[derive(Debug)]
pub(crate) enum TimerState {
    /// Started, waiting to fire.
    Started { waker: Option<Waker> },
    /// Fired; the awaiting future has not seen it yet.
    Fired,
    /// Cancelled by a cancellation request; the awaiting future has not seen it yet.
    CancelledByRequest,
    /// Cancelled with its cancellation scope; the awaiting future has not seen it yet.
    CancelledByScope,
    /// Cancelled before it fired, or consumed.
    Done,
}

impl Commands {
    /// Records a `TimerStarted` command.
    pub fn start_timer(&mut self, fire_at_ms: i64) -> u32 {
        let seq = self.next_seq();
        self.issued
            .push(EventKind::TimerStarted { seq, fire_at_ms });
        self.timers.insert(seq, TimerState::Started { waker: None });
        seq
    }

    /// Records a `TimerCancelled` command if the timer is still pending.
    pub fn cancel_timer(&mut self, seq: u32) {
        if self.tearing_down {
            return;
        }
        if let Some(TimerState::Started { .. }) = self.timers.get(&seq) {
            self.timers.insert(seq, TimerState::Done);
            self.issued.push(EventKind::TimerCancelled { seq });
        }
    }

    /// Applies a fired timer (an input of the task). A timer cancelled meanwhile is ignored.
    pub fn fire_timer(&mut self, seq: u32) {
        match self.timers.get_mut(&seq) {
            Some(state @ TimerState::Started { .. }) => {
                if let TimerState::Started { waker: Some(w) } =
                    std::mem::replace(state, TimerState::Fired)
                {
                    w.wake();
                }
            }
            Some(_) => {}
            None => self.record_mismatch(format!(
                "history fires timer #{seq}, which the workflow code did not start"
            )),
        }
    }

    /// Cancels timer `seq` for its cancellation scope (records `TimerCancelled`, wakes its
    /// future); false if it is not a pending timer.
    pub(super) fn cancel_timer_by_scope(&mut self, seq: u32) -> bool {
        if self.tearing_down || !matches!(self.timers.get(&seq), Some(TimerState::Started { .. })) {
            return false;
        }
        if let Some(TimerState::Started { waker: Some(w) }) =
            self.timers.insert(seq, TimerState::CancelledByScope)
        {
            w.wake();
        }
        self.issued.push(EventKind::TimerCancelled { seq });
        true
    }

    /// Cancels every started timer (a run cancellation request), in sequence order.
    pub(super) fn cancel_timers_by_request(&mut self) {
        let mut seqs: Vec<u32> = self
            .timers
            .iter()
            .filter(|(_, st)| matches!(st, TimerState::Started { .. }))
            .map(|(seq, _)| *seq)
            .collect();
        seqs.sort_unstable();
        for seq in seqs {
            if let Some(TimerState::Started { waker: Some(w) }) =
                self.timers.insert(seq, TimerState::CancelledByRequest)
            {
                w.wake();
            }
            self.issued.push(EventKind::TimerCancelled { seq });
        }
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// A durable timer: survives restarts, fires after `duration` of engine time. A duration
    /// too large to represent means "never".
    #[track_caller]
    pub fn sleep(&self, duration: Duration) -> Sleep {
        let mut sleep = Sleep::new(self.core.clone(), duration);
        sleep.block = BlockSlot::at(std::panic::Location::caller());
        sleep
    }
}

/// Future of [`WorkflowContext::sleep`]: `Ok(())` when the timer fires, `Err(Cancelled)` when
/// the run's cancellation or its [`CancellationScope`](super::CancellationScope) cancelled it.
/// Dropping it before it fires cancels the timer.
pub struct Sleep {
    core: Rc<RefCell<Commands>>,
    duration: Duration,
    seq: Option<u32>,
    /// When it fires (engine time, ms), once started.
    fire_at_ms: i64,
    /// Its entry in what the run is blocked on (hidden for the timer of a timed wait).
    block: BlockSlot,
}

impl Sleep {
    pub(super) fn new(core: Rc<RefCell<Commands>>, duration: Duration) -> Sleep {
        Sleep {
            core,
            duration,
            seq: None,
            fire_at_ms: 0,
            block: BlockSlot::hidden(),
        }
    }
}

impl Future for Sleep {
    type Output = Result<(), Cancelled>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let poll = this.poll_timer(cx);
        let fire_at_ms = this.fire_at_ms;
        let mut core = this.core.borrow_mut();
        this.block.track(&mut core, poll, || Wait {
            deadline_ms: Some(fire_at_ms),
            ..Wait::of(BlockKind::Timer)
        })
    }
}

impl Sleep {
    fn poll_timer(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Cancelled>> {
        let mut core = self.core.borrow_mut();
        let seq = match self.seq {
            Some(seq) => seq,
            None => {
                // The main method has not received the run's cancellation: this timer, the
                // first thing it starts, gets it (see `cancel.rs`).
                if core.polling_main && core.take_undelivered_cancel() {
                    return Poll::Ready(Err(Cancelled));
                }
                // Started in a cancelled scope: cancelled before it starts.
                if core.scopes.cancelled() {
                    return Poll::Ready(Err(Cancelled));
                }
                let fire_at = core.task_time_ms.saturating_add(duration_ms(self.duration));
                let seq = core.start_timer(fire_at);
                drop(core);
                self.seq = Some(seq);
                self.fire_at_ms = fire_at;
                core = self.core.borrow_mut();
                seq
            }
        };
        match core.timers.get_mut(&seq) {
            Some(TimerState::Fired) => {
                core.timers.insert(seq, TimerState::Done);
                Poll::Ready(Ok(()))
            }
            Some(TimerState::CancelledByRequest) => {
                core.timers.insert(seq, TimerState::Done);
                core.cancel_received();
                Poll::Ready(Err(Cancelled))
            }
            Some(TimerState::CancelledByScope) => {
                core.timers.insert(seq, TimerState::Done);
                Poll::Ready(Err(Cancelled))
            }
            Some(TimerState::Started { waker }) => {
                *waker = Some(cx.waker().clone());
                Poll::Pending
            }
            Some(TimerState::Done) | None => Poll::Ready(Ok(())),
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.block.release(&self.core);
        if let Some(seq) = self.seq {
            if let Ok(mut core) = self.core.try_borrow_mut() {
                core.cancel_timer(seq);
            }
        }
    }
}
