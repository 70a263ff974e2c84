//! A schedule's stored state (what the store keeps, opaque to it) and the pure decisions made
//! on it: when to look at it next, which fire times are due, what describing it reports.

use super::policy::{ScheduleAction, ScheduleDescription, SchedulePolicies, ScheduledAction};
use super::spec::ScheduleSpec;
use crate::data::activity::duration_ms;
use crate::data::payload::{Payload, PayloadError};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many recent actions a schedule remembers.
const RECENT: usize = 10;
/// How often a schedule with buffered actions checks whether it may start the next one.
const BUFFER_RECHECK_MS: i64 = 1_000;
/// How soon fire times claimed by an engine that then went quiet are carried out by another
/// (the claimer crashed between claiming them and recording their actions).
const CLAIM_RECHECK_MS: i64 = 30_000;
/// The most fire times processed in one pass (an absurdly fine interval after an outage).
const MAX_FIRES_PER_PASS: usize = 10_000;

/// The stored state of a schedule. Field order is the storage format: append only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScheduleState {
    pub spec: ScheduleSpec,
    pub action: ScheduleAction,
    pub policies: SchedulePolicies,
    pub paused: bool,
    pub note: String,
    /// Fire times up to here have been handled.
    pub processed_until_ms: i64,
    /// Fire times waiting for the running action to end.
    pub buffered: VecDeque<i64>,
    /// Actions that may still be running.
    pub active: Vec<String>,
    pub recent: VecDeque<ScheduledAction>,
    pub skipped: u64,
    pub missed: u64,
    pub last_error: Option<String>,
    /// Fire times an engine claimed (a version-checked save) and is carrying out; only that
    /// engine starts their actions, so that engines sharing a store start each once.
    #[serde(default)]
    pub claimed: Vec<i64>,
}

impl ScheduleState {
    /// A new schedule, created at `now_ms`.
    pub fn new(
        spec: ScheduleSpec,
        action: ScheduleAction,
        policies: SchedulePolicies,
        now_ms: i64,
    ) -> Self {
        ScheduleState {
            spec,
            action,
            policies,
            paused: false,
            note: String::new(),
            processed_until_ms: now_ms,
            buffered: VecDeque::new(),
            active: Vec::new(),
            recent: VecDeque::new(),
            skipped: 0,
            missed: 0,
            last_error: None,
            claimed: Vec::new(),
        }
    }

    /// The state as stored.
    pub fn encode(&self) -> Result<Payload, PayloadError> {
        Payload::encode(self)
    }

    /// The stored state.
    pub fn decode(data: &Payload) -> Result<Self, PayloadError> {
        data.decode()
    }

    /// When the scheduler must look at this schedule next (`None` while paused).
    pub fn next_check(&self, now_ms: i64) -> Option<i64> {
        if self.paused {
            return None;
        }
        let fire = self.spec.next_after(self.processed_until_ms);
        let buffer =
            (!self.buffered.is_empty()).then_some(now_ms.saturating_add(BUFFER_RECHECK_MS));
        let claimed = (!self.claimed.is_empty()).then_some(now_ms.saturating_add(CLAIM_RECHECK_MS));
        [fire, buffer, claimed].into_iter().flatten().min()
    }

    /// The fire times due at `now_ms` that are still within the catch-up window, in order;
    /// marks everything up to them processed and counts the older ones as missed.
    pub fn take_due_fires(&mut self, now_ms: i64) -> Vec<i64> {
        let mut fires = Vec::new();
        let mut t = self.processed_until_ms;
        while let Some(f) = self.spec.next_after(t).filter(|f| *f <= now_ms) {
            fires.push(f);
            t = f;
            if fires.len() >= MAX_FIRES_PER_PASS {
                break;
            }
        }
        self.processed_until_ms = t.max(self.processed_until_ms);
        let oldest_allowed = now_ms.saturating_sub(duration_ms(self.policies.catchup_window));
        let before = fires.len();
        fires.retain(|f| *f >= oldest_allowed);
        self.missed += (before - fires.len()) as u64;
        fires
    }

    /// Records an action started for `fire_ms` as `workflow_id`.
    pub fn started(&mut self, fire_ms: i64, workflow_id: String) {
        self.last_error = None;
        self.active.push(workflow_id.clone());
        self.recent.push_back(ScheduledAction {
            fire_ms,
            workflow_id,
        });
        while self.recent.len() > RECENT {
            self.recent.pop_front();
        }
    }

    /// What describing the schedule `schedule_id` reports at `now_ms` (its running actions
    /// refreshed by the caller).
    pub fn describe(self, schedule_id: String, now_ms: i64) -> ScheduleDescription {
        let mut next_fires = Vec::new();
        let mut t = now_ms.max(self.processed_until_ms);
        while next_fires.len() < 5 {
            match self.spec.next_after(t) {
                Some(f) => {
                    next_fires.push(to_time(f));
                    t = f;
                }
                None => break,
            }
        }
        ScheduleDescription {
            schedule_id,
            spec: self.spec,
            action: self.action,
            policies: self.policies,
            paused: self.paused,
            note: self.note,
            next_fires,
            recent_actions: self.recent.into_iter().collect(),
            running: self.active,
            buffered: self.buffered.len(),
            skipped: self.skipped,
            missed_catchup: self.missed,
            last_error: self.last_error,
        }
    }
}

fn to_time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
