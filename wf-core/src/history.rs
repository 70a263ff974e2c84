//! The history model: one append-only list of events per run, with dense event ids.
//!
//! Events are stored as MessagePack with a leading format version, so that a newer engine
//! still decodes histories written by an older one.

use crate::payload::{Payload, PayloadError};
use serde::{Deserialize, Serialize};

/// The history encoding written by this version of the engine.
pub const HISTORY_FORMAT_VERSION: u8 = 1;

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

/// How an update handler ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UpdateOutcome {
    /// The handler returned a value.
    Completed(Payload),
    /// The handler returned an `UpdateError` with this message.
    Failed(String),
}

/// Why an activity attempt failed, as recorded in history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityFailure {
    /// The error kind (`"retryable"` for plain retryable errors, or the user's kind).
    pub kind: String,
    /// The error message.
    pub message: String,
    /// Whether the error was non-retryable (by the activity's choice or by the retry policy).
    pub non_retryable: bool,
}

/// Which activity timeout expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimeoutKind {
    /// One attempt ran longer than its start-to-close timeout.
    StartToClose,
    /// The activity, all attempts included, ran past its schedule-to-close timeout.
    ScheduleToClose,
    /// The attempt stopped heartbeating for longer than its heartbeat timeout.
    Heartbeat,
}

/// Retry policy of an activity, with Temporal's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Delay before the first retry (default 1 s).
    pub initial_interval: std::time::Duration,
    /// Factor applied to the delay after each retry (default 2.0).
    pub backoff_coefficient: f64,
    /// Upper bound of the delay (default 100 × `initial_interval`).
    pub maximum_interval: Option<std::time::Duration>,
    /// Attempts in all, the first included; 0 means unlimited (the default).
    pub maximum_attempts: u32,
    /// Error kinds (from `ActivityError::non_retryable(kind, ..)` or set here) never retried.
    pub non_retryable_error_types: Vec<String>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_interval: std::time::Duration::from_secs(1),
            backoff_coefficient: 2.0,
            maximum_interval: None,
            maximum_attempts: 0,
            non_retryable_error_types: Vec::new(),
        }
    }
}

impl RetryPolicy {
    /// The delay before attempt `next_attempt` (2 for the first retry).
    pub fn delay_before(&self, next_attempt: u32) -> std::time::Duration {
        let retries = next_attempt.saturating_sub(2) as i32;
        let base =
            self.initial_interval.as_secs_f64() * self.backoff_coefficient.max(1.0).powi(retries);
        let max = self
            .maximum_interval
            .unwrap_or(self.initial_interval * 100)
            .as_secs_f64();
        std::time::Duration::from_secs_f64(base.min(max).max(0.0))
    }

    /// Whether an attempt that just failed with `failure` may be followed by `next_attempt`.
    pub fn allows_retry(&self, next_attempt: u32, failure: &ActivityFailure) -> bool {
        !failure.non_retryable
            && !self.non_retryable_error_types.contains(&failure.kind)
            && (self.maximum_attempts == 0 || next_attempt <= self.maximum_attempts)
    }
}

/// Timeouts and retries of one scheduled activity.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ActivityOptions {
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Longest time one attempt may run.
    pub start_to_close: Option<std::time::Duration>,
    /// Longest time from scheduling to the final result, all attempts included.
    pub schedule_to_close: Option<std::time::Duration>,
    /// Longest time between two heartbeats of a running attempt.
    pub heartbeat_timeout: Option<std::time::Duration>,
}

/// The parent of a child run: where its result goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentInfo {
    /// The parent's workflow id.
    pub workflow_id: String,
    /// The parent run that started the child.
    pub run_id: String,
    /// The sequence number of the parent's start command.
    pub seq: u32,
}

/// What a parent does with a still-running child when the parent closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ParentClosePolicy {
    /// Terminate the child (the default, as in Temporal).
    #[default]
    Terminate,
    /// Leave the child running.
    Abandon,
    /// Request the child's cancellation; it may clean up.
    RequestCancel,
}

/// How a child run ended, as its parent sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ChildOutcome {
    /// It returned a value.
    Completed(Payload),
    /// It returned an error.
    Failed(String),
    /// It ended as cancelled.
    Cancelled(String),
    /// It was terminated.
    Terminated(String),
    /// It could not start (its workflow id is running).
    StartFailed(String),
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
    },
    /// A signal was delivered to the run.
    SignalReceived {
        /// Signal wire name.
        name: String,
        /// Encoded arguments (a tuple).
        args: Payload,
        /// Client-chosen id used for dedupe.
        signal_id: Option<String>,
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
    },
    /// An activity timed out for good.
    ActivityTimedOut {
        /// Sequence number of the scheduling command.
        seq: u32,
        /// Which timeout.
        timeout: TimeoutKind,
        /// Attempts made.
        attempts: u32,
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
    /// A recorded decision (side effect, patch) replayed as is.
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
    /// `ParentClosePolicy::Abandon` are left alone. (Last variant: history encoding depends on
    /// the order of variants.)
    ChildCancelRequested {
        /// Sequence number of the child's start command.
        seq: u32,
        /// The child's workflow id.
        workflow_id: String,
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
        )
    }

    /// A one-line summary of the event's details, for printed histories.
    pub fn details(&self) -> String {
        match self {
            EventKind::WorkflowStarted {
                workflow_type,
                input,
                continued_from,
                ..
            } => match continued_from {
                Some(prev) => format!(
                    "{workflow_type} input={} (continues {prev})",
                    input.display()
                ),
                None => format!("{workflow_type} input={}", input.display()),
            },
            EventKind::SignalReceived {
                name,
                args,
                signal_id,
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
            } => {
                format!(
                    "#{seq} {}: {} (attempts {attempts})",
                    failure.kind, failure.message
                )
            }
            EventKind::ActivityTimedOut {
                seq,
                timeout,
                attempts,
            } => {
                format!("#{seq} {timeout:?} (attempts {attempts})")
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
            EventKind::ChildCancelRequested { seq, workflow_id } => {
                format!("#{seq} {workflow_id:?}")
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
            } => {
                format!("#{seq} {workflow_id:?} {name}{}", args_display(args))
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

/// Encodes an event body (time and kind) as stored: a format version byte, then MessagePack.
pub fn encode_event(time_ms: i64, kind: &EventKind) -> Result<Vec<u8>, PayloadError> {
    let mut out = Vec::new();
    encode_event_into(&mut out, time_ms, kind)?;
    Ok(out)
}

/// Appends what [`encode_event`] returns to `out` (a record of consecutive events, for
/// [`decode_events`]).
pub(crate) fn encode_event_into(
    out: &mut Vec<u8>,
    time_ms: i64,
    kind: &EventKind,
) -> Result<(), PayloadError> {
    out.push(HISTORY_FORMAT_VERSION);
    rmp_serde::encode::write(out, &(time_ms, kind)).map_err(|e| PayloadError::Encode {
        what: format!("event {}", kind.name()),
        message: e.to_string(),
    })
}

/// Decodes an event body written by [`encode_event`] (any supported format version). Bytes
/// after the first event are ignored.
pub fn decode_event(event_id: u64, bytes: &[u8]) -> Result<HistoryEvent, PayloadError> {
    let mut rest = bytes;
    decode_next(event_id, &mut rest)
}

/// Decodes events written one after another by [`encode_event`] (a store may keep the events
/// of one commit as one record); the first has id `first_event_id`, the next ones follow.
pub fn decode_events(first_event_id: u64, bytes: &[u8]) -> Result<Vec<HistoryEvent>, PayloadError> {
    let mut rest = bytes;
    let mut events = Vec::new();
    loop {
        events.push(decode_next(
            first_event_id + events.len() as u64,
            &mut rest,
        )?);
        if rest.is_empty() {
            return Ok(events);
        }
    }
}

/// Decodes the event at the start of `rest` and moves `rest` past it.
fn decode_next(event_id: u64, rest: &mut &[u8]) -> Result<HistoryEvent, PayloadError> {
    let error = |message: String| PayloadError::Decode {
        what: format!("history event {event_id}"),
        message,
    };
    match rest.split_first() {
        Some((&1, body)) => {
            *rest = body;
            let (time_ms, kind): (i64, EventKind) =
                rmp_serde::from_read(&mut *rest).map_err(|e| error(e.to_string()))?;
            Ok(HistoryEvent {
                event_id,
                time_ms,
                kind,
            })
        }
        Some((v, _)) => Err(error(format!(
            "unknown history format version {v}; upgrade wf to read this history"
        ))),
        None => Err(error("empty record".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_with_version() {
        let kind = EventKind::SignalReceived {
            name: "pause".into(),
            args: Payload::encode(&()).unwrap(),
            signal_id: Some("s1".into()),
        };
        let bytes = encode_event(42, &kind).unwrap();
        assert_eq!(bytes[0], HISTORY_FORMAT_VERSION);
        let e = decode_event(7, &bytes).unwrap();
        assert_eq!(
            e,
            HistoryEvent {
                event_id: 7,
                time_ms: 42,
                kind
            }
        );
    }

    #[test]
    fn consecutive_events_decode_with_consecutive_ids() {
        let kinds = [
            EventKind::SignalReceived {
                name: "a".into(),
                args: Payload::encode(&("x", 1)).unwrap(),
                signal_id: None,
            },
            EventKind::TimerStarted {
                seq: 3,
                fire_at_ms: 99,
            },
            EventKind::SignalReceived {
                name: "b".into(),
                args: Payload::encode(&vec![7u8; 300]).unwrap(),
                signal_id: Some("s".into()),
            },
        ];
        let mut bytes = Vec::new();
        for (i, kind) in kinds.iter().enumerate() {
            bytes.extend(encode_event(i as i64, kind).unwrap());
        }
        let events = decode_events(10, &bytes).unwrap();
        let expected: Vec<HistoryEvent> = kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| HistoryEvent {
                event_id: 10 + i as u64,
                time_ms: i as i64,
                kind: kind.clone(),
            })
            .collect();
        assert_eq!(events, expected);
        // The first event alone, as a single-event reader sees the record.
        assert_eq!(decode_event(10, &bytes).unwrap(), expected[0]);
        // A record cut short is an error, not a shorter history.
        assert!(decode_events(10, &bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn unknown_format_version_is_a_clear_error() {
        let err = decode_event(3, &[9, 1, 2]).unwrap_err();
        assert!(
            err.to_string().contains("unknown history format version 9"),
            "{err}"
        );
    }

    #[test]
    fn retry_delays_follow_backoff_and_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay_before(2).as_secs(), 1);
        assert_eq!(p.delay_before(3).as_secs(), 2);
        assert_eq!(p.delay_before(4).as_secs(), 4);
        assert_eq!(p.delay_before(30).as_secs(), 100);
    }
}
