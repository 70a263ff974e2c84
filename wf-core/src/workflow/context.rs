//! `WorkflowContext`: everything workflow code may touch. State goes through closures so no
//! borrow lives across an `.await`; time, randomness and ids come from the run's command log
//! so they replay identically. Each command kind adds its own methods in its own file
//! (`ctx.activity` in `activity.rs`, `ctx.sleep` in `timer.rs`, ...).

use super::commands::Commands;
use super::definition::WorkflowDefinition;
use crate::error::WorkflowError;
use std::cell::RefCell;
use std::rc::Rc;
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

    /// The workflow's time: the start of the current workflow task, identical on replay.
    pub fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(u64::try_from(self.now_ms()).unwrap_or(0))
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

    /// This run's attempt under the retry policy its start set
    /// ([`StartOptions::retry_policy`](crate::StartOptions::retry_policy)): 1 for the first run
    /// and for a run that continued as new, 2 for the first retry, and so on.
    pub fn attempt(&self) -> u32 {
        self.core.borrow().attempt
    }

    /// Events in this run's history so far.
    pub fn history_length(&self) -> u64 {
        self.core.borrow().history_len
    }

    /// True once the history reaches 10,240 events or 10 MiB: time to continue as new.
    pub fn continue_as_new_suggested(&self) -> bool {
        self.core.borrow().suggest_continue_as_new
    }
}

impl<W: WorkflowDefinition> WorkflowContext<W> {
    /// The error to return from `run` to continue as a new run with `input` (same workflow id,
    /// fresh history; signal and update dedupe ids carry over):
    /// `return Err(ctx.continue_as_new(&input));`
    pub fn continue_as_new(&self, input: &W::Input) -> WorkflowError {
        match W::encode_input(input) {
            Ok(p) => WorkflowError::ContinueAsNew(p),
            Err(e) => WorkflowError::Payload(e),
        }
    }
}
