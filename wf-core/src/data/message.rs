//! The one message type: everything that reaches a run from outside its own code — a signal,
//! an update, a cancellation request, an activity's or a child's end, a fired timer. Clients
//! send the first three; the engine produces the others. A message waits in the run's inbox
//! (or is handed to the worker in memory) until a workflow task applies it, and the task
//! records it in history as the event [`Message::to_event`] names; replay turns recorded
//! events back into messages with [`Message::from_event`].
//!
//! The variant and field names are the inbox's storage format (MessagePack with names): never
//! rename them.

use super::activity::{ActivityResolution, LocalOutcome};
use super::history::EventKind;
use super::payload::{Payload, PayloadError};
use super::run::ChildOutcome;
use serde::{Deserialize, Serialize};

/// A message for a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Message {
    /// A signal; deduped by `signal_id` per continue-as-new chain.
    Signal {
        /// Wire name.
        name: String,
        /// Encoded arguments (a tuple).
        args: Payload,
        /// Dedupe id.
        signal_id: Option<String>,
        /// When the sender sent it (ms since the epoch, the sending engine's clock; workflow
        /// time for `signal_external`). `None` in inboxes written before it was recorded.
        #[serde(default)]
        sent_at: Option<i64>,
    },
    /// An update, not yet validated; deduped by `update_id` per chain.
    Update {
        /// The update id.
        update_id: String,
        /// Wire name.
        name: String,
        /// Encoded arguments (a tuple).
        args: Payload,
    },
    /// An activity finished for good.
    ActivityResolved {
        /// Sequence number of the scheduling command.
        seq: u32,
        /// How it ended.
        resolution: ActivityResolution,
    },
    /// A timer fired.
    TimerFired {
        /// Sequence number of the timer.
        seq: u32,
    },
    /// Cancellation of the run was requested.
    CancelRequested {
        /// Why.
        reason: String,
    },
    /// A child run ended (or could not start).
    ChildClosed {
        /// Sequence number of the parent's start command.
        seq: u32,
        /// How it ended.
        outcome: ChildOutcome,
    },
    /// A local activity ran in the worker during the current workflow task. Never stored in
    /// an inbox: the worker hands it to the run in the same task, which records it as
    /// `LocalActivityCompleted`.
    LocalActivityResolved {
        /// Sequence number of the call.
        seq: u32,
        /// Activity wire name.
        name: String,
        /// How it ended.
        outcome: LocalOutcome,
        /// Attempts made so far.
        attempts: u32,
    },
}

/// A message waiting in a run's inbox, with its arrival sequence number (global, increasing).
#[derive(Debug, Clone, PartialEq)]
pub struct InboxMessage {
    /// Arrival order.
    pub seq: u64,
    /// The message.
    pub message: Message,
}

impl Message {
    /// A signal message (its send time unset: see [`sent_at`](Self::sent_at)).
    pub fn signal(name: impl Into<String>, args: Payload, signal_id: Option<String>) -> Message {
        Message::Signal {
            name: name.into(),
            args,
            signal_id,
            sent_at: None,
        }
    }

    /// Stamps a signal whose send time is unset with `now_ms` (the sender's clock); other
    /// messages are returned as they are.
    pub fn sent_at(mut self, now_ms: i64) -> Message {
        if let Message::Signal { sent_at, .. } = &mut self {
            sent_at.get_or_insert(now_ms);
        }
        self
    }

    /// An update message.
    pub fn update(update_id: impl Into<String>, name: impl Into<String>, args: Payload) -> Message {
        Message::Update {
            update_id: update_id.into(),
            name: name.into(),
            args,
        }
    }

    /// The event that records this message in history once a workflow task applied it. An
    /// update is recorded as `UpdateAccepted` (a rejected one is not recorded at all).
    pub fn to_event(&self) -> EventKind {
        match self.clone() {
            Message::Signal {
                name,
                args,
                signal_id,
                sent_at,
            } => EventKind::SignalReceived {
                name,
                args,
                signal_id,
                sent_at,
            },
            Message::Update {
                update_id,
                name,
                args,
            } => EventKind::UpdateAccepted {
                update_id,
                name,
                args,
            },
            Message::ActivityResolved { seq, resolution } => match resolution {
                ActivityResolution::Completed { result, attempts } => {
                    EventKind::ActivityCompleted {
                        seq,
                        result,
                        attempts,
                    }
                }
                ActivityResolution::Failed {
                    failure,
                    attempts,
                    last_heartbeat,
                } => EventKind::ActivityFailed {
                    seq,
                    failure,
                    attempts,
                    last_heartbeat,
                },
                ActivityResolution::TimedOut {
                    timeout,
                    attempts,
                    last_heartbeat,
                } => EventKind::ActivityTimedOut {
                    seq,
                    timeout,
                    attempts,
                    last_heartbeat,
                },
            },
            Message::TimerFired { seq } => EventKind::TimerFired { seq },
            Message::CancelRequested { reason } => EventKind::CancelRequested { reason },
            Message::ChildClosed { seq, outcome } => {
                EventKind::ChildWorkflowClosed { seq, outcome }
            }
            Message::LocalActivityResolved {
                seq,
                name,
                outcome,
                attempts,
            } => EventKind::LocalActivityCompleted {
                seq,
                name,
                outcome,
                attempts,
            },
        }
    }

    /// The message a recorded input event stands for (`None` for commands and markers).
    pub fn from_event(kind: &EventKind) -> Option<Message> {
        // Field by field: cloning the whole event first would copy what is dropped.
        Some(match kind {
            EventKind::SignalReceived {
                name,
                args,
                signal_id,
                sent_at,
            } => Message::Signal {
                name: name.clone(),
                args: args.clone(),
                signal_id: signal_id.clone(),
                sent_at: *sent_at,
            },
            EventKind::UpdateAccepted {
                update_id,
                name,
                args,
            } => Message::Update {
                update_id: update_id.clone(),
                name: name.clone(),
                args: args.clone(),
            },
            EventKind::ActivityCompleted {
                seq,
                result,
                attempts,
            } => Message::ActivityResolved {
                seq: *seq,
                resolution: ActivityResolution::Completed {
                    result: result.clone(),
                    attempts: *attempts,
                },
            },
            EventKind::ActivityFailed {
                seq,
                failure,
                attempts,
                last_heartbeat,
            } => Message::ActivityResolved {
                seq: *seq,
                resolution: ActivityResolution::Failed {
                    failure: failure.clone(),
                    attempts: *attempts,
                    last_heartbeat: last_heartbeat.clone(),
                },
            },
            EventKind::ActivityTimedOut {
                seq,
                timeout,
                attempts,
                last_heartbeat,
            } => Message::ActivityResolved {
                seq: *seq,
                resolution: ActivityResolution::TimedOut {
                    timeout: *timeout,
                    attempts: *attempts,
                    last_heartbeat: last_heartbeat.clone(),
                },
            },
            EventKind::TimerFired { seq } => Message::TimerFired { seq: *seq },
            EventKind::CancelRequested { reason } => Message::CancelRequested {
                reason: reason.clone(),
            },
            EventKind::ChildWorkflowClosed { seq, outcome } => Message::ChildClosed {
                seq: *seq,
                outcome: outcome.clone(),
            },
            EventKind::LocalActivityCompleted {
                seq,
                name,
                outcome,
                attempts,
            } => Message::LocalActivityResolved {
                seq: *seq,
                name: name.clone(),
                outcome: outcome.clone(),
                attempts: *attempts,
            },
            _ => return None,
        })
    }

    /// The message as an inbox stores it (MessagePack with field names).
    pub fn to_bytes(&self) -> Result<Vec<u8>, PayloadError> {
        rmp_serde::to_vec_named(self).map_err(|e| PayloadError::Encode {
            what: "an inbox message".into(),
            message: e.to_string(),
        })
    }

    /// Decodes [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Message, PayloadError> {
        super::payload::from_slice(bytes).map_err(|e| PayloadError::Decode {
            what: "an inbox message".into(),
            message: e.to_string(),
        })
    }
}

impl EventKind {
    /// Whether this event records an input of a workflow task (a message), not a command.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            EventKind::SignalReceived { .. }
                | EventKind::UpdateAccepted { .. }
                | EventKind::ActivityCompleted { .. }
                | EventKind::ActivityFailed { .. }
                | EventKind::ActivityTimedOut { .. }
                | EventKind::TimerFired { .. }
                | EventKind::CancelRequested { .. }
                | EventKind::ChildWorkflowClosed { .. }
                | EventKind::LocalActivityCompleted { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::update::UpdateOutcome;

    #[test]
    fn is_input_agrees_with_from_event() {
        let p = || Payload::encode(&()).unwrap();
        let kinds = vec![
            EventKind::SignalReceived {
                name: "s".into(),
                args: p(),
                signal_id: None,
                sent_at: Some(7),
            },
            EventKind::TimerFired { seq: 1 },
            EventKind::CancelRequested { reason: "r".into() },
            EventKind::ChildWorkflowClosed {
                seq: 2,
                outcome: ChildOutcome::Failed("x".into()),
            },
            EventKind::TimerStarted {
                seq: 1,
                fire_at_ms: 5,
            },
            EventKind::UpdateCompleted {
                update_id: "u".into(),
                outcome: UpdateOutcome::Failed("f".into()),
            },
            EventKind::WorkflowTaskCompleted {
                task_time_ms: 1,
                suggest_continue_as_new: false,
                build_id: None,
            },
            EventKind::WorkflowCompleted { result: p() },
            EventKind::LocalActivityCompleted {
                seq: 3,
                name: "a".into(),
                outcome: LocalOutcome::Completed(p()),
                attempts: 2,
            },
        ];
        for k in kinds {
            assert_eq!(
                k.is_input(),
                Message::from_event(&k).is_some(),
                "{}",
                k.name()
            );
            if let Some(m) = Message::from_event(&k) {
                assert_eq!(m.to_event(), k, "an input event round-trips");
            }
        }
    }

    #[test]
    fn messages_round_trip_through_the_inbox_format() {
        let m = Message::signal("pause", Payload::encode(&(1,)).unwrap(), Some("s-1".into()));
        assert_eq!(Message::from_bytes(&m.to_bytes().unwrap()).unwrap(), m);
        assert!(Message::from_bytes(&[0xc1]).is_err());
    }
}
