//! Payload codecs: the user's transformation of payload bytes at rest (compression,
//! encryption), Temporal's `PayloadCodec`. A [`PayloadCodec`] turns the MessagePack bytes of a
//! payload into other bytes and back; [`PayloadCodecs`] applies a chain of them and wraps each
//! result in an *envelope* naming the codec, so that a reader knows which codec decodes it.
//!
//! The envelope: `0xC1` (the one byte MessagePack never uses, so no clear payload starts with
//! it), the envelope version `1`, the codec id's length (one byte), the id, then the codec's
//! bytes. Decoding unwraps envelopes until the bytes are clear; bytes that do not start with
//! `0xC1` are clear already (a payload written before a codec was installed). An envelope whose
//! codec is not installed is an error naming that codec.
//!
//! Which payloads are encoded is written once, per type, by [`HasPayloads`]: every user
//! payload of an event, a message, a run or a request. Engine bookkeeping (a run's describe
//! summary) and search attributes stay clear; failure messages are strings and stay clear.

use super::activity::{ActivityResolution, LocalOutcome};
use super::history::{EventKind, HistoryEvent};
use super::message::{InboxMessage, Message};
use super::payload::{Payload, PayloadError};
use super::run::ChildOutcome;
use super::search::Memo;
use super::update::{UpdateOutcome, UpdateRecord, UpdateState};
use std::fmt;
use std::sync::Arc;

/// The first byte of an encoded payload: MessagePack's "never used" byte.
const ENVELOPE_MARK: u8 = 0xC1;
/// The envelope layout written by this version.
const ENVELOPE_VERSION: u8 = 1;

/// Transforms payload bytes at rest: compression, encryption. Install one (or a chain) with
/// `EngineBuilder::payload_codec`; every user payload the engine writes to its store goes
/// through [`encode`](Self::encode), every one it reads back through [`decode`](Self::decode).
///
/// The [`id`](Self::id) is written beside each encoded payload: keep it stable for as long as
/// payloads it encoded are stored, and give a new key (or a new algorithm) a new id if old
/// payloads must stay readable by a codec that knows both.
///
/// ```
/// use wf_core::{CodecError, PayloadCodec};
///
/// /// Reverses the bytes: a stand-in for a real cipher.
/// struct Reverse;
///
/// impl PayloadCodec for Reverse {
///     fn id(&self) -> &str {
///         "reverse"
///     }
///     fn encode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
///         Ok(bytes.iter().rev().copied().collect())
///     }
///     fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
///         Ok(bytes.iter().rev().copied().collect())
///     }
/// }
/// ```
pub trait PayloadCodec: Send + Sync + 'static {
    /// The codec's stable name, written beside every payload it encodes: 1 to 255 bytes.
    fn id(&self) -> &str;

    /// Encodes payload bytes (MessagePack, or another codec's output in a chain).
    fn encode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError>;

    /// Decodes what [`encode`](Self::encode) returned. Bytes it cannot decode (a wrong key,
    /// damaged data) are an error, never a panic and never other bytes.
    fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError>;
}

/// Why a [`PayloadCodec`] could not encode or decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CodecError {
    message: String,
}

impl CodecError {
    /// An error saying what went wrong (e.g. "authentication tag mismatch: wrong key?").
    pub fn new(message: impl Into<String>) -> Self {
        CodecError {
            message: message.into(),
        }
    }
}

/// The codecs an engine applies, in order: encoding runs the first, then wraps its result
/// with the next (compress, then encrypt); decoding unwraps the outermost envelope first.
#[derive(Clone, Default)]
pub struct PayloadCodecs {
    chain: Vec<Arc<dyn PayloadCodec>>,
}

impl fmt::Debug for PayloadCodecs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.chain.iter().map(|c| c.id()))
            .finish()
    }
}

impl PayloadCodecs {
    /// Adds `codec` to the end of the chain (it encodes what the previous ones produced).
    /// Refuses an id that is empty, longer than 255 bytes, or already in the chain.
    pub fn push(&mut self, codec: Arc<dyn PayloadCodec>) -> Result<(), String> {
        let id = codec.id();
        if id.is_empty() || id.len() > usize::from(u8::MAX) {
            return Err(format!(
                "payload codec id {id:?} must be 1 to 255 bytes long"
            ));
        }
        if self.chain.iter().any(|c| c.id() == id) {
            return Err(format!("payload codec {id:?} is installed twice"));
        }
        self.chain.push(codec);
        Ok(())
    }

    /// Whether no codec is installed.
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }

    /// Encodes the payload in place through every codec. An empty payload (no value at all)
    /// stays empty.
    pub fn encode(&self, payload: &mut Payload) -> Result<(), PayloadError> {
        if payload.is_empty() {
            return Ok(());
        }
        for codec in &self.chain {
            let id = codec.id();
            let body = codec
                .encode(payload.as_bytes())
                .map_err(|e| PayloadError::Codec {
                    codec: id.to_string(),
                    message: format!("encoding failed: {e}"),
                })?;
            let mut out = Vec::with_capacity(3 + id.len() + body.len());
            out.extend_from_slice(&[ENVELOPE_MARK, ENVELOPE_VERSION, id.len() as u8]);
            out.extend_from_slice(id.as_bytes());
            out.extend_from_slice(&body);
            *payload = Payload::unchecked(out);
        }
        Ok(())
    }

    /// Decodes the payload in place, unwrapping envelopes until it is clear. A clear payload
    /// (written before any codec was installed) is left as it is.
    pub fn decode(&self, payload: &mut Payload) -> Result<(), PayloadError> {
        while let Some((id, body)) = envelope(payload.as_bytes())? {
            let codec =
                self.chain
                    .iter()
                    .find(|c| c.id() == id)
                    .ok_or_else(|| PayloadError::Codec {
                        codec: id.to_string(),
                        message: format!(
                        "this payload was encoded by payload codec {id:?}, which is not installed \
                         (installed: {}); install it with EngineBuilder::payload_codec",
                        self.installed()
                    ),
                    })?;
            let clear = codec.decode(body).map_err(|e| PayloadError::Codec {
                codec: id.to_string(),
                message: format!("decoding failed: {e}"),
            })?;
            *payload = Payload::unchecked(clear);
        }
        Ok(())
    }

    /// Encodes every user payload of `value` (see [`HasPayloads`]).
    pub fn encode_all<T: HasPayloads + ?Sized>(&self, value: &mut T) -> Result<(), PayloadError> {
        value.for_each_payload(&mut |p| self.encode(p))
    }

    /// Decodes every user payload of `value` (see [`HasPayloads`]).
    pub fn decode_all<T: HasPayloads + ?Sized>(&self, value: &mut T) -> Result<(), PayloadError> {
        value.for_each_payload(&mut |p| self.decode(p))
    }

    fn installed(&self) -> String {
        if self.chain.is_empty() {
            return "none".into();
        }
        let ids: Vec<&str> = self.chain.iter().map(|c| c.id()).collect();
        ids.join(", ")
    }
}

/// The codec id and body of an encoded payload; `None` for clear bytes.
fn envelope(bytes: &[u8]) -> Result<Option<(&str, &[u8])>, PayloadError> {
    let [ENVELOPE_MARK, rest @ ..] = bytes else {
        return Ok(None);
    };
    let damaged = |message: &str| PayloadError::Decode {
        what: "encoded payload".into(),
        message: message.into(),
    };
    let [version, len, rest @ ..] = rest else {
        return Err(damaged("its envelope is cut short"));
    };
    if *version != ENVELOPE_VERSION {
        return Err(damaged(&format!(
            "unknown payload envelope version {version}; upgrade wf to read it"
        )));
    }
    let len = usize::from(*len);
    if rest.len() < len {
        return Err(damaged("its codec id is cut short"));
    }
    let (id, body) = rest.split_at(len);
    let id = std::str::from_utf8(id).map_err(|_| damaged("its codec id is not UTF-8"))?;
    Ok(Some((id, body)))
}

/// The id of the codec that encoded these payload bytes (the outermost one, in a chain);
/// `None` for clear bytes. Lets a reader without the codec say what it cannot show.
pub fn encoded_with(bytes: &[u8]) -> Option<&str> {
    envelope(bytes).ok().flatten().map(|(id, _)| id)
}

/// A value that holds user payloads: names them once for every codec pass (encode on the way
/// into the store, decode on the way out, decode for a replayer). Engine bookkeeping and
/// search attributes are not visited.
pub trait HasPayloads {
    /// Calls `f` on each user payload, stopping at the first error.
    fn for_each_payload(
        &mut self,
        f: &mut dyn FnMut(&mut Payload) -> Result<(), PayloadError>,
    ) -> Result<(), PayloadError>;
}

/// The visitor's signature, for the impls below.
type Visit<'a> = &'a mut dyn FnMut(&mut Payload) -> Result<(), PayloadError>;

impl HasPayloads for Payload {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        f(self)
    }
}

impl<T: HasPayloads> HasPayloads for Option<T> {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            Some(v) => v.for_each_payload(f),
            None => Ok(()),
        }
    }
}

impl<T: HasPayloads> HasPayloads for [T] {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.iter_mut().try_for_each(|v| v.for_each_payload(f))
    }
}

impl<T: HasPayloads> HasPayloads for Vec<T> {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.as_mut_slice().for_each_payload(f)
    }
}

impl HasPayloads for Memo {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.values_mut().try_for_each(f)
    }
}

impl HasPayloads for HistoryEvent {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.kind.for_each_payload(f)
    }
}

impl HasPayloads for EventKind {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        // Exhaustive on purpose: a new event kind must say whether it carries user payloads.
        match self {
            EventKind::WorkflowStarted { input, .. }
            | EventKind::ActivityScheduled { input, .. }
            | EventKind::ContinuedAsNew { input, .. }
            | EventKind::ChildWorkflowStarted { input, .. } => f(input),
            EventKind::SignalReceived { args, .. }
            | EventKind::UpdateAccepted { args, .. }
            | EventKind::ExternalSignalSent { args, .. } => f(args),
            EventKind::UpdateCompleted { outcome, .. } => outcome.for_each_payload(f),
            EventKind::ActivityCompleted { result, .. }
            | EventKind::WorkflowCompleted { result } => f(result),
            EventKind::ActivityFailed { last_heartbeat, .. }
            | EventKind::ActivityTimedOut { last_heartbeat, .. } => {
                last_heartbeat.for_each_payload(f)
            }
            EventKind::MarkerRecorded { value, .. }
            | EventKind::StreamWritten { value, .. }
            | EventKind::EventSet { value, .. } => f(value),
            EventKind::ChildWorkflowClosed { outcome, .. } => outcome.for_each_payload(f),
            EventKind::LocalActivityCompleted { outcome, .. } => outcome.for_each_payload(f),
            EventKind::TimerStarted { .. }
            | EventKind::TimerFired { .. }
            | EventKind::TimerCancelled { .. }
            | EventKind::CancelRequested { .. }
            | EventKind::WorkflowTaskCompleted { .. }
            | EventKind::WorkflowFailed { .. }
            | EventKind::WorkflowTerminated { .. }
            | EventKind::ActivityCancelled { .. }
            | EventKind::WorkflowCancelled { .. }
            | EventKind::ChildCancelRequested { .. }
            | EventKind::WorkflowTimedOut { .. }
            | EventKind::WorkflowReset { .. }
            | EventKind::StreamClosed { .. }
            // Search attributes stay clear: the store indexes them.
            | EventKind::SearchAttributesUpserted { .. } => Ok(()),
        }
    }
}

impl HasPayloads for Message {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            Message::Signal { args, .. } | Message::Update { args, .. } => f(args),
            Message::ActivityResolved { resolution, .. } => resolution.for_each_payload(f),
            Message::ChildClosed { outcome, .. } => outcome.for_each_payload(f),
            Message::LocalActivityResolved { outcome, .. } => outcome.for_each_payload(f),
            Message::TimerFired { .. } | Message::CancelRequested { .. } => Ok(()),
        }
    }
}

impl HasPayloads for InboxMessage {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.message.for_each_payload(f)
    }
}

impl HasPayloads for ActivityResolution {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            ActivityResolution::Completed { result, .. } => f(result),
            ActivityResolution::Failed { last_heartbeat, .. }
            | ActivityResolution::TimedOut { last_heartbeat, .. } => {
                last_heartbeat.for_each_payload(f)
            }
        }
    }
}

impl HasPayloads for LocalOutcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            LocalOutcome::Completed(result) => f(result),
            LocalOutcome::Failed(_) | LocalOutcome::TimedOut(_) | LocalOutcome::Backoff { .. } => {
                Ok(())
            }
        }
    }
}

impl HasPayloads for ChildOutcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            ChildOutcome::Completed(result) => f(result),
            ChildOutcome::Failed(_)
            | ChildOutcome::Cancelled(_)
            | ChildOutcome::Terminated(_)
            | ChildOutcome::StartFailed(_) => Ok(()),
        }
    }
}

impl HasPayloads for UpdateOutcome {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            UpdateOutcome::Completed(value) => f(value),
            UpdateOutcome::Failed(_) => Ok(()),
        }
    }
}

impl HasPayloads for UpdateState {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        match self {
            UpdateState::Completed(outcome) => outcome.for_each_payload(f),
            UpdateState::Requested
            | UpdateState::Accepted
            | UpdateState::Rejected(_)
            | UpdateState::Abandoned => Ok(()),
        }
    }
}

impl HasPayloads for UpdateRecord {
    fn for_each_payload(&mut self, f: Visit<'_>) -> Result<(), PayloadError> {
        self.state.for_each_payload(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Xor(u8, &'static str);

    impl PayloadCodec for Xor {
        fn id(&self) -> &str {
            self.1
        }
        fn encode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
            Ok(bytes.iter().map(|b| b ^ self.0).collect())
        }
        fn decode(&self, bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
            Ok(bytes.iter().map(|b| b ^ self.0).collect())
        }
    }

    fn chain(codecs: Vec<Arc<dyn PayloadCodec>>) -> PayloadCodecs {
        let mut chain = PayloadCodecs::default();
        for c in codecs {
            chain.push(c).unwrap();
        }
        chain
    }

    #[test]
    fn a_chain_round_trips_and_names_its_outer_codec() {
        let codecs = chain(vec![Arc::new(Xor(1, "one")), Arc::new(Xor(2, "two"))]);
        let clear = Payload::encode(&("secret", 7)).unwrap();
        let mut p = clear.clone();
        codecs.encode(&mut p).unwrap();
        assert_ne!(p, clear);
        assert_eq!(encoded_with(p.as_bytes()), Some("two"));
        assert!(p.display().contains("codec two"), "{}", p.display());
        codecs.decode(&mut p).unwrap();
        assert_eq!(p, clear);
    }

    #[test]
    fn clear_payloads_decode_as_they_are_and_unknown_codecs_are_named() {
        let codecs = chain(vec![Arc::new(Xor(1, "one"))]);
        let clear = Payload::encode(&"old").unwrap();
        let mut p = clear.clone();
        codecs.decode(&mut p).unwrap();
        assert_eq!(p, clear);

        let other = chain(vec![Arc::new(Xor(9, "other"))]);
        other.encode(&mut p).unwrap();
        let err = codecs.decode(&mut p).unwrap_err();
        assert!(
            matches!(&err, PayloadError::Codec { codec, .. } if codec == "other"),
            "{err}"
        );
        assert!(err.to_string().contains("not installed"), "{err}");
    }

    #[test]
    fn refuses_bad_ids_and_damaged_envelopes() {
        let mut codecs = PayloadCodecs::default();
        assert!(codecs.push(Arc::new(Xor(1, ""))).is_err());
        codecs.push(Arc::new(Xor(1, "one"))).unwrap();
        assert!(codecs.push(Arc::new(Xor(2, "one"))).is_err());
        let mut cut = Payload::unchecked(vec![ENVELOPE_MARK, ENVELOPE_VERSION, 9, b'o']);
        assert!(matches!(
            codecs.decode(&mut cut),
            Err(PayloadError::Decode { .. })
        ));
    }

    #[test]
    fn empty_payloads_stay_empty() {
        let codecs = chain(vec![Arc::new(Xor(1, "one"))]);
        let mut p = Payload::default();
        codecs.encode(&mut p).unwrap();
        assert!(p.is_empty());
    }
}
