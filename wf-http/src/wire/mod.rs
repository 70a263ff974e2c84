//! The bodies of requests and responses, shared by the server and the remote client. Each
//! is generic over how values travel: `serde_json::Value` in JSON bodies, [`Payload`] (the
//! MessagePack bytes as they are, a `bin`) in `application/msgpack` bodies.
//!
//! The activities' bodies live in `activities.rs`, the batches' in `batches.rs`, the feed's in
//! `feed.rs`, the flow limits' in `flow.rs`, the queues of workflow starts' in `queues.rs`.
//!
//! [`Payload`]: wf_core::Payload

mod activities;
mod batches;
mod feed;
mod flow;
mod queues;
mod streams;

pub use activities::{
    ActivityErrorBody, ActivityHeartbeatReply, ActivityPollBody, ActivityReportBody,
    ActivityTaskBody, HEARTBEAT_NOT_OPEN,
};
pub use batches::{reset_point, BatchActionBody, BatchBody, BatchFilterBody, NewBatchBody};
pub use feed::{FeedEndBody, FEED_END};
pub use flow::{
    flow_kind, FlowLimitBody, FlowRateBody, FlowRemovedBody, FlowScopeBody, FlowUsageBody,
    FLOW_LIMIT_FORMS,
};
pub use queues::{
    QueueRateBody, QueueRemovedBody, QueueUsageBody, WorkflowQueueBody, WORKFLOW_QUEUE_FORMS,
};
pub use streams::{StreamEndBody, StreamInfoBody, StreamListBody, RUN_ID_HEADER, STREAM_END};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wf_core::store::Message;
use wf_core::SearchAttributes;
use wf_core::{
    Description, Paused, PendingActivity, PendingUpdate, RetryPolicy, RunInfo, RunStatus,
    TaskFailure,
};

/// The path segment that stands for "whatever type the run has" in place of `{type}`: the
/// remote client, which knows workflow ids but not always types, addresses runs with it.
pub const ANY_TYPE: &str = "_";

/// The media type of MessagePack bodies.
pub const MSGPACK: &str = "application/msgpack";

/// `POST /{type}/runs`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartBody<V> {
    /// The workflow id.
    pub id: String,
    /// The input of `run`.
    #[serde(default)]
    pub input: Option<V>,
    /// `fail` (default), `use_existing` or `terminate_existing`.
    #[serde(default)]
    pub conflict: Option<String>,
    /// The task queue (default: the server engine's).
    #[serde(default)]
    pub task_queue: Option<String>,
    /// `allow_duplicate` (default), `allow_duplicate_failed_only` or `reject_duplicate`: whether
    /// a new run may follow a closed run of the workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_reuse: Option<String>,
    /// The start's request id: a start sent again with it answers the run the first one
    /// started (`started: false`), running or closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Signals and updates delivered with the start (signal- and update-with-start; MessagePack
    /// bodies only, as the remote client sends them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    /// The run's memo, by key.
    #[serde(default = "BTreeMap::new", skip_serializing_if = "BTreeMap::is_empty")]
    pub memo: BTreeMap<String, V>,
    /// The workflow execution timeout in milliseconds: the whole chain, continue-as-new and
    /// retries included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_timeout_ms: Option<u64>,
    /// The workflow run timeout in milliseconds: one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_timeout_ms: Option<u64>,
    /// How a failed or run-timed-out run is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<RetryBody>,
    /// The start delay in milliseconds: no engine runs the run's first workflow task before
    /// it has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_delay_ms: Option<u64>,
    /// The debounce key: starts of the type with this key, within `debounce_window_ms` of
    /// each other, make one run, which runs with the latest input (with
    /// `debounce_window_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce_key: Option<String>,
    /// The debounce window in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce_window_ms: Option<u64>,
    /// How long after its first start a debounced run waits at most, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce_max_ms: Option<u64>,
    /// The queue of workflow starts the run waits on until the queue admits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Its priority on the queue: lower is admitted first (0 when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_priority: Option<i32>,
    /// A deduplication id on the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_id: Option<String>,
    /// The fairness key the run waits under on its queue (`""` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_key: Option<String>,
    /// The weight of its fairness key's turns (above 0; 1.0 when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness_weight: Option<f64>,
}

/// A workflow retry policy on the wire, durations in milliseconds; a field left out takes
/// [`RetryPolicy::default`]'s value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RetryBody {
    /// Delay before the first retry (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_interval_ms: Option<u64>,
    /// Factor applied to the delay after each retry (default 2.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_coefficient: Option<f64>,
    /// Upper bound of the delay (default 100 × the initial interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_interval_ms: Option<u64>,
    /// Attempts in all, the first included; 0 (the default) means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_attempts: Option<u32>,
    /// Error types never retried (`failed`, `activity_failed`, `run_timeout`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub non_retryable_error_types: Vec<String>,
}

impl RetryBody {
    /// The body of `policy`.
    pub fn of(policy: &RetryPolicy) -> RetryBody {
        RetryBody {
            initial_interval_ms: Some(millis(policy.initial_interval)),
            backoff_coefficient: Some(policy.backoff_coefficient),
            maximum_interval_ms: policy.maximum_interval.map(millis),
            maximum_attempts: Some(policy.maximum_attempts),
            non_retryable_error_types: policy.non_retryable_error_types.clone(),
        }
    }

    /// The policy this body carries.
    pub fn into_policy(self) -> RetryPolicy {
        let default = RetryPolicy::default();
        RetryPolicy {
            initial_interval: self
                .initial_interval_ms
                .map_or(default.initial_interval, Duration::from_millis),
            backoff_coefficient: self
                .backoff_coefficient
                .unwrap_or(default.backoff_coefficient),
            maximum_interval: self.maximum_interval_ms.map(Duration::from_millis),
            maximum_attempts: self.maximum_attempts.unwrap_or(default.maximum_attempts),
            non_retryable_error_types: self.non_retryable_error_types,
        }
    }
}

/// A duration in whole milliseconds (saturating).
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl<V> StartBody<V> {
    /// The body without its input and memo (taken out and checked by the route).
    pub fn without_input(self) -> StartBody<()> {
        StartBody {
            id: self.id,
            input: None,
            conflict: self.conflict,
            task_queue: self.task_queue,
            id_reuse: self.id_reuse,
            request_id: self.request_id,
            messages: self.messages,
            memo: BTreeMap::new(),
            execution_timeout_ms: self.execution_timeout_ms,
            run_timeout_ms: self.run_timeout_ms,
            retry_policy: self.retry_policy,
            start_delay_ms: self.start_delay_ms,
            debounce_key: self.debounce_key,
            debounce_window_ms: self.debounce_window_ms,
            debounce_max_ms: self.debounce_max_ms,
            queue: self.queue,
            queue_priority: self.queue_priority,
            dedupe_id: self.dedupe_id,
            fairness_key: self.fairness_key,
            fairness_weight: self.fairness_weight,
        }
    }
}

/// The answer to a start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StartedBody {
    /// The workflow id.
    pub workflow_id: String,
    /// The run the workflow id now names.
    pub run_id: String,
    /// False when `use_existing` kept a running run, or when a start with the same
    /// `request_id` started the run before.
    pub started: bool,
}

/// `POST /{type}/runs/{id}/signal`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SignalBody<V> {
    /// The signal's name.
    pub name: String,
    /// Arguments: positional array or object by parameter name (JSON); the encoded tuple
    /// (MessagePack).
    #[serde(default)]
    pub args: Option<V>,
    /// Dedupe id.
    #[serde(default)]
    pub signal_id: Option<String>,
}

/// `POST /{type}/runs/{id}/update`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UpdateBody<V> {
    /// The update's name.
    pub name: String,
    /// Arguments, as for signals.
    #[serde(default)]
    pub args: Option<V>,
    /// Dedupe id (default: a fresh one, returned in the answer).
    #[serde(default)]
    pub update_id: Option<String>,
    /// `completed` (default), `accepted`, or `admitted` (answered once the update is durably
    /// recorded, before its validator ran).
    #[serde(default)]
    pub wait: Option<String>,
    /// How long to wait for completion before answering 504 (the update goes on; ask again
    /// with the same `update_id`).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `POST /{type}/runs/{id}/query`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryBody<V> {
    /// The query's name.
    pub name: String,
    /// Arguments, as for signals.
    #[serde(default)]
    pub args: Option<V>,
}

/// `POST .../cancel` and `.../terminate` (the body is optional).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReasonBody {
    /// Why, for the history and operators.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST .../reset`, `.../fork`, `.../resume` and `DELETE /{type}/runs/{id}` (every field
/// optional but the point: `to` or `to_event` for a reset, `new_workflow_id` and `at_event`
/// for a fork).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RepairBody {
    /// Why, for the history and operators.
    #[serde(default)]
    pub reason: Option<String>,
    /// A reset's point by name: `"first-task"` or `"last-good-task"`.
    #[serde(default)]
    pub to: Option<String>,
    /// A reset's point by event id (1, or a `WorkflowTaskCompleted`).
    #[serde(default)]
    pub to_event: Option<u64>,
    /// A reset leaves out the signals and updates received after the point.
    #[serde(default)]
    pub drop_messages: bool,
    /// A fork's new workflow id.
    #[serde(default)]
    pub new_workflow_id: Option<String>,
    /// A fork's last kept event.
    #[serde(default)]
    pub at_event: Option<u64>,
}

/// The answer of a repair: the run that goes on (or the one deleted).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepairReply {
    /// `"reset"`, `"forked"`, `"resumed"` or `"deleted"`.
    pub status: String,
    /// Its workflow id.
    pub workflow_id: String,
    /// Its run id.
    pub run_id: String,
}

/// `GET /_count`: how many runs match.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CountBody {
    /// The number of runs the filter selects.
    pub count: u64,
}

/// A value: the answer of queries, updates and results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValueBody<V> {
    /// The value.
    pub value: Option<V>,
    /// The update's id (updates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_id: Option<String>,
}

/// What a long poll answers when its wait ran out first (HTTP 202).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingBody {
    /// `running` for a result, `pending` for an update.
    pub status: String,
}

/// A page of history.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryPage<E> {
    /// The events, in order.
    pub events: Vec<E>,
    /// The `from` of the next page, if there is more.
    pub next: Option<u64>,
}

/// A page of runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunsPage<V> {
    /// The runs, newest first.
    pub runs: Vec<RunBody<V>>,
    /// The `cursor` of the next page, if there is more.
    pub next_cursor: Option<String>,
}

/// A run in a list.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunBody<V> {
    /// The workflow id.
    pub workflow_id: String,
    /// The run id.
    pub run_id: String,
    /// Its workflow type.
    pub workflow_type: String,
    /// `running`, `completed`, `failed`, `continued_as_new`, `terminated` or `cancelled`.
    pub status: String,
    /// Events in its history.
    pub history_length: u64,
    /// Start time, ms since the Unix epoch.
    #[serde(default)]
    pub started_at_ms: u64,
    /// Close time, ms since the Unix epoch, once closed.
    #[serde(default)]
    pub closed_at_ms: Option<u64>,
    /// Its search attributes, each tagged with its kind: `{"customer": {"Keyword": "acme"}}`.
    #[serde(default)]
    pub search_attributes: SearchAttributes,
    /// Its memo, by key.
    #[serde(default = "BTreeMap::new")]
    pub memo: BTreeMap<String, V>,
    /// The build whose engines run it (worker versioning), if it is on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
    /// Whether an operator paused it.
    #[serde(default)]
    pub paused: bool,
    /// The queue of workflow starts it was started on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Its place among the held runs of its queue, 1 first, while held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<u64>,
}

/// `GET /{type}/runs/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DescriptionBody<V> {
    /// The workflow id.
    pub workflow_id: String,
    /// The latest run.
    pub run_id: String,
    /// Its workflow type.
    pub workflow_type: String,
    /// Its task queue.
    pub task_queue: String,
    /// Its status (as in [`RunBody::status`]).
    pub status: String,
    /// Events in its history.
    pub history_length: u64,
    /// Encoded size of its history.
    pub history_bytes: u64,
    /// Start time, ms since the Unix epoch.
    pub started_at_ms: u64,
    /// When its first workflow task is due, for a run whose start was delayed, ms since the
    /// Unix epoch.
    #[serde(default)]
    pub start_at_ms: Option<u64>,
    /// The queue of workflow starts it was started on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Its place among its queue's held runs, 1 first; absent once admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<u64>,
    /// Close time, ms since the Unix epoch.
    pub closed_at_ms: Option<u64>,
    /// Activities scheduled and not yet resolved.
    pub pending_activities: Vec<ActivityBody<V>>,
    /// Updates requested or running.
    pub pending_updates: Vec<PendingUpdateBody>,
    /// Signals received with no handler.
    pub buffered_signals: Vec<String>,
    /// Async handlers still running.
    pub running_handlers: Vec<String>,
    /// The last failed workflow task.
    pub task_failure: Option<TaskFailure>,
    /// The reset, fork or resume that made the run (who, why, from where), if one did.
    #[serde(default)]
    pub repaired_from: Option<wf_core::RepairOrigin>,
    /// Its search attributes (as in [`RunBody::search_attributes`]).
    #[serde(default)]
    pub search_attributes: SearchAttributes,
    /// Its memo, by key.
    #[serde(default = "BTreeMap::new")]
    pub memo: BTreeMap<String, V>,
    /// Its attempt under the start's retry policy, from 1.
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    /// A completed run's result.
    #[serde(default = "Option::default")]
    pub result: Option<V>,
    /// A failed, timed-out or terminated run's error message.
    #[serde(default)]
    pub failure: Option<String>,
    /// The operator's pause of a running run, if it is paused.
    #[serde(default)]
    pub paused: Option<PausedBody>,
    /// What each part of a running run is blocked on (`run` and each live handler), with
    /// the source location of each wait.
    #[serde(default)]
    pub blocked_on: Vec<wf_core::BlockedPart>,
}

/// [`DescriptionBody::paused`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PausedBody {
    /// Who paused it: the caller's token role (`admin` on a server that checks no token),
    /// `client` for an in-process client.
    pub by: String,
    /// Why.
    pub reason: String,
    /// When, ms since the Unix epoch.
    pub since_ms: u64,
}

fn first_attempt() -> u32 {
    1
}

/// A pending activity.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActivityBody<V> {
    /// Command sequence number.
    pub seq: u32,
    /// Activity name.
    pub name: String,
    /// Current attempt.
    pub attempt: u32,
    /// The previous attempt's failure.
    pub last_failure: Option<String>,
    /// The last heartbeat's details.
    pub heartbeat_details: Option<V>,
    /// When the running attempt times out, ms since the Unix epoch.
    #[serde(default)]
    pub attempt_deadline_ms: Option<u64>,
}

/// A pending update.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingUpdateBody {
    /// Update id.
    pub update_id: String,
    /// Its name.
    pub name: String,
    /// Accepted (handler running) or waiting for validation.
    pub accepted: bool,
}

/// Milliseconds since the Unix epoch.
pub fn to_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(u64::MAX as u128) as u64)
}

/// The time `ms` milliseconds after the Unix epoch.
pub fn from_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// A memo with each value turned into `V` by `value`.
pub fn memo_of<V, E>(
    memo: &wf_core::Memo,
    mut value: impl FnMut(&wf_core::Payload) -> Result<V, E>,
) -> Result<BTreeMap<String, V>, E> {
    memo.iter()
        .map(|(k, v)| Ok((k.clone(), value(v)?)))
        .collect()
}

impl<V> RunBody<V> {
    /// The body of a listed run, with memo values turned into `V` by `value`.
    pub fn of<E>(
        r: &RunInfo,
        value: impl FnMut(&wf_core::Payload) -> Result<V, E>,
    ) -> Result<Self, E> {
        Ok(RunBody {
            workflow_id: r.workflow_id.clone(),
            run_id: r.run_id.clone(),
            workflow_type: r.workflow_type.clone(),
            status: r.status.as_str().to_string(),
            history_length: r.history_length,
            started_at_ms: to_ms(r.started_at),
            closed_at_ms: r.closed_at.map(to_ms),
            search_attributes: r.search_attributes.clone(),
            memo: memo_of(&r.memo, value)?,
            build_id: r.build_id.clone(),
            paused: r.paused,
            queue: r.queue.clone(),
            queue_position: r.queue_position,
        })
    }
}

impl RunBody<wf_core::Payload> {
    /// The listed run (an unknown status reads as running).
    pub fn into_info(self) -> RunInfo {
        RunInfo {
            workflow_id: self.workflow_id,
            run_id: self.run_id,
            workflow_type: self.workflow_type,
            status: RunStatus::parse(&self.status).unwrap_or(RunStatus::Running),
            history_length: self.history_length,
            started_at: from_ms(self.started_at_ms),
            closed_at: self.closed_at_ms.map(from_ms),
            search_attributes: self.search_attributes,
            memo: self.memo,
            build_id: self.build_id,
            paused: self.paused,
            queue: self.queue,
            queue_position: self.queue_position,
        }
    }
}

impl<V> DescriptionBody<V> {
    /// The body of `d`, with heartbeat details turned into `V` by `value`.
    pub fn of<E>(
        d: &Description,
        mut value: impl FnMut(&wf_core::Payload) -> Result<V, E>,
    ) -> Result<Self, E> {
        let mut pending_activities = Vec::with_capacity(d.pending_activities.len());
        for a in &d.pending_activities {
            pending_activities.push(ActivityBody {
                seq: a.seq,
                name: a.name.clone(),
                attempt: a.attempt,
                last_failure: a.last_failure.clone(),
                heartbeat_details: a.heartbeat_details.as_ref().map(&mut value).transpose()?,
                attempt_deadline_ms: a.attempt_deadline.map(to_ms),
            });
        }
        Ok(DescriptionBody {
            workflow_id: d.workflow_id.clone(),
            run_id: d.run_id.clone(),
            workflow_type: d.workflow_type.clone(),
            task_queue: d.task_queue.clone(),
            status: d.status.as_str().to_string(),
            history_length: d.history_length,
            history_bytes: d.history_bytes,
            started_at_ms: to_ms(d.started_at),
            start_at_ms: d.start_at.map(to_ms),
            queue: d.queue.clone(),
            queue_position: d.queue_position,
            closed_at_ms: d.closed_at.map(to_ms),
            pending_activities,
            pending_updates: d
                .pending_updates
                .iter()
                .map(|u| PendingUpdateBody {
                    update_id: u.update_id.clone(),
                    name: u.name.clone(),
                    accepted: u.accepted,
                })
                .collect(),
            buffered_signals: d.buffered_signals.clone(),
            running_handlers: d.running_handlers.clone(),
            task_failure: d.task_failure.clone(),
            repaired_from: d.repaired_from.clone(),
            search_attributes: d.search_attributes.clone(),
            memo: memo_of(&d.memo, &mut value)?,
            attempt: d.attempt,
            result: d.result.as_ref().map(&mut value).transpose()?,
            failure: d.failure.clone(),
            paused: d.paused.as_ref().map(|p| PausedBody {
                by: p.by.clone(),
                reason: p.reason.clone(),
                since_ms: to_ms(p.since),
            }),
            blocked_on: d.blocked_on.clone(),
        })
    }
}

impl DescriptionBody<wf_core::Payload> {
    /// The description this body carries.
    pub fn into_description(self) -> Description {
        Description {
            workflow_id: self.workflow_id,
            run_id: self.run_id,
            workflow_type: self.workflow_type,
            task_queue: self.task_queue,
            status: RunStatus::parse(&self.status).unwrap_or(RunStatus::Running),
            history_length: self.history_length,
            history_bytes: self.history_bytes,
            started_at: from_ms(self.started_at_ms),
            start_at: self.start_at_ms.map(from_ms),
            queue: self.queue,
            queue_position: self.queue_position,
            closed_at: self.closed_at_ms.map(from_ms),
            pending_activities: self
                .pending_activities
                .into_iter()
                .map(|a| PendingActivity {
                    seq: a.seq,
                    name: a.name,
                    attempt: a.attempt,
                    last_failure: a.last_failure,
                    heartbeat_details: a.heartbeat_details,
                    attempt_deadline: a.attempt_deadline_ms.map(from_ms),
                })
                .collect(),
            pending_updates: self
                .pending_updates
                .into_iter()
                .map(|u| PendingUpdate {
                    update_id: u.update_id,
                    name: u.name,
                    accepted: u.accepted,
                })
                .collect(),
            buffered_signals: self.buffered_signals,
            running_handlers: self.running_handlers,
            task_failure: self.task_failure,
            search_attributes: self.search_attributes,
            memo: self.memo,
            attempt: self.attempt,
            repaired_from: self.repaired_from,
            result: self.result,
            failure: self.failure,
            paused: self.paused.map(|p| Paused {
                by: p.by,
                reason: p.reason,
                since: from_ms(p.since_ms),
            }),
            blocked_on: self.blocked_on,
        }
    }
}

/// `POST /_schedules/{id}`: a schedule to create.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewScheduleBody {
    /// When it fires.
    pub spec: wf_core::ScheduleSpec,
    /// What it starts.
    pub action: wf_core::ScheduleAction,
    /// Overlap and catch-up.
    pub policies: wf_core::SchedulePolicies,
}

/// `POST /_schedules/{id}/pause` and `.../unpause` (the body is optional).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct NoteBody {
    /// A note for operators.
    #[serde(default)]
    pub note: Option<String>,
}

/// `GET /_schedules/{id}`: a schedule described (times as ms since the Unix epoch).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduleBody {
    /// The schedule id.
    pub schedule_id: String,
    /// When it fires.
    pub spec: wf_core::ScheduleSpec,
    /// What it starts.
    pub action: wf_core::ScheduleAction,
    /// Overlap and catch-up.
    pub policies: wf_core::SchedulePolicies,
    /// Whether it is paused.
    pub paused: bool,
    /// The note of the last pause or unpause.
    pub note: String,
    /// The next few fire times.
    pub next_fires_ms: Vec<u64>,
    /// The latest actions, oldest first.
    pub recent_actions: Vec<wf_core::ScheduledAction>,
    /// Workflow ids of its actions still running.
    pub running: Vec<String>,
    /// Actions waiting for the running one to end.
    pub buffered: usize,
    /// Actions skipped by the overlap policy.
    pub skipped: u64,
    /// Fire times dropped as older than the catch-up window.
    pub missed_catchup: u64,
    /// The last error starting an action.
    pub last_error: Option<String>,
}

impl ScheduleBody {
    /// The body of `d`.
    pub fn of(d: &wf_core::ScheduleDescription) -> ScheduleBody {
        ScheduleBody {
            schedule_id: d.schedule_id.clone(),
            spec: d.spec.clone(),
            action: d.action.clone(),
            policies: d.policies.clone(),
            paused: d.paused,
            note: d.note.clone(),
            next_fires_ms: d.next_fires.iter().copied().map(to_ms).collect(),
            recent_actions: d.recent_actions.clone(),
            running: d.running.clone(),
            buffered: d.buffered,
            skipped: d.skipped,
            missed_catchup: d.missed_catchup,
            last_error: d.last_error.clone(),
        }
    }

    /// The description this body carries.
    pub fn into_description(self) -> wf_core::ScheduleDescription {
        wf_core::ScheduleDescription {
            schedule_id: self.schedule_id,
            spec: self.spec,
            action: self.action,
            policies: self.policies,
            paused: self.paused,
            note: self.note,
            next_fires: self.next_fires_ms.into_iter().map(from_ms).collect(),
            recent_actions: self.recent_actions,
            running: self.running,
            buffered: self.buffered,
            skipped: self.skipped,
            missed_catchup: self.missed_catchup,
            last_error: self.last_error,
        }
    }
}

/// `POST /_purge`: purge one batch of closed runs (or count them).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PurgeBody {
    /// Runs closed before this time (ms since the Unix epoch) go.
    pub closed_before_ms: i64,
    /// At most this many runs in this call (0 or absent: the server's default batch).
    #[serde(default)]
    pub batch: usize,
    /// Only count the runs that would go.
    #[serde(default)]
    pub dry_run: bool,
}

impl PurgeBody {
    /// The body of a purge request.
    pub fn of(request: &wf_core::PurgeRequest) -> PurgeBody {
        PurgeBody {
            closed_before_ms: request.closed_before_ms(),
            batch: request.batch,
            dry_run: request.dry_run,
        }
    }

    /// The purge request it carries.
    pub fn into_request(self) -> wf_core::PurgeRequest {
        let ms = u64::try_from(self.closed_before_ms).unwrap_or(0);
        wf_core::PurgeRequest {
            closed_before: UNIX_EPOCH + Duration::from_millis(ms),
            batch: self.batch,
            dry_run: self.dry_run,
        }
    }
}

/// The answer to `POST /_purge`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct PurgeReply {
    /// Runs purged (for a dry run: runs that would be).
    pub runs: u64,
    /// Whether more may remain: post again.
    pub more: bool,
}

/// `POST /_builds/current`: make a build current for a task queue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CurrentBuildBody {
    /// The task queue.
    pub task_queue: String,
    /// The build id to make current.
    pub build_id: String,
}

/// `POST /{type}/runs/{id}/move`: move a run to another build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MoveToBuildBody {
    /// The build id to move the run to.
    pub build_id: String,
}
