//! Signals without a handler method: they are buffered in arrival order, and
//! `ctx.wait_for_signal(name)` takes the oldest one, with an optional durable deadline.

use super::blocked::{BlockSlot, Wait};
use super::cancel::Interruption;
use super::commands::Commands;
use super::context::WorkflowContext;
use super::timer::Sleep;
use crate::data::blocked::BlockKind;
use crate::data::payload::{Payload, PayloadError};
use crate::error::{SignalWaitError, WaitKind, WaitTimeout};
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A signal as `ctx.wait_for_signal_raw(name)` hands it over: its name, its encoded
/// arguments and when the sender sent it.
///
/// ```ignore
/// let s = ctx.wait_for_signal_raw("approve").await;
/// let (who,): (String,) = s.args()?;
/// let waited = ctx.now().duration_since(s.sent_at.unwrap_or(ctx.now()));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Signal {
    /// Its wire name.
    pub name: String,
    /// Its encoded arguments (a tuple).
    pub payload: Payload,
    /// When the sender sent it (the sending engine's clock; workflow time for a signal from
    /// `ctx.signal_external`). `None` for a signal recorded before wf recorded send times.
    pub sent_at: Option<SystemTime>,
}

impl Signal {
    pub(crate) fn new(name: String, payload: Payload, sent_at_ms: Option<i64>) -> Self {
        Signal {
            name,
            payload,
            sent_at: sent_at_ms.map(|ms| UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)),
        }
    }

    /// Decodes the argument tuple (`(A,)` for a one-argument signal, `()` for none).
    pub fn args<A: DeserializeOwned>(&self) -> Result<A, PayloadError> {
        self.payload.decode()
    }

    /// Decodes the single argument of a one-argument signal (what `wait_for_signal::<T>`
    /// returns).
    pub fn arg<T: DeserializeOwned>(&self) -> Result<T, PayloadError> {
        self.payload.decode::<(T,)>().map(|(v,)| v)
    }
}

impl Commands {
    /// Keeps a signal no handler takes, for `wait_for_signal` (or a later handler).
    pub fn buffer_signal(&mut self, signal: Signal) {
        self.buffered_signals.push(signal);
        self.state_changed();
    }

    /// Takes the oldest buffered signal named `name`.
    pub fn take_signal(&mut self, name: &str) -> Option<Signal> {
        let i = self.buffered_signals.iter().position(|s| s.name == name)?;
        Some(self.buffered_signals.remove(i))
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Waits for the next signal named `name` that has no handler method, and decodes its
    /// single argument (signals carry an argument tuple: send `(value,)`). Signals that
    /// arrived earlier are buffered and taken oldest first, so none is missed. Bound the wait
    /// with [`.timeout(d)`](WaitForSignal::timeout) or [`.deadline(t)`](WaitForSignal::deadline).
    /// [`wait_for_signal_raw`](Self::wait_for_signal_raw) gives the whole [`Signal`]. In `run`,
    /// a wait without a deadline that is pending when the run's cancellation is requested
    /// ends the run as cancelled (see `wait_condition`); one with a deadline fails with
    /// [`SignalWaitError::Cancelled`].
    #[track_caller]
    pub fn wait_for_signal<T: DeserializeOwned>(&self, name: &str) -> WaitForSignal<T> {
        self.wait_signal(name, |s| s.arg::<T>())
    }

    /// Waits for the next signal named `name` that has no handler method, as
    /// [`wait_for_signal`](Self::wait_for_signal) does, and returns it whole: its name, its
    /// encoded arguments and when it was sent ([`Signal`]). The timeouts are the same; the
    /// result is `Result<Signal, PayloadError>` (never an `Err`: nothing is decoded).
    #[track_caller]
    pub fn wait_for_signal_raw(&self, name: &str) -> WaitForSignal<Signal> {
        self.wait_signal(name, Ok)
    }

    #[track_caller]
    fn wait_signal<T>(
        &self,
        name: &str,
        decode: fn(Signal) -> Result<T, PayloadError>,
    ) -> WaitForSignal<T> {
        let index = {
            let mut core = self.core.borrow_mut();
            core.waits += 1;
            core.waits
        };
        WaitForSignal {
            core: self.core.clone(),
            name: name.to_string(),
            decode,
            index,
            interruption: Interruption::default(),
            block: BlockSlot::at(std::panic::Location::caller()),
            deadline_ms: None,
        }
    }
}

/// Future of [`WorkflowContext::wait_for_signal`] (the signal's argument) and
/// [`WorkflowContext::wait_for_signal_raw`] (the [`Signal`]).
pub struct WaitForSignal<T> {
    core: Rc<RefCell<Commands>>,
    name: String,
    decode: fn(Signal) -> Result<T, PayloadError>,
    /// Its `WaitTimeout::call_index`.
    index: u32,
    /// Whether the run's cancellation interrupted it (see `cancel.rs`).
    interruption: Interruption,
    /// Its entry in what the run is blocked on (see `blocked.rs`).
    block: BlockSlot,
    /// Its deadline (engine time, ms), when it has one.
    deadline_ms: Option<i64>,
}

impl<T> Unpin for WaitForSignal<T> {}

impl<T> Drop for WaitForSignal<T> {
    fn drop(&mut self) {
        self.block.release(&self.core);
        if self.interruption.happened() {
            if let Ok(mut core) = self.core.try_borrow_mut() {
                self.interruption.release(&mut core);
            }
        }
    }
}

impl<T> WaitForSignal<T> {
    /// Gives up after `duration` of workflow time with [`SignalWaitError::Timeout`]. A zero
    /// duration takes a signal already received and otherwise times out at once, without a
    /// timer.
    pub fn timeout(self, duration: Duration) -> WaitForSignalUntil<T> {
        let deadline_ms = self
            .core
            .borrow()
            .task_time_ms
            .saturating_add(duration.as_millis() as i64);
        self.until(deadline_ms)
    }

    /// Gives up at `deadline` (workflow time) with [`SignalWaitError::Timeout`]. A deadline in
    /// the past takes a signal already received and otherwise times out at once.
    pub fn deadline(self, deadline: SystemTime) -> WaitForSignalUntil<T> {
        let ms = deadline
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        self.until(ms)
    }

    fn until(mut self, deadline_ms: i64) -> WaitForSignalUntil<T> {
        self.deadline_ms = Some(deadline_ms);
        WaitForSignalUntil {
            wait: self,
            deadline_ms,
            timer: None,
        }
    }

    /// Notes or clears the wait in what the run is blocked on, after a poll.
    fn track<R>(&mut self, poll: Poll<R>) -> Poll<R> {
        let (name, deadline_ms) = (&self.name, self.deadline_ms);
        let mut core = self.core.borrow_mut();
        self.block.track(&mut core, poll, || Wait {
            name: name.clone(),
            deadline_ms,
            ..Wait::of(BlockKind::Signal)
        })
    }

    fn take(&self, cx: &mut Context<'_>) -> Option<Result<T, PayloadError>> {
        let mut core = self.core.borrow_mut();
        match core.take_signal(&self.name) {
            Some(signal) => Some((self.decode)(signal)),
            None => {
                core.wait_for_change(cx.waker());
                None
            }
        }
    }
}

impl<T> Future for WaitForSignal<T> {
    type Output = Result<T, PayloadError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let poll = self.poll_wait(cx);
        self.track(poll)
    }
}

impl<T> WaitForSignal<T> {
    fn poll_wait(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, PayloadError>> {
        if let Some(r) = self.take(cx) {
            return Poll::Ready(r);
        }
        // In the main method, a cancellation request interrupts the wait: the run ends as
        // cancelled (see `cancel.rs`).
        let mut core = self.core.borrow_mut();
        if core.polling_main && (self.interruption.happened() || core.interrupts_wait(self.index)) {
            self.interruption.record(&mut core);
        }
        Poll::Pending
    }
}

/// Future of [`WaitForSignal::timeout`] and [`WaitForSignal::deadline`].
pub struct WaitForSignalUntil<T> {
    wait: WaitForSignal<T>,
    deadline_ms: i64,
    timer: Option<Sleep>,
}

impl<T> Unpin for WaitForSignalUntil<T> {}

impl<T> Future for WaitForSignalUntil<T> {
    type Output = Result<T, SignalWaitError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let poll = self.poll_wait(cx);
        self.wait.track(poll)
    }
}

impl<T> WaitForSignalUntil<T> {
    fn poll_wait(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, SignalWaitError>> {
        // A signal already recorded wins, even past the deadline.
        if let Some(r) = self.wait.take(cx) {
            self.timer = None;
            return Poll::Ready(r.map_err(SignalWaitError::from));
        }
        // Built only when the wait actually times out (not on every poll).
        let timed_out = |w: &WaitForSignalUntil<T>| {
            Poll::Ready(Err(SignalWaitError::Timeout(WaitTimeout {
                kind: WaitKind::Signal,
                call_index: w.wait.index,
                name: w.wait.name.clone(),
                deadline: UNIX_EPOCH + Duration::from_millis(w.deadline_ms.max(0) as u64),
            })))
        };
        let this = &mut *self;
        if this.timer.is_none() {
            let now = this.wait.core.borrow().task_time_ms;
            if this.deadline_ms <= now {
                return timed_out(this);
            }
            let wait = u64::try_from(this.deadline_ms.saturating_sub(now)).unwrap_or(u64::MAX);
            this.timer = Some(Sleep::new(
                this.wait.core.clone(),
                Duration::from_millis(wait),
            ));
        }
        let timer = this.timer.as_mut().expect("set above");
        match Pin::new(timer).poll(cx) {
            Poll::Ready(Ok(())) => {
                self.timer = None;
                timed_out(self)
            }
            Poll::Ready(Err(c)) => {
                self.timer = None;
                Poll::Ready(Err(SignalWaitError::Cancelled(c)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
