//! The query string of `GET /{type}/runs`, written by the remote client and read by the
//! server: `status`, `latest`, `search` (repeated, `KEY=VALUE` with the value as
//! `SearchValue::parse_filter` reads it), `started_after_ms`, `started_before_ms`,
//! `closed_after_ms`, `closed_before_ms` (ms since the Unix epoch), `build_id`, plus `limit` and `cursor`
//! (the run id of the last run of the previous page).

use crate::wire::{from_ms, to_ms};
use wf_core::SearchValue;
use wf_core::{ListFilter, RunStatus};

/// Percent-encodes `s` for a query string value or a path segment (everything but
/// unreserved characters).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The filter's conditions (not its type, limit or cursor) as a query string.
pub(crate) fn encode(filter: &ListFilter) -> String {
    let mut parts = vec![
        format!("status={}", filter.status.map_or("", |s| s.as_str())),
        format!("latest={}", filter.latest_only),
    ];
    if let Some(build) = &filter.build_id {
        parts.push(format!("build_id={}", escape(build)));
    }
    for (key, value) in &filter.search {
        parts.push(format!(
            "search={}",
            escape(&format!("{key}={}", value.typed()))
        ));
    }
    let times = [
        ("started_after_ms", filter.started_after),
        ("started_before_ms", filter.started_before),
        ("closed_after_ms", filter.closed_after),
        ("closed_before_ms", filter.closed_before),
    ];
    for (name, t) in times {
        if let Some(t) = t {
            parts.push(format!("{name}={}", to_ms(t)));
        }
    }
    parts.join("&")
}

/// Reads the filter's conditions from the query's `(name, value)` pairs: unknown names are
/// left to the caller; a bad value is an error that says which.
pub(crate) fn decode(pairs: &[(String, String)]) -> Result<ListFilter, String> {
    let mut filter = ListFilter::default();
    for (name, value) in pairs {
        let ms = || {
            value
                .parse::<u64>()
                .map(from_ms)
                .map_err(|_| format!("{name} must be milliseconds since the epoch, not {value:?}"))
        };
        match name.as_str() {
            "status" if !value.is_empty() => {
                filter.status = Some(RunStatus::parse(value).ok_or_else(|| {
                    let all: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
                    format!("status must be one of {}, not {value:?}", all.join(", "))
                })?);
            }
            "latest" => filter.latest_only = value == "true",
            "build_id" if !value.is_empty() => filter.build_id = Some(value.clone()),
            "search" => {
                let (key, text) = value
                    .split_once('=')
                    .ok_or_else(|| format!("search must be KEY=VALUE, not {value:?}"))?;
                let parsed =
                    SearchValue::parse_filter(text).map_err(|e| format!("search {key:?}: {e}"))?;
                filter.search.push((key.to_string(), parsed));
            }
            "started_after_ms" => filter.started_after = Some(ms()?),
            "started_before_ms" => filter.started_before = Some(ms()?),
            "closed_after_ms" => filter.closed_after = Some(ms()?),
            "closed_before_ms" => filter.closed_before = Some(ms()?),
            _ => {}
        }
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_filter_reads_back_from_its_query_string() {
        let filter = ListFilter {
            status: Some(RunStatus::Completed),
            latest_only: true,
            build_id: Some("v 2".into()),
            search: vec![
                ("customer".into(), SearchValue::from("a&b=c")),
                ("n".into(), SearchValue::Float(1.0)),
            ],
            started_after: Some(from_ms(5)),
            closed_before: Some(from_ms(9) + Duration::from_micros(1)),
            ..ListFilter::default()
        };
        let query = encode(&filter);
        let pairs: Vec<(String, String)> = query
            .split('&')
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                (k.to_string(), unescape(v))
            })
            .collect();
        let back = decode(&pairs).unwrap();
        assert_eq!(
            back,
            ListFilter {
                closed_before: Some(from_ms(9)),
                ..filter
            }
        );
        assert!(decode(&[("search".into(), "novalue".into())]).is_err());
        assert!(decode(&[("started_after_ms".into(), "-1".into())]).is_err());
    }

    fn unescape(s: &str) -> String {
        let mut out = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }
}
