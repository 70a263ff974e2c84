//! The feed of what runs do: the rows a start, a commit, a termination, a pause, an unpause
//! and a retried attempt add, in commit order, with their details; none from a transaction
//! that fails; reads after a cursor, filtered and paged; `now`; rows purged with their run
//! while later rows still come after every cursor handed out.

use super::fixtures::*;
use crate::data::activity::ActivityFailure;
use crate::data::feed::{FeedCursor, FeedDetail, FeedEvent, FeedFilter, FeedKind};
use crate::data::pause::PauseMark;
use crate::store::{EventKind, Store};
use std::sync::Arc;

/// Every event after `after` that `filter` takes, page by page of `max`.
async fn read_all(
    store: &dyn Store,
    filter: &FeedFilter,
    after: FeedCursor,
    max: usize,
) -> Vec<FeedEvent> {
    let mut out = Vec::new();
    let mut at = after;
    loop {
        let page = store
            .read_feed(filter, at, max)
            .await
            .expect("read the feed");
        assert!(page.events.len() <= max, "a page holds at most max events");
        if page.next == at {
            assert!(
                page.events.is_empty(),
                "a page with events moves the cursor"
            );
            return out;
        }
        assert!(page.next > at, "the cursor only moves on");
        at = page.next;
        out.extend(page.events);
    }
}

/// Waits until the feed holds `n` rows, all readable (10 s at most: a failure detector). A
/// store whose transactions commit out of order (PostgreSQL) answers a row only once every
/// transaction older than it ended, anywhere on its server: a test running beside this one
/// may hold it back a moment.
async fn visible(store: &dyn Store, n: usize) -> Vec<FeedEvent> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let all = read_all(store, &FeedFilter::new(), FeedCursor::start(), 100).await;
        assert!(all.len() <= n, "more rows than {n}: {all:#?}");
        if all.len() == n || std::time::Instant::now() > deadline {
            assert_eq!(all.len(), n, "the feed holds {n} rows: {all:#?}");
            return all;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn kinds(events: &[FeedEvent]) -> Vec<FeedKind> {
    events.iter().map(|e| e.kind).collect()
}

/// Starts `wf-1` and commits a task that receives a signal, schedules an activity, starts a
/// timer and waits for a signal.
async fn start_and_commit(store: &dyn Store) {
    start(store, "wf-1", "run-1", T0).await;
    store
        .deliver(crate::store::Delivery::new("wf-1", signal("go", None), T0))
        .await
        .unwrap();
    run_task(store, T0 + 1, |task, c| {
        let received = task.messages[0].message.to_event();
        c.events.insert(0, event(T0 + 1, received));
        c.events.insert(
            1,
            event(
                T0 + 1,
                EventKind::ActivityScheduled {
                    seq: 1,
                    name: "charge".into(),
                    input: payload(1),
                    options: Default::default(),
                },
            ),
        );
        c.events.insert(
            2,
            event(
                T0 + 1,
                EventKind::TimerStarted {
                    seq: 2,
                    fire_at_ms: T0 + 500,
                },
            ),
        );
        c.new_activities = vec![activity(1, Default::default())];
        c.new_timers = vec![timer(2, T0 + 500)];
        c.signal_waiting = Some(FeedDetail {
            signals: vec!["approve".into()],
            deadline_ms: Some(T0 + 9_000),
            ..FeedDetail::default()
        });
    })
    .await;
}

/// A start and a commit add their rows in order: each lifecycle event with its history event
/// id and details, the commit's `signal_waiting` after its events, nothing for the workflow
/// task marker; a read from any cursor answers exactly the rows after it.
pub async fn a_commit_adds_its_events_to_the_feed_in_order(store: Arc<dyn Store>) {
    start_and_commit(&*store).await;
    let all = visible(&*store, 5).await;
    assert_eq!(
        kinds(&all),
        [
            FeedKind::Started,
            FeedKind::SignalReceived,
            FeedKind::ActivityScheduled,
            FeedKind::TimerStarted,
            FeedKind::SignalWaiting,
        ]
    );
    assert!(all
        .iter()
        .all(|e| e.workflow_id == "wf-1" && e.run_id == "run-1" && e.workflow_type == "order"));
    let ids: Vec<Option<u64>> = all.iter().map(|e| e.event_id).collect();
    assert_eq!(ids, [Some(1), Some(2), Some(3), Some(4), None]);
    assert_eq!(all[0].at_ms, T0);
    assert_eq!(all[1].detail.name.as_deref(), Some("go"));
    assert_eq!(
        (all[2].detail.name.as_deref(), all[2].detail.seq),
        (Some("charge"), Some(1))
    );
    assert_eq!(all[3].detail.fire_at_ms, Some(T0 + 500));
    assert_eq!(all[4].detail.signals, ["approve"]);
    assert_eq!(all[4].detail.deadline_ms, Some(T0 + 9_000));
    assert!(all.windows(2).all(|w| w[0].cursor < w[1].cursor));
    for (i, e) in all.iter().enumerate() {
        let rest = read_all(&*store, &FeedFilter::new(), e.cursor, 100).await;
        assert_eq!(rest, all[i + 1..], "after event {i}");
        let text: FeedCursor = e.cursor.to_string().parse().unwrap();
        assert_eq!(text, e.cursor);
    }
    // Pages of one hold the same events.
    assert_eq!(
        read_all(&*store, &FeedFilter::new(), FeedCursor::start(), 1).await,
        all
    );
}

/// A commit that fails (an old history position) adds no row; nor does a start refused for a
/// running workflow id.
pub async fn a_failed_commit_adds_nothing_to_the_feed(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let before = visible(&*store, 1).await;
    let task = lease_one(&*store, "w", T0 + 1).await;
    let mut c = commit_for(&task, "w", T0 + 1);
    c.expected_next_event_id += 5;
    c.events.insert(
        0,
        event(T0 + 1, EventKind::WorkflowCompleted { result: payload(1) }),
    );
    assert!(store.commit_workflow_task(c).await.is_err());
    assert!(store
        .start_run(start_request("wf-1", "run-2", T0 + 2))
        .await
        .is_err());
    // A write that succeeds after them: once it is readable, so would theirs be.
    start(&*store, "wf-2", "run-2", T0 + 3).await;
    let after = visible(&*store, 2).await;
    assert_eq!(after[..1], before);
    assert_eq!(kinds(&after), [FeedKind::Started, FeedKind::Started]);
    assert_eq!(after[1].workflow_id, "wf-2");
}

/// A pause, an unpause, a retried attempt and a termination are in the feed: the first three
/// with no history event, the last with its `WorkflowTerminated`.
pub async fn pauses_retries_and_terminations_are_in_the_feed(store: Arc<dyn Store>) {
    start_and_commit(&*store).await;
    let end = visible(&*store, 5).await.last().expect("rows").cursor;
    let leased = store
        .poll_activity_tasks_any("aw", T0 + 2, 10)
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    let failure = ActivityFailure {
        kind: "retryable".into(),
        message: "flaky".into(),
        non_retryable: false,
    };
    assert!(store
        .retry_activity(attempt_of("run-1", 1, 1), T0 + 100, failure, T0 + 3)
        .await
        .unwrap());
    let mark = PauseMark {
        by: "ops".into(),
        reason: "a look".into(),
        at_ms: T0 + 4,
    };
    store.admin().pause_run("wf-1", mark).await.unwrap();
    store.admin().unpause_run("wf-1", T0 + 5).await.unwrap();
    store.terminate("wf-1", "enough", T0 + 6).await.unwrap();
    visible(&*store, 9).await;
    let rest = read_all(&*store, &FeedFilter::new(), end, 100).await;
    assert_eq!(
        kinds(&rest),
        [
            FeedKind::ActivityFailed,
            FeedKind::Paused,
            FeedKind::Unpaused,
            FeedKind::Terminated,
        ]
    );
    let failed = &rest[0];
    assert_eq!(failed.event_id, None);
    assert_eq!(failed.at_ms, T0 + 3);
    assert_eq!(
        (
            failed.detail.name.as_deref(),
            failed.detail.attempt,
            failed.detail.error.as_deref(),
            failed.detail.retry_at_ms
        ),
        (Some("charge"), Some(1), Some("flaky"), Some(T0 + 100))
    );
    assert_eq!(
        (
            rest[1].detail.name.as_deref(),
            rest[1].detail.error.as_deref()
        ),
        (Some("ops"), Some("a look"))
    );
    assert_eq!((rest[1].at_ms, rest[2].at_ms), (T0 + 4, T0 + 5));
    assert_eq!(rest[3].detail.error.as_deref(), Some("enough"));
    // (Event 5 is the task's `WorkflowTaskCompleted`.)
    assert_eq!(rest[3].event_id, Some(6));
    // A stale attempt's retry changes nothing, and says nothing.
    let failure = ActivityFailure {
        kind: "retryable".into(),
        message: "late".into(),
        non_retryable: false,
    };
    let _ = store
        .retry_activity(attempt_of("run-1", 1, 1), T0 + 100, failure, T0 + 7)
        .await;
    let last = rest.last().expect("rows").cursor;
    assert!(read_all(&*store, &FeedFilter::new(), last, 100)
        .await
        .is_empty());
}

/// A filter keeps a workflow type, a workflow id, kinds; `now` is the end of the feed.
pub async fn the_feed_is_filtered_by_type_id_and_kind(store: Arc<dyn Store>) {
    start_and_commit(&*store).await;
    start(&*store, "wf-2", "run-2", T0 + 2).await;
    let mut other = start_request("wf-3", "run-3", T0 + 3);
    other.run.workflow_type = "invoice".into();
    store.start_run(other).await.unwrap();
    let all = visible(&*store, 7).await;
    let wf2 = FeedFilter::new().workflow_id("wf-2");
    let of_wf2 = read_all(&*store, &wf2, FeedCursor::start(), 100).await;
    assert_eq!(kinds(&of_wf2), [FeedKind::Started]);
    assert_eq!(of_wf2[0].run_id, "run-2");
    let invoices = FeedFilter::new().workflow_type("invoice");
    let of_type = read_all(&*store, &invoices, FeedCursor::start(), 1).await;
    assert_eq!(of_type.len(), 1);
    assert_eq!(of_type[0].workflow_id, "wf-3");
    let both = FeedFilter::new().workflow_type("order").workflow_id("wf-3");
    assert!(read_all(&*store, &both, FeedCursor::start(), 100)
        .await
        .is_empty());
    let started = FeedFilter::new().kind(FeedKind::Started);
    let starts = read_all(&*store, &started, FeedCursor::start(), 2).await;
    let ids: Vec<&str> = starts.iter().map(|e| e.workflow_id.as_str()).collect();
    assert_eq!(ids, ["wf-1", "wf-2", "wf-3"]);
    // `now`: no event, and the end of the feed to read on from.
    let page = store
        .read_feed(&FeedFilter::new(), FeedCursor::now(), 100)
        .await
        .unwrap();
    assert!(page.events.is_empty());
    assert_eq!(page.next, all.last().expect("rows").cursor);
    start(&*store, "wf-4", "run-4", T0 + 4).await;
    visible(&*store, 8).await;
    let new = read_all(&*store, &FeedFilter::new(), page.next, 100).await;
    assert_eq!(new.len(), 1);
    assert_eq!(new[0].workflow_id, "wf-4");
}

/// A purge takes a closed run's rows and leaves the others; rows added later come after
/// every cursor handed out before (no place is given twice).
pub async fn a_purged_run_leaves_the_feed(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    start(&*store, "wf-2", "run-2", T0 + 1).await;
    store.terminate("wf-2", "done", T0 + 2).await.unwrap();
    let all = visible(&*store, 3).await;
    let last = all.last().expect("rows").cursor;
    let purged = store.admin().purge_closed_runs(T0 + 10, 10).await.unwrap();
    assert_eq!(purged, ["run-2"]);
    let left = visible(&*store, 1).await;
    assert_eq!(kinds(&left), [FeedKind::Started]);
    assert_eq!(left[0].run_id, "run-1");
    start(&*store, "wf-3", "run-3", T0 + 3).await;
    visible(&*store, 2).await;
    let new = read_all(&*store, &FeedFilter::new(), last, 100).await;
    assert_eq!(kinds(&new), [FeedKind::Started]);
    assert_eq!(new[0].run_id, "run-3");
    let now = store
        .read_feed(&FeedFilter::new(), FeedCursor::now(), 10)
        .await
        .unwrap();
    assert_eq!(now.next, new[0].cursor);
}
