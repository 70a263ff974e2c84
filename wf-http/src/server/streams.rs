//! A run's durable streams as server-sent events, the list of its streams, and its published
//! events by long poll: `GET /{type}/runs/{id}/streams/{name}`, `GET /{type}/runs/{id}/streams`
//! and `GET /{type}/runs/{id}/published/{key}`.
//!
//! The stream route sends each entry as an event `id: OFFSET` with `data:` the entry's value
//! as JSON (or, for a caller that accepts MessagePack, its bytes in base64: what the remote
//! client reads), follows new entries as they commit, and ends with `event: end` once the
//! stream is closed or its run has closed and every entry was sent. The run is read (and its
//! errors answered: 404, 400) before the first byte, so an unknown run is a plain 404.

use super::body::{Codec, Failure};
use super::messages::path;
use super::runs::query;
use super::Api;
use crate::json;
use crate::wire::{
    PendingBody, StreamEndBody, StreamInfoBody, StreamListBody, ValueBody, RUN_ID_HEADER,
    STREAM_END,
};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::Deserialize;
use std::collections::VecDeque;
use std::time::Duration;
use wf_core::client::{StreamRead, STREAM_PAGE};
use wf_core::{Client, StreamPage, WfError};

/// How often an idle event stream sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// How long a published-event poll waits by default, and at most.
const WAIT_DEFAULT_MS: u64 = 20_000;
const WAIT_MAX_MS: u64 = 50_000;

/// `?from=&run_id=` of the stream route.
#[derive(Deserialize)]
pub(crate) struct StreamParams {
    from: Option<u64>,
    run_id: Option<String>,
}

/// `?run_id=` of the stream list route.
#[derive(Deserialize)]
pub(crate) struct ListParams {
    run_id: Option<String>,
}

/// `?timeout_ms=` of the published-event route.
#[derive(Deserialize)]
pub(crate) struct EventParams {
    timeout_ms: Option<u64>,
}

/// The offset to start at: the one after `Last-Event-ID` when the request has one (a
/// reconnecting `EventSource` sends its first URL again, so the header wins over `?from=`),
/// else `?from=` (0 by default).
fn start_offset(headers: &HeaderMap, from: Option<u64>) -> Result<u64, Failure> {
    match headers.get("last-event-id") {
        Some(value) => {
            let last = value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    Failure::invalid_args(
                        format!("Last-Event-ID must be an entry's offset, not {value:?}"),
                        None,
                    )
                })?;
            Ok(last.saturating_add(1))
        }
        None => Ok(from.unwrap_or(0)),
    }
}

/// What one step of the event stream has: entries to send, and whether it ended.
struct Follow {
    client: Client,
    read: StreamRead,
    msgpack: bool,
    queued: VecDeque<Event>,
    ended: bool,
}

impl Follow {
    /// Queues the events of `page` and moves the read past it.
    fn take(&mut self, page: StreamPage) -> Result<(), WfError> {
        let ended = page.ended(self.read.max);
        self.read.run_id = Some(page.run_id);
        for entry in page.entries {
            if entry.offset < self.read.from {
                continue;
            }
            self.read.from = entry.offset + 1;
            match entry.value {
                Some(value) => {
                    let data = if self.msgpack {
                        base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
                    } else {
                        json::from_payload(&value)?.to_string()
                    };
                    self.queued
                        .push_back(Event::default().id(entry.offset.to_string()).data(data));
                }
                None => {
                    self.queued.push_back(end_event(true, Some(entry.offset)));
                    self.ended = true;
                    return Ok(());
                }
            }
        }
        if ended {
            self.queued.push_back(end_event(false, None));
            self.ended = true;
        }
        Ok(())
    }

    /// The next event, reading (and waiting) for more when none is queued; `None` after the
    /// end (or an error, sent as an `event: error`).
    async fn next(mut self) -> Option<(Event, Follow)> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some((event, self));
            }
            if self.ended {
                return None;
            }
            let read = self.client.transport().read_stream(self.read.clone()).await;
            if let Err(e) = read.and_then(|page| self.take(page)) {
                self.ended = true;
                let message = serde_json::json!({ "error": e.to_string() }).to_string();
                return Some((Event::default().event("error").data(message), self));
            }
        }
    }
}

/// `event: end`, with `data: {"closed": bool, "offset": N}` (the close's offset when the
/// stream was closed; none when the run ended with the stream open).
fn end_event(closed: bool, offset: Option<u64>) -> Event {
    let body = StreamEndBody { closed, offset };
    let data = serde_json::to_string(&body).unwrap_or_else(|_| "{}".into());
    Event::default().event(STREAM_END).data(data)
}

/// `GET /{type}/runs/{id}/streams/{name}?from=N&run_id=R`: the stream's entries as
/// server-sent events from offset N (or the one after `Last-Event-ID`), following new ones
/// until the end. The run read (the latest of `id`, or `run_id`) is in the `wf-run-id`
/// header.
pub(crate) async fn stream(
    State(api): State<Api>,
    p: Result<Path<(String, String, String)>, PathRejection>,
    q: Result<Query<StreamParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id, name) = path(p)?;
    let q = query(q)?;
    api.named_type(&ty)?;
    let from = start_offset(&headers, q.from)?;
    let read = StreamRead {
        workflow_id: id,
        run_id: q.run_id,
        stream: name,
        from,
        max: STREAM_PAGE,
        wait: false,
    };
    let client = api.client().clone();
    // The first read answers for the run: 404 or 400 as a status, not an event.
    let page = client.transport().read_stream(read.clone()).await?;
    let run_id = page.run_id.clone();
    let mut follow = Follow {
        client,
        read: StreamRead { wait: true, ..read },
        msgpack: Codec::of(&headers) == Codec::Msgpack,
        queued: VecDeque::new(),
        ended: false,
    };
    follow.take(page)?;
    let events = futures_util::stream::unfold(follow, |f| async move {
        f.next()
            .await
            .map(|(event, f)| (Ok::<_, std::convert::Infallible>(event), f))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&run_id) {
        response.headers_mut().insert(RUN_ID_HEADER, value);
    }
    Ok(response)
}

/// `GET /{type}/runs/{id}/streams?run_id=R`: the streams of the run (the latest of `id`, or
/// `run_id`) that hold an entry, in name order, each with its entry count and whether it is
/// closed, as `{"run_id", "streams": [{"name", "entries", "closed"}]}`.
pub(crate) async fn list(
    State(api): State<Api>,
    p: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<ListParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id) = path(p)?;
    let q = query(q)?;
    api.named_type(&ty)?;
    let list = api
        .client()
        .transport()
        .list_streams(&id, q.run_id.as_deref())
        .await?;
    let body = StreamListBody {
        run_id: list.run_id,
        streams: list
            .streams
            .into_iter()
            .map(|s| StreamInfoBody {
                name: s.name,
                entries: s.entries,
                closed: s.closed,
            })
            .collect(),
    };
    Ok(Codec::of(&headers).reply(200, &body))
}

/// `GET /{type}/runs/{id}/published/{key}?timeout_ms=`: the value a run of `id` published
/// under `key` (`ctx.set_event`), waiting up to `timeout_ms` (20 s by default, 50 s at most)
/// for one; 202 `{"status": "pending"}` when none was set in time.
pub(crate) async fn published(
    State(api): State<Api>,
    p: Result<Path<(String, String, String)>, PathRejection>,
    q: Result<Query<EventParams>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let (ty, id, key) = path(p)?;
    let q = query(q)?;
    api.named_type(&ty)?;
    let wait = Duration::from_millis(q.timeout_ms.unwrap_or(WAIT_DEFAULT_MS).min(WAIT_MAX_MS));
    let value = api.client().transport().get_event(&id, &key, wait).await?;
    let codec = Codec::of(&headers);
    let Some(value) = value else {
        let pending = PendingBody {
            status: "pending".into(),
        };
        return Ok(codec.reply(202, &pending));
    };
    Ok(match codec {
        Codec::Json => codec.reply(
            200,
            &ValueBody {
                value: Some(json::from_payload(&value)?),
                update_id: None,
            },
        ),
        Codec::Msgpack => codec.reply(
            200,
            &ValueBody {
                value: Some(value),
                update_id: None,
            },
        ),
    })
}
