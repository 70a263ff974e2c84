//! The remote client's feed reads: a page of the feed of what runs do is read from the
//! server-sent events of `GET /_events`.
//!
//! A read that waits opens the following feed and takes the events the server has sent when
//! the client looks (at least one, or a move of the cursor past events the filter skipped);
//! one that does not asks for `?follow=false`, which sends what the store keeps and ends
//! with the cursor to read on from. Either stops at `max` events and drops the connection;
//! the next read asks again after the last cursor seen (`Last-Event-ID`). A connection that
//! breaks before anything arrived is opened again from there, a few times, before the read
//! fails.

use super::stream::{server_error, EventSink, SseEvent, Stop};
use super::transport::{segment, HttpTransport};
use crate::errors::transport_failure;
use crate::wire::{FeedEndBody, FEED_END};
use std::time::Duration;
use wf_core::{FeedCursor, FeedEvent, FeedPage, FeedRead, WfError, MAX_FEED_PAGE};

/// Times a broken feed is opened again before the read fails.
const REOPENS: u32 = 3;
/// The pause before opening a broken feed again.
const REOPEN_PAUSE: Duration = Duration::from_millis(200);

/// `/_events?...` for `read`, after `after`.
fn feed_path(read: &FeedRead, after: FeedCursor) -> String {
    let mut path = format!("/_events?after={after}&follow={}", read.wait);
    if let Some(ty) = &read.filter.workflow_type {
        path.push_str(&format!("&type={}", segment(ty)));
    }
    if let Some(id) = &read.filter.workflow_id {
        path.push_str(&format!("&workflow_id={}", segment(id)));
    }
    if !read.filter.kinds.is_empty() {
        let kinds: Vec<&str> = read.filter.kinds.iter().map(|k| k.as_str()).collect();
        path.push_str(&format!("&kinds={}", kinds.join(",")));
    }
    path
}

impl HttpTransport {
    /// [`Transport::read_feed`](wf_core::client::Transport::read_feed) over the feed's event
    /// stream.
    pub(super) async fn read_feed_sse(&self, read: FeedRead) -> Result<FeedPage, WfError> {
        let mut page = FeedPage {
            events: Vec::new(),
            next: read.after,
            held_back: false,
        };
        let max = read.max.clamp(1, MAX_FEED_PAGE);
        let mut reopened = 0;
        loop {
            match self.follow_feed(&read, max, &mut page).await {
                Ok(()) => return Ok(page),
                Err(Stop::Failed(e)) => return Err(e),
                Err(Stop::Broken(_)) if page.next != read.after => return Ok(page),
                Err(Stop::Broken(why)) => {
                    reopened += 1;
                    if reopened > REOPENS {
                        return Err(transport_failure(
                            0,
                            &format!("{}: the feed's event stream broke: {why}", self.base),
                        ));
                    }
                    tokio::time::sleep(REOPEN_PAUSE).await;
                }
            }
        }
    }

    /// Opens the feed after `page.next` and adds what it sends to `page`: until the end
    /// (without `wait`), `max` events, or (with `wait`) once something came and nothing more
    /// is there yet.
    async fn follow_feed(
        &self,
        read: &FeedRead,
        max: usize,
        page: &mut FeedPage,
    ) -> Result<(), Stop> {
        let after = page.next;
        let last = after
            .position()
            .filter(|&p| p != (0, 0))
            .map(|_| after.to_string());
        let mut body = self
            .open_events(&feed_path(read, after), "text/event-stream", last)
            .await?;
        let mut sink = FeedSink {
            page,
            max,
            wait: read.wait,
            after: read.after,
        };
        self.read_events(&mut body, &mut sink, "the feed's event stream")
            .await
    }
}

/// A feed page being read: done at the end or at `max` events; with `wait`, also once the
/// cursor moved and nothing more is there yet.
struct FeedSink<'a> {
    page: &'a mut FeedPage,
    max: usize,
    wait: bool,
    after: FeedCursor,
}

impl EventSink for FeedSink<'_> {
    fn take(&mut self, event: SseEvent) -> Result<bool, Stop> {
        Ok(take_feed_event(event, self.page)? || self.page.events.len() >= self.max)
    }

    fn done_when_idle(&self) -> bool {
        self.wait && self.page.next != self.after
    }
}

/// Adds `event` to `page`; `true` when it ended the read.
fn take_feed_event(event: SseEvent, page: &mut FeedPage) -> Result<bool, Stop> {
    let bad = |what: String| Stop::Failed(transport_failure(500, &what));
    match event.event.as_deref() {
        Some(FEED_END) => {
            let end: FeedEndBody = serde_json::from_str(&event.data)
                .map_err(|e| bad(format!("the feed's end event does not decode: {e}")))?;
            page.next = end.cursor;
            Ok(true)
        }
        Some("error") => Err(server_error(event.data, "the feed")),
        _ if event.data.is_empty() => {
            // A bare id: the place moved past events the filter skipped.
            let id = event.id.unwrap_or_default();
            page.next = id
                .parse()
                .map_err(|e| bad(format!("a feed cursor that does not read: {e}")))?;
            Ok(false)
        }
        _ => {
            let feed_event: FeedEvent = serde_json::from_str(&event.data)
                .map_err(|e| bad(format!("a feed event that does not decode: {e}")))?;
            page.next = feed_event.cursor;
            page.events.push(feed_event);
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::stream::take_events;
    use super::*;
    use wf_core::{FeedFilter, FeedKind};

    #[test]
    fn the_path_carries_the_filter_and_the_place() {
        let read = FeedRead {
            filter: FeedFilter::new()
                .workflow_type("order")
                .workflow_id("a b")
                .kinds([FeedKind::Started, FeedKind::SignalReceived]),
            after: FeedCursor::now(),
            max: 10,
            wait: false,
        };
        assert_eq!(
            feed_path(&read, FeedCursor::at(0, 7)),
            "/_events?after=7&follow=false&type=order&workflow_id=a%20b&kinds=started,signal_received"
        );
    }

    #[test]
    fn bare_ids_move_the_cursor_and_the_end_says_where_to_go_on() {
        let mut page = FeedPage::default();
        let mut buffer = ": cursor\nid: 4\n\nevent: end\ndata: {\"cursor\":\"9\"}\n\n".to_string();
        let events = take_events(&mut buffer);
        let mut ended = Vec::new();
        for event in events {
            let Ok(end) = take_feed_event(event, &mut page) else {
                panic!("the event reads")
            };
            ended.push(end);
        }
        assert_eq!(ended, [false, true]);
        assert!(page.events.is_empty());
        assert_eq!(page.next, FeedCursor::at(0, 9));
    }
}
