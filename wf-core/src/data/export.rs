//! The exported history of one run: a versioned JSON document that people read and that the
//! `Replayer` reads back byte for byte.
//!
//! ```json
//! {"format": "wf-history", "version": 1, "workflow_type": "agent_run",
//!  "workflow_id": "agent-42", "run_id": "0190…", "events": [
//!    {"event_id": 1, "time_ms": 1764556800000, "type": "WorkflowStarted",
//!     "attributes": {"workflow_type": "agent_run", "input": {"goal": "ship"}, …},
//!     "msgpack": "AZKG…"}]}
//! ```
//!
//! `attributes` shows the event with its payloads decoded to JSON, for people; `msgpack` holds
//! the event exactly as the store encodes it (base64 of [`encode_event`]), and is the only
//! field read back: JSON cannot carry every MessagePack value (bytes, integer map keys), and a
//! replay must see the very bytes the workflow saw.

use super::codec::{decode_event, encode_event};
use super::history::HistoryEvent;
use super::json::event_attributes;
use super::payload::PayloadError;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` field of an exported history.
pub const HISTORY_FORMAT: &str = "wf-history";
/// The `version` of the exported history document this engine writes and reads.
pub const HISTORY_EXPORT_VERSION: u32 = 1;

/// The history of one run, as exported by `WorkflowHandle::export` and `wf export`, and read
/// by the `Replayer`.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// The workflow type's wire name.
    pub workflow_type: String,
    /// The workflow id.
    pub workflow_id: String,
    /// The run id.
    pub run_id: String,
    /// Every event of the run, in order, with dense ids from 1.
    pub events: Vec<HistoryEvent>,
}

/// Why a document is not a history this engine reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryFormatError {
    /// Not JSON, or not shaped like an exported history.
    #[error("not an exported wf history: {0}")]
    Malformed(String),
    /// A history document of another version.
    #[error("exported history version {found} is not supported (this engine reads version {supported}); export it again with a matching wf")]
    UnsupportedVersion {
        /// The document's version.
        found: u64,
        /// The version this engine reads.
        supported: u32,
    },
    /// One event does not decode, or contradicts its neighbours.
    #[error("history event {event_id}: {message}")]
    BadEvent {
        /// The event's id in the document.
        event_id: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The history could not be written as JSON (a payload's JSON form failed).
    #[error("could not export the history: {0}")]
    Encode(#[from] PayloadError),
}

/// The document as it is written and read; `attributes` is written only.
#[derive(Serialize, Deserialize)]
struct Document {
    format: String,
    version: u64,
    workflow_type: String,
    workflow_id: String,
    run_id: String,
    events: Vec<EventDoc>,
}

#[derive(Serialize, Deserialize)]
struct EventDoc {
    event_id: u64,
    time_ms: i64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    attributes: Value,
    msgpack: String,
}

impl History {
    /// The history as a JSON value (see the module docs for its shape).
    pub fn to_json_value(&self) -> Result<Value, HistoryFormatError> {
        let events = self
            .events
            .iter()
            .map(|e| {
                Ok(EventDoc {
                    event_id: e.event_id,
                    time_ms: e.time_ms,
                    kind: e.kind.name().to_string(),
                    attributes: event_attributes(&e.kind)?,
                    msgpack: BASE64.encode(encode_event(e.time_ms, &e.kind)?),
                })
            })
            .collect::<Result<Vec<_>, HistoryFormatError>>()?;
        let doc = Document {
            format: HISTORY_FORMAT.into(),
            version: HISTORY_EXPORT_VERSION.into(),
            workflow_type: self.workflow_type.clone(),
            workflow_id: self.workflow_id.clone(),
            run_id: self.run_id.clone(),
            events,
        };
        serde_json::to_value(doc).map_err(|e| HistoryFormatError::Malformed(e.to_string()))
    }

    /// The history as pretty-printed JSON, the form `wf export` writes.
    pub fn to_json(&self) -> Result<String, HistoryFormatError> {
        let value = self.to_json_value()?;
        serde_json::to_string_pretty(&value)
            .map_err(|e| HistoryFormatError::Malformed(e.to_string()))
    }

    /// Reads an exported history back. Refuses another format or version, an event whose
    /// `msgpack` does not decode or disagrees with its `type`, and ids that are not dense
    /// from 1.
    pub fn from_json(text: &str) -> Result<History, HistoryFormatError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| HistoryFormatError::Malformed(e.to_string()))?;
        Self::from_json_value(value)
    }

    /// [`History::from_json`] on a parsed JSON value.
    pub fn from_json_value(value: Value) -> Result<History, HistoryFormatError> {
        let format = value.get("format").and_then(Value::as_str);
        if format != Some(HISTORY_FORMAT) {
            return Err(HistoryFormatError::Malformed(format!(
                "its \"format\" is {}, not \"{HISTORY_FORMAT}\"",
                format.map_or("missing".to_string(), |f| format!("{f:?}"))
            )));
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(v) if v == u64::from(HISTORY_EXPORT_VERSION) => {}
            Some(found) => {
                return Err(HistoryFormatError::UnsupportedVersion {
                    found,
                    supported: HISTORY_EXPORT_VERSION,
                })
            }
            None => {
                return Err(HistoryFormatError::Malformed(
                    "its \"version\" is missing or not a number".into(),
                ))
            }
        }
        let doc: Document = serde_json::from_value(value)
            .map_err(|e| HistoryFormatError::Malformed(e.to_string()))?;
        let mut events = Vec::with_capacity(doc.events.len());
        for (i, e) in doc.events.into_iter().enumerate() {
            let bad = |message: String| HistoryFormatError::BadEvent {
                event_id: e.event_id,
                message,
            };
            let expected = i as u64 + 1;
            if e.event_id != expected {
                return Err(bad(format!(
                    "event ids must be dense from 1; expected {expected} here"
                )));
            }
            let bytes = BASE64
                .decode(e.msgpack.as_bytes())
                .map_err(|err| bad(format!("\"msgpack\" is not base64: {err}")))?;
            let event = decode_event(e.event_id, &bytes).map_err(|err| bad(err.to_string()))?;
            if event.kind.name() != e.kind {
                return Err(bad(format!(
                    "its \"type\" says {} but its \"msgpack\" holds {}",
                    e.kind,
                    event.kind.name()
                )));
            }
            events.push(event);
        }
        Ok(History {
            workflow_type: doc.workflow_type,
            workflow_id: doc.workflow_id,
            run_id: doc.run_id,
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::history::EventKind;
    use crate::data::payload::Payload;

    fn sample() -> History {
        let bytes = Payload::encode(&(vec![1u8, 2, 3], "x")).unwrap();
        History {
            workflow_type: "t".into(),
            workflow_id: "w".into(),
            run_id: "r".into(),
            events: vec![
                HistoryEvent {
                    event_id: 1,
                    time_ms: 5,
                    kind: EventKind::WorkflowStarted {
                        workflow_type: "t".into(),
                        input: Payload::encode_named(&serde_json::json!({"goal": "ship"})).unwrap(),
                        random_seed: 7,
                        continued_from: None,
                        parent: None,
                        limits: None,
                        repaired_from: None,
                    },
                },
                HistoryEvent {
                    event_id: 2,
                    time_ms: 6,
                    kind: EventKind::SignalReceived {
                        name: "s".into(),
                        args: bytes,
                        signal_id: Some("id".into()),
                        sent_at: Some(5),
                    },
                },
            ],
        }
    }

    #[test]
    fn a_history_round_trips_exactly_and_shows_payloads_as_json() {
        let h = sample();
        let text = h.to_json().unwrap();
        assert_eq!(History::from_json(&text).unwrap(), h);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["format"], "wf-history");
        assert_eq!(v["version"], 1);
        assert_eq!(v["events"][0]["attributes"]["input"]["goal"], "ship");
        assert_eq!(v["events"][1]["type"], "SignalReceived");
    }

    #[test]
    fn other_versions_and_formats_are_refused_clearly() {
        let mut v = sample().to_json_value().unwrap();
        v["version"] = 2.into();
        let err = History::from_json_value(v.clone()).unwrap_err();
        assert!(matches!(
            err,
            HistoryFormatError::UnsupportedVersion { found: 2, .. }
        ));
        assert!(err.to_string().contains("version 2 is not supported"));
        v["format"] = "other".into();
        assert!(History::from_json_value(v).is_err());
        assert!(matches!(
            History::from_json("[1, 2"),
            Err(HistoryFormatError::Malformed(_))
        ));
    }

    #[test]
    fn a_tampered_event_is_named() {
        let mut v = sample().to_json_value().unwrap();
        v["events"][1]["type"] = "TimerFired".into();
        let err = History::from_json_value(v.clone()).unwrap_err();
        assert!(matches!(
            err,
            HistoryFormatError::BadEvent { event_id: 2, .. }
        ));
        v["events"][1]["type"] = "SignalReceived".into();
        v["events"][1]["msgpack"] = "!!".into();
        assert!(History::from_json_value(v.clone()).is_err());
        v["events"][1]["event_id"] = 3.into();
        assert!(History::from_json_value(v).is_err());
    }
}
