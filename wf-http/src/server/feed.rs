//! The feed of what runs do as server-sent events: `GET /_events`.
//!
//! Each event is sent as `id: CURSOR` with `data:` the [`FeedEvent`]'s JSON; a reconnecting
//! `EventSource` sends the last id back as `Last-Event-ID`, which wins over `?after=`, and the
//! feed goes on with the event after it. When the reader's place moves without an event to
//! send (rows the filter skipped, `after=now` resolved), the route sends an event with an id
//! and no data, which moves `Last-Event-ID` and dispatches nothing. The filter and cursor are
//! checked, and the first page read, before the first byte: a bad kind or cursor is a plain
//! 400. It follows new events forever (keep-alive comments every 15 s), or with
//! `?follow=false` sends what the store keeps and ends with `event: end`.

use super::body::Failure;
use super::Api;
use crate::wire::{FeedEndBody, FEED_END};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use std::collections::VecDeque;
use std::time::Duration;
use wf_core::{Client, FeedCursor, FeedEvent, FeedFilter, FeedPage, FeedRead, FEED_PAGE};

/// How often an idle feed sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What `?type=&workflow_id=&kinds=a,b&kind=c&after=&follow=` asks for.
#[derive(Debug, PartialEq)]
struct FeedParams {
    filter: FeedFilter,
    after: FeedCursor,
    follow: bool,
}

/// Reads the query pairs (`kind` may repeat, `kinds` is comma-separated) and the
/// `Last-Event-ID` header, which wins over `after` (0, everything kept, by default).
fn params(pairs: &[(String, String)], headers: &HeaderMap) -> Result<FeedParams, Failure> {
    let bad = |message: String, param: &str| Failure::invalid_args(message, Some(param.into()));
    let mut p = FeedParams {
        filter: FeedFilter::new(),
        after: FeedCursor::start(),
        follow: true,
    };
    for (key, value) in pairs {
        match key.as_str() {
            "type" => p.filter.workflow_type = Some(value.clone()),
            "workflow_id" => p.filter.workflow_id = Some(value.clone()),
            "kind" | "kinds" => {
                for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    let kind = name.parse().map_err(|e: String| bad(e, key))?;
                    p.filter.kinds.push(kind);
                }
            }
            "after" => p.after = value.parse().map_err(|e: String| bad(e, "after"))?,
            "follow" => {
                p.follow = match value.as_str() {
                    "true" | "1" | "" => true,
                    "false" | "0" => false,
                    _ => {
                        return Err(bad(
                            format!("follow must be true or false, not {value:?}"),
                            "follow",
                        ))
                    }
                }
            }
            _ => {
                return Err(bad(
                    format!(
                        "unknown parameter {key:?}; the feed takes type, workflow_id, kind, \
                         kinds, after and follow"
                    ),
                    key,
                ))
            }
        }
    }
    if let Some(value) = headers.get("last-event-id") {
        let text = value.to_str().unwrap_or_default();
        p.after = text
            .parse()
            .map_err(|e: String| Failure::invalid_args(format!("Last-Event-ID: {e}"), None))?;
    }
    Ok(p)
}

/// The event of one feed event: its cursor as the id, its JSON as the data.
fn feed_event(event: &FeedEvent) -> Event {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
    Event::default().id(event.cursor.to_string()).data(data)
}

/// The state of one feed response: what to send next and where the read stands.
struct Follow {
    client: Client,
    filter: FeedFilter,
    /// The place after the last page read.
    after: FeedCursor,
    /// The place last sent as an id.
    sent: FeedCursor,
    follow: bool,
    held_back: bool,
    queued: VecDeque<Event>,
    ended: bool,
}

impl Follow {
    /// Queues the events of `page` (and a bare id when the place moved past skipped rows),
    /// and `event: end` when a read that does not follow caught up.
    fn take(&mut self, page: FeedPage) {
        let caught_up = page.events.is_empty() && page.next == self.after;
        for event in &page.events {
            self.queued.push_back(feed_event(event));
            self.sent = event.cursor;
        }
        self.after = page.next;
        self.held_back = page.held_back;
        if self.sent != self.after && !self.after.is_now() {
            self.queued.push_back(
                Event::default()
                    .id(self.after.to_string())
                    .comment("cursor"),
            );
            self.sent = self.after;
        }
        if caught_up && !self.follow && !self.held_back {
            let body = FeedEndBody { cursor: self.after };
            let data = serde_json::to_string(&body).unwrap_or_else(|_| "{}".into());
            self.queued
                .push_back(Event::default().event(FEED_END).data(data));
            self.ended = true;
        }
    }

    fn read(&self) -> FeedRead {
        FeedRead {
            filter: self.filter.clone(),
            after: self.after,
            max: FEED_PAGE,
            wait: self.follow || self.held_back,
        }
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
            match self.client.transport().read_feed(self.read()).await {
                Ok(page) => self.take(page),
                Err(e) => {
                    self.ended = true;
                    let message = serde_json::json!({ "error": e.to_string() }).to_string();
                    return Some((Event::default().event("error").data(message), self));
                }
            }
        }
    }
}

/// `GET /_events?type=T&workflow_id=ID&kinds=a,b&kind=c&after=CURSOR&follow=false`: the
/// feed events the filter takes after `CURSOR` (or `Last-Event-ID`; `0`, everything kept, by
/// default; `now`, only new ones), as server-sent events, following new ones (or, with
/// `follow=false`, ending with `event: end` and `data: {"cursor": C}` once caught up).
pub(crate) async fn events(
    State(api): State<Api>,
    q: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let pairs = super::runs::query(q)?;
    let p = params(&pairs, &headers)?;
    let client = api.client().clone();
    let mut follow = Follow {
        client,
        filter: p.filter,
        after: p.after,
        sent: p.after,
        follow: p.follow,
        held_back: false,
        queued: VecDeque::new(),
        ended: false,
    };
    // The first read answers for the store: its errors are a status, not an event.
    let first = FeedRead {
        wait: false,
        ..follow.read()
    };
    let page = follow.client.transport().read_feed(first).await?;
    follow.take(page);
    let events = futures_util::stream::unfold(follow, |f| async move {
        f.next()
            .await
            .map(|(event, f)| (Ok::<_, std::convert::Infallible>(event), f))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use wf_core::FeedKind;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kinds_come_comma_separated_or_repeated_and_last_event_id_wins() {
        let mut headers = HeaderMap::new();
        let q = pairs(&[
            ("type", "order"),
            ("kinds", "started,completed"),
            ("kind", "failed"),
            ("after", "now"),
            ("follow", "false"),
        ]);
        let Ok(p) = params(&q, &headers) else {
            panic!("the query reads")
        };
        assert_eq!(p.filter.workflow_type.as_deref(), Some("order"));
        assert_eq!(
            p.filter.kinds,
            [FeedKind::Started, FeedKind::Completed, FeedKind::Failed]
        );
        assert_eq!(p.after, FeedCursor::now());
        assert!(!p.follow);
        headers.insert("last-event-id", HeaderValue::from_static("17"));
        let Ok(p) = params(&q, &headers) else {
            panic!("the query reads")
        };
        assert_eq!(p.after, FeedCursor::at(0, 17));
        assert_eq!(
            params(&[], &HeaderMap::new()).ok().map(|p| p.after),
            Some(FeedCursor::start())
        );
    }

    #[test]
    fn a_bad_kind_cursor_or_parameter_is_refused() {
        let none = HeaderMap::new();
        assert!(params(&pairs(&[("kind", "nope")]), &none).is_err());
        assert!(params(&pairs(&[("after", "x-1")]), &none).is_err());
        assert!(params(&pairs(&[("from", "0")]), &none).is_err());
        assert!(params(&pairs(&[("follow", "maybe")]), &none).is_err());
    }
}
