//! The bodies of `/_activities/*`: reports for an attempt by its task token (asynchronous
//! completion, and the outcome of an attempt an outside worker polled), the poll for a task
//! and the task it answers, the heartbeat's answer.

use serde::{Deserialize, Serialize};
use wf_core::ActivityTaskLease;

/// `POST /_activities/complete`, `/_activities/fail`, `/_activities/heartbeat`: report for
/// the activity attempt a task token names.
///
/// `fail` takes the error as `error: {"message", "kind", "non_retryable"}` or flat, as
/// `message` with `retryable` (default true) and `kind`; its `details`, if any, are recorded
/// as the attempt's last heartbeat first (what the next attempt reads).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityReportBody<V> {
    /// The attempt's task token (`ActivityContext::task_token`, or a polled task's).
    pub token: String,
    /// `complete`: the activity's result (absent: `null`, the unit value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<V>,
    /// `fail`: the activity's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ActivityErrorBody>,
    /// `heartbeat`: progress details for the next attempt (absent: `null`); `fail`: the same,
    /// recorded before the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<V>,
    /// `fail`, flat form: what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `fail`, flat form: whether the retry policy may try again (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// `fail`, flat form: a kind the retry policy's non-retryable kinds can name (default
    /// `retryable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl<V> ActivityReportBody<V> {
    /// A report of nothing yet for `token`.
    pub fn new(token: impl Into<String>) -> Self {
        ActivityReportBody {
            token: token.into(),
            result: None,
            error: None,
            details: None,
            message: None,
            retryable: None,
            kind: None,
        }
    }

    /// The `fail` route's error, in either form; `None` when the body has neither.
    pub fn failure(&self) -> Option<ActivityErrorBody> {
        if let Some(error) = &self.error {
            return Some(error.clone());
        }
        self.message.as_ref().map(|message| ActivityErrorBody {
            message: message.clone(),
            kind: self.kind.clone(),
            non_retryable: !self.retryable.unwrap_or(true),
        })
    }
}

/// An activity's error in [`ActivityReportBody`]: `{"message", "kind", "non_retryable"}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityErrorBody {
    /// What went wrong.
    pub message: String,
    /// A kind retry policies can name (default `retryable`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Never retry it (default false).
    #[serde(default)]
    pub non_retryable: bool,
}

impl ActivityErrorBody {
    /// The body of an activity error.
    pub fn of(error: &wf_core::ActivityError) -> ActivityErrorBody {
        ActivityErrorBody {
            message: error.message.clone(),
            kind: Some(error.kind.clone()),
            non_retryable: error.non_retryable,
        }
    }

    /// The activity error it carries.
    pub fn into_error(self) -> wf_core::ActivityError {
        wf_core::ActivityError {
            kind: self.kind.unwrap_or_else(|| "retryable".into()),
            message: self.message,
            non_retryable: self.non_retryable,
        }
    }
}

/// `POST /_activities/poll`: lease one activity task for a worker outside the engine,
/// waiting up to `wait_ms` (default 20 s, at most 50 s) for one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityPollBody {
    /// The task queue the worker serves (it also takes activities sent to no queue).
    pub task_queue: String,
    /// The activity names it runs (at least one).
    pub names: Vec<String>,
    /// How long to wait for a task, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// Who polls, for the logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

/// The answer to `POST /_activities/poll` with a task (200): the attempt is the caller's
/// until it completes, fails or misses a deadline. Times in engine-clock milliseconds (since
/// the Unix epoch for the system clock).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActivityTaskBody<V> {
    /// The attempt's task token, for `complete`, `fail` and `heartbeat`.
    pub token: String,
    /// The activity's name.
    pub name: String,
    /// Its input: the workflow's argument (an array for several).
    pub input: V,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The workflow id of the run that scheduled it.
    pub workflow_id: String,
    /// That run.
    pub run_id: String,
    /// When the workflow scheduled it.
    pub scheduled_ms: i64,
    /// When this attempt started.
    pub started_ms: i64,
    /// When this attempt times out.
    pub start_to_close_deadline_ms: i64,
    /// When the activity times out for good, if the workflow set a schedule-to-close.
    pub schedule_to_close_deadline_ms: Option<i64>,
    /// Heartbeat at least this often (milliseconds), if the workflow set a heartbeat timeout.
    pub heartbeat_timeout_ms: Option<u64>,
    /// The last heartbeat's details, of an earlier attempt (`null`: none).
    pub last_heartbeat: Option<V>,
    /// The previous attempt's failure, if this is a retry.
    pub last_failure: Option<String>,
}

impl<V> ActivityTaskBody<V> {
    /// The body of `lease`, with its payloads turned into `V` by `value`.
    pub fn of<E>(
        lease: ActivityTaskLease,
        value: impl Fn(wf_core::Payload) -> Result<V, E>,
    ) -> Result<ActivityTaskBody<V>, E> {
        Ok(ActivityTaskBody {
            input: value(lease.input)?,
            last_heartbeat: lease.last_heartbeat.map(&value).transpose()?,
            token: lease.token,
            name: lease.name,
            attempt: lease.attempt,
            workflow_id: lease.workflow_id,
            run_id: lease.run_id,
            scheduled_ms: lease.scheduled_ms,
            started_ms: lease.started_ms,
            start_to_close_deadline_ms: lease.start_to_close_deadline_ms,
            schedule_to_close_deadline_ms: lease.schedule_to_close_deadline_ms,
            heartbeat_timeout_ms: lease
                .heartbeat_timeout
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            last_failure: lease.last_failure,
        })
    }
}

impl ActivityTaskBody<wf_core::Payload> {
    /// The lease this body carries (what the remote client's poll returns).
    pub fn into_lease(self) -> ActivityTaskLease {
        ActivityTaskLease {
            token: self.token,
            name: self.name,
            input: self.input,
            attempt: self.attempt,
            workflow_id: self.workflow_id,
            run_id: self.run_id,
            scheduled_ms: self.scheduled_ms,
            started_ms: self.started_ms,
            start_to_close_deadline_ms: self.start_to_close_deadline_ms,
            schedule_to_close_deadline_ms: self.schedule_to_close_deadline_ms,
            heartbeat_timeout: self
                .heartbeat_timeout_ms
                .map(std::time::Duration::from_millis),
            last_heartbeat: self.last_heartbeat,
            last_failure: self.last_failure,
        }
    }
}

/// What `heartbeat` answers in `status` when the attempt is not open any more.
pub const HEARTBEAT_NOT_OPEN: &str = "not_open";

/// The answer to `POST /_activities/heartbeat` (200): `{"status": "recorded",
/// "cancel_requested": false}`, or, when the attempt is not open any more (the workflow
/// cancelled the activity, its run closed, it timed out and was retried),
/// `{"status": "not_open", "cancel_requested": true, "message"}`: stop, its result would be
/// refused. An engine's own activity sees the same through `ActivityContext::cancelled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityHeartbeatReply {
    /// `recorded` or [`HEARTBEAT_NOT_OPEN`].
    pub status: String,
    /// Whether the activity should stop.
    pub cancel_requested: bool,
    /// Why the attempt is not open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
