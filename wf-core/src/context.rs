//! `WorkflowContext`: everything workflow code may touch. State goes through closures so no
//! borrow lives across an `.await`; time, randomness, activities and timers go through the
//! run's command log so they replay identically.

use crate::activity::{ActivityCallError, ActivityFn, ActivityGroup};
use crate::commands::{ActivityState, ChildState, Commands, TimerState};
use crate::definition::WorkflowDefinition;
use crate::error::WorkflowError;
use crate::history::{ActivityOptions, ChildOutcome, ParentClosePolicy, ParentInfo, RetryPolicy};
use crate::payload::{Payload, PayloadError};
use crate::store::ActivityResolution;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The handle workflow code uses for state, time, randomness, activities and timers.
///
/// Async `run` and async handlers receive `&mut WorkflowContext<Self>`; they reach the
/// workflow's state only through [`state`](Self::state), [`state_mut`](Self::state_mut) and
/// [`wait_condition`](Self::wait_condition).
pub struct WorkflowContext<W> {
    pub(crate) core: Rc<RefCell<Commands>>,
    pub(crate) state: Rc<RefCell<W>>,
}

impl<W> Clone for WorkflowContext<W> {
    fn clone(&self) -> Self {
        WorkflowContext {
            core: self.core.clone(),
            state: self.state.clone(),
        }
    }
}

impl<W: 'static> WorkflowContext<W> {
    /// Reads the workflow's state.
    pub fn state<R>(&self, f: impl FnOnce(&W) -> R) -> R {
        f(&self.state.borrow())
    }

    /// Changes the workflow's state; every `wait_condition` is re-checked afterwards.
    pub fn state_mut<R>(&self, f: impl FnOnce(&mut W) -> R) -> R {
        let r = f(&mut self.state.borrow_mut());
        self.core.borrow_mut().state_changed();
        r
    }

    /// Waits until `pred(state)` holds; re-checked after every state change. Add
    /// [`.timeout(d)`](WaitCondition::timeout) to get a `bool` instead of waiting forever.
    pub fn wait_condition<F: Fn(&W) -> bool>(&self, pred: F) -> WaitCondition<W, F> {
        WaitCondition {
            ctx: self.clone(),
            pred,
        }
    }

    /// True when no async signal or update handler is running.
    pub fn all_handlers_finished(&self) -> bool {
        self.core.borrow().live_handlers.is_empty()
    }

    /// Waits until every async handler has finished: call before returning or continuing as
    /// new, so no update caller is left without an answer.
    pub fn handlers_drained(&self) -> WaitCondition<W, impl Fn(&W) -> bool> {
        let core = self.core.clone();
        self.wait_condition(move |_| core.borrow().live_handlers.is_empty())
    }

    /// Schedules an activity. `f` is an `#[activity]` method (`Tools::next_step`), so the
    /// argument and result types are checked at compile time. Options are builder calls on the
    /// returned future.
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

    /// Schedules an activity by wire name, for activities implemented elsewhere.
    pub fn activity_by_name<R: DeserializeOwned>(
        &self,
        name: &str,
        args: &impl Serialize,
    ) -> ActivityCall<R> {
        ActivityCall::new(self.core.clone(), name.to_string(), Payload::encode(args))
    }

    /// Waits for the next signal named `name` that has no handler method, and decodes its
    /// single argument (signals carry an argument tuple: send `(value,)`). Signals that
    /// arrived earlier are buffered and taken oldest first, so none is missed. Bound the wait
    /// with [`.timeout(d)`](WaitForSignal::timeout) or [`.deadline(t)`](WaitForSignal::deadline).
    pub fn wait_for_signal<T: DeserializeOwned>(&self, name: &str) -> WaitForSignal<T> {
        WaitForSignal {
            core: self.core.clone(),
            name: name.to_string(),
            _t: PhantomData,
        }
    }

    /// Starts a child workflow run of type `C` with workflow id `workflow_id` (started
    /// atomically with this task's commit) and resolves to its result. When this run closes
    /// first, the child is terminated (change with
    /// [`.parent_close_policy(..)`](ChildCall::parent_close_policy)).
    pub fn child<C: WorkflowDefinition>(
        &self,
        workflow_id: impl Into<String>,
        input: &C::Input,
    ) -> ChildCall<C> {
        ChildCall {
            core: self.core.clone(),
            workflow_id: workflow_id.into(),
            input: Payload::encode(input),
            policy: ParentClosePolicy::default(),
            task_queue: None,
            seq: None,
            _c: PhantomData,
        }
    }

    /// Sends a signal (arguments as a tuple, e.g. `&(42,)`) to another workflow, such as a
    /// child or the parent ([`parent`](Self::parent)). It is delivered atomically with this
    /// task's commit, exactly once; a missing or finished target drops it.
    pub fn signal_external<A: Serialize>(
        &self,
        workflow_id: &str,
        name: &str,
        args: &A,
    ) -> Result<(), PayloadError> {
        let args = Payload::encode(args)?;
        self.core
            .borrow_mut()
            .signal_external(workflow_id.to_string(), name.to_string(), args);
        Ok(())
    }

    /// The parent run, if this run is a child.
    pub fn parent(&self) -> Option<ParentInfo> {
        self.core.borrow().parent.clone()
    }

    /// A durable timer: survives restarts, fires after `duration` of engine time.
    pub fn sleep(&self, duration: Duration) -> Sleep {
        Sleep {
            core: self.core.clone(),
            duration,
            seq: None,
        }
    }

    /// The workflow's time: the start of the current workflow task, identical on replay.
    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.now_ms().max(0) as u64)
    }

    /// [`now`](Self::now) in milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        self.core.borrow().task_time_ms
    }

    /// A deterministic random number in `[0, 1)`.
    pub fn random(&self) -> f64 {
        (self.random_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A deterministic random `u64`.
    pub fn random_u64(&self) -> u64 {
        self.core.borrow_mut().rng.next_u64()
    }

    /// A deterministic random (version 4) UUID.
    pub fn uuid(&self) -> uuid::Uuid {
        let hi = self.random_u64() as u128;
        let lo = self.random_u64() as u128;
        uuid::Builder::from_random_bytes(((hi << 64) | lo).to_be_bytes()).into_uuid()
    }

    /// The workflow id.
    pub fn workflow_id(&self) -> String {
        self.core.borrow().workflow_id.clone()
    }

    /// This run's id.
    pub fn run_id(&self) -> String {
        self.core.borrow().run_id.clone()
    }

    /// Events in this run's history so far.
    pub fn history_length(&self) -> u64 {
        self.core.borrow().history_len
    }

    /// True once the history reaches 10,240 events or 10 MiB: time to continue as new.
    pub fn continue_as_new_suggested(&self) -> bool {
        self.core.borrow().suggest_continue_as_new
    }

    /// Versioning: `true` when this run executes code after the change `id` was deployed,
    /// `false` when it replays a history recorded before it. Guard a change with
    /// `if ctx.patched("id") { new } else { old }`; once no run on the old branch remains,
    /// replace the call with [`deprecate_patch`](Self::deprecate_patch), then remove it.
    pub fn patched(&self, id: &str) -> bool {
        self.core.borrow_mut().patched(id, false)
    }

    /// Marks the change `id` as the only branch left: records the marker for runs that still
    /// check `patched(id)` and accepts histories with or without it.
    pub fn deprecate_patch(&self, id: &str) {
        self.core.borrow_mut().patched(id, true);
    }

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

impl<W: WorkflowDefinition> WorkflowContext<W> {
    /// The error to return from `run` to continue as a new run with `input` (same workflow id,
    /// fresh history; signal and update dedupe ids carry over):
    /// `return Err(ctx.continue_as_new(&input));`
    pub fn continue_as_new(&self, input: &W::Input) -> WorkflowError {
        match Payload::encode(input) {
            Ok(p) => WorkflowError::ContinueAsNew(p),
            Err(e) => WorkflowError::Payload(e),
        }
    }
}

/// Future of [`WorkflowContext::wait_condition`].
pub struct WaitCondition<W, F> {
    ctx: WorkflowContext<W>,
    pred: F,
}

impl<W: 'static, F: Fn(&W) -> bool> WaitCondition<W, F> {
    /// Gives up after `duration` of engine time (a durable timer); resolves to whether the
    /// condition held.
    pub fn timeout(self, duration: Duration) -> TimedCondition<W, F> {
        TimedCondition {
            cond: self,
            duration,
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
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.check(cx) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl<W, F> Unpin for WaitCondition<W, F> {}

/// Future of [`WaitCondition::timeout`]: `true` if the condition held, `false` on timeout.
pub struct TimedCondition<W: 'static, F: Fn(&W) -> bool> {
    cond: WaitCondition<W, F>,
    duration: Duration,
    timer: Option<Sleep>,
}

impl<W: 'static, F: Fn(&W) -> bool> Unpin for TimedCondition<W, F> {}

impl<W: 'static, F: Fn(&W) -> bool> Future for TimedCondition<W, F> {
    type Output = bool;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        if self.cond.check(cx) {
            // Dropping the timer cancels it (a `TimerCancelled` command).
            self.timer = None;
            return Poll::Ready(true);
        }
        let this = &mut *self;
        let timer = this
            .timer
            .get_or_insert_with(|| this.cond.ctx.sleep(this.duration));
        match Pin::new(timer).poll(cx) {
            Poll::Ready(_) => Poll::Ready(false),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Future of [`WorkflowContext::sleep`]. Dropping it before it fires cancels the timer.
pub struct Sleep {
    core: Rc<RefCell<Commands>>,
    duration: Duration,
    seq: Option<u32>,
}

/// A timer or wait was cut short because the run's cancellation was requested. `?` turns it
/// into [`WorkflowError::Cancelled`], which ends the run as cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled: the run's cancellation was requested")]
pub struct Cancelled;

impl Future for Sleep {
    type Output = Result<(), Cancelled>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut core = self.core.borrow_mut();
        let seq = match self.seq {
            Some(seq) => seq,
            None => {
                let fire_at = core.task_time_ms + self.duration.as_millis() as i64;
                let seq = core.start_timer(fire_at);
                drop(core);
                self.seq = Some(seq);
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
        if let Some(seq) = self.seq {
            if let Ok(mut core) = self.core.try_borrow_mut() {
                core.cancel_timer(seq);
            }
        }
    }
}

/// Future of [`WorkflowContext::activity`]: resolves to the activity's result once it
/// completes (after its retries), or to the final error.
pub struct ActivityCall<R> {
    core: Rc<RefCell<Commands>>,
    name: String,
    input: Result<Payload, PayloadError>,
    options: ActivityOptions,
    seq: Option<u32>,
    _r: PhantomData<fn() -> R>,
}

impl<R> Unpin for ActivityCall<R> {}

impl<R> ActivityCall<R> {
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
}

impl<R: DeserializeOwned> Future for ActivityCall<R> {
    type Output = Result<R, ActivityCallError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let seq = match self.seq {
            Some(seq) => seq,
            None => {
                let input = match &self.input {
                    Ok(p) => p.clone(),
                    Err(e) => return Poll::Ready(Err(ActivityCallError::Payload(e.clone()))),
                };
                let (name, options) = (self.name.clone(), self.options.clone());
                let seq = self
                    .core
                    .borrow_mut()
                    .schedule_activity(name, input, options);
                self.seq = Some(seq);
                seq
            }
        };
        let mut core = self.core.borrow_mut();
        let Some(state) = core.activities.get_mut(&seq) else {
            return Poll::Pending;
        };
        match state {
            ActivityState::Scheduled { waker } => {
                *waker = Some(cx.waker().clone());
                Poll::Pending
            }
            ActivityState::Resolved(_) => {
                let ActivityState::Resolved(resolution) =
                    std::mem::replace(state, ActivityState::Taken)
                else {
                    unreachable!("matched Resolved above")
                };
                let name = self.name.clone();
                Poll::Ready(match resolution {
                    ActivityResolution::Completed { result, .. } => {
                        result.decode::<R>().map_err(ActivityCallError::Payload)
                    }
                    ActivityResolution::Failed { failure, attempts } => {
                        Err(ActivityCallError::Failed {
                            activity: name,
                            kind: failure.kind,
                            message: failure.message,
                            attempts,
                        })
                    }
                    ActivityResolution::TimedOut { timeout, attempts } => {
                        Err(ActivityCallError::TimedOut {
                            activity: name,
                            timeout,
                            attempts,
                        })
                    }
                })
            }
            ActivityState::Cancelled => {
                *state = ActivityState::Taken;
                Poll::Ready(Err(ActivityCallError::Cancelled {
                    activity: self.name.clone(),
                }))
            }
            ActivityState::Taken => Poll::Pending,
        }
    }
}

/// Future of [`WorkflowContext::wait_for_signal`]: the signal's argument.
pub struct WaitForSignal<T> {
    core: Rc<RefCell<Commands>>,
    name: String,
    _t: PhantomData<fn() -> T>,
}

impl<T> Unpin for WaitForSignal<T> {}

impl<T: DeserializeOwned> WaitForSignal<T> {
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

    fn until(self, deadline_ms: i64) -> WaitForSignalUntil<T> {
        WaitForSignalUntil {
            wait: self,
            deadline_ms,
            timer: None,
        }
    }

    fn take(&self, cx: &mut Context<'_>) -> Option<Result<T, PayloadError>> {
        let mut core = self.core.borrow_mut();
        match core.take_signal(&self.name) {
            Some(args) => Some(args.decode::<(T,)>().map(|(v,)| v)),
            None => {
                core.wait_for_change(cx.waker());
                None
            }
        }
    }
}

impl<T: DeserializeOwned> Future for WaitForSignal<T> {
    type Output = Result<T, PayloadError>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.take(cx) {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}

/// A bounded signal wait ran out of time, or its argument did not decode.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SignalWaitError {
    /// No signal arrived before the deadline.
    #[error(transparent)]
    Timeout(#[from] WaitTimeout),
    /// The signal's argument did not decode as the expected type.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The run's cancellation was requested during the wait.
    #[error(transparent)]
    Cancelled(#[from] Cancelled),
}

/// No signal named `name` arrived before `deadline`. A signal sent later is buffered for the
/// next wait.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no {name:?} signal before {deadline:?}")]
pub struct WaitTimeout {
    /// The signal waited for.
    pub name: String,
    /// When the wait gave up (workflow time).
    pub deadline: SystemTime,
}

/// Future of [`WaitForSignal::timeout`] and [`WaitForSignal::deadline`].
pub struct WaitForSignalUntil<T> {
    wait: WaitForSignal<T>,
    deadline_ms: i64,
    timer: Option<Sleep>,
}

impl<T> Unpin for WaitForSignalUntil<T> {}

impl<T: DeserializeOwned> Future for WaitForSignalUntil<T> {
    type Output = Result<T, SignalWaitError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A signal already recorded wins, even past the deadline.
        if let Some(r) = self.wait.take(cx) {
            self.timer = None;
            return Poll::Ready(r.map_err(SignalWaitError::from));
        }
        // Built only when the wait actually times out (not on every poll).
        let timed_out = |w: &WaitForSignalUntil<T>| {
            Poll::Ready(Err(SignalWaitError::Timeout(WaitTimeout {
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
            this.timer = Some(Sleep {
                core: this.wait.core.clone(),
                duration: Duration::from_millis((this.deadline_ms - now) as u64),
                seq: None,
            });
        }
        let timer = this.timer.as_mut().expect("set above");
        match Pin::new(timer).poll(cx) {
            Poll::Ready(Ok(())) => {
                self.timer = None;
                timed_out(&self)
            }
            Poll::Ready(Err(c)) => {
                self.timer = None;
                Poll::Ready(Err(SignalWaitError::Cancelled(c)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// How a child run failed to produce its result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChildError {
    /// The child's workflow id was already running.
    #[error("child could not start: {0}")]
    StartFailed(String),
    /// The child returned an error.
    #[error("child failed: {0}")]
    Failed(String),
    /// The child ended as cancelled.
    #[error("child cancelled: {0}")]
    Cancelled(String),
    /// The child was terminated.
    #[error("child terminated: {0}")]
    Terminated(String),
    /// The input could not be encoded or the result decoded.
    #[error(transparent)]
    Payload(#[from] PayloadError),
}

/// Future of [`WorkflowContext::child`]: the child's result.
pub struct ChildCall<C: WorkflowDefinition> {
    core: Rc<RefCell<Commands>>,
    workflow_id: String,
    input: Result<Payload, PayloadError>,
    policy: ParentClosePolicy,
    task_queue: Option<String>,
    seq: Option<u32>,
    _c: PhantomData<fn() -> C>,
}

impl<C: WorkflowDefinition> Unpin for ChildCall<C> {}

impl<C: WorkflowDefinition> ChildCall<C> {
    /// Runs the child on another task queue (default: this run's), i.e. on the engines that
    /// serve that queue.
    pub fn task_queue(mut self, name: impl Into<String>) -> Self {
        self.task_queue = Some(name.into());
        self
    }

    /// What happens to the child if this run closes first (default: terminate it).
    pub fn parent_close_policy(mut self, policy: ParentClosePolicy) -> Self {
        self.policy = policy;
        self
    }
}

impl<C: WorkflowDefinition> Future for ChildCall<C> {
    type Output = Result<C::Output, ChildError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let seq = match self.seq {
            Some(seq) => seq,
            None => {
                let input = match &self.input {
                    Ok(p) => p.clone(),
                    Err(e) => return Poll::Ready(Err(ChildError::Payload(e.clone()))),
                };
                let (id, policy, queue) = (
                    self.workflow_id.clone(),
                    self.policy,
                    self.task_queue.clone(),
                );
                let seq = self.core.borrow_mut().start_child(
                    C::NAME.to_string(),
                    id,
                    input,
                    policy,
                    queue,
                );
                self.seq = Some(seq);
                seq
            }
        };
        let mut core = self.core.borrow_mut();
        let Some(state) = core.children.get_mut(&seq) else {
            return Poll::Pending;
        };
        match state {
            ChildState::Started { waker, .. } => {
                *waker = Some(cx.waker().clone());
                Poll::Pending
            }
            ChildState::Closed(_) => {
                let ChildState::Closed(outcome) = std::mem::replace(state, ChildState::Taken)
                else {
                    unreachable!("matched Closed above")
                };
                Poll::Ready(match outcome {
                    ChildOutcome::Completed(p) => p.decode().map_err(ChildError::Payload),
                    ChildOutcome::Failed(m) => Err(ChildError::Failed(m)),
                    ChildOutcome::Cancelled(m) => Err(ChildError::Cancelled(m)),
                    ChildOutcome::Terminated(m) => Err(ChildError::Terminated(m)),
                    ChildOutcome::StartFailed(m) => Err(ChildError::StartFailed(m)),
                })
            }
            ChildState::Taken => Poll::Pending,
        }
    }
}
