//! How history events are stored: each event is a format version byte followed by
//! MessagePack, and a store may keep the events of one commit together as one record. A newer
//! engine still decodes histories written by an older one.

use super::history::{EventKind, HistoryEvent};
use super::payload::{from_slice_seed, read_value, value_len, PayloadError};
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use std::fmt;

/// The history encoding written by this version of the engine.
pub const HISTORY_FORMAT_VERSION: u8 = 1;

/// Encodes an event body (time and kind) as stored: a format version byte, then MessagePack.
pub fn encode_event(time_ms: i64, kind: &EventKind) -> Result<Vec<u8>, PayloadError> {
    let mut out = Vec::new();
    encode_event_into(&mut out, time_ms, kind)?;
    Ok(out)
}

/// Appends what [`encode_event`] returns to `out` (a record of consecutive events, for
/// [`decode_events`]).
pub fn encode_event_into(
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
    let mut events = Vec::new();
    decode_events_into(first_event_id, bytes, &mut events)?;
    Ok(events)
}

/// [`decode_events`], appending to `events` (a history read row by row decodes into one list).
/// On an error, `events` may hold some of the record's events.
pub(crate) fn decode_events_into(
    first_event_id: u64,
    bytes: &[u8],
    events: &mut Vec<HistoryEvent>,
) -> Result<(), PayloadError> {
    decode_record(first_event_id, bytes, events, decode_next_into)
}

/// How many events a record written by [`encode_event_into`] holds, counted without decoding
/// them; `None` if the count is not found that way (an unknown format version, a damaged
/// record), which decoding then reports.
pub(crate) fn count_events(bytes: &[u8]) -> Option<usize> {
    let mut rest = bytes;
    let mut count = 0;
    while let Some((&HISTORY_FORMAT_VERSION, body)) = rest.split_first() {
        rest = body.get(value_len(body)?..)?;
        count += 1;
        if rest.is_empty() {
            return Some(count);
        }
    }
    None
}

/// [`decode_events`] reading every event as a stream ([`decode_next`]): what the in-place
/// decoding must agree with.
#[cfg(test)]
pub(crate) fn decode_events_by_reading(
    first_event_id: u64,
    bytes: &[u8],
) -> Result<Vec<HistoryEvent>, PayloadError> {
    let mut events = Vec::new();
    decode_record(first_event_id, bytes, &mut events, |id, rest, events| {
        events.push(decode_next(id, rest)?);
        Ok(())
    })?;
    Ok(events)
}

/// The events of a record, each decoded by `next`, with consecutive ids.
fn decode_record(
    first_event_id: u64,
    bytes: &[u8],
    events: &mut Vec<HistoryEvent>,
    next: impl Fn(u64, &mut &[u8], &mut Vec<HistoryEvent>) -> Result<(), PayloadError>,
) -> Result<(), PayloadError> {
    let mut rest = bytes;
    let mut event_id = first_event_id;
    loop {
        next(event_id, &mut rest, events)?;
        if rest.is_empty() {
            return Ok(());
        }
        // Only a damaged record (or a damaged first id) holds events past the last id.
        event_id = event_id
            .checked_add(1)
            .ok_or_else(|| PayloadError::Decode {
                what: format!("history event after {event_id}"),
                message: "the record holds more events than event ids remain".into(),
            })?;
    }
}

/// Decodes the event at the start of `rest` into `events` and moves `rest` past it: as
/// [`decode_next`] does, but in place.
///
/// The event's extent is found first ([`value_len`]); then it decodes from the slice, its
/// strings and bytes copied once (into the event) rather than through a reader's buffer, and
/// the event built where it is kept rather than moved out through each layer of the decoder.
/// The result is [`decode_next`]'s: a MessagePack decoder that succeeds has read exactly one
/// whole value (rmp-serde refuses an array or map its visitor did not read to the end, and
/// `value_len` refuses extension types, which a visitor may read in part), so it read the
/// same bytes and made the same decisions. What this path cannot vouch for (an extent it
/// cannot find, a body that does not decode) goes to `decode_next`, which gives the error.
fn decode_next_into(
    event_id: u64,
    rest: &mut &[u8],
    events: &mut Vec<HistoryEvent>,
) -> Result<(), PayloadError> {
    if let Some((&HISTORY_FORMAT_VERSION, body)) = rest.split_first() {
        if let Some(len) = value_len(body) {
            let (value, after) = body.split_at(len);
            let kept = events.len();
            if from_slice_seed(value, EventBody { event_id, events }).is_ok() {
                *rest = after;
                return Ok(());
            }
            events.truncate(kept);
        }
    }
    events.push(decode_next(event_id, rest)?);
    Ok(())
}

/// Decodes an event body, `(time_ms, kind)`, as the tuple's own `Deserialize` does, and
/// pushes the event onto `events`.
struct EventBody<'a> {
    event_id: u64,
    events: &'a mut Vec<HistoryEvent>,
}

impl<'de> DeserializeSeed<'de> for EventBody<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_tuple(2, self)
    }
}

impl<'de> Visitor<'de> for EventBody<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tuple of size 2")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(time_ms) = seq.next_element::<i64>()? else {
            return Err(de::Error::invalid_length(0, &self));
        };
        let Some(kind) = seq.next_element::<EventKind>()? else {
            return Err(de::Error::invalid_length(1, &self));
        };
        self.events.push(HistoryEvent {
            event_id: self.event_id,
            time_ms,
            kind,
        });
        Ok(())
    }
}

/// Decodes the event at the start of `rest` and moves `rest` past it, reading it as a
/// stream.
fn decode_next(event_id: u64, rest: &mut &[u8]) -> Result<HistoryEvent, PayloadError> {
    let error = |message: String| PayloadError::Decode {
        what: format!("history event {event_id}"),
        message,
    };
    match rest.split_first() {
        Some((&1, body)) => {
            *rest = body;
            let (time_ms, kind): (i64, EventKind) =
                read_value(rest).map_err(|e| error(e.to_string()))?;
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
    use crate::data::payload::Payload;

    #[test]
    fn events_are_counted_without_decoding() {
        let mut record = Vec::new();
        for seq in 0..3 {
            encode_event_into(&mut record, 5, &EventKind::TimerFired { seq }).unwrap();
        }
        assert_eq!(count_events(&record), Some(3));
        assert_eq!(count_events(&record[..record.len() - 1]), None);
        assert_eq!(count_events(&[]), None);
        record[0] = 9;
        assert_eq!(count_events(&record), None);
    }

    #[test]
    fn events_round_trip_with_version() {
        let kind = EventKind::SignalReceived {
            name: "pause".into(),
            args: Payload::encode(&()).unwrap(),
            signal_id: Some("s1".into()),
            sent_at: Some(1_700_000_000_000),
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

    /// A `SignalReceived` written before `sent_at` was recorded still decodes (as `None`).
    #[test]
    fn a_signal_event_without_sent_at_decodes() {
        #[derive(serde::Serialize)]
        #[allow(dead_code)]
        enum Old {
            WorkflowStarted,
            SignalReceived {
                name: String,
                args: Payload,
                signal_id: Option<String>,
            },
        }
        let old = Old::SignalReceived {
            name: "pause".into(),
            args: Payload::encode(&()).unwrap(),
            signal_id: None,
        };
        let mut bytes = vec![HISTORY_FORMAT_VERSION];
        rmp_serde::encode::write(&mut bytes, &(42i64, &old)).unwrap();
        let e = decode_event(3, &bytes).unwrap();
        assert_eq!(
            e.kind,
            EventKind::SignalReceived {
                name: "pause".into(),
                args: Payload::encode(&()).unwrap(),
                signal_id: None,
                sent_at: None,
            }
        );
    }

    /// An `ActivityFailed` written before it kept the last heartbeat still decodes (as `None`).
    #[test]
    fn an_activity_failure_without_its_last_heartbeat_decodes() {
        #[derive(serde::Serialize)]
        #[allow(dead_code)]
        enum Old {
            WorkflowStarted,
            SignalReceived,
            UpdateAccepted,
            UpdateCompleted,
            ActivityScheduled,
            ActivityCompleted,
            ActivityFailed {
                seq: u32,
                failure: crate::data::activity::ActivityFailure,
                attempts: u32,
            },
        }
        let failure = crate::data::activity::ActivityFailure {
            kind: "declined".into(),
            message: "card declined".into(),
            non_retryable: true,
        };
        let old = Old::ActivityFailed {
            seq: 2,
            failure: failure.clone(),
            attempts: 1,
        };
        let mut bytes = vec![HISTORY_FORMAT_VERSION];
        rmp_serde::encode::write(&mut bytes, &(42i64, &old)).unwrap();
        let e = decode_event(3, &bytes).unwrap();
        assert_eq!(
            e.kind,
            EventKind::ActivityFailed {
                seq: 2,
                failure,
                attempts: 1,
                last_heartbeat: None,
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
                sent_at: None,
            },
            EventKind::TimerStarted {
                seq: 3,
                fire_at_ms: 99,
            },
            EventKind::SignalReceived {
                name: "b".into(),
                args: Payload::encode(&vec![7u8; 300]).unwrap(),
                signal_id: Some("s".into()),
                sent_at: Some(5),
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
    fn a_record_past_the_last_event_id_is_an_error_not_an_overflow() {
        let mut bytes = encode_event(1, &EventKind::TimerFired { seq: 1 }).unwrap();
        bytes.extend(encode_event(2, &EventKind::TimerFired { seq: 2 }).unwrap());
        assert_eq!(decode_events(u64::MAX - 1, &bytes).unwrap().len(), 2);
        let err = decode_events(u64::MAX, &bytes).unwrap_err();
        assert!(err.to_string().contains("event id"), "{err}");
    }

    #[test]
    fn unknown_format_version_is_a_clear_error() {
        let err = decode_event(3, &[9, 1, 2]).unwrap_err();
        assert!(
            err.to_string().contains("unknown history format version 9"),
            "{err}"
        );
    }
}
