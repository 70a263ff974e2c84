//! JSON to and from the payload codec (MessagePack). A JSON value becomes the MessagePack of
//! that value (objects as maps, which decode into structs by field name); arguments, given
//! as an array (by position) or an object (by parameter name), become the handler's argument
//! tuple, each checked against its parameter's type so that a bad one is named. MessagePack
//! becomes JSON through a depth-bounded decoder: bytes as arrays of numbers, map keys that are
//! not strings as their JSON text (the decoder lives in `wf_core::wire`).

use crate::decode_error::{self, replaced, Step};
use serde_json::Value;
use std::fmt;
use wf_core::{HandlerInfo, Payload, PayloadError};

/// Why JSON arguments do not fit a handler: the message names the parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsError {
    /// The parameter at fault, when one is.
    pub param: Option<String>,
    /// What is wrong.
    pub message: String,
    /// Set when the arguments are over the payload limit (a 413, not a 400).
    pub too_large: Option<PayloadError>,
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Encodes a JSON value as a payload (the value a typed decoder reads as the same data).
pub fn to_payload(value: &Value) -> Result<Payload, PayloadError> {
    let bytes = rmp_serde::to_vec(value).map_err(|e| PayloadError::Encode {
        what: "JSON value".into(),
        message: e.to_string(),
    })?;
    Payload::from_bytes(bytes)
}

/// The handler's argument tuple from JSON `args`: an array by position, an object by
/// parameter name, or nothing (`null`, absent) for a handler without parameters. Each value is
/// checked against its parameter's type.
pub fn args_payload(handler: &HandlerInfo, args: Option<&Value>) -> Result<Payload, ArgsError> {
    let params = handler.params;
    let values: Vec<&Value> = match args {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(Value::Object(map)) => {
            if let Some(extra) = map.keys().find(|k| !params.iter().any(|p| p.name == *k)) {
                return Err(ArgsError {
                    param: Some(extra.clone()),
                    message: format!(
                        "{} {:?} has no parameter {extra:?}; its parameters: {}",
                        handler.role,
                        handler.name,
                        param_list(handler)
                    ),
                    too_large: None,
                });
            }
            let mut values = Vec::with_capacity(params.len());
            for p in params {
                match map.get(p.name) {
                    Some(v) => values.push(v),
                    None => {
                        return Err(ArgsError {
                            param: Some(p.name.to_string()),
                            message: format!(
                                "missing argument {:?} ({}) of {} {:?}",
                                p.name, p.ty, handler.role, handler.name
                            ),
                            too_large: None,
                        })
                    }
                }
            }
            values
        }
        Some(other) => {
            return Err(ArgsError {
                param: None,
                message: format!(
                    "args must be an array (by position) or an object (by parameter name), not {}",
                    kind_of(other)
                ),
                too_large: None,
            })
        }
    };
    if values.len() != params.len() {
        return Err(ArgsError {
            param: None,
            message: format!(
                "{} {:?} takes {} ({}), got {}",
                handler.role,
                handler.name,
                count(params.len(), "argument"),
                param_list(handler),
                values.len()
            ),
            too_large: None,
        });
    }
    if values.is_empty() {
        // A handler without parameters takes `()`, which MessagePack writes as nil.
        return Payload::encode(&()).map_err(|e| ArgsError {
            param: None,
            message: e.to_string(),
            too_large: None,
        });
    }
    let mut elements = Vec::with_capacity(values.len());
    for (value, p) in values.iter().zip(params) {
        let bytes = rmp_serde::to_vec(value).map_err(|e| ArgsError {
            param: Some(p.name.to_string()),
            message: format!("argument {:?} ({}): {e}", p.name, p.ty),
            too_large: None,
        })?;
        elements.push(bytes);
    }
    let payload = tuple(&elements, elements.len()).map_err(|e| ArgsError {
        param: None,
        message: e.to_string(),
        too_large: too_large(&e),
    })?;
    let Err(whole) = handler.check_args(&payload) else {
        return Ok(payload);
    };
    // Which argument: decode growing prefixes of the tuple. While every argument given fits,
    // decoding stops at the end of the bytes; the first prefix that fails otherwise ends with
    // the bad argument.
    for k in 1..=elements.len() {
        let Ok(prefix) = tuple(&elements[..k], elements.len()) else {
            break;
        };
        match handler.check_args(&prefix) {
            Err(e) if !ran_out(&e) => {
                let p = &params[k - 1];
                // Decodes the arguments again with a part of this one replaced.
                let recheck = |path: &[Step], with: Value| {
                    let changed = rmp_serde::to_vec(&replaced(values[k - 1], path, with)).ok()?;
                    let mut all = elements.clone();
                    all[k - 1] = changed;
                    let payload = tuple(&all, all.len()).ok()?;
                    handler.check_args(&payload).err().map(|e| reason(&e))
                };
                let why = decode_error::explain(values[k - 1], p.ty, &reason(&e), &recheck);
                return Err(ArgsError {
                    param: Some(p.name.to_string()),
                    message: format!("argument {:?} ({}): {why}", p.name, p.ty),
                    too_large: None,
                });
            }
            _ => {}
        }
    }
    Err(ArgsError {
        param: None,
        message: reason(&whole),
        too_large: None,
    })
}

/// A MessagePack array of `len` elements holding the encoded `elements` (all of them, or the
/// first few for a prefix).
fn tuple(elements: &[Vec<u8>], len: usize) -> Result<Payload, PayloadError> {
    let mut out = Vec::with_capacity(5 + elements.iter().map(Vec::len).sum::<usize>());
    match u32::try_from(len) {
        Ok(n) if n < 16 => out.push(0x90 | n as u8),
        Ok(n) if n <= u16::MAX as u32 => {
            out.push(0xdc);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        Ok(n) => {
            out.push(0xdd);
            out.extend_from_slice(&n.to_be_bytes());
        }
        Err(_) => {
            return Err(PayloadError::Encode {
                what: "arguments".into(),
                message: "too many".into(),
            })
        }
    }
    for e in elements {
        out.extend_from_slice(e);
    }
    Payload::from_bytes(out)
}

/// Whether decoding failed only because the bytes ended.
fn ran_out(e: &PayloadError) -> bool {
    matches!(e, PayloadError::Decode { message, .. }
        if message.contains("failed to fill whole buffer") || message.contains("end of file"))
}

fn too_large(e: &PayloadError) -> Option<PayloadError> {
    matches!(e, PayloadError::TooLarge { .. }).then(|| e.clone())
}

fn reason(e: &PayloadError) -> String {
    match e {
        PayloadError::Decode { message, .. } | PayloadError::Encode { message, .. } => {
            message.clone()
        }
        other => other.to_string(),
    }
}

/// Checks JSON `input` against a workflow type's input; the error says what is wrong in JSON
/// terms (`input (AgentInput): at "step": expected ..., got ...`).
pub fn check_input(wt: &wf_core::WorkflowType, input: &Value) -> Result<Payload, ArgsError> {
    let payload = to_payload(input).map_err(|e| ArgsError {
        param: None,
        message: e.to_string(),
        too_large: too_large(&e),
    })?;
    let Err(e) = wt.check_input(&payload) else {
        return Ok(payload);
    };
    let recheck = |path: &[Step], with: Value| {
        let p = to_payload(&replaced(input, path, with)).ok()?;
        wt.check_input(&p).err().map(|e| reason(&e))
    };
    let why = decode_error::explain(input, wt.input, &reason(&e), &recheck);
    Err(ArgsError {
        param: None,
        message: format!("input ({}): {why}", wt.input),
        too_large: None,
    })
}

/// `1 argument`, `2 arguments`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn param_list(handler: &HandlerInfo) -> String {
    if handler.params.is_empty() {
        return "none".into();
    }
    handler
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty))
        .collect::<Vec<_>>()
        .join(", ")
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON form of a payload; bytes that are not MessagePack (or nest deeper than the
/// engine decodes) are an error.
pub fn from_payload(payload: &Payload) -> Result<Value, PayloadError> {
    wf_core::wire::from_payload(payload)
}

/// The JSON form of a history event's body (MessagePack with named fields): its payloads, kept
/// as `bin`, are shown as the JSON of the values they hold (one level deep).
pub fn from_event_bytes(bytes: &[u8]) -> Result<Value, PayloadError> {
    wf_core::wire::from_event_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Number};

    #[test]
    fn json_round_trips_through_payloads() {
        let v = json!({"goal": "x", "n": [1, -2, 3.5, null, true], "m": {"k": "v"}});
        let p = to_payload(&v).unwrap();
        assert_eq!(from_payload(&p).unwrap(), v);
    }

    #[test]
    fn typed_values_read_as_json() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct S {
            a: u32,
            b: Vec<String>,
        }
        let s = S {
            a: 7,
            b: vec!["x".into()],
        };
        // Named encoding: an object; the typed decoder reads the JSON-made payload back.
        let named = Payload::encode_named(&s).unwrap();
        assert_eq!(from_payload(&named).unwrap(), json!({"a": 7, "b": ["x"]}));
        let back: S = to_payload(&json!({"a": 7, "b": ["x"]}))
            .unwrap()
            .decode()
            .unwrap();
        assert_eq!(back, s);
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn any_json_round_trips_through_a_payload(v in any_json()) {
            let p = to_payload(&v).unwrap();
            prop_assert_eq!(from_payload(&p).unwrap(), v);
        }

        /// Random bytes read as JSON or as an error, never a panic; JSON read from them is
        /// what its own payload reads as (bytes, odd keys and floats settle in one step).
        #[test]
        fn any_bytes_read_as_json_or_an_error(
            bytes in prop::collection::vec(any::<u8>(), 0..48)
        ) {
            let _ = from_event_bytes(&bytes);
            let p = Payload::from_bytes(bytes).unwrap();
            if let Ok(v) = from_payload(&p) {
                let again = to_payload(&v).unwrap();
                prop_assert_eq!(from_payload(&again).unwrap(), v);
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let mut bytes = vec![0x91; 10_000];
        bytes.push(0xc0);
        let p = Payload::from_bytes(bytes).unwrap();
        assert!(from_payload(&p).is_err());
    }
}
