//! The command side of one run: what workflow code asked for during a workflow task, and the
//! lifecycle of each activity and timer it started.
//!
//! Each command kind owns a small state machine:
//!
//! ```text
//! activity: Scheduled --(ActivityResolved input)--> Resolved --(future polled)--> Taken
//! timer:    Started --(TimerFired input)--> Fired --(future polled)--> Taken
//!           Started --(future dropped / condition met)--> Cancelled
//! ```
//!
//! Commands are recorded as the [`EventKind`]s they become; on replay the same list is compared
//! with the recorded one (see `machine.rs`).

use crate::definition::Unfinished;
use crate::history::{
    ActivityOptions, ChildOutcome, EventKind, ParentClosePolicy, ParentInfo, UpdateOutcome,
};
use crate::payload::Payload;
use crate::store::{ActivityResolution, UpdateState};
use std::collections::HashMap;
use std::task::Waker;

/// Lifecycle of one activity, keyed by its command sequence number.
#[derive(Debug)]
pub(crate) enum ActivityState {
    /// Scheduled, waiting for its resolution.
    Scheduled { waker: Option<Waker> },
    /// Resolved; the awaiting future has not seen it yet.
    Resolved(ActivityResolution),
    /// The future took the resolution.
    Taken,
    /// Cancelled by a cancellation request before it resolved.
    Cancelled,
}

/// Lifecycle of one durable timer.
#[derive(Debug)]
pub(crate) enum TimerState {
    /// Started, waiting to fire.
    Started { waker: Option<Waker> },
    /// Fired; the awaiting future has not seen it yet.
    Fired,
    /// Cancelled before it fired, or consumed.
    Done,
    /// Cancelled by a cancellation request; the awaiting future has not seen it yet.
    CancelledByRequest,
}

/// Lifecycle of one child run.
///
/// ```text
/// child: Started --(ChildClosed input)--> Closed --(future polled)--> Taken
/// ```
#[derive(Debug)]
pub(crate) enum ChildState {
    Started {
        workflow_id: String,
        policy: ParentClosePolicy,
        waker: Option<Waker>,
    },
    Closed(ChildOutcome),
    Taken,
}

/// How the main method ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Close {
    Completed(Payload),
    Failed(String),
    Cancelled(String),
    ContinuedAsNew(Payload),
}

/// A running async handler, for `all_handlers_finished` and unfinished-handler warnings.
#[derive(Debug, Clone)]
pub(crate) struct LiveHandler {
    pub id: u64,
    pub description: String,
    pub unfinished: Unfinished,
}

/// Deterministic randomness (SplitMix64), seeded from the `WorkflowStarted` event.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Everything a run's workflow code shares with the engine during a task (type-erased: it does
/// not know the workflow type).
#[derive(Debug)]
pub(crate) struct Commands {
    pub workflow_id: String,
    pub run_id: String,
    next_seq: u32,
    /// Commands issued in the current task, in order.
    pub issued: Vec<EventKind>,
    pub activities: HashMap<u32, ActivityState>,
    pub timers: HashMap<u32, TimerState>,
    /// Wakers of `wait_condition` futures, woken on every state change.
    conditions: Vec<Waker>,
    pub task_time_ms: i64,
    pub rng: Rng,
    pub live_handlers: Vec<LiveHandler>,
    next_handler_id: u64,
    /// Update state changes of the current task, reported to the store.
    pub update_states: Vec<(String, String, UpdateState)>,
    pub close: Option<Close>,
    /// Set while the run is being dropped: futures dropped then must not issue commands.
    pub tearing_down: bool,
    pub history_len: u64,
    pub suggest_continue_as_new: bool,
    /// Why cancellation was requested, once it was.
    pub cancel_requested: Option<String>,
    /// Signals with no handler, kept (name, args) until a handler for them exists.
    pub buffered_signals: Vec<(String, Payload)>,
    /// Nondeterminism found while applying inputs (a resolution nobody asked for).
    pub mismatch: Option<String>,
    /// On replay: positions (in the task's recorded commands) and names of patch markers.
    pub replay_patches: Option<Vec<(usize, String)>>,
    /// `ctx.patched(id)` answers, fixed for the life of the run.
    pub patches: HashMap<String, bool>,
    pub children: HashMap<u32, ChildState>,
    /// The parent of this run, if it is a child.
    pub parent: Option<ParentInfo>,
}

impl Commands {
    pub fn new(workflow_id: String, run_id: String, seed: u64) -> Self {
        Commands {
            workflow_id,
            run_id,
            next_seq: 1,
            issued: Vec::new(),
            activities: HashMap::new(),
            timers: HashMap::new(),
            conditions: Vec::new(),
            task_time_ms: 0,
            rng: Rng::new(seed),
            live_handlers: Vec::new(),
            next_handler_id: 1,
            update_states: Vec::new(),
            close: None,
            tearing_down: false,
            history_len: 0,
            suggest_continue_as_new: false,
            cancel_requested: None,
            buffered_signals: Vec::new(),
            mismatch: None,
            replay_patches: None,
            patches: HashMap::new(),
            children: HashMap::new(),
            parent: None,
        }
    }

    fn next_seq(&mut self) -> u32 {
        let s = self.next_seq;
        self.next_seq += 1;
        s
    }

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

    /// `ctx.patched(id)`: true in new executions (recording a marker), and on replay exactly
    /// when the history recorded the marker at this point. Memoized per run.
    pub fn patched(&mut self, id: &str, deprecated: bool) -> bool {
        if let Some(&known) = self.patches.get(id) {
            return known;
        }
        let name = crate::machine::patch_marker_name(id);
        let decision = match &self.replay_patches {
            None => true,
            Some(markers) => {
                deprecated
                    || markers
                        .iter()
                        .any(|(i, n)| *i >= self.issued.len() && *n == name)
            }
        };
        if decision {
            let value = Payload::encode(&deprecated).expect("a bool always encodes");
            // Patch markers use seq 0 so that adding or removing one never shifts the
            // sequence numbers of the commands after it.
            self.issued.push(EventKind::MarkerRecorded {
                seq: 0,
                name,
                value,
            });
        }
        self.patches.insert(id.to_string(), decision);
        decision
    }

    /// Records a `ChildWorkflowStarted` command (the run id is filled in at commit).
    pub fn start_child(
        &mut self,
        workflow_type: String,
        workflow_id: String,
        input: Payload,
        policy: ParentClosePolicy,
        task_queue: Option<String>,
    ) -> u32 {
        let seq = self.next_seq();
        self.issued.push(EventKind::ChildWorkflowStarted {
            seq,
            workflow_id: workflow_id.clone(),
            workflow_type,
            run_id: String::new(),
            input,
            parent_close_policy: policy,
            task_queue,
        });
        self.children.insert(
            seq,
            ChildState::Started {
                workflow_id,
                policy,
                waker: None,
            },
        );
        seq
    }

    /// Applies a child's end (an input of the task).
    pub fn resolve_child(&mut self, seq: u32, outcome: ChildOutcome) {
        match self.children.get_mut(&seq) {
            Some(state @ ChildState::Started { .. }) => {
                if let ChildState::Started { waker: Some(w), .. } = std::mem::replace(state, ChildState::Closed(outcome)) {
                    w.wake();
                }
            }
            _ => self.record_mismatch(format!(
                "history closes child #{seq}, which the workflow code did not start (or already saw closed)"
            )),
        }
    }

    /// Children still running, with their parent close policies.
    pub fn open_children(&self) -> Vec<(String, ParentClosePolicy)> {
        let mut open: Vec<(u32, String, ParentClosePolicy)> = self
            .children
            .iter()
            .filter_map(|(seq, c)| match c {
                ChildState::Started {
                    workflow_id,
                    policy,
                    ..
                } => Some((*seq, workflow_id.clone(), *policy)),
                _ => None,
            })
            .collect();
        open.sort_by_key(|c| c.0);
        open.into_iter().map(|(_, id, p)| (id, p)).collect()
    }

    /// Records an `ExternalSignalSent` command.
    pub fn signal_external(&mut self, workflow_id: String, name: String, args: Payload) -> u32 {
        let seq = self.next_seq();
        self.issued.push(EventKind::ExternalSignalSent {
            seq,
            workflow_id,
            name,
            args,
        });
        seq
    }

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
            _ => self.record_mismatch(format!(
                "history resolves activity #{seq}, which the workflow code did not schedule (or already saw resolved)"
            )),
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

    /// Takes the oldest buffered signal named `name`.
    pub fn take_signal(&mut self, name: &str) -> Option<Payload> {
        let i = self.buffered_signals.iter().position(|(n, _)| n == name)?;
        Some(self.buffered_signals.remove(i).1)
    }

    /// Applies a cancellation request: every pending activity and timer is cancelled (their
    /// futures see it), and running children (but abandoned ones) are asked to cancel, in
    /// sequence order so replay issues the same commands.
    pub fn request_cancel(&mut self, reason: String) {
        if self.cancel_requested.is_some() {
            return;
        }
        self.cancel_requested = Some(reason);
        let mut seqs: Vec<u32> = self
            .activities
            .iter()
            .filter(|(_, st)| matches!(st, ActivityState::Scheduled { .. }))
            .map(|(seq, _)| *seq)
            .collect();
        seqs.sort_unstable();
        for seq in seqs {
            if let Some(ActivityState::Scheduled { waker: Some(w) }) =
                self.activities.insert(seq, ActivityState::Cancelled)
            {
                w.wake();
            }
            self.issued.push(EventKind::ActivityCancelled { seq });
        }
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
        let mut children: Vec<(u32, String)> = self
            .children
            .iter()
            .filter_map(|(seq, c)| match c {
                ChildState::Started {
                    workflow_id,
                    policy,
                    ..
                } if *policy != ParentClosePolicy::Abandon => Some((*seq, workflow_id.clone())),
                _ => None,
            })
            .collect();
        children.sort_unstable();
        for (seq, workflow_id) in children {
            self.issued
                .push(EventKind::ChildCancelRequested { seq, workflow_id });
        }
        self.state_changed();
    }

    pub fn record_mismatch(&mut self, message: String) {
        if self.mismatch.is_none() {
            self.mismatch = Some(message);
        }
    }

    /// Registers a `wait_condition` future to re-check after the next state change.
    pub fn wait_for_change(&mut self, waker: &Waker) {
        if !self.conditions.iter().any(|w| w.will_wake(waker)) {
            self.conditions.push(waker.clone());
        }
    }

    /// Wakes every `wait_condition` future: state (or handler set) changed.
    pub fn state_changed(&mut self) {
        for w in self.conditions.drain(..) {
            w.wake();
        }
    }

    pub fn handler_started(&mut self, description: String, unfinished: Unfinished) -> u64 {
        let id = self.next_handler_id;
        self.next_handler_id += 1;
        self.live_handlers.push(LiveHandler {
            id,
            description,
            unfinished,
        });
        id
    }

    pub fn handler_finished(&mut self, id: u64) {
        self.live_handlers.retain(|h| h.id != id);
        self.state_changed();
    }

    /// Records an update's completion (`UpdateCompleted` command and its store state).
    pub fn complete_update(&mut self, update_id: String, name: String, outcome: UpdateOutcome) {
        self.update_states.push((
            update_id.clone(),
            name,
            UpdateState::Completed(outcome.clone()),
        ));
        self.issued
            .push(EventKind::UpdateCompleted { update_id, outcome });
    }

    /// Records how the main method ended (the closing command).
    pub fn close_run(&mut self, close: Close) {
        if self.close.is_some() {
            return;
        }
        let event = match &close {
            Close::Completed(result) => EventKind::WorkflowCompleted {
                result: result.clone(),
            },
            Close::Failed(message) => EventKind::WorkflowFailed {
                message: message.clone(),
            },
            Close::Cancelled(reason) => EventKind::WorkflowCancelled {
                reason: reason.clone(),
            },
            Close::ContinuedAsNew(input) => EventKind::ContinuedAsNew {
                // The new run id is chosen when the task commits; replay compares kinds only.
                new_run_id: String::new(),
                input: input.clone(),
            },
        };
        self.issued.push(event);
        self.close = Some(close);
        self.state_changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_per_seed() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng::new(8).next_u64(), xs[0]);
    }

    #[test]
    fn resolution_for_unknown_activity_is_a_mismatch() {
        let mut c = Commands::new("w".into(), "r".into(), 1);
        c.resolve_activity(
            4,
            ActivityResolution::Completed {
                result: Payload::encode(&()).unwrap(),
                attempts: 1,
            },
        );
        assert!(c.mismatch.as_deref().unwrap().contains("#4"));
    }
}
