//! MessagePack read as JSON, for people and for JSON APIs: a depth-bounded decoder of any
//! payload or event body into a `serde_json::Value` (bytes as arrays of numbers, map keys that
//! are not strings as their JSON text). Used by history export and by the HTTP service.

use super::history::EventKind;
use super::payload::{Payload, PayloadError, MAX_DECODE_DEPTH};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// The JSON form of a payload; bytes that are not MessagePack (or nest deeper than the
/// engine decodes) are an error. A payload still encoded by a payload codec (read without it)
/// is `{"encoded": {"codec": ID, "bytes": N}}`.
pub fn from_payload(payload: &Payload) -> Result<Value, PayloadError> {
    if let Some(value) = encoded(payload.as_bytes()) {
        return Ok(value);
    }
    decode_json(payload.as_bytes(), false)
}

/// What JSON shows of payload bytes still encoded by a payload codec; `None` for clear bytes.
fn encoded(bytes: &[u8]) -> Option<Value> {
    let codec = super::payload_codec::encoded_with(bytes)?;
    Some(serde_json::json!({"encoded": {"codec": codec, "bytes": bytes.len()}}))
}

/// The JSON form of a history event's body (MessagePack with named fields): its payloads, kept
/// as `bin`, are shown as the JSON of the values they hold (one level deep).
pub fn from_event_bytes(bytes: &[u8]) -> Result<Value, PayloadError> {
    decode_json(bytes, true)
}

/// Decodes one whole value: bytes left after it are an error.
fn decode_json(bytes: &[u8], payloads: bool) -> Result<Value, PayloadError> {
    let error = |message: String| PayloadError::Decode {
        what: "payload as JSON".into(),
        message,
    };
    let mut rest = bytes;
    let mut de = rmp_serde::Deserializer::new(&mut rest);
    de.set_max_depth(MAX_DECODE_DEPTH);
    let value = Seed { payloads }
        .deserialize(&mut de)
        .map_err(|e| error(e.to_string()))?;
    if !rest.is_empty() {
        return Err(error(format!("{} bytes after the value", rest.len())));
    }
    Ok(value)
}

/// Reads any self-describing serde data as JSON; with `payloads`, a `bin` that is a whole
/// MessagePack value reads as that value (once: bins inside it stay bytes).
#[derive(Clone, Copy)]
struct Seed {
    payloads: bool,
}

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any MessagePack value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // NaN and infinities have no JSON form.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Value, E> {
        if self.payloads {
            if let Some(value) = encoded(v) {
                return Ok(value);
            }
            if let Ok(value) = decode_json(v, false) {
                return Ok(value);
            }
        }
        Ok(Value::Array(v.iter().map(|b| Value::from(*b)).collect()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(self)? {
            let key = match key {
                Value::String(s) => s,
                other => other.to_string(),
            };
            out.insert(key, map.next_value_seed(self)?);
        }
        Ok(Value::Object(out))
    }
}

/// The attributes of an event as JSON (`{"seq": 1, "name": "charge", "input": ...}`), its
/// payloads shown as the values they hold; `null` for an event without fields.
pub fn event_attributes(kind: &EventKind) -> Result<Value, PayloadError> {
    let bytes = rmp_serde::to_vec_named(kind).map_err(|e| PayloadError::Encode {
        what: format!("event {}", kind.name()),
        message: e.to_string(),
    })?;
    // An enum variant with fields is `{"Name": {...}}`; a unit variant is `"Name"`.
    Ok(match from_event_bytes(&bytes)? {
        Value::Object(mut map) if map.len() == 1 => map.remove(kind.name()).unwrap_or(Value::Null),
        _ => Value::Null,
    })
}
