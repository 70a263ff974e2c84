//! The feed of what runs do over HTTP: `GET /_events` as server-sent events read with a raw
//! HTTP client (ids are the events' cursors, data their JSON, `follow=false` ends with the
//! cursor, `Last-Event-ID` resumes with exactly the rest, filters, a following reader sees
//! later events, 400 / 401 / roles), and the remote client's `client.events(filter)` over it,
//! compared with the in-process reader's events.

#[macro_use]
mod common;

use common::sse::{Sse, SseReader};
use common::{Http, Net, TOKEN};
use serde_json::Value;
use std::time::Duration;
use wf_core::{FeedCursor, FeedEvent, FeedFilter, FeedKind};
use wf_http::{Role, ServeOptions, Server, Tokens};
use wf_sdk::prelude::*;

const READ: &str = "read-token";

/// Waits for signal `go`, then completes with its count of steps.
#[derive(Default)]
pub struct Gated {
    go: bool,
}

#[workflow(name = "feed_gated")]
impl Gated {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, steps: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.go).await;
        Ok(steps)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// Completes at once.
#[derive(Default)]
pub struct Quick;

#[workflow(name = "feed_quick")]
impl Quick {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(n)
    }
}

async fn served(net: Net) -> (Engine, Server) {
    let engine = Engine::builder()
        .memory()
        .poll_interval(Duration::from_millis(20))
        .workflow::<Gated>()
        .workflow::<Quick>()
        .build()
        .await
        .expect("engine");
    let tokens = Tokens::new()
        .with(Role::Admin, TOKEN)
        .with(Role::Read, READ);
    let server = net
        .serve(&engine, ServeOptions::default().tokens(tokens))
        .await;
    (engine, server)
}

/// Starts `id`, signals it and waits for its result.
async fn run_gated(engine: &Engine, id: &str) {
    let h = engine.client().start::<Gated>(id, 2).await.expect("start");
    h.go().await.expect("signal");
    assert_eq!(h.result().await.expect("completes"), 2);
}

/// The feed events the in-process reader has for `filter`, to compare with.
async fn in_process(engine: &Engine, filter: FeedFilter) -> Vec<FeedEvent> {
    let mut reader = engine.client().events(filter).follow(false);
    let mut events = Vec::new();
    while let Some(event) = reader.next().await {
        events.push(event.expect("the feed reads"));
    }
    events
}

/// The feed events among `sse` (those with data), decoded, each checked to carry its cursor
/// as its id.
fn decoded(sse: &[Sse]) -> Vec<FeedEvent> {
    sse.iter()
        .filter(|e| e.event.is_none() && !e.data.is_empty())
        .map(|e| {
            let event: FeedEvent = serde_json::from_str(&e.data).expect("a feed event");
            assert_eq!(e.id.as_deref(), Some(event.cursor.to_string().as_str()));
            event
        })
        .collect()
}

fn kinds(events: &[FeedEvent]) -> Vec<FeedKind> {
    events.iter().map(|e| e.kind).collect()
}

#[tokio::test]
async fn events_come_with_their_cursors_as_ids_and_json_then_the_end() {
    let (engine, server) = served(Net::Http).await;
    run_gated(&engine, "g-1").await;
    let expected = in_process(&engine, FeedFilter::new().workflow_id("g-1")).await;
    assert_eq!(kinds(&expected).first(), Some(&FeedKind::Started));
    assert!(kinds(&expected).contains(&FeedKind::SignalReceived));
    assert_eq!(kinds(&expected).last(), Some(&FeedKind::Completed));

    let reader =
        SseReader::open(&server, "/_events?workflow_id=g-1&follow=false", READ, None).await;
    assert_eq!(reader.status, 200);
    assert_eq!(
        reader.headers["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let sse = reader.rest().await;
    assert_eq!(decoded(&sse), expected);
    // The JSON names its fields as serde gives them.
    let first: Value = serde_json::from_str(&sse[0].data).expect("JSON");
    let mut keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "at_ms",
            "cursor",
            "detail",
            "event_id",
            "kind",
            "run_id",
            "workflow_id",
            "workflow_type"
        ]
    );
    assert_eq!(first["kind"], "started");
    assert_eq!(first["workflow_type"], "feed_gated");
    // The end says where to go on: past the last event at least.
    let end = sse.last().expect("an end event");
    assert_eq!(end.event.as_deref(), Some("end"));
    let cursor: FeedCursor = serde_json::from_str::<Value>(&end.data).unwrap()["cursor"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(cursor >= expected.last().unwrap().cursor);
    engine.shutdown().await;
}

#[tokio::test]
async fn last_event_id_resumes_with_exactly_the_rest() {
    let (engine, server) = served(Net::Http).await;
    run_gated(&engine, "g-1").await;
    let all = decoded(
        &SseReader::open(&server, "/_events?follow=false", READ, None)
            .await
            .rest()
            .await,
    );
    assert!(all.len() >= 3, "{all:?}");
    for (i, event) in all.iter().enumerate() {
        let last = event.cursor.to_string();
        // The header wins over `after`, which says the start.
        let rest = SseReader::open(&server, "/_events?after=0&follow=false", READ, Some(&last))
            .await
            .rest()
            .await;
        assert_eq!(decoded(&rest), all[i + 1..], "resumed after {last}");
        let by_query = SseReader::open(
            &server,
            &format!("/_events?after={last}&follow=false"),
            READ,
            None,
        )
        .await
        .rest()
        .await;
        assert_eq!(decoded(&by_query), all[i + 1..], "after={last}");
    }
    engine.shutdown().await;
}

#[tokio::test]
async fn filters_narrow_by_type_id_and_kind() {
    let (engine, server) = served(Net::Http).await;
    run_gated(&engine, "g-1").await;
    run_gated(&engine, "g-2").await;
    let q = engine
        .client()
        .start::<Quick>("q-1", 1)
        .await
        .expect("start");
    q.result().await.expect("completes");
    let read = |path: String| {
        let server = &server;
        async move {
            decoded(
                &SseReader::open(server, &path, READ, None)
                    .await
                    .rest()
                    .await,
            )
        }
    };
    let quick = read("/_events?type=feed_quick&follow=false".into()).await;
    assert_eq!(
        quick,
        in_process(&engine, FeedFilter::new().workflow_type("feed_quick")).await
    );
    assert!(quick.iter().all(|e| e.workflow_id == "q-1") && !quick.is_empty());
    let ends = read("/_events?kinds=started,completed&follow=false".into()).await;
    let ends_repeated = read("/_events?kind=started&kind=completed&follow=false".into()).await;
    assert_eq!(ends, ends_repeated);
    let expected = in_process(
        &engine,
        FeedFilter::new().kinds([FeedKind::Started, FeedKind::Completed]),
    )
    .await;
    assert_eq!(ends, expected);
    assert_eq!(ends.len(), 6, "three runs started and completed: {ends:?}");
    let one = read("/_events?workflow_id=g-2&kind=signal_received&follow=false".into()).await;
    assert_eq!(kinds(&one), [FeedKind::SignalReceived]);
    assert_eq!(one[0].workflow_id, "g-2");
    assert_eq!(one[0].detail.name.as_deref(), Some("go"));
    engine.shutdown().await;
}

#[tokio::test]
async fn a_following_reader_sees_events_as_they_commit() {
    let (engine, server) = served(Net::Http).await;
    run_gated(&engine, "before").await;
    // From now: nothing of the run before, every event of the run after.
    let mut reader = SseReader::open(&server, "/_events?after=now", READ, None).await;
    assert_eq!(reader.status, 200);
    let h = engine
        .client()
        .start::<Gated>("g-1", 1)
        .await
        .expect("start");
    let mut seen = Vec::new();
    while !kinds(&seen).contains(&FeedKind::Started) {
        seen.extend(decoded(&[reader.next().await.expect("an event")]));
    }
    h.go().await.expect("signal");
    while !kinds(&seen).contains(&FeedKind::Completed) {
        seen.extend(decoded(&[reader.next().await.expect("an event")]));
    }
    assert!(seen.iter().all(|e| e.workflow_id == "g-1"), "{seen:?}");
    assert_eq!(
        seen,
        in_process(&engine, FeedFilter::new().workflow_id("g-1")).await
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn bad_cursors_kinds_and_tokens_are_refused_before_the_stream() {
    let (engine, server) = served(Net::Http).await;
    let read = Http::new(Net::Http, server.local_addr(), Some(READ));
    for path in [
        "/_events?after=x-1",
        "/_events?kind=nope",
        "/_events?kinds=started,nope",
        "/_events?follow=maybe",
        "/_events?from=0",
    ] {
        let reply = read.get(path).await;
        assert_eq!(reply.status, 400, "{path}: {:?}", reply.body);
        assert_eq!(reply.body["error"], "invalid_args", "{path}");
    }
    let reply = read.get("/_events?kind=nope").await;
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("signal_received"),
        "the message lists the kinds: {:?}",
        reply.body
    );
    let bad_header = SseReader::open(&server, "/_events", READ, Some("x-1")).await;
    assert_eq!(bad_header.status, 400);
    let nobody = Http::new(Net::Http, server.local_addr(), None);
    assert_eq!(nobody.get("/_events?follow=false").await.status, 401);
    let unknown = Http::new(Net::Http, server.local_addr(), Some("nope"));
    assert_eq!(unknown.get("/_events?follow=false").await.status, 401);
    // The read role is enough.
    assert_eq!(read.get("/_events?follow=false").await.status, 200);
    engine.shutdown().await;
}

async fn remote_reads_every_event_once_in_order(net: Net) {
    let (engine, server) = served(net).await;
    run_gated(&engine, "g-1").await;
    let remote = net.connect(&server).token(READ).await.expect("connect");
    let filter = FeedFilter::new().workflow_id("g-1");
    let expected = in_process(&engine, filter.clone()).await;
    // Caught up and ended, without follow.
    let mut reader = remote.events(filter.clone()).follow(false);
    let mut seen = Vec::new();
    while let Some(event) = reader.next().await {
        seen.push(event.expect("the remote feed reads"));
    }
    assert_eq!(seen, expected);
    // Resumed from each event's cursor: exactly the rest.
    let middle = expected[1].cursor;
    let mut rest = Vec::new();
    let mut reader = remote.events(filter.clone()).from(middle).follow(false);
    while let Some(event) = reader.next().await {
        rest.push(event.expect("the remote feed reads"));
    }
    assert_eq!(rest, expected[2..]);
    let end = reader.cursor();

    // Following from where the last reader ended (a reader resolves `now` at its first
    // read, so it is no place to start one before the events it wants): a later run's
    // events, each once, in order.
    let mut live = remote
        .events(FeedFilter::new().workflow_type("feed_gated"))
        .from(end);
    let h = engine
        .client()
        .start::<Gated>("g-2", 1)
        .await
        .expect("start");
    let mut got = Vec::new();
    while !kinds(&got).contains(&FeedKind::Started) {
        got.push(live.next().await.expect("live").expect("reads"));
    }
    h.go().await.expect("signal");
    while !kinds(&got).contains(&FeedKind::Completed) {
        got.push(live.next().await.expect("live").expect("reads"));
    }
    assert_eq!(
        got,
        in_process(&engine, FeedFilter::new().workflow_id("g-2")).await
    );
    engine.shutdown().await;
}

both_ways!(
    #[tokio::test]
    remote_reads_every_event_once_in_order
);
