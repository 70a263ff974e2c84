//! The feed of what runs do (`client.events(filter).from(cursor)`): every lifecycle event of
//! a run (started, waiting for a signal, a signal received, an update accepted and completed,
//! an activity scheduled, failed and retried, completed, a timer, a pause, completed) reaches
//! a reader once, in order, whenever it starts, from any cursor, with the filter's kinds, in
//! this process and in another one. On the three stores.

mod common;
use common::*;
use std::sync::atomic::Ordering;
use std::time::Duration;
use wf_sdk::prelude::*;

/// Waits for `approve`, then for a `note` update, runs a flaky activity, sleeps, waits for
/// `finish`.
#[derive(Default)]
pub struct Lifecycle {
    noted: bool,
}

#[workflow(name = "feed_lifecycle")]
impl Lifecycle {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        let _who: String = ctx.wait_for_signal("approve").await?;
        ctx.wait_condition(|s| s.noted).await;
        let attempts = ctx
            .activity(Tools::flaky, ())
            .retry(RetryPolicy {
                initial_interval: Duration::from_millis(10),
                ..RetryPolicy::default()
            })
            .await?;
        ctx.sleep(Duration::from_millis(20)).await?;
        let () = ctx.wait_for_signal("finish").await?;
        Ok(attempts)
    }

    #[update]
    fn note(&mut self, text: String) -> Result<usize, UpdateError> {
        self.noted = true;
        Ok(text.len())
    }
}

/// What a run of [`Lifecycle`] puts in the feed, in order.
const LIFECYCLE: [FeedKind; 15] = [
    FeedKind::Started,
    FeedKind::SignalWaiting,
    FeedKind::SignalReceived,
    FeedKind::UpdateAccepted,
    FeedKind::UpdateCompleted,
    FeedKind::ActivityScheduled,
    FeedKind::ActivityFailed,
    FeedKind::ActivityCompleted,
    FeedKind::TimerStarted,
    FeedKind::TimerFired,
    FeedKind::SignalWaiting,
    FeedKind::Paused,
    FeedKind::Unpaused,
    FeedKind::SignalReceived,
    FeedKind::Completed,
];

/// Twice the worst case on a loaded machine: a failure detector, not a timing assertion.
const LIMIT: Duration = Duration::from_secs(30);

async fn engine(builder: wf_sdk::engine::EngineBuilder) -> Engine {
    let tools = Tools::default();
    tools.fail_first.store(1, Ordering::SeqCst);
    builder
        .workflow::<Lifecycle>()
        .activities(tools)
        .build()
        .await
        .expect("the engine starts")
}

/// The next event of `reader`, within [`LIMIT`].
async fn next_event(reader: &mut wf_sdk::client::FeedReader) -> FeedEvent {
    tokio::time::timeout(LIMIT, reader.next())
        .await
        .expect("the next feed event comes")
        .expect("a following reader does not end")
        .expect("the feed reads")
}

/// Reads `reader` until the run closes (a closing kind), within [`LIMIT`].
async fn until_closed(mut reader: wf_sdk::client::FeedReader) -> Vec<FeedEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next_event(&mut reader).await;
        let closes = event.kind.closes();
        seen.push(event);
        if closes {
            return seen;
        }
    }
}

fn kinds(events: &[FeedEvent]) -> Vec<FeedKind> {
    events.iter().map(|e| e.kind).collect()
}

/// Drives a [`Lifecycle`] run `id` through every step, following `watch` (a reader of the
/// run's events) to know when it waits.
async fn drive(client: &Client, id: &str, watch: &mut wf_sdk::client::FeedReader) {
    drive_approved_by(client, id, watch, true).await
}

/// [`drive`], leaving the `approve` signal to someone else unless `approve`.
async fn drive_approved_by(
    client: &Client,
    id: &str,
    watch: &mut wf_sdk::client::FeedReader,
    approve: bool,
) {
    let h = client.start::<Lifecycle>(id, ()).await.unwrap();
    while next_event(watch).await.kind != FeedKind::SignalWaiting {}
    if approve {
        h.signal("approve", &"ann").await.unwrap();
    }
    while next_event(watch).await.kind != FeedKind::SignalReceived {}
    let n = h.note("looks good".to_string()).await.unwrap();
    assert_eq!(n, 10);
    while next_event(watch).await.kind != FeedKind::SignalWaiting {}
    client.pause(id, "a look").await.unwrap();
    client.unpause(id).await.unwrap();
    h.signal("finish", &()).await.unwrap();
    let attempts: u32 = h.result().await.unwrap();
    assert_eq!(attempts, 2, "the activity failed once");
}

/// One run's events reach a reader started before the run, and one started after it from the
/// start, each once and in order, with their details; a reader from an event's cursor gets
/// exactly the events after it.
async fn every_event_of_a_run_is_delivered_once_in_order(backend: Backend) {
    let e = engine(builder(backend, "feed-once")).await;
    let client = e.client();
    let only = FeedFilter::new().workflow_id("order-1");
    let before = tokio::spawn(until_closed(client.events(only.clone())));
    let mut watch = client.events(only.clone());
    drive(&client, "order-1", &mut watch).await;
    let live = tokio::time::timeout(LIMIT, before).await.unwrap().unwrap();
    assert_eq!(kinds(&live), LIFECYCLE, "{live:#?}");
    let after = until_closed(client.events(only.clone()).from(FeedCursor::start())).await;
    assert_eq!(after, live, "a reader after the run sees the same events");
    // Each event once: cursors strictly grow.
    assert!(live.windows(2).all(|w| w[0].cursor < w[1].cursor));
    // The details say what happened.
    let run_id = &live[0].run_id;
    assert!(live.iter().all(|e| &e.run_id == run_id
        && e.workflow_type == "feed_lifecycle"
        && e.workflow_id == "order-1"));
    assert_eq!(live[0].event_id, Some(1));
    assert_eq!(live[1].detail.signals, ["approve"]);
    assert_eq!(live[1].event_id, None);
    assert_eq!(live[2].detail.name.as_deref(), Some("approve"));
    assert_eq!(live[3].detail.name.as_deref(), Some("note"));
    assert_eq!(live[3].detail.update_id, live[4].detail.update_id);
    assert_eq!(live[5].detail.name.as_deref(), Some("flaky"));
    let failed = &live[6].detail;
    assert_eq!(
        (failed.attempt, failed.error.as_deref()),
        (Some(1), Some("attempt 1 failed"))
    );
    assert!(failed.retry_at_ms.is_some() && live[6].event_id.is_none());
    assert_eq!(live[7].detail.attempt, Some(2));
    assert!(live[8].detail.fire_at_ms.is_some());
    assert_eq!(live[8].detail.seq, live[9].detail.seq);
    assert_eq!(live[10].detail.signals, ["finish"]);
    assert_eq!(live[11].detail.error.as_deref(), Some("a look"));
    let ids: Vec<u64> = live.iter().filter_map(|e| e.event_id).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "history order: {ids:?}"
    );
    // The history holds the events the feed reports.
    let history = client.history("order-1").await.unwrap();
    for event in &live {
        if let Some(id) = event.event_id {
            assert!(history.iter().any(|h| h.event_id == id), "{event:?}");
        }
    }
    // From a cursor in the middle: exactly the rest.
    for mid in [0, 6, 13] {
        let rest: Vec<FeedEvent> =
            collect_caught_up(client.events(only.clone()).from(live[mid].cursor)).await;
        assert_eq!(rest, live[mid + 1..], "from event {mid}");
    }
    // The string form of a cursor resumes as well (what an SSE `Last-Event-ID` carries).
    let text = live[9].cursor.to_string();
    let cursor: FeedCursor = text.parse().unwrap();
    let rest = collect_caught_up(client.events(only.clone()).from(cursor)).await;
    assert_eq!(rest, live[10..]);
    // JSON has every field by name.
    let json = serde_json::to_value(&live[6]).unwrap();
    assert_eq!(json["kind"], "activity_failed");
    assert_eq!(json["detail"]["attempt"], 1);
    assert_eq!(json["cursor"], live[6].cursor.to_string());
    e.shutdown().await;
}

both!(every_event_of_a_run_is_delivered_once_in_order);

/// Every event a reader that does not follow yields before it ends.
async fn collect_caught_up(mut reader: wf_sdk::client::FeedReader) -> Vec<FeedEvent> {
    reader = reader.follow(false);
    let mut out = Vec::new();
    while let Some(event) = tokio::time::timeout(LIMIT, reader.next()).await.unwrap() {
        out.push(event.unwrap());
    }
    out
}

/// The filter keeps the runs of one type or id, and the kinds it names; a reader from `now`
/// sees only what commits after it started.
async fn the_filter_keeps_a_type_an_id_and_kinds(backend: Backend) {
    let e = engine(builder(backend, "feed-filter")).await;
    let client = e.client();
    let mut watch_a = client.events(FeedFilter::new().workflow_id("a"));
    drive(&client, "a", &mut watch_a).await;
    // `now` is where the first read finds the end of what it can read: once a's events are
    // all readable (PostgreSQL may hold the last ones back a moment), none of them comes.
    until_closed(client.events(FeedFilter::new().workflow_id("a"))).await;
    let mut from_now = client.events(FeedFilter::new()).from(FeedCursor::now());
    let mut watch_b = client.events(FeedFilter::new().workflow_id("b"));
    let b = tokio::spawn({
        let client = client.clone();
        async move { drive(&client, "b", &mut watch_b).await }
    });
    let first = next_event(&mut from_now).await;
    assert_eq!(first.workflow_id, "b", "{first:?}");
    tokio::time::timeout(LIMIT, b).await.unwrap().unwrap();
    let all = collect_caught_up(client.events(FeedFilter::new())).await;
    assert_eq!(all.len(), 2 * LIFECYCLE.len(), "{:#?}", kinds(&all));
    let of_b = collect_caught_up(client.events(FeedFilter::new().workflow_id("b"))).await;
    assert_eq!(kinds(&of_b), LIFECYCLE);
    assert!(of_b.iter().all(|e| e.workflow_id == "b"));
    let of_type =
        collect_caught_up(client.events(FeedFilter::new().workflow_type("feed_lifecycle"))).await;
    assert_eq!(of_type, all);
    let none = collect_caught_up(client.events(FeedFilter::new().workflow_type("other"))).await;
    assert!(none.is_empty());
    let some = [FeedKind::SignalWaiting, FeedKind::Completed];
    let waits = collect_caught_up(client.events(FeedFilter::new().kinds(some))).await;
    let one_run: Vec<FeedKind> = LIFECYCLE.into_iter().filter(|k| some.contains(k)).collect();
    assert_eq!(
        kinds(&waits),
        [one_run.clone(), one_run].concat(),
        "the kinds asked for, in order"
    );
    let a_done = collect_caught_up(
        client.events(FeedFilter::new().workflow_id("a").kind(FeedKind::Completed)),
    )
    .await;
    assert_eq!(a_done.len(), 1);
    assert_eq!(a_done[0].workflow_id, "a");
    e.shutdown().await;
}

both!(the_filter_keeps_a_type_an_id_and_kinds);

/// A purged run's events leave the feed with it; the others stay.
async fn purging_a_run_removes_its_events(backend: Backend) {
    let e = engine(builder(backend, "feed-purge")).await;
    let client = e.client();
    let mut watch = client.events(FeedFilter::new().workflow_id("gone"));
    drive(&client, "gone", &mut watch).await;
    let tail = collect_caught_up(client.events(FeedFilter::new())).await;
    assert_eq!(tail.len(), LIFECYCLE.len());
    client
        .delete_run("gone", "a test")
        .await
        .expect("a closed run can be deleted");
    let left = collect_caught_up(client.events(FeedFilter::new())).await;
    assert!(left.is_empty(), "{left:#?}");
    // New events still come after the last cursor handed out.
    let mut watch = client.events(FeedFilter::new().workflow_id("next"));
    drive(&client, "next", &mut watch).await;
    let after = collect_caught_up(
        client
            .events(FeedFilter::new())
            .from(tail[tail.len() - 1].cursor),
    )
    .await;
    assert_eq!(kinds(&after), LIFECYCLE);
    e.shutdown().await;
}

both!(purging_a_run_removes_its_events);

// ---------------------------------------------------------------------------------------------
// Another process

/// The child's side of [`a_reader_in_another_process_sees_every_event_once`]: `WF_FEED_CHILD`
/// is `OUT|PLACE`; on the store at PLACE, it reads the feed of workflow id `far` from the
/// start until the run closes, sending the run's `approve` signal once it reads that the run
/// waits for it (so that it reads every later event live), then writes each event's kind and
/// cursor to the file OUT, one per line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child of a_reader_in_another_process_sees_every_event_once"]
async fn feed_reader_child() {
    let Ok(told) = std::env::var("WF_FEED_CHILD") else {
        return;
    };
    let (out, place) = told.split_once('|').expect("OUT|PLACE");
    let reader = engine_at(place)
        .poll_interval(Duration::from_secs(60))
        .client_only()
        .build()
        .await
        .expect("the child's engine starts");
    let client = reader.client();
    let mut feed = client.events(FeedFilter::new().workflow_id("far"));
    let mut events = Vec::new();
    loop {
        let event = next_event(&mut feed).await;
        let (kind, first_wait) = (
            event.kind,
            !events
                .iter()
                .any(|e: &FeedEvent| e.kind == FeedKind::SignalWaiting),
        );
        events.push(event);
        if kind == FeedKind::SignalWaiting && first_wait {
            client
                .handle::<Lifecycle>("far")
                .signal("approve", &"the child")
                .await
                .expect("the child signals the run");
        }
        if kind.closes() {
            break;
        }
    }
    let lines: Vec<String> = events
        .iter()
        .map(|e| format!("{} {}", e.kind, e.cursor))
        .collect();
    std::fs::write(out, lines.join("\n")).expect("the child writes what it saw");
    reader.shutdown().await;
}

/// A reader in another process (this test binary run again, on the same SQLite file or
/// PostgreSQL schema, with no worker and a poll of a minute) sees every event of a run once,
/// in order, as the worker here commits them: peers' pokes (SQLite) or `NOTIFY`
/// (PostgreSQL) wake it. The child approves the run once it has read that it waits, so that
/// the events after are read live; each must reach it well within its poll.
async fn a_reader_in_another_process_sees_every_event_once(backend: Backend) {
    let place = new_place(backend, "feed-far");
    let out = temp_path("feed-far-seen", "txt");
    let _ = std::fs::remove_file(&out);
    // The store exists (migrated) before the child opens it.
    let e = engine(engine_at(&place).poll_interval(Duration::from_millis(20))).await;
    let told = format!("{}|{place}", out.display());
    let mut child = spawn_test_child("feed_reader_child", "WF_FEED_CHILD", told);
    let client = e.client();
    let mut watch = client.events(FeedFilter::new().workflow_id("far"));
    drive_approved_by(&client, "far", &mut watch, false).await;
    let here = collect_caught_up(client.events(FeedFilter::new().workflow_id("far"))).await;
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "the child read the feed: {status:?}");
    let seen = std::fs::read_to_string(&out).expect("the child wrote what it saw");
    let expected: Vec<String> = here
        .iter()
        .map(|e| format!("{} {}", e.kind, e.cursor))
        .collect();
    assert_eq!(seen.lines().collect::<Vec<_>>(), expected);
    assert_eq!(kinds(&here), LIFECYCLE);
    e.shutdown().await;
}

// (The memory store lives in one process: SQLite and PostgreSQL only.)
mod a_reader_in_another_process_sees_every_event_once {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::a_reader_in_another_process_sees_every_event_once(super::Backend::Sqlite).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        if super::postgres_available() {
            super::a_reader_in_another_process_sees_every_event_once(super::Backend::Postgres).await
        }
    }
}
