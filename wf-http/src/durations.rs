//! One duration convention on the JSON surface: milliseconds under a `_ms` name, as request
//! bodies take them. A history event's own durations (activity timeouts, retry intervals, run
//! limits) serialize as serde's `{"secs", "nanos"}`; its JSON shows `"start_to_close_ms": 10000`
//! instead. Values inside payloads (the user's data) are left as their type serializes them.

use serde_json::{Map, Value};
use wf_core::{EventKind, Payload};

/// Optional duration fields of the engine's event types: shown as `NAME_ms: null` when unset.
const OPTIONAL: [&str; 6] = [
    "maximum_interval",
    "start_to_close",
    "schedule_to_close",
    "heartbeat_timeout",
    "execution_timeout",
    "run_timeout",
];

/// `attributes` (the JSON of `kind`, payloads shown as their values) with the event's own
/// durations as milliseconds.
pub(crate) fn event_in_ms(kind: &EventKind, mut attributes: Value) -> Value {
    if !has_duration(&attributes) {
        return attributes;
    }
    // Where the durations are: the event read without opening its payloads (they stay bytes),
    // so a duration-shaped value inside the user's data is never one of them.
    let Some(fields) = rmp_serde::to_vec_named(kind)
        .ok()
        .and_then(|b| Payload::from_bytes(b).ok())
        .and_then(|p| wf_core::wire::from_payload(&p).ok())
        .and_then(|v| match v {
            Value::Object(mut m) if m.len() == 1 => m.remove(kind.name()),
            _ => None,
        })
    else {
        return attributes;
    };
    convert(&fields, &mut attributes);
    attributes
}

/// Renames and converts in `shown` every duration `fields` (the same tree, payloads closed)
/// holds at the same place.
fn convert(fields: &Value, shown: &mut Value) {
    match (fields, shown) {
        (Value::Object(f), Value::Object(s)) => {
            let mut renamed = Map::new();
            for (key, value) in std::mem::take(s) {
                match f.get(&key) {
                    Some(fv) if as_ms(fv).is_some() => {
                        renamed.insert(format!("{key}_ms"), as_ms(fv).unwrap_or(Value::Null));
                    }
                    Some(Value::Null) if OPTIONAL.contains(&key.as_str()) => {
                        renamed.insert(format!("{key}_ms"), Value::Null);
                    }
                    Some(fv) => {
                        let mut value = value;
                        convert(fv, &mut value);
                        renamed.insert(key, value);
                    }
                    None => {
                        renamed.insert(key, value);
                    }
                }
            }
            *s = renamed;
        }
        (Value::Array(f), Value::Array(s)) if f.len() == s.len() => {
            for (fv, sv) in f.iter().zip(s.iter_mut()) {
                convert(fv, sv);
            }
        }
        _ => {}
    }
}

/// Milliseconds of a serde `Duration` (`{"secs", "nanos"}`): whole when exact, else with a
/// fraction.
fn as_ms(v: &Value) -> Option<Value> {
    let m = v.as_object().filter(|m| m.len() == 2)?;
    let secs = m.get("secs")?.as_u64()?;
    let nanos = m.get("nanos")?.as_u64()?;
    if nanos % 1_000_000 == 0 {
        let ms = secs.checked_mul(1000)?.checked_add(nanos / 1_000_000)?;
        Some(Value::from(ms))
    } else {
        Some(Value::from(secs as f64 * 1000.0 + nanos as f64 / 1e6))
    }
}

fn has_duration(v: &Value) -> bool {
    match v {
        Value::Object(m) => as_ms(v).is_some() || m.values().any(has_duration),
        Value::Array(a) => a.iter().any(has_duration),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_durations_become_ms_and_payload_values_stay() {
        let fields = json!({"options": {"retry": {"initial_interval": {"secs": 1, "nanos": 0},
            "maximum_interval": null}, "start_to_close": {"secs": 0, "nanos": 200_000_000},
            "heartbeat_timeout": null}, "input": [1, 2]});
        let mut shown = json!({"options": {"retry": {"initial_interval": {"secs": 1, "nanos": 0},
            "maximum_interval": null}, "start_to_close": {"secs": 0, "nanos": 200_000_000},
            "heartbeat_timeout": null}, "input": {"secs": 3, "nanos": 0}});
        convert(&fields, &mut shown);
        assert_eq!(
            shown,
            json!({"options": {"retry": {"initial_interval_ms": 1000, "maximum_interval_ms": null},
                "start_to_close_ms": 200, "heartbeat_timeout_ms": null},
                "input": {"secs": 3, "nanos": 0}})
        );
        assert_eq!(
            as_ms(&json!({"secs": 0, "nanos": 1500})),
            Some(json!(0.0015))
        );
    }
}
