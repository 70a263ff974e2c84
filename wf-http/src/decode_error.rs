//! A decode error in JSON terms. JSON arguments travel to the handler's types as MessagePack,
//! so a mismatch surfaces as rmp-serde's text (`wrong msgpack marker FixStr(3)`, `invalid
//! type: floating point `1.5`, expected u32`); this module says it as a JSON user reads it:
//! `expected an integer (u32), got a string "abc"`, with where in the value when the value
//! at fault can be found. Knows JSON values and message text only.

use serde_json::Value;

/// What the decoder saw, parsed from its message.
#[derive(Debug, Clone, PartialEq)]
enum Got {
    /// A value of a JSON kind (`"string"`, `"array"`, `"object"`, `"null"`, ...), with its
    /// length or text when the message gives it.
    Kind(&'static str, Option<String>),
}

/// `message` (the decoder's, for `value`, which should be `ty`) in JSON terms. `recheck`
/// decodes a copy of the whole value with the part at a path replaced, and answers the new
/// error's message (or `None`): it tells what a part should be when the message does not.
pub(crate) fn explain(
    value: &Value,
    ty: &str,
    message: &str,
    recheck: &dyn Fn(&[Step], Value) -> Option<String>,
) -> String {
    let Some((got, expected)) = parse(message) else {
        return message.replace('`', "\"");
    };
    let mut found = locate(value, &got);
    let (place, expected) = match expected {
        Some(e) => ((found.len() == 1).then(|| found.remove(0)), json_type(&e)),
        // rmp-serde names only the marker it saw where a number or a boolean should be:
        // the part that a probe shows to take a number or a boolean is the one at fault.
        None if found.len() == 1 && found[0].is_empty() => (found.pop(), json_type(ty)),
        None => found
            .into_iter()
            .take(32)
            .find_map(|path| probe(&path, recheck).map(|e| (Some(path), e)))
            .unwrap_or((None, "a number or a boolean".into())),
    };
    let got = match &place {
        Some(path) => describe(at(value, path).unwrap_or(&Value::Null)),
        None => describe_got(&got),
    };
    match place {
        Some(path) if !path.is_empty() => {
            format!("at {}: expected {expected}, got {got}", render(&path))
        }
        _ => format!("expected {expected}, got {got}"),
    }
}

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// An object's field.
    Key(String),
    /// An array's element.
    Index(usize),
}

/// `value` with the part at `path` replaced by `with`.
pub(crate) fn replaced(value: &Value, path: &[Step], with: Value) -> Value {
    let mut out = value.clone();
    let mut cur = &mut out;
    for s in path {
        let next = match (s, cur) {
            (Step::Key(k), Value::Object(m)) => m.get_mut(k),
            (Step::Index(i), Value::Array(a)) => a.get_mut(*i),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return out,
        }
    }
    *cur = with;
    out
}

fn at<'v>(value: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, s| match (s, v) {
        (Step::Key(k), Value::Object(m)) => m.get(k),
        (Step::Index(i), Value::Array(a)) => a.get(*i),
        _ => None,
    })
}

/// `(what was seen, what was expected)` from a serde or rmp-serde message.
fn parse(message: &str) -> Option<(Got, Option<String>)> {
    if let Some(marker) = message.strip_prefix("wrong msgpack marker ") {
        return Some((marker_kind(marker)?, None));
    }
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    let (seen, expected) = rest.rsplit_once(", expected ")?;
    Some((unexpected(seen)?, Some(expected.to_string())))
}

/// The JSON kind of a MessagePack marker as rmp-serde prints it (`FixStr(3)`, `Array16`).
fn marker_kind(marker: &str) -> Option<Got> {
    let (name, len) = match marker.split_once('(') {
        Some((n, l)) => (n, l.trim_end_matches(')').parse::<usize>().ok()),
        None => (marker, None),
    };
    let kind = match name {
        "FixStr" | "Str8" | "Str16" | "Str32" => "string",
        "FixArray" | "Array16" | "Array32" => "array",
        "FixMap" | "Map16" | "Map32" => "object",
        "Null" => "null",
        "True" | "False" => "boolean",
        _ => return None,
    };
    Some(Got::Kind(kind, len.map(|l| format!("len:{l}"))))
}

/// serde's `Unexpected` as printed: `string "x"`, `integer `5``, `floating point `1.5``,
/// `boolean `true``, `unit value`, `sequence`, `map`.
fn unexpected(seen: &str) -> Option<Got> {
    let quoted = |s: &str| s.trim_matches('`').to_string();
    if let Some(s) = seen.strip_prefix("string ") {
        return Some(Got::Kind("string", serde_json::from_str::<String>(s).ok()));
    }
    if let Some(n) = seen.strip_prefix("integer ") {
        return Some(Got::Kind("number", Some(quoted(n))));
    }
    if let Some(n) = seen.strip_prefix("floating point ") {
        return Some(Got::Kind("number", Some(quoted(n))));
    }
    if let Some(b) = seen.strip_prefix("boolean ") {
        return Some(Got::Kind("boolean", Some(quoted(b))));
    }
    match seen {
        "unit value" => Some(Got::Kind("null", None)),
        "sequence" => Some(Got::Kind("array", None)),
        "map" => Some(Got::Kind("object", None)),
        _ => None,
    }
}

/// The places in `value` that match `got`.
fn locate(value: &Value, got: &Got) -> Vec<Vec<Step>> {
    let mut found = Vec::new();
    walk(value, &mut Vec::new(), &mut |path, v| {
        if matches(v, got) {
            found.push(path.to_vec());
        }
    });
    found
}

fn walk(value: &Value, path: &mut Vec<Step>, visit: &mut dyn FnMut(&[Step], &Value)) {
    visit(path, value);
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                path.push(Step::Key(k.clone()));
                walk(v, path, visit);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                path.push(Step::Index(i));
                walk(v, path, visit);
                path.pop();
            }
        }
        _ => {}
    }
}

fn matches(v: &Value, Got::Kind(kind, detail): &Got) -> bool {
    let len = detail
        .as_deref()
        .and_then(|d| d.strip_prefix("len:"))
        .and_then(|l| l.parse::<usize>().ok());
    match (v, *kind) {
        (Value::String(s), "string") => match (len, detail) {
            (Some(l), _) => s.len() == l,
            (None, Some(d)) => s == d,
            (None, None) => true,
        },
        (Value::Array(a), "array") => len.is_none_or(|l| a.len() == l),
        (Value::Object(m), "object") => len.is_none_or(|l| m.len() == l),
        (Value::Null, "null") => true,
        (Value::Bool(b), "boolean") => detail.as_deref().is_none_or(|d| d == b.to_string()),
        (Value::Number(n), "number") => detail
            .as_deref()
            .is_none_or(|d| d == n.to_string() || d.parse::<f64>().ok() == n.as_f64()),
        _ => false,
    }
}

/// What the part at `path` should be, learnt from the decoder: a boolean put there is
/// refused with "expected u32" by a number field; a number, with "expected a boolean".
fn probe(path: &[Step], recheck: &dyn Fn(&[Step], Value) -> Option<String>) -> Option<String> {
    for (sample, seen) in [
        (Value::Bool(true), "boolean `true`"),
        (Value::from(0), "integer `0`"),
    ] {
        let Some(message) = recheck(path, sample) else {
            continue;
        };
        let rest = message.strip_prefix("invalid type: ")?;
        if let Some(expected) = rest
            .strip_prefix(seen)
            .and_then(|r| r.strip_prefix(", expected "))
        {
            // A part that takes strings or arrays refuses the sample too: not the one at fault.
            return (NUMBERS.contains(&expected) || expected == "a boolean")
                .then(|| json_type(expected));
        }
    }
    None
}

const NUMBERS: [&str; 14] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64",
];

/// A Rust type or serde's "expected" text as the JSON it takes.
fn json_type(t: &str) -> String {
    let t = t.trim();
    match t {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => format!("a non-negative integer ({t})"),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => format!("an integer ({t})"),
        "f32" | "f64" => "a number".into(),
        "bool" | "a boolean" => "a boolean".into(),
        "String" | "&str" | "str" | "char" | "a string" | "a character" | "a borrowed string" => {
            "a string".into()
        }
        "unit" | "()" => "null".into(),
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        _ => {
            if let Some(name) = t.strip_prefix("struct ") {
                format!("an object ({name})")
            } else if t.starts_with("a tuple")
                || t.starts_with("an array")
                || t.starts_with("tuple struct")
            {
                format!("an array ({t})")
            } else if let Some(inner) = t.strip_prefix("Option<").and_then(|r| r.strip_suffix('>'))
            {
                format!("{} or null", json_type(inner))
            } else if t.starts_with("Vec<") || t.starts_with('[') || t.contains("Set<") {
                format!("an array ({t})")
            } else if t.contains("Map<") {
                format!("an object ({t})")
            } else {
                t.to_string()
            }
        }
    }
}

/// A JSON value as a message shows it: `a string "abc"`, `the number 1.5`, `an array`.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let shown: String = s.chars().take(40).collect();
            let more = if shown.len() < s.len() { "..." } else { "" };
            format!("a string {shown:?}{more}")
        }
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

fn describe_got(Got::Kind(kind, detail): &Got) -> String {
    match (*kind, detail.as_deref()) {
        ("null", _) => "null".into(),
        ("string", Some(d)) if !d.starts_with("len:") => format!("a string {d:?}"),
        ("number" | "boolean", Some(d)) => format!("the {kind} {d}"),
        ("array" | "object", _) => format!("an {kind}"),
        (k, _) => format!("a {k}"),
    }
}

/// `goal`, `items[2].sku`.
fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    format!("{out:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn none(_: &[Step], _: Value) -> Option<String> {
        None
    }

    #[test]
    fn decoder_messages_read_in_json_terms() {
        let e = |v: Value, ty: &str, m: &str| explain(&v, ty, m, &none);
        assert_eq!(
            e(json!("abc"), "f64", "wrong msgpack marker FixStr(3)"),
            "expected a number, got a string \"abc\""
        );
        assert_eq!(
            e(
                json!(1.5),
                "u32",
                "invalid type: floating point `1.5`, expected u32"
            ),
            "expected a non-negative integer (u32), got the number 1.5"
        );
        assert_eq!(
            e(
                json!(null),
                "String",
                "invalid type: unit value, expected a string"
            ),
            "expected a string, got null"
        );
        assert_eq!(
            e(
                json!({"goal": "x", "step": -1}),
                "AgentInput",
                "invalid value: integer `-1`, expected u32"
            ),
            "at \"step\": expected a non-negative integer (u32), got the number -1"
        );
        assert_eq!(
            e(
                json!("x"),
                "AgentInput",
                "invalid type: string \"x\", expected struct AgentInput"
            ),
            "expected an object (AgentInput), got a string \"x\""
        );
        assert_eq!(
            e(json!({}), "T", "missing field `goal`"),
            "missing field \"goal\""
        );
    }

    #[test]
    fn a_nested_part_learns_its_type_by_probing() {
        let v = json!({"goal": "x", "step": "abc"});
        let recheck = |path: &[Step], with: Value| {
            assert_eq!(path, [Step::Key("step".into())]);
            Some(match with {
                Value::Bool(_) => "invalid type: boolean `true`, expected u32".to_string(),
                _ => "other".to_string(),
            })
        };
        assert_eq!(
            explain(&v, "AgentInput", "wrong msgpack marker FixStr(3)", &recheck),
            "at \"step\": expected a non-negative integer (u32), got a string \"abc\""
        );
        assert_eq!(
            replaced(&v, &[Step::Key("step".into())], json!(1)),
            json!({"goal": "x", "step": 1})
        );
    }
}
