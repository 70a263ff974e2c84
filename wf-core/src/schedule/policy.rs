//! What a schedule starts and how it behaves under overlap and after an outage, and what
//! describing one reports.

use super::spec::ScheduleSpec;
use crate::data::payload::{Payload, PayloadError};
use crate::workflow::WorkflowDefinition;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// What a schedule does when an action is due while the previous one still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum OverlapPolicy {
    /// Skip this action (the default).
    #[default]
    Skip,
    /// Keep one action to start when the running one finishes; skip the rest.
    BufferOne,
    /// Keep every action and start them one after another.
    BufferAll,
    /// Start it anyway, concurrently.
    AllowAll,
    /// Cancel the running action, then start this one once it has ended.
    CancelOther,
}

/// How a schedule behaves under overlap and after an outage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchedulePolicies {
    /// Overlap policy.
    pub overlap: OverlapPolicy,
    /// Missed fire times older than this (after an outage or a slow scheduler) are dropped,
    /// not replayed; default one minute.
    pub catchup_window: Duration,
}

impl Default for SchedulePolicies {
    fn default() -> Self {
        SchedulePolicies {
            overlap: OverlapPolicy::Skip,
            catchup_window: Duration::from_secs(60),
        }
    }
}

/// Bytes the engine may append to a schedule's workflow id prefix: `-` and the fire time in
/// UTC (`-2026-01-01T09:30:00Z`, 21 bytes until the year 9999; 32 covers any time an `i64` of
/// milliseconds holds). A prefix may be at most
/// [`MAX_ID_BYTES`](crate::data::limits::MAX_ID_BYTES) less this.
pub const ACTION_ID_SUFFIX_BYTES: usize = 32;

/// What a schedule starts: a workflow of a given type with a fixed input. Each action's
/// workflow id is `<prefix>-<fire time in UTC>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleAction {
    /// The workflow type's wire name.
    pub workflow_type: String,
    /// Prefix of each action's workflow id.
    pub workflow_id_prefix: String,
    /// The encoded input.
    pub input: Payload,
    /// The task queue to start on (`None`: the scheduling engine's).
    #[serde(default)]
    pub task_queue: Option<String>,
}

impl ScheduleAction {
    /// Starts a `W` with `input`; workflow ids `<prefix>-<fire time>`.
    pub fn start<W: WorkflowDefinition>(
        prefix: impl Into<String>,
        input: &W::Input,
    ) -> Result<Self, PayloadError> {
        Ok(ScheduleAction {
            workflow_type: W::NAME.to_string(),
            workflow_id_prefix: prefix.into(),
            input: Payload::encode(input)?,
            task_queue: None,
        })
    }

    /// Starts the action's runs on task queue `name`.
    pub fn on_task_queue(mut self, name: impl Into<String>) -> Self {
        self.task_queue = Some(name.into());
        self
    }
}

/// One action a schedule took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduledAction {
    /// The fire time it was for (ms since the Unix epoch).
    pub fire_ms: i64,
    /// The workflow id it started.
    pub workflow_id: String,
}

/// What [`ScheduleHandle::describe`](crate::ScheduleHandle::describe) reports.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleDescription {
    /// The schedule id.
    pub schedule_id: String,
    /// When it fires.
    pub spec: ScheduleSpec,
    /// What it starts.
    pub action: ScheduleAction,
    /// Overlap and catch-up.
    pub policies: SchedulePolicies,
    /// Whether it is paused.
    pub paused: bool,
    /// The note given with the last pause or unpause.
    pub note: String,
    /// The next few fire times.
    pub next_fires: Vec<SystemTime>,
    /// The latest actions, oldest first.
    pub recent_actions: Vec<ScheduledAction>,
    /// Workflow ids of its actions still running.
    pub running: Vec<String>,
    /// Actions waiting for the running one to end.
    pub buffered: usize,
    /// Actions skipped by the overlap policy.
    pub skipped: u64,
    /// Fire times dropped because they were older than the catch-up window.
    pub missed_catchup: u64,
    /// The last error starting an action (e.g. an unregistered workflow type).
    pub last_error: Option<String>,
}
