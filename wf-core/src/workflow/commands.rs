//! The command side of one run: what its workflow code asked for during the current workflow
//! task, and the bookkeeping every command kind shares (sequence numbers, the wake-ups of
//! `wait_condition`, the handlers still running, how the main method ended).
//!
//! Each command kind keeps its own lifecycle in its own file (`activity.rs`, `timer.rs`,
//! `child.rs`, ...), as `impl Commands` blocks over its table here. Commands are recorded as
//! the [`EventKind`]s they become; on replay the same list is compared with the recorded one
//! (see `replay`).

use super::activity::ActivityState;
use super::blocked::Blocked;
use super::child::ChildState;
use super::definition::Unfinished;
use super::local_activity::{LocalRequest, LocalState};
use super::rng::Rng;
use super::scope::ActiveScopes;
use super::signal::Signal;
use super::stream::StreamState;
use super::timer::TimerState;
use crate::data::history::EventKind;
use crate::data::payload::Payload;
use crate::data::run::ParentInfo;
use crate::data::update::{UpdateChange, UpdateOutcome, UpdateState};
use std::collections::HashMap;
use std::task::Waker;

/// How the main method ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Close {
    Completed(Payload),
    /// The message and the error's code (`WorkflowError::code`), its type for a retry policy.
    Failed(String, &'static str),
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

/// Everything a run's workflow code shares with the engine during a task (type-erased: it does
/// not know the workflow type).
#[derive(Debug)]
pub(crate) struct Commands {
    pub workflow_id: String,
    pub run_id: String,
    /// The parent of this run, if it is a child.
    pub parent: Option<ParentInfo>,
    next_seq: u32,
    /// Commands issued in the current task, in order.
    pub issued: Vec<EventKind>,
    pub activities: HashMap<u32, ActivityState>,
    /// Local activity calls (see `local_activity.rs`).
    pub locals: HashMap<u32, LocalState>,
    /// Local activities requested in the current task, for the worker to run.
    pub local_requests: Vec<LocalRequest>,
    pub timers: HashMap<u32, TimerState>,
    pub children: HashMap<u32, ChildState>,
    /// Waits (`wait_for_signal`, `wait_condition`) the code made so far, for their
    /// `WaitTimeout::call_index`.
    pub waits: u32,
    /// Wakers of `wait_condition` futures, woken on every state change.
    conditions: Vec<Waker>,
    pub task_time_ms: i64,
    pub rng: Rng,
    pub live_handlers: Vec<LiveHandler>,
    next_handler_id: u64,
    /// Update state changes of the current task, reported to the store.
    pub update_states: Vec<UpdateChange>,
    pub close: Option<Close>,
    /// Set while the run is being dropped: futures dropped then must not issue commands.
    pub tearing_down: bool,
    pub history_len: u64,
    /// This run's attempt under the start's retry policy, from 1.
    pub attempt: u32,
    pub suggest_continue_as_new: bool,
    /// Why cancellation was requested, once it was.
    pub cancel_requested: Option<String>,
    /// The main method has not received the cancellation request yet: the first activity,
    /// timer or wait it starts gets it (see `cancel.rs`).
    pub cancel_undelivered: bool,
    /// The waits made before the cancellation request (their call indexes are at most this):
    /// those still pending then are interrupted by it.
    pub waits_before_cancel: u32,
    /// Set by the executor while it polls the main method.
    pub polling_main: bool,
    /// Waits of the main method interrupted by the cancellation request and still alive: when
    /// the main method is blocked with one, the run ends as cancelled.
    pub interrupted_main_waits: u32,
    /// Signals with no handler, kept (name, args) until a handler for them exists.
    pub buffered_signals: Vec<Signal>,
    /// Nondeterminism found while applying inputs (a resolution nobody asked for).
    pub mismatch: Option<String>,
    /// On replay: positions (in the task's recorded commands) and names of patch markers.
    pub replay_patches: Option<Vec<(usize, String)>>,
    /// `ctx.patched(id)` answers, fixed for the life of the run.
    pub patches: HashMap<String, bool>,
    /// The cancellation scopes whose futures are being polled (see `scope.rs`).
    pub scopes: ActiveScopes,
    /// The waits each part of the run is blocked in (see `blocked.rs`).
    pub blocked: Blocked,
    /// What the code wrote to each stream so far (see `stream.rs`).
    pub streams: HashMap<String, StreamState>,
}

impl Commands {
    pub fn new(workflow_id: String, run_id: String, seed: u64) -> Self {
        Commands {
            workflow_id,
            run_id,
            parent: None,
            next_seq: 1,
            issued: Vec::new(),
            activities: HashMap::new(),
            locals: HashMap::new(),
            local_requests: Vec::new(),
            timers: HashMap::new(),
            children: HashMap::new(),
            waits: 0,
            conditions: Vec::new(),
            task_time_ms: 0,
            rng: Rng::new(seed),
            live_handlers: Vec::new(),
            next_handler_id: 1,
            update_states: Vec::new(),
            close: None,
            tearing_down: false,
            history_len: 0,
            attempt: 1,
            suggest_continue_as_new: false,
            cancel_requested: None,
            cancel_undelivered: false,
            waits_before_cancel: 0,
            polling_main: false,
            interrupted_main_waits: 0,
            buffered_signals: Vec::new(),
            mismatch: None,
            replay_patches: None,
            patches: HashMap::new(),
            scopes: ActiveScopes::default(),
            blocked: Blocked::default(),
            streams: HashMap::new(),
        }
    }

    /// The sequence number of the next command (activity, timer, child, external signal).
    pub(super) fn next_seq(&mut self) -> u32 {
        let s = self.next_seq;
        self.next_seq += 1;
        // A command started inside cancellation scopes belongs to them.
        self.scopes.enlist(s);
        s
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

    /// Records an update's state change for the store (accepted, rejected...).
    pub fn update_state(&mut self, update_id: String, name: String, state: UpdateState) {
        self.update_states.push(UpdateChange {
            update_id,
            name,
            state,
        });
    }

    /// Records an update's completion (`UpdateCompleted` command and its store state).
    pub fn complete_update(&mut self, update_id: String, name: String, outcome: UpdateOutcome) {
        self.update_states.push(UpdateChange {
            update_id: update_id.clone(),
            name,
            state: UpdateState::Completed(outcome.clone()),
        });
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
            Close::Failed(message, _) => EventKind::WorkflowFailed {
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
