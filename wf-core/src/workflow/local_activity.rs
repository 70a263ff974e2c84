//! Local activities from the workflow's side: `ctx.activity(..).local()` asks the worker to
//! run the activity in its own process while the current workflow task is being processed,
//! instead of scheduling an activity task in the store.
//!
//! ```text
//! Requested --(LocalActivityResolved input: result or final failure)--> Resolved --(polled)--> Taken
//! Requested --(LocalActivityResolved input: Backoff)--> Resolved --(polled)--> (durable timer)
//!     --(timer fired)--> Requested (same seq, the next attempt)
//! Requested --(its scope cancelled, or the run's cancellation)--> Cancelled --(polled)--> CancelSeen
//! ```
//!
//! A request is not a history event: the worker runs the activities the code requested as soon
//! as the code blocks, hands their outcomes back to the run in the same task, and records each
//! as one `LocalActivityCompleted` event in the task's commit. On replay the recorded outcome
//! resolves the call and the activity is not run again. A call whose recorded outcome says
//! `Backoff` waits on an ordinary durable timer (recorded as `TimerStarted`), then asks for the
//! next attempt under the same sequence number (one call, one idempotency key). A call cancelled before the worker ran it is abandoned: nothing is recorded.

use super::activity::{resolution_result, ActivityCall, CancelCause};
use super::commands::Commands;
use super::timer::Sleep;
use crate::data::activity::{ActivityOptions, ActivityResolution, LocalOutcome};
use crate::data::payload::Payload;
use crate::error::ActivityCallError;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// What the code asked the worker to run in this workflow task.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LocalRequest {
    /// Sequence number of the call.
    pub seq: u32,
    /// Activity wire name.
    pub name: String,
    /// Encoded input.
    pub input: Payload,
    /// Start-to-close and retry policy.
    pub options: ActivityOptions,
    /// The attempt to start from (above 1 after a durable backoff).
    pub attempt: u32,
}

/// Lifecycle of one local activity call, keyed by its sequence number.
#[derive(Debug)]
pub(crate) enum LocalState {
    /// Requested; the worker has not handed back its outcome yet.
    Requested { name: String, waker: Option<Waker> },
    /// The worker (or, on replay, the history) handed back its outcome.
    Resolved {
        outcome: LocalOutcome,
        attempts: u32,
    },
    /// Cancelled before it ran; the awaiting future has not seen it yet.
    Cancelled(CancelCause),
    /// The future took the cancellation.
    CancelSeen,
    /// The future took the outcome.
    Taken,
}

/// The local part of an [`ActivityCall`]: which attempt comes next, and the durable timer it
/// waits on after a `Backoff`.
pub(crate) struct LocalCall {
    next_attempt: u32,
    backoff: Option<Sleep>,
    /// The backoff timer fired: ask again under the same sequence number (so the attempt's
    /// `idempotency_key` stays the same for the whole call).
    again: bool,
}

impl Commands {
    /// Records a request to run a local activity in this task: a new call (`seq` `None`), or
    /// the next attempt of call `seq` after its durable backoff. Returns its sequence number.
    pub fn request_local_activity(
        &mut self,
        seq: Option<u32>,
        name: String,
        input: Payload,
        options: ActivityOptions,
        attempt: u32,
    ) -> u32 {
        let seq = seq.unwrap_or_else(|| self.next_seq());
        self.locals.insert(
            seq,
            LocalState::Requested {
                name: name.clone(),
                waker: None,
            },
        );
        self.local_requests.push(LocalRequest {
            seq,
            name,
            input,
            options,
            attempt,
        });
        seq
    }

    /// Applies a local activity's outcome (an input of the task). An outcome for a call the
    /// code did not make, or made as a regular activity or under another name, is
    /// nondeterminism.
    pub fn resolve_local_activity(
        &mut self,
        seq: u32,
        name: String,
        outcome: LocalOutcome,
        attempts: u32,
    ) {
        match self.locals.get_mut(&seq) {
            Some(LocalState::Requested { name: asked, .. }) if *asked != name => {
                let asked = asked.clone();
                self.record_mismatch(format!(
                    "history records local activity #{seq} {name}, but the workflow code now calls local activity {asked} there"
                ));
            }
            Some(state @ LocalState::Requested { .. }) => {
                if let LocalState::Requested { waker: Some(w), .. } =
                    std::mem::replace(state, LocalState::Resolved { outcome, attempts })
                {
                    w.wake();
                }
            }
            // Abandoned by its cancellation before it ran (only possible in a history written
            // by other code, but harmless).
            Some(LocalState::Cancelled(_) | LocalState::CancelSeen) => {}
            _ if self.activities.contains_key(&seq) => self.record_mismatch(format!(
                "history records local activity #{seq} {name}, but the workflow code now schedules a regular activity there (was `.local()` removed?)"
            )),
            _ => self.record_mismatch(format!(
                "history records local activity #{seq} {name}, which the workflow code did not call (or already saw resolved)"
            )),
        }
    }

    /// Cancels local activity `seq` if it is still requested: it will not run. False if it is
    /// not a requested local activity.
    fn cancel_local(&mut self, seq: u32, cause: CancelCause) -> bool {
        if self.tearing_down || !matches!(self.locals.get(&seq), Some(LocalState::Requested { .. }))
        {
            return false;
        }
        if let Some(LocalState::Requested { waker: Some(w), .. }) =
            self.locals.insert(seq, LocalState::Cancelled(cause))
        {
            w.wake();
        }
        self.local_requests.retain(|r| r.seq != seq);
        true
    }

    /// Cancels local activity `seq` for its cancellation scope.
    pub(super) fn cancel_local_by_scope(&mut self, seq: u32) -> bool {
        self.cancel_local(seq, CancelCause::Scope)
    }

    /// Cancels every requested local activity (a run cancellation request), in sequence order.
    pub(super) fn cancel_locals_by_request(&mut self) {
        let mut seqs: Vec<u32> = self
            .locals
            .iter()
            .filter(|(_, st)| matches!(st, LocalState::Requested { .. }))
            .map(|(seq, _)| *seq)
            .collect();
        seqs.sort_unstable();
        for seq in seqs {
            self.cancel_local(seq, CancelCause::Run);
        }
    }

    /// The local activities requested in this task, for the worker to run.
    pub fn take_local_requests(&mut self) -> Vec<LocalRequest> {
        std::mem::take(&mut self.local_requests)
    }
}

impl<R> ActivityCall<R> {
    /// Runs the activity as a **local activity**: in the workflow worker's own process, while
    /// the current workflow task is being processed, with no activity task in the store; its
    /// outcome is recorded as one `LocalActivityCompleted` event in the task's commit. For
    /// short steps where a round trip through the store costs more than the step.
    ///
    /// - **At least once**: if the worker dies before the task commits, the next worker
    ///   replays the run and runs the activity again. Make it idempotent
    ///   (`ActivityContext::idempotency_key`).
    /// - **Retries** follow [`retry`](Self::retry) with backoff inside the task; when the wait
    ///   before the next attempt would outlast half the workflow task lease, the task records
    ///   the failure and the workflow waits on a durable timer, then runs the next attempt
    ///   (the attempt count is kept).
    /// - [`start_to_close`](Self::start_to_close) bounds each attempt (default: half the
    ///   workflow task lease); `schedule_to_close` and `heartbeat_timeout` do not apply, and
    ///   heartbeats are accepted and dropped.
    /// - A final failure is the same [`ActivityCallError`] a regular activity gives; a call
    ///   in a cancelled [`CancellationScope`](crate::CancellationScope) is abandoned.
    ///
    /// ```ignore
    /// let price = ctx.activity(Tools::quote, sku).local().await?;
    /// ```
    pub fn local(mut self) -> Self {
        self.local = Some(LocalCall {
            next_attempt: 1,
            backoff: None,
            again: false,
        });
        self
    }
}

impl<R: DeserializeOwned> ActivityCall<R> {
    /// [`Future::poll`] of a local call.
    pub(super) fn poll_local(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<R, ActivityCallError>> {
        loop {
            let local = self
                .local
                .as_mut()
                .expect("poll_local is called on local calls");
            if let Some(sleep) = local.backoff.as_mut() {
                let fired = Pin::new(sleep).poll(cx);
                match fired {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(_)) => {
                        local.backoff = None;
                        return Poll::Ready(Err(ActivityCallError::Cancelled {
                            activity: self.name.clone(),
                        }));
                    }
                    Poll::Ready(Ok(())) => {
                        local.backoff = None;
                        local.again = true;
                    }
                }
            }
            let attempt = local.next_attempt;
            let again = std::mem::take(&mut local.again);
            let seq = match self.seq {
                Some(seq) if !again => seq,
                asked => {
                    let input = match &self.input {
                        Ok(p) => p.clone(),
                        Err(e) => return Poll::Ready(Err(ActivityCallError::Payload(e.clone()))),
                    };
                    let mut core = self.core.borrow_mut();
                    // As for a regular activity (see `activity.rs`): the first thing the main
                    // method starts after an undelivered cancellation gets it, and nothing
                    // starts in a cancelled scope.
                    let first = attempt == 1;
                    if (first && core.polling_main && core.take_undelivered_cancel())
                        || core.scopes.cancelled()
                    {
                        return Poll::Ready(Err(ActivityCallError::Cancelled {
                            activity: self.name.clone(),
                        }));
                    }
                    let seq = core.request_local_activity(
                        asked,
                        self.name.clone(),
                        input,
                        self.options.clone(),
                        attempt,
                    );
                    drop(core);
                    self.seq = Some(seq);
                    seq
                }
            };
            let mut core = self.core.borrow_mut();
            let Some(state) = core.locals.get_mut(&seq) else {
                return Poll::Pending;
            };
            match std::mem::replace(state, LocalState::Taken) {
                LocalState::Requested { name, .. } => {
                    *state = LocalState::Requested {
                        name,
                        waker: Some(cx.waker().clone()),
                    };
                    return Poll::Pending;
                }
                LocalState::Resolved { outcome, attempts } => {
                    let resolution = match outcome {
                        LocalOutcome::Backoff { delay_ms, .. } => {
                            drop(core);
                            let local = self.local.as_mut().expect("a local call");
                            local.next_attempt = attempts.saturating_add(1);
                            local.backoff = Some(Sleep::new(
                                self.core.clone(),
                                Duration::from_millis(delay_ms),
                            ));
                            continue;
                        }
                        LocalOutcome::Completed(result) => {
                            ActivityResolution::Completed { result, attempts }
                        }
                        LocalOutcome::Failed(failure) => ActivityResolution::Failed {
                            failure,
                            attempts,
                            last_heartbeat: None,
                        },
                        LocalOutcome::TimedOut(timeout) => ActivityResolution::TimedOut {
                            timeout,
                            attempts,
                            last_heartbeat: None,
                        },
                    };
                    return Poll::Ready(resolution_result(&self.name, resolution));
                }
                LocalState::Cancelled(cause) => {
                    *state = LocalState::CancelSeen;
                    if cause == CancelCause::Run {
                        core.cancel_received();
                    }
                    return Poll::Ready(Err(ActivityCallError::Cancelled {
                        activity: self.name.clone(),
                    }));
                }
                LocalState::CancelSeen => {
                    *state = LocalState::CancelSeen;
                    return Poll::Pending;
                }
                LocalState::Taken => return Poll::Pending,
            }
        }
    }
}
