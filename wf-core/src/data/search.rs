//! Finding runs: the typed values of search attributes (which a workflow upserts and lists
//! filter on) and the memo (free-form values set at start, shown but never filtered on).
//!
//! A store keeps a search attribute as its key, its kind (`keyword`, `int`, `float`, `bool`,
//! `datetime`) and a canonical text of its value, so that equality is one indexed text
//! comparison in every store.

use super::payload::Payload;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The search attributes of a run, by key.
pub type SearchAttributes = BTreeMap<String, SearchValue>;

/// The memo of a run: values set at start, by key, each encoded like any payload.
pub type Memo = BTreeMap<String, Payload>;

/// A search attribute's typed value.
///
/// ```
/// use wf_core::SearchValue;
/// assert_eq!(SearchValue::from("acme"), SearchValue::Keyword("acme".into()));
/// assert_eq!(SearchValue::from(3), SearchValue::Int(3));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SearchValue {
    /// A string compared as a whole (an id, a name, a state).
    Keyword(String),
    /// A signed integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A point in time, in milliseconds since the Unix epoch.
    Datetime(i64),
}

impl SearchValue {
    /// The kind's stable name: `keyword`, `int`, `float`, `bool` or `datetime`.
    pub fn kind(&self) -> &'static str {
        match self {
            SearchValue::Keyword(_) => "keyword",
            SearchValue::Int(_) => "int",
            SearchValue::Float(_) => "float",
            SearchValue::Bool(_) => "bool",
            SearchValue::Datetime(_) => "datetime",
        }
    }

    /// The value as stores keep it: equal values have equal texts (a float in its shortest
    /// form that reads back exactly).
    pub fn canonical(&self) -> String {
        match self {
            SearchValue::Keyword(s) => s.clone(),
            SearchValue::Int(i) | SearchValue::Datetime(i) => i.to_string(),
            SearchValue::Float(f) => f.to_string(),
            SearchValue::Bool(b) => b.to_string(),
        }
    }

    /// Reads back a stored `(kind, canonical text)`; `None` if they do not make a value.
    pub fn from_stored(kind: &str, text: &str) -> Option<SearchValue> {
        Some(match kind {
            "keyword" => SearchValue::Keyword(text.to_string()),
            "int" => SearchValue::Int(text.parse().ok()?),
            "float" => SearchValue::Float(text.parse().ok()?),
            "bool" => SearchValue::Bool(text.parse().ok()?),
            "datetime" => SearchValue::Datetime(text.parse().ok()?),
            _ => return None,
        })
    }

    /// Parses the text form an operator types (`wf list --search key=value`, the HTTP list's
    /// `search=key:value`): `true`/`false` is a bool, an integer an int, a number with a
    /// point a float, a text in double quotes a keyword (`"42"`), anything else a keyword.
    pub fn parse_loose(text: &str) -> SearchValue {
        if let Some(inner) = text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .filter(|_| text.len() >= 2)
        {
            return SearchValue::Keyword(inner.to_string());
        }
        match text {
            "true" => return SearchValue::Bool(true),
            "false" => return SearchValue::Bool(false),
            _ => {}
        }
        if let Ok(i) = text.parse::<i64>() {
            return SearchValue::Int(i);
        }
        if text.contains('.') {
            if let Ok(f) = text.parse::<f64>() {
                return SearchValue::Float(f);
            }
        }
        SearchValue::Keyword(text.to_string())
    }

    /// Parses a filter value as operators and the HTTP list write it: `KIND:VALUE` with a
    /// kind prefix (`int:42`, `keyword:42`, `float:1`, `bool:true`, `datetime:1700000000000`,
    /// the exact form [`typed`](Self::typed) writes), else as [`parse_loose`](Self::parse_loose)
    /// reads it. A kind prefix with a value that is not of that kind is an error.
    pub fn parse_filter(text: &str) -> Result<SearchValue, String> {
        if let Some((kind, rest)) = text.split_once(':') {
            if KINDS.contains(&kind) {
                return SearchValue::from_stored(kind, rest)
                    .ok_or_else(|| format!("{rest:?} is not a {kind} value"));
            }
        }
        Ok(SearchValue::parse_loose(text))
    }

    /// `KIND:VALUE`, which [`parse_filter`](Self::parse_filter) reads back exactly.
    pub fn typed(&self) -> String {
        format!("{}:{}", self.kind(), self.canonical())
    }

    /// The value as JSON: keywords as strings, numbers as numbers, a datetime as its
    /// milliseconds since the epoch.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            SearchValue::Keyword(s) => s.clone().into(),
            SearchValue::Int(i) | SearchValue::Datetime(i) => (*i).into(),
            SearchValue::Float(f) => serde_json::Number::from_f64(*f)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            SearchValue::Bool(b) => (*b).into(),
        }
    }
}

/// The kinds of search values, as [`SearchValue::kind`] names them.
pub const KINDS: [&str; 5] = ["keyword", "int", "float", "bool", "datetime"];

/// A memo as stored: one payload holding every entry.
pub fn encode_memo(memo: &Memo) -> Payload {
    Payload::unchecked(rmp_serde::to_vec(memo).expect("a map of strings to bytes always encodes"))
}

/// Reads a stored memo back.
pub fn decode_memo(stored: &Payload) -> Result<Memo, super::payload::PayloadError> {
    stored.decode()
}

impl std::fmt::Display for SearchValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SearchValue::Keyword(s) => write!(f, "{s:?}"),
            SearchValue::Datetime(ms) => write!(f, "{ms} ms"),
            other => f.write_str(&other.canonical()),
        }
    }
}

impl From<&str> for SearchValue {
    fn from(s: &str) -> Self {
        SearchValue::Keyword(s.to_string())
    }
}

impl From<String> for SearchValue {
    fn from(s: String) -> Self {
        SearchValue::Keyword(s)
    }
}

impl From<i64> for SearchValue {
    fn from(i: i64) -> Self {
        SearchValue::Int(i)
    }
}

impl From<i32> for SearchValue {
    fn from(i: i32) -> Self {
        SearchValue::Int(i64::from(i))
    }
}

impl From<u32> for SearchValue {
    fn from(i: u32) -> Self {
        SearchValue::Int(i64::from(i))
    }
}

impl From<f64> for SearchValue {
    fn from(f: f64) -> Self {
        SearchValue::Float(f)
    }
}

impl From<bool> for SearchValue {
    fn from(b: bool) -> Self {
        SearchValue::Bool(b)
    }
}

impl From<SystemTime> for SearchValue {
    /// A datetime, to the millisecond (times before the epoch read as the epoch).
    fn from(t: SystemTime) -> Self {
        let ms = t
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_millis();
        SearchValue::Datetime(i64::try_from(ms).unwrap_or(i64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_stored_form() {
        let values = [
            SearchValue::from("acme"),
            SearchValue::from(-42i64),
            SearchValue::from(0.1f64),
            SearchValue::from(1e300f64),
            SearchValue::from(true),
            SearchValue::Datetime(1_700_000_000_123),
        ];
        for v in values {
            let back = SearchValue::from_stored(v.kind(), &v.canonical());
            assert_eq!(back, Some(v));
        }
        assert_eq!(SearchValue::from_stored("int", "x"), None);
        assert_eq!(SearchValue::from_stored("blob", "x"), None);
    }

    #[test]
    fn typed_filters_read_back_exactly() {
        for v in [
            SearchValue::from("42"),
            SearchValue::from("int:7"),
            SearchValue::Float(1.0),
            SearchValue::Float(1e300),
            SearchValue::Int(-3),
            SearchValue::Bool(false),
            SearchValue::Datetime(5),
        ] {
            assert_eq!(SearchValue::parse_filter(&v.typed()), Ok(v));
        }
        assert_eq!(
            SearchValue::parse_filter("acme"),
            Ok(SearchValue::from("acme"))
        );
        assert!(SearchValue::parse_filter("int:x").is_err());
    }

    #[test]
    fn a_memo_reads_back() {
        let mut memo = Memo::new();
        memo.insert("note".into(), Payload::encode(&"hi").unwrap());
        assert_eq!(decode_memo(&encode_memo(&memo)).unwrap(), memo);
    }

    #[test]
    fn loose_text_takes_the_kind_it_reads_as() {
        assert_eq!(SearchValue::parse_loose("acme"), SearchValue::from("acme"));
        assert_eq!(SearchValue::parse_loose("42"), SearchValue::Int(42));
        assert_eq!(SearchValue::parse_loose("\"42\""), SearchValue::from("42"));
        assert_eq!(SearchValue::parse_loose("2.5"), SearchValue::Float(2.5));
        assert_eq!(SearchValue::parse_loose("false"), SearchValue::Bool(false));
        assert_eq!(SearchValue::parse_loose("\""), SearchValue::from("\""));
    }
}
