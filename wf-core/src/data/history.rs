//! The history model: one append-only list of events per run, with dense event ids, and the
//! one-line rendering of each event for printed histories.

use super::activity::{ActivityFailure, ActivityOptions, LocalOutcome, TimeoutKind};
use super::payload::Payload;
use super::repair::RepairOrigin;
use super::run::{ChildOutcome, ParentClosePolicy, ParentInfo};
use super::run_limits::{RunLimits, RunTimeout};
use super::search::SearchAttributes;
use super::update::UpdateOutcome;
use serde::{Deserialize, Serialize};

/// One event of a run's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    /// Position in the run's history, starting at 1, without gaps.
    pub event_id: u64,
    /// Engine-clock time at which the event was recorded, in milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// What happened.
    pub kind: EventKind,
}

/// What happened; variant names read as the event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EventKind {
    /// The run started with this input.
    WorkflowStarted {
        /// The workflow type's wire name.
        workflow_type: String,
        /// The encoded input.
        input: Payload,
        /// Seed of `ctx.random()` and `ctx.uuid()`.
        random_seed: u64,
        /// The run this one continues, after a continue-as-new.
        continued_from: Option<String>,
        /// The parent, for a child run.
        #[serde(default)]
        parent: Option<ParentInfo>,
        /// The chain's execution and run timeouts, retry policy and this run's attempt, if the
        /// start set any (absent from histories written before they existed).
        #[serde(default)]
        limits: Option<RunLimits>,
        /// The reset, fork or resume that made this run, if one did (absent otherwise, and
        /// from histories written before repairs existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repaired_from: Option<Box<RepairOrigin>>,
    },
    /// A signal was delivered to the run.
    SignalReceived {
        /// Signal wire name.
        name: String,
        /// Encoded arguments (a tuple).
        args: Payload,
        /// Client-chosen id used for dedupe.
        signal_id: Option<String>,
        /// When the sender sent it: ms since the epoch on the sending engine's clock (workflow
        /// time for `signal_external`). `None` in histories written before it was recorded.
        #[serde(default)]
        sent_at: Option<i64>,
    },
    /// An update passed its validator and its handler started.
    UpdateAccepted {
        /// The update's id (client-chosen or generated).
        update_id: String,
        /// Update wire name.
        name: String,
        /// Encoded arguments (a tuple).
        args: Payload,
    },
    /// An update handler finished.
    UpdateCompleted {
        /// The update's id.
        update_id: String,
        /// Its value or error.
        outcome: UpdateOutcome,
    },
    /// The workflow scheduled an activity.
    ActivityScheduled {
        /// Command sequence number within the run.
        seq: u32,
        /// Activity wire name.
        name: String,
        /// Encoded input.
        input: Payload,
        /// Timeouts and retries.
        options: ActivityOptions,
    },
    /// An activity returned a value.
    ActivityCompleted {
        /// Sequence number of the scheduling command.
        seq: u32,
        /// Encoded result.
        result: Payload,
        /// Attempts made.
        attempts: u32,
    },
    /// An activity failed for good (non-retryable, or retries exhausted).
    ActivityFailed {
        /// Sequence number of the scheduling command.
        seq: u32,
        /// The last failure.
        failure: ActivityFailure,
        /// Attempts made.
        attempts: u32,
        /// The details of its last heartbeat (absent from histories recorded before they were
        /// kept here).
        #[serde(default)]
        last_heartbeat: Option<Payload>,
    },
    /// An activity timed out for good.
    ActivityTimedOut {
        /// Sequence number of the scheduling command.
        seq: u32,
        /// Which timeout.
        timeout: TimeoutKind,
        /// Attempts made.
        attempts: u32,
        /// The details of its last heartbeat (absent from histories recorded before they were
        /// kept here).
        #[serde(default)]
        last_heartbeat: Option<Payload>,
    },
    /// A durable timer was started.
    TimerStarted {
        /// Command sequence number within the run.
        seq: u32,
        /// When it fires, engine-clock milliseconds.
        fire_at_ms: i64,
    },
    /// A durable timer fired.
    TimerFired {
        /// Sequence number of the timer.
        seq: u32,
    },
    /// A timer was cancelled before it fired.
    TimerCancelled {
        /// Sequence number of the timer.
        seq: u32,
    },
    /// A recorded decision replayed as is: the patch markers of `ctx.patched` and
    /// `ctx.deprecate_patch` (named `patch:<id>`).
    MarkerRecorded {
        /// Command sequence number within the run.
        seq: u32,
        /// Marker name.
        name: String,
        /// Recorded value.
        value: Payload,
    },
    /// Cancellation of the run was requested.
    CancelRequested {
        /// Why.
        reason: String,
    },
    /// A workflow task finished; the events since the previous one were its inputs and commands.
    WorkflowTaskCompleted {
        /// The workflow's clock (`ctx.now()`) during that task.
        task_time_ms: i64,
        /// What `ctx.continue_as_new_suggested()` answered during that task.
        #[serde(default)]
        suggest_continue_as_new: bool,
        /// The build id of the worker that ran the task (`EngineBuilder::build_id`).
        #[serde(default)]
        build_id: Option<String>,
    },
    /// The run returned a value.
    WorkflowCompleted {
        /// Encoded result.
        result: Payload,
    },
    /// The run returned an error.
    WorkflowFailed {
        /// The error message.
        message: String,
    },
    /// The run continued as a new run of the same workflow id.
    ContinuedAsNew {
        /// The new run's id.
        new_run_id: String,
        /// The new run's input.
        input: Payload,
    },
    /// The run was terminated from outside, without running any workflow code.
    WorkflowTerminated {
        /// Why.
        reason: String,
    },
    /// The workflow started a child run.
    ChildWorkflowStarted {
        /// Command sequence number within the parent.
        seq: u32,
        /// The child's workflow id.
        workflow_id: String,
        /// The child's workflow type.
        workflow_type: String,
        /// The child's first run id.
        run_id: String,
        /// Its input.
        input: Payload,
        /// What happens to it when the parent closes first.
        parent_close_policy: ParentClosePolicy,
        /// Its task queue (`None`: the parent's).
        #[serde(default)]
        task_queue: Option<String>,
    },
    /// A child run ended (or could not start).
    ChildWorkflowClosed {
        /// Sequence number of the start command.
        seq: u32,
        /// How it ended.
        outcome: ChildOutcome,
    },
    /// The workflow sent a signal to another workflow (delivered with this task's commit).
    ExternalSignalSent {
        /// Command sequence number.
        seq: u32,
        /// The target workflow id.
        workflow_id: String,
        /// Signal wire name.
        name: String,
        /// Encoded arguments (a tuple).
        args: Payload,
        /// For a signal sent through a child handle: the child's first run id. It is then
        /// delivered only to a run of the chain that run began, never to another run holding
        /// the workflow id (one that made the child's start fail). `None` for
        /// `ctx.signal_external` and in histories written before it was recorded.
        #[serde(default)]
        run_id: Option<String>,
    },
    /// A pending activity was cancelled (its task dropped) after a cancellation request.
    ActivityCancelled {
        /// Sequence number of the scheduling command.
        seq: u32,
    },
    /// The run ended as cancelled.
    WorkflowCancelled {
        /// Why cancellation was requested.
        reason: String,
    },
    /// The run's cancellation was requested while a child it awaits was running: the child is
    /// asked to cancel (delivered with this task's commit). Children started with
    /// `ParentClosePolicy::Abandon` are left alone.
    ChildCancelRequested {
        /// Sequence number of the child's start command.
        seq: u32,
        /// The child's workflow id.
        workflow_id: String,
    },
    /// The workflow set search attributes (`ctx.upsert_search_attributes`): these keys now
    /// hold these values, the others keep theirs.
    SearchAttributesUpserted {
        /// The keys set, with their new values.
        attributes: SearchAttributes,
    },
    /// The run's run timeout or its chain's execution timeout passed: the run closed without
    /// running any more workflow code. (History encoding depends on the order of variants: append new
    /// ones at the end.)
    WorkflowTimedOut {
        /// Which timeout.
        timeout: RunTimeout,
        /// The run that retries it under the retry policy (a run timeout only), if any.
        new_run_id: Option<String>,
    },
    /// A local activity (`ctx.activity(..).local()`) ran in the workflow worker's process
    /// during the workflow task that records this event: its result, its final failure, or a
    /// retry to wait for on a durable timer. Replay hands the recorded outcome back to the code
    /// without running the activity again. (Last variant: history encoding depends on the
    /// order of variants.)
    LocalActivityCompleted {
        /// Command sequence number of the call within the run.
        seq: u32,
        /// Activity wire name.
        name: String,
        /// How it ended.
        outcome: LocalOutcome,
        /// Attempts made so far, those before a durable backoff included.
        attempts: u32,
    },
    /// An operator reset the run: it closed without running any more workflow code, and the
    /// run `new_run_id` of the same chain goes on from its history up to event `at_event`.
    WorkflowReset {
        /// The run that replaced it.
        new_run_id: String,
        /// The last event the new run kept.
        at_event: u64,
        /// Why, as the operator said.
        reason: String,
        /// Who (over HTTP, the caller's token role).
        identity: String,
    },
    /// The workflow wrote an entry to one of the run's streams (`ctx.stream(name).write(..)`).
    /// The store gives it the stream's next offset when the task commits and keeps it for
    /// readers (`handle.stream(name)`); replay issues it again and writes nothing.
    StreamWritten {
        /// The stream's name.
        stream: String,
        /// The entry's value.
        value: Payload,
    },
    /// The workflow closed one of the run's streams (`ctx.stream(name).close()`): its readers
    /// end after the entries before it.
    StreamClosed {
        /// The stream's name.
        stream: String,
    },
    /// The workflow published a value under a key (`ctx.set_event(key, &value)`): the store
    /// keeps the latest value of each key of the workflow id for `client.get_event`.
    EventSet {
        /// The event's key.
        key: String,
        /// Its value.
        value: Payload,
    },
}

impl EventKind {
    /// Short name of the variant, e.g. `"SignalReceived"`.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::WorkflowStarted { .. } => "WorkflowStarted",
            EventKind::SignalReceived { .. } => "SignalReceived",
            EventKind::UpdateAccepted { .. } => "UpdateAccepted",
            EventKind::UpdateCompleted { .. } => "UpdateCompleted",
            EventKind::ActivityScheduled { .. } => "ActivityScheduled",
            EventKind::ActivityCompleted { .. } => "ActivityCompleted",
            EventKind::ActivityFailed { .. } => "ActivityFailed",
            EventKind::ActivityTimedOut { .. } => "ActivityTimedOut",
            EventKind::TimerStarted { .. } => "TimerStarted",
            EventKind::TimerFired { .. } => "TimerFired",
            EventKind::TimerCancelled { .. } => "TimerCancelled",
            EventKind::MarkerRecorded { .. } => "MarkerRecorded",
            EventKind::CancelRequested { .. } => "CancelRequested",
            EventKind::WorkflowTaskCompleted { .. } => "WorkflowTaskCompleted",
            EventKind::WorkflowCompleted { .. } => "WorkflowCompleted",
            EventKind::WorkflowFailed { .. } => "WorkflowFailed",
            EventKind::ContinuedAsNew { .. } => "ContinuedAsNew",
            EventKind::WorkflowTerminated { .. } => "WorkflowTerminated",
            EventKind::ActivityCancelled { .. } => "ActivityCancelled",
            EventKind::ChildWorkflowStarted { .. } => "ChildWorkflowStarted",
            EventKind::ChildWorkflowClosed { .. } => "ChildWorkflowClosed",
            EventKind::ExternalSignalSent { .. } => "ExternalSignalSent",
            EventKind::WorkflowCancelled { .. } => "WorkflowCancelled",
            EventKind::ChildCancelRequested { .. } => "ChildCancelRequested",
            EventKind::SearchAttributesUpserted { .. } => "SearchAttributesUpserted",
            EventKind::WorkflowTimedOut { .. } => "WorkflowTimedOut",
            EventKind::LocalActivityCompleted { .. } => "LocalActivityCompleted",
            EventKind::WorkflowReset { .. } => "WorkflowReset",
            EventKind::StreamWritten { .. } => "StreamWritten",
            EventKind::StreamClosed { .. } => "StreamClosed",
            EventKind::EventSet { .. } => "EventSet",
        }
    }

    /// Whether this event closes the run.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventKind::WorkflowCompleted { .. }
                | EventKind::WorkflowFailed { .. }
                | EventKind::ContinuedAsNew { .. }
                | EventKind::WorkflowTerminated { .. }
                | EventKind::WorkflowCancelled { .. }
                | EventKind::WorkflowTimedOut { .. }
                | EventKind::WorkflowReset { .. }
        )
    }

    /// A one-line summary of the event's details, for printed histories.
    pub fn details(&self) -> String {
        match self {
            EventKind::WorkflowStarted {
                workflow_type,
                input,
                continued_from,
                repaired_from,
                ..
            } => match (continued_from, repaired_from) {
                (_, Some(o)) => format!(
                    "{workflow_type} input={} ({} of run {} at event {} by {}: {})",
                    input.display(),
                    o.kind,
                    o.run_id,
                    o.at_event,
                    o.identity,
                    o.reason
                ),
                (Some(prev), None) => format!(
                    "{workflow_type} input={} (continues {prev})",
                    input.display()
                ),
                (None, None) => format!("{workflow_type} input={}", input.display()),
            },
            EventKind::WorkflowReset {
                new_run_id,
                at_event,
                reason,
                identity,
            } => format!("reset to run {new_run_id} at event {at_event} by {identity}: {reason}"),
            EventKind::SignalReceived {
                name,
                args,
                signal_id,
                ..
            } => match signal_id {
                Some(id) => format!("{name}{} id={id}", args_display(args)),
                None => format!("{name}{}", args_display(args)),
            },
            EventKind::UpdateAccepted {
                update_id,
                name,
                args,
            } => {
                format!("{name}{} id={update_id}", args_display(args))
            }
            EventKind::UpdateCompleted { update_id, outcome } => match outcome {
                UpdateOutcome::Completed(v) => format!("id={update_id} -> {}", v.display()),
                UpdateOutcome::Failed(m) => format!("id={update_id} failed: {m}"),
            },
            EventKind::ActivityScheduled {
                seq, name, input, ..
            } => {
                format!("#{seq} {name}{}", args_display(input))
            }
            EventKind::ActivityCompleted {
                seq,
                result,
                attempts,
            } => {
                format!("#{seq} -> {} (attempts {attempts})", result.display())
            }
            EventKind::ActivityFailed {
                seq,
                failure,
                attempts,
                last_heartbeat,
            } => {
                format!(
                    "#{seq} {}: {} (attempts {attempts}){}",
                    failure.kind,
                    failure.message,
                    heartbeat_note(last_heartbeat)
                )
            }
            EventKind::ActivityTimedOut {
                seq,
                timeout,
                attempts,
                last_heartbeat,
            } => {
                format!(
                    "#{seq} {timeout:?} (attempts {attempts}){}",
                    heartbeat_note(last_heartbeat)
                )
            }
            EventKind::TimerStarted { seq, fire_at_ms } => {
                format!("#{seq} fires at {fire_at_ms} ms")
            }
            EventKind::TimerFired { seq } | EventKind::TimerCancelled { seq } => format!("#{seq}"),
            EventKind::MarkerRecorded { seq, name, value } => {
                format!("#{seq} {name}={}", value.display())
            }
            EventKind::CancelRequested { reason } => reason.clone(),
            EventKind::WorkflowTaskCompleted { task_time_ms, .. } => {
                format!("at {task_time_ms} ms")
            }
            EventKind::WorkflowCompleted { result } => result.display(),
            EventKind::WorkflowFailed { message } => message.clone(),
            EventKind::ContinuedAsNew { new_run_id, input } => {
                format!("new run {new_run_id} input={}", input.display())
            }
            EventKind::WorkflowTerminated { reason } | EventKind::WorkflowCancelled { reason } => {
                reason.clone()
            }
            EventKind::ActivityCancelled { seq } => format!("#{seq}"),
            EventKind::WorkflowTimedOut {
                timeout,
                new_run_id,
            } => match new_run_id {
                Some(id) => format!("{} timeout (retried as run {id})", timeout.as_str()),
                None => format!("{} timeout", timeout.as_str()),
            },
            EventKind::ChildCancelRequested { seq, workflow_id } => {
                format!("#{seq} {workflow_id:?}")
            }
            EventKind::StreamWritten { stream, value } => format!("{stream} {}", value.display()),
            EventKind::StreamClosed { stream } => stream.clone(),
            EventKind::EventSet { key, value } => format!("{key}={}", value.display()),
            EventKind::SearchAttributesUpserted { attributes } => attributes
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            EventKind::LocalActivityCompleted {
                seq,
                name,
                outcome,
                attempts,
            } => {
                let what = match outcome {
                    LocalOutcome::Completed(result) => format!("-> {}", result.display()),
                    LocalOutcome::Failed(f) => format!("{}: {}", f.kind, f.message),
                    LocalOutcome::TimedOut(timeout) => format!("{timeout:?}"),
                    LocalOutcome::Backoff { failure, delay_ms } => format!(
                        "{}: {}, retry in {delay_ms} ms",
                        failure.kind, failure.message
                    ),
                };
                format!("#{seq} {name} (local) {what} (attempts {attempts})")
            }
            EventKind::ChildWorkflowStarted {
                seq,
                workflow_id,
                workflow_type,
                input,
                ..
            } => {
                format!(
                    "#{seq} {workflow_type} {workflow_id:?} input={}",
                    input.display()
                )
            }
            EventKind::ChildWorkflowClosed { seq, outcome } => match outcome {
                ChildOutcome::Completed(v) => format!("#{seq} -> {}", v.display()),
                ChildOutcome::Failed(m) => format!("#{seq} failed: {m}"),
                ChildOutcome::Cancelled(m) => format!("#{seq} cancelled: {m}"),
                ChildOutcome::Terminated(m) => format!("#{seq} terminated: {m}"),
                ChildOutcome::StartFailed(m) => format!("#{seq} could not start: {m}"),
            },
            EventKind::ExternalSignalSent {
                seq,
                workflow_id,
                name,
                args,
                run_id,
            } => {
                let child = run_id
                    .as_ref()
                    .map(|r| format!(" (child run {r})"))
                    .unwrap_or_default();
                format!("#{seq} {workflow_id:?}{child} {name}{}", args_display(args))
            }
        }
    }
}

/// Renders an argument tuple as a call's argument list: `("a", 1)`.
fn args_display(args: &Payload) -> String {
    let shown = args.display();
    match shown.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        Some(inner) => format!("({inner})"),
        None if shown == "nil" => "()".to_string(),
        None => format!("({shown})"),
    }
}

/// ", last heartbeat DETAILS" for an event's description, or nothing.
fn heartbeat_note(details: &Option<Payload>) -> String {
    details
        .as_ref()
        .map(|d| format!(", last heartbeat {}", d.display()))
        .unwrap_or_default()
}
