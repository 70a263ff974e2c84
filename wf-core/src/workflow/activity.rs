//! Activities from the workflow's side: scheduling one, its lifecycle in the run, and the
//! future that resolves to its result.
//!
//! ```text
//! Scheduled --(ActivityResolved input)--> Resolved --(future polled)--> Taken
//! Scheduled --(run cancellation requested)--> Cancelled(Run) --(future polled)--> CancelSeen
//! Scheduled --(its scope cancelled)--> Cancelled(Scope) --(future polled)--> CancelSeen
//! ```
//!
//! A cancelled activity's task row is dropped with the commit that records
//! `ActivityCancelled`; an attempt that was running may still report a result, which is
//! recorded and ignored. Dropping the future does not cancel the activity (see `scope.rs`).

use super::blocked::{BlockSlot, Wait};
use super::commands::Commands;
use super::context::WorkflowContext;
use super::local_activity::LocalCall;
use crate::activity::{ActivityFn, ActivityGroup};
use crate::data::activity::{ActivityOptions, ActivityResolution, RetryPolicy};
use crate::data::blocked::BlockKind;
use crate::data::history::EventKind;
use crate::data::payload::{Payload, PayloadError};
use crate::error::ActivityCallError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Lifecycle of one activity, keyed by its command sequence number.
#[derive(Debug)]
pub(crate) enum ActivityState {
    /// Scheduled, waiting for its resolution.
    Scheduled { waker: Option<Waker> },
    /// Resolved; the awaiting future has not seen it yet.
    Resolved(ActivityResolution),
    /// Cancelled before it resolved; the awaiting future has not seen it yet.
    Cancelled(CancelCause),
    /// The future took the cancellation: a late resolution is ignored.
    CancelSeen,
    /// The future took the resolution.
    Taken,
}

/// What cancelled an activity or timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelCause {
    /// The run's cancellation was requested.
    Run,
    /// A [`CancellationScope`](super::scope::CancellationScope) it belongs to was cancelled.
    Scope,
}

impl Commands {
    /// Records an `ActivityScheduled` command and returns its sequence number.
    pub fn schedule_activity(
        &mut self,
        name: String,
        input: Payload,
        options: ActivityOptions,
    ) -> u32 {
        let seq = self.next_seq();
        self.issued.push(EventKind::ActivityScheduled {
            seq,
            name,
            input,
            options,
        });
        self.activities
            .insert(seq, ActivityState::Scheduled { waker: None });
        seq
    }

    /// Whether [`resolve_activity`](Self::resolve_activity) takes a resolution of `seq` now.
    pub fn awaits_activity(&self, seq: u32) -> bool {
        matches!(
            self.activities.get(&seq),
            Some(
                ActivityState::Scheduled { .. }
                    | ActivityState::Cancelled(_)
                    | ActivityState::CancelSeen
            )
        )
    }

    /// Applies an activity resolution (an input of the task).
    pub fn resolve_activity(&mut self, seq: u32, resolution: ActivityResolution) {
        match self.activities.get_mut(&seq) {
            Some(state @ ActivityState::Scheduled { .. }) => {
                if let ActivityState::Scheduled { waker: Some(w) } =
                    std::mem::replace(state, ActivityState::Resolved(resolution))
                {
                    w.wake();
                }
            }
            // An attempt that ran on while its cancellation was committed.
            Some(ActivityState::Cancelled(_) | ActivityState::CancelSeen) => {}
            _ => self.record_mismatch(format!(
                "history resolves activity #{seq}, which the workflow code did not schedule (or already saw resolved)"
            )),
        }
    }

    /// Cancels activity `seq` if it is still scheduled (records `ActivityCancelled` and wakes
    /// its future); false if it is not a pending activity.
    fn cancel_activity(&mut self, seq: u32, cause: CancelCause) -> bool {
        if !matches!(
            self.activities.get(&seq),
            Some(ActivityState::Scheduled { .. })
        ) {
            return false;
        }
        if let Some(ActivityState::Scheduled { waker: Some(w) }) =
            self.activities.insert(seq, ActivityState::Cancelled(cause))
        {
            w.wake();
        }
        self.issued.push(EventKind::ActivityCancelled { seq });
        true
    }

    /// Cancels activity `seq` for its cancellation scope; false if it is not a pending
    /// activity.
    pub(super) fn cancel_activity_by_scope(&mut self, seq: u32) -> bool {
        !self.tearing_down && self.cancel_activity(seq, CancelCause::Scope)
    }

    /// Cancels every scheduled activity, local ones included (a run cancellation request), in
    /// sequence order so replay issues the same commands.
    pub(super) fn cancel_activities(&mut self) {
        self.cancel_locals_by_request();
        let mut seqs: Vec<u32> = self
            .activities
            .iter()
            .filter(|(_, st)| matches!(st, ActivityState::Scheduled { .. }))
            .map(|(seq, _)| *seq)
            .collect();
        seqs.sort_unstable();
        for seq in seqs {
            self.cancel_activity(seq, CancelCause::Run);
        }
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Schedules an activity. `f` is an `#[activity]` method (`Tools::next_step`), so the
    /// argument and result types are checked at compile time. Options are builder calls on the
    /// returned future.
    #[track_caller]
    pub fn activity<M, F: ActivityFn<M>>(&self, f: F, args: F::Args) -> ActivityCall<F::Output> {
        let _ = f;
        let name = <F::Group as ActivityGroup>::activity_name(std::any::TypeId::of::<F>());
        let input = match name {
            Some(_) => Payload::encode(&args),
            None => Err(PayloadError::Encode {
                what: std::any::type_name::<F>().to_string(),
                message: "this function is not an #[activity] of its #[activities] impl".into(),
            }),
        };
        ActivityCall::new(self.core.clone(), name.unwrap_or("").to_string(), input)
    }

    /// Schedules an activity by wire name, for activities implemented elsewhere (another
    /// process, another language: see the guide's chapter "Activities in other languages").
    /// Structs in `args` are encoded with their field names, so that a worker without the Rust
    /// types reads them as JSON objects; a Rust activity decodes them as usual.
    #[track_caller]
    pub fn activity_by_name<R: DeserializeOwned>(
        &self,
        name: &str,
        args: &impl Serialize,
    ) -> ActivityCall<R> {
        let input = Payload::encode_named(args);
        ActivityCall::new(self.core.clone(), name.to_string(), input)
    }
}

/// Future of [`WorkflowContext::activity`]: resolves to the activity's result once it
/// completes (after its retries), or to the final error.
pub struct ActivityCall<R> {
    pub(super) core: Rc<RefCell<Commands>>,
    pub(super) name: String,
    pub(super) input: Result<Payload, PayloadError>,
    pub(super) options: ActivityOptions,
    pub(super) seq: Option<u32>,
    /// Set by [`local`](Self::local): run in the worker's process (see `local_activity.rs`).
    pub(super) local: Option<LocalCall>,
    /// Its entry in what the run is blocked on (see `blocked.rs`).
    block: BlockSlot,
    _r: PhantomData<fn() -> R>,
}

impl<R> Unpin for ActivityCall<R> {}

impl<R> Drop for ActivityCall<R> {
    fn drop(&mut self) {
        self.block.release(&self.core);
    }
}

impl<R> ActivityCall<R> {
    #[track_caller]
    fn new(
        core: Rc<RefCell<Commands>>,
        name: String,
        input: Result<Payload, PayloadError>,
    ) -> Self {
        ActivityCall {
            core,
            name,
            input,
            options: ActivityOptions::default(),
            seq: None,
            local: None,
            block: BlockSlot::at(std::panic::Location::caller()),
            _r: PhantomData,
        }
    }

    /// Retry policy (default: Temporal's — 1 s initial interval, ×2, capped at 100 s,
    /// unlimited attempts).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.options.retry = policy;
        self
    }

    /// Longest time one attempt may run.
    pub fn start_to_close(mut self, d: Duration) -> Self {
        self.options.start_to_close = Some(d);
        self
    }

    /// Longest time from scheduling to the final result, retries included.
    pub fn schedule_to_close(mut self, d: Duration) -> Self {
        self.options.schedule_to_close = Some(d);
        self
    }

    /// Longest time between two heartbeats of a running attempt.
    pub fn heartbeat_timeout(mut self, d: Duration) -> Self {
        self.options.heartbeat_timeout = Some(d);
        self
    }

    /// The flow key the activity's attempts count under: the store's flow limits of
    /// [`FlowScope::key(key)`](crate::FlowScope::key) bind them (at most N running at once, at
    /// most M started per period, over every engine), besides the limits of the activity's name
    /// and task queue. Recorded with the activity in history. A local activity
    /// ([`local`](Self::local)) runs inside its workflow task and no flow limit binds it.
    ///
    /// ```ignore
    /// let answer = ctx.activity(Tools::ask_model, prompt).flow_key("openai").await?;
    /// ```
    pub fn flow_key(mut self, key: impl Into<String>) -> Self {
        self.options.flow_key = Some(key.into());
        self
    }

    /// The priority level of the activity's attempts, 1 (first) to 5 (last), 3 by default: a
    /// poll leases the waiting attempts of a lower level before any of a higher one, on every
    /// engine of the store, whatever their fairness keys and arrival. A level outside 1..=5
    /// fails the call with [`ActivityCallError::InvalidOptions`] when it would be scheduled
    /// (nothing is recorded). Recorded with the activity in history.
    ///
    /// ```ignore
    /// let reply = ctx.activity(Tools::answer_user, msg).priority(1).await?;
    /// ```
    pub fn priority(mut self, level: u8) -> Self {
        self.options.priority = Some(level);
        self
    }

    /// The fairness key the activity's attempts take turns under (a tenant, a user): while
    /// several keys have attempts waiting (of one priority level), a poll leases them in turn,
    /// by [weight](Self::fairness_weight), however many each has waiting; a key with 10,000
    /// waiting does not hold back a key with 10. Attempts without a key share the key `""`.
    /// Recorded with the activity in history; its retries keep it.
    ///
    /// ```ignore
    /// let summary = ctx.activity(Tools::summarize, doc).fairness_key(tenant).await?;
    /// ```
    pub fn fairness_key(mut self, key: impl Into<String>) -> Self {
        self.options.fairness_key = Some(key.into());
        self
    }

    /// The weight of the [fairness key](Self::fairness_key)'s turns, above 0 (1.0 by default):
    /// while both wait, a key whose attempts have weight 2 starts two for one of a key of
    /// weight 1. A weight that is not a finite number above 0 fails the call with
    /// [`ActivityCallError::InvalidOptions`] when it would be scheduled.
    pub fn fairness_weight(mut self, weight: f64) -> Self {
        self.options.fairness_weight = Some(weight);
        self
    }

    /// Sends the activity's attempts to task queue `queue`: only engines that serve it
    /// ([`EngineBuilder::task_queue`](crate::EngineBuilder::task_queue) or
    /// [`EngineBuilder::activity_task_queue`](crate::EngineBuilder::activity_task_queue)) lease
    /// them, say the pool with the GPUs; they wait in the store until one does. Without it, any
    /// engine that registers the activity may run it. Flow limits of
    /// [`FlowScope::task_queue(queue)`](crate::FlowScope::task_queue) count it. Recorded with
    /// the activity in history. A name the store would refuse (empty, too long, a NUL) fails
    /// the call at once, before anything is scheduled, with the kind `"invalid_task_queue"`. A
    /// local activity ([`local`](Self::local)) runs inside its workflow task and ignores it.
    ///
    /// ```ignore
    /// let frames = ctx.activity(Render::frames, scene).task_queue("gpu").await?;
    /// ```
    pub fn task_queue(mut self, queue: impl Into<String>) -> Self {
        self.options.task_queue = Some(queue.into());
        self
    }
}

impl<R: DeserializeOwned> Future for ActivityCall<R> {
    type Output = Result<R, ActivityCallError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let poll = match this.local.is_some() {
            true => this.poll_local(cx),
            false => this.poll_remote(cx),
        };
        let (name, seq) = (&this.name, this.seq);
        let mut core = this.core.borrow_mut();
        this.block.track(&mut core, poll, || Wait {
            name: name.clone(),
            seq,
            ..Wait::of(BlockKind::Activity)
        })
    }
}

impl<R: DeserializeOwned> ActivityCall<R> {
    fn poll_remote(&mut self, cx: &mut Context<'_>) -> Poll<Result<R, ActivityCallError>> {
        let seq = match self.seq {
            Some(seq) => seq,
            None => {
                let input = match &self.input {
                    Ok(p) => p.clone(),
                    Err(e) => return Poll::Ready(Err(ActivityCallError::Payload(e.clone()))),
                };
                if let Some(Err(e)) = self.options.task_queue.as_deref().map(check_queue) {
                    return Poll::Ready(Err(ActivityCallError::Failed {
                        activity: self.name.clone(),
                        kind: "invalid_task_queue".to_string(),
                        message: e.to_string(),
                        attempts: 0,
                        last_heartbeat: None,
                    }));
                }
                let (name, options) = (self.name.clone(), self.options.clone());
                if let Err(message) = options.check() {
                    let activity = name;
                    return Poll::Ready(Err(ActivityCallError::InvalidOptions {
                        activity,
                        message,
                    }));
                }
                let mut core = self.core.borrow_mut();
                // The main method has not received the run's cancellation: this activity, the
                // first thing it starts, gets it (see `cancel.rs`).
                if core.polling_main && core.take_undelivered_cancel() {
                    return Poll::Ready(Err(ActivityCallError::Cancelled { activity: name }));
                }
                // Started in a cancelled scope: cancelled before it starts.
                if core.scopes.cancelled() {
                    return Poll::Ready(Err(ActivityCallError::Cancelled { activity: name }));
                }
                let seq = core.schedule_activity(name, input, options);
                drop(core);
                self.seq = Some(seq);
                seq
            }
        };
        let mut core = self.core.borrow_mut();
        let Some(state) = core.activities.get_mut(&seq) else {
            return Poll::Pending;
        };
        match std::mem::replace(state, ActivityState::Taken) {
            ActivityState::Scheduled { .. } => {
                *state = ActivityState::Scheduled {
                    waker: Some(cx.waker().clone()),
                };
                Poll::Pending
            }
            ActivityState::Resolved(resolution) => {
                Poll::Ready(resolution_result(&self.name, resolution))
            }
            ActivityState::Cancelled(cause) => {
                *state = ActivityState::CancelSeen;
                if cause == CancelCause::Run {
                    core.cancel_received();
                }
                Poll::Ready(Err(ActivityCallError::Cancelled {
                    activity: self.name.clone(),
                }))
            }
            ActivityState::CancelSeen => {
                *state = ActivityState::CancelSeen;
                Poll::Pending
            }
            ActivityState::Taken => Poll::Pending,
        }
    }
}

/// Whether the store would take `queue` as an activity's task queue.
fn check_queue(queue: &str) -> Result<(), crate::data::limits::LimitError> {
    crate::data::limits::Ident::TaskQueue.check(queue)
}

/// What the awaiting code gets for an activity's final resolution.
pub(super) fn resolution_result<R: DeserializeOwned>(
    activity: &str,
    resolution: ActivityResolution,
) -> Result<R, ActivityCallError> {
    let activity = activity.to_string();
    match resolution {
        ActivityResolution::Completed { result, .. } => {
            result.decode::<R>().map_err(ActivityCallError::Payload)
        }
        ActivityResolution::Failed {
            failure,
            attempts,
            last_heartbeat,
        } => Err(ActivityCallError::Failed {
            activity,
            kind: failure.kind,
            message: failure.message,
            attempts,
            last_heartbeat,
        }),
        ActivityResolution::TimedOut {
            timeout,
            attempts,
            last_heartbeat,
        } => Err(ActivityCallError::TimedOut {
            activity,
            timeout,
            attempts,
            last_heartbeat,
        }),
    }
}
