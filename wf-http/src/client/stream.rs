//! The remote client's stream reads and published-event waits: a page of a stream is read
//! from the server-sent events of `GET /_/runs/{id}/streams/{name}` (entries in base64
//! MessagePack, so values round-trip exactly), and a published event by the long poll of
//! `GET /_/runs/{id}/published/{key}`.
//!
//! A page is the entries the server has sent when the client looks (at least one, or the
//! end): the connection is then dropped, and the next read asks again with `Last-Event-ID`,
//! the offset of the last entry seen. A connection that breaks before an entry arrived is
//! opened again the same way, a few times, before the read fails.

use super::conns::Streaming;
use super::transport::{decode, refusal, run_path, segment, HttpTransport, NO_BODY};
use crate::errors::transport_failure;
use crate::wire::{
    PendingBody, StreamEndBody, StreamListBody, ValueBody, MSGPACK, RUN_ID_HEADER, STREAM_END,
};
use base64::Engine as _;
use bytes::Bytes;
use futures_util::FutureExt as _;
use http_body_util::Full;
use hyper::header::{ACCEPT, AUTHORIZATION};
use hyper::{Method, Request};
use std::time::Duration;
use wf_core::client::StreamRead;
use wf_core::{Payload, StreamEntry, StreamInfo, StreamList, StreamPage, WfError};

/// Times a broken event stream is opened again before the read fails.
const REOPENS: u32 = 3;
/// The pause before opening a broken event stream again.
const REOPEN_PAUSE: Duration = Duration::from_millis(200);
/// The longest wait one published-event poll asks the server for.
const EVENT_POLL: Duration = Duration::from_secs(20);

/// Why reading an event stream stopped short.
pub(super) enum Stop {
    /// The connection broke: open it again from the last entry seen.
    Broken(String),
    /// An answer that opening again does not mend.
    Failed(WfError),
}

/// One server-sent event, as far as the stream route uses them.
#[derive(Default)]
pub(super) struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// Splits the complete events off the front of `buffer` (a blank line ends each).
pub(super) fn take_events(buffer: &mut String) -> Vec<SseEvent> {
    let mut events = Vec::new();
    loop {
        let normalized = buffer.replace("\r\n", "\n");
        let Some(end) = normalized.find("\n\n") else {
            *buffer = normalized;
            return events;
        };
        let block = &normalized[..end];
        let mut event = SseEvent::default();
        let mut has_field = false;
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => event.id = Some(value.to_string()),
                "event" => event.event = Some(value.to_string()),
                "data" => {
                    if !event.data.is_empty() {
                        event.data.push('\n');
                    }
                    event.data.push_str(value);
                }
                // A comment (a keep-alive) or a field the route does not send.
                _ => continue,
            }
            has_field = true;
        }
        if has_field {
            events.push(event);
        }
        *buffer = normalized[end + 2..].to_string();
    }
}

impl HttpTransport {
    /// [`Transport::read_stream`](wf_core::client::Transport::read_stream) over the event
    /// stream. The read always waits for an entry or the end (`read.wait` or not): the
    /// event stream has no "nothing yet" answer.
    pub(super) async fn read_stream_sse(&self, read: StreamRead) -> Result<StreamPage, WfError> {
        let mut page = StreamPage {
            run_id: read.run_id.clone().unwrap_or_default(),
            entries: Vec::new(),
            run_closed: false,
        };
        let mut reopened = 0;
        loop {
            match self.follow(&read, &mut page).await {
                Ok(()) => return Ok(page),
                Err(Stop::Failed(e)) => return Err(e),
                Err(Stop::Broken(_)) if !page.entries.is_empty() => return Ok(page),
                Err(Stop::Broken(why)) => {
                    reopened += 1;
                    if reopened > REOPENS {
                        return Err(transport_failure(
                            0,
                            &format!("{}: the event stream broke: {why}", self.base),
                        ));
                    }
                    tokio::time::sleep(REOPEN_PAUSE).await;
                }
            }
        }
    }

    /// Opens the event stream from the offset after `page`'s entries (or `read.from`) and adds
    /// what it sends to `page`, until it has an entry (and whatever else came with it), the
    /// end, or `read.max` entries.
    async fn follow(&self, read: &StreamRead, page: &mut StreamPage) -> Result<(), Stop> {
        let from = page.entries.last().map_or(read.from, |e| e.offset + 1);
        let run_id = (!page.run_id.is_empty()).then(|| page.run_id.clone());
        let mut path = run_path(
            &read.workflow_id,
            &format!("/streams/{}?from={from}", segment(&read.stream)),
        );
        if let Some(run_id) = &run_id {
            path.push_str(&format!("&run_id={}", segment(run_id)));
        }
        let last = (from > 0).then(|| (from - 1).to_string());
        let mut body = self
            .open_events(&path, &format!("text/event-stream, {MSGPACK}"), last)
            .await?;
        if let Some(run) = body.header(RUN_ID_HEADER) {
            page.run_id = run;
        }
        let mut sink = StreamSink {
            page,
            max: read.max,
        };
        self.read_events(&mut body, &mut sink, "the event stream")
            .await
    }

    /// Reads the events of `body` into `sink` until it says it is done: after an event, or
    /// once what has come is taken and nothing more is there yet. A body that ends or breaks
    /// first is [`Stop::Broken`] (`what` names it).
    pub(super) async fn read_events(
        &self,
        body: &mut Streaming,
        sink: &mut impl EventSink,
        what: &str,
    ) -> Result<(), Stop> {
        let mut buffer = String::new();
        let mut next = self.conns.chunk(body).await;
        loop {
            let chunk = match next {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Err(Stop::Broken(format!("{what} ended early"))),
                Err(e) => return Err(Stop::Broken(e.to_string())),
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            for event in take_events(&mut buffer) {
                if sink.take(event)? {
                    return Ok(());
                }
            }
            // What has come already joins the page; once nothing more is there, it may be done.
            next = match self.conns.chunk(body).now_or_never() {
                Some(more) => more,
                None if sink.done_when_idle() => return Ok(()),
                None => self.conns.chunk(body).await,
            };
        }
    }

    /// Opens the event stream of `path` (after the prefix), sending `last_event_id` (the
    /// server resumes after it, and it wins over the query, which says the same); a refusal
    /// is read whole and answered as the error it names.
    pub(super) async fn open_events(
        &self,
        path: &str,
        accept: &str,
        last_event_id: Option<String>,
    ) -> Result<Streaming, Stop> {
        let mut req = Request::builder()
            .method(Method::GET)
            .uri(format!("{}{path}", self.prefix))
            .header(ACCEPT, accept);
        if let Some(last) = last_event_id {
            req = req.header("last-event-id", last);
        }
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let req = req
            .body(Full::new(Bytes::new()))
            .map_err(|e| Stop::Failed(WfError::InvalidArgument(format!("bad request: {e}"))))?;
        let (status, mut body) = self
            .conns
            .open(req)
            .await
            .map_err(|e| Stop::Broken(e.to_string()))?;
        if !status.is_success() {
            let mut bytes = Vec::new();
            while let Ok(Some(chunk)) = self.conns.chunk(&mut body).await {
                bytes.extend_from_slice(&chunk);
            }
            return Err(Stop::Failed(refusal(status.as_u16(), &bytes)));
        }
        Ok(body)
    }

    /// [`Transport::get_event`](wf_core::client::Transport::get_event): long polls of at most
    /// [`EVENT_POLL`] until a value or `timeout`.
    pub(super) async fn get_event_poll(
        &self,
        workflow_id: &str,
        key: &str,
        timeout: Duration,
    ) -> Result<Option<Payload>, WfError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let wait = left.min(EVENT_POLL);
            let path = run_path(
                workflow_id,
                &format!(
                    "/published/{}?timeout_ms={}",
                    segment(key),
                    wait.as_millis()
                ),
            );
            let (status, bytes) = self.send(Method::GET, &path, NO_BODY).await?;
            if status != 202 {
                let body: ValueBody<Payload> = decode(&bytes)?;
                return Ok(body.value);
            }
            let _: PendingBody = decode(&bytes)?;
            if left <= EVENT_POLL {
                return Ok(None);
            }
        }
    }
}

impl HttpTransport {
    /// [`Transport::list_streams`](wf_core::client::Transport::list_streams) over
    /// `GET /{type}/runs/{id}/streams?run_id=`.
    pub(super) async fn list_streams_get(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> Result<StreamList, WfError> {
        let tail = match run_id {
            Some(run) => format!("/streams?run_id={}", segment(run)),
            None => "/streams".to_string(),
        };
        let (_, bytes) = self
            .send(Method::GET, &run_path(workflow_id, &tail), NO_BODY)
            .await?;
        let body: StreamListBody = decode(&bytes)?;
        Ok(StreamList {
            run_id: body.run_id,
            streams: body
                .streams
                .into_iter()
                .map(|s| StreamInfo {
                    name: s.name,
                    entries: s.entries,
                    closed: s.closed,
                })
                .collect(),
        })
    }
}

/// Where [`HttpTransport::read_events`] puts what an event stream sends.
pub(super) trait EventSink {
    /// Takes `event`; `true` when the read is done.
    fn take(&mut self, event: SseEvent) -> Result<bool, Stop>;
    /// Whether the read is done once what has come is taken and nothing more is there yet.
    fn done_when_idle(&self) -> bool;
}

/// A stream page being read: done at the end, at `max` entries, or once it has one.
struct StreamSink<'a> {
    page: &'a mut StreamPage,
    max: usize,
}

impl EventSink for StreamSink<'_> {
    fn take(&mut self, event: SseEvent) -> Result<bool, Stop> {
        Ok(take_event(event, self.page)? || self.page.entries.len() >= self.max)
    }

    fn done_when_idle(&self) -> bool {
        !self.page.entries.is_empty()
    }
}

/// An `event: error` of a route: the server's message (its JSON `error`, else the data), as
/// the read's failure; `what` names what the server could not read.
pub(super) fn server_error(data: String, what: &str) -> Stop {
    let message = serde_json::from_str::<serde_json::Value>(&data)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or(data);
    Stop::Failed(transport_failure(
        500,
        &format!("the server could not read {what}: {message}"),
    ))
}

/// Adds `event` to `page`; `true` when it ended the stream.
fn take_event(event: SseEvent, page: &mut StreamPage) -> Result<bool, Stop> {
    let bad = |what: String| Stop::Failed(transport_failure(500, &what));
    match event.event.as_deref() {
        Some(STREAM_END) => {
            let end: StreamEndBody = serde_json::from_str(&event.data)
                .map_err(|e| bad(format!("the stream's end event does not decode: {e}")))?;
            match end.offset {
                Some(offset) if end.closed => page.entries.push(StreamEntry {
                    offset,
                    value: None,
                }),
                _ => page.run_closed = true,
            }
            Ok(true)
        }
        Some("error") => Err(server_error(event.data, "the stream")),
        _ => {
            let offset = event
                .id
                .as_deref()
                .and_then(|id| id.parse::<u64>().ok())
                .ok_or_else(|| bad(format!("a stream entry without an offset: {:?}", event.id)))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(event.data.trim())
                .map_err(|e| bad(format!("stream entry {offset} is not base64: {e}")))?;
            let value = Payload::from_bytes(bytes)
                .map_err(|e| bad(format!("stream entry {offset}: {e}")))?;
            page.entries.push(StreamEntry {
                offset,
                value: Some(value),
            });
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_at_blank_lines_and_comments_skipped() {
        let mut buffer =
            ": keep-alive\n\nid: 3\ndata: AQ==\n\r\nevent: end\ndata: {}\n\nid: 4".to_string();
        let events = take_events(&mut buffer);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].id.as_deref(), Some("3"));
        assert_eq!(events[0].data, "AQ==");
        assert_eq!(events[1].event.as_deref(), Some("end"));
        assert_eq!(buffer, "id: 4", "an unfinished event waits for the rest");
    }
}
