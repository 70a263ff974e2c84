//! Signals (order, dedupe, buffering, finished runs) and queries (cached, evicted, finished,
//! failing, unknown).

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{history::EventKind, payload::Payload};

#[derive(Default)]
pub struct Inbox {
    seen: Vec<String>,
    closed: bool,
}

#[workflow]
impl Inbox {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<Vec<String>, WorkflowError> {
        ctx.wait_condition(|s| s.closed).await;
        Ok(ctx.state(|s| s.seen.clone()))
    }

    #[signal]
    fn push(&mut self, item: String) {
        if item == "boom" {
            panic!("push refuses boom");
        }
        self.seen.push(item);
    }

    #[signal]
    fn close(&mut self) {
        self.closed = true;
    }

    #[query]
    fn seen(&self) -> Vec<String> {
        self.seen.clone()
    }

    #[query]
    fn nth(&self, i: usize) -> Option<String> {
        self.seen.get(i).cloned()
    }
}

async fn signals_apply_in_arrival_order(backend: Backend) {
    let engine = builder(backend, "order")
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Inbox>("inbox", ()).await.unwrap();
    let expected: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    for m in &expected {
        h.push(m.clone()).await.unwrap();
    }
    h.close().await.unwrap();
    assert_eq!(h.result().await.unwrap(), expected);
    assert_eq!(
        count(&h.history().await.unwrap(), |k| matches!(
            k,
            EventKind::SignalReceived { .. }
        )),
        21
    );
}

async fn signal_id_applies_once(backend: Backend) {
    let engine = builder(backend, "dedupe")
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Inbox>("inbox", ()).await.unwrap();
    for _ in 0..3 {
        h.push("x".into()).signal_id("cmd-1").await.unwrap();
    }
    h.push("y".into()).signal_id("cmd-2").await.unwrap();
    h.close().await.unwrap();
    assert_eq!(
        h.result().await.unwrap(),
        vec!["x".to_string(), "y".to_string()]
    );
    // A retry after the run closed (its first answer lost, say) learns that it was applied;
    // a new signal id is refused.
    h.push("y".into()).signal_id("cmd-2").await.unwrap();
    assert!(matches!(
        h.push("z".into()).signal_id("cmd-3").await,
        Err(WfError::RunFinished { .. })
    ));
    let history = h.history().await.unwrap();
    assert_eq!(
        count(
            &history,
            |k| matches!(k, EventKind::SignalReceived { signal_id: Some(id), .. } if id == "cmd-1")
        ),
        1
    );
}

async fn signal_to_finished_run_is_run_finished(backend: Backend) {
    let engine = builder(backend, "finished")
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Inbox>("inbox", ()).await.unwrap();
    h.close().await.unwrap();
    h.result().await.unwrap();
    let before = h.history().await.unwrap().len();
    assert!(matches!(
        h.push("late".into()).await,
        Err(WfError::RunFinished { .. })
    ));
    assert_eq!(h.history().await.unwrap().len(), before);
}

async fn signal_without_handler_is_kept_and_described(backend: Backend) {
    let engines = shared_store(backend, "unknown-signal");
    let engine = engines().workflow::<Inbox>().build().await.unwrap();
    let client = engine.client();
    let h = client.start::<Inbox>("inbox", ()).await.unwrap();
    // A signal with no handler is accepted and kept (semantic 4), from any client.
    client
        .signal_raw("inbox", "nonexistent", Payload::encode(&()).unwrap(), None)
        .await
        .unwrap();
    let blind = engines().client_only().build().await.unwrap();
    blind
        .client()
        .signal_raw("inbox", "later", Payload::encode(&(1, 2)).unwrap(), None)
        .await
        .unwrap();
    h.push("after".into()).await.unwrap();
    let d = eventually("the buffered signal in describe", || async {
        let d = h.describe().await.unwrap();
        (d.buffered_signals.len() == 2).then_some(d)
    })
    .await;
    assert_eq!(
        d.buffered_signals,
        vec!["nonexistent".to_string(), "later".to_string()]
    );
    let history = h.history().await.unwrap();
    assert_eq!(
        count(
            &history,
            |k| matches!(k, EventKind::SignalReceived { name, .. } if name == "nonexistent")
        ),
        1
    );
}

async fn queries_never_write_history(backend: Backend) {
    let engine = builder(backend, "query")
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Inbox>("inbox", ()).await.unwrap();
    h.push("a".into()).await.unwrap();
    h.push("b".into()).await.unwrap();
    let seen = eventually("both signals applied", || async {
        let s = h.seen().await.unwrap();
        (s.len() == 2).then_some(s)
    })
    .await;
    assert_eq!(seen, vec!["a", "b"]);
    let before = h.history().await.unwrap();
    for _ in 0..10 {
        assert_eq!(h.nth(1).await.unwrap().as_deref(), Some("b"));
        assert_eq!(h.nth(7).await.unwrap(), None);
    }
    assert_eq!(h.history().await.unwrap(), before);
    // Finished run: answered by replay, still no event.
    h.close().await.unwrap();
    h.result().await.unwrap();
    let closed = h.history().await.unwrap();
    assert_eq!(h.seen().await.unwrap(), vec!["a", "b"]);
    assert_eq!(h.history().await.unwrap(), closed);
}

async fn query_on_evicted_run_replays(backend: Backend) {
    let engine = builder(backend, "evicted")
        .cache_capacity(1)
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let first = client.start::<Inbox>("first", ()).await.unwrap();
    first.push("kept".into()).await.unwrap();
    eventually("first applied", || async {
        (first.seen().await.unwrap().len() == 1).then_some(())
    })
    .await;
    // Another run takes the single cache slot.
    let second = client.start::<Inbox>("second", ()).await.unwrap();
    second.push("other".into()).await.unwrap();
    eventually("second applied", || async {
        (second.seen().await.unwrap().len() == 1).then_some(())
    })
    .await;
    assert_eq!(first.seen().await.unwrap(), vec!["kept"]);
}

async fn unknown_query_is_query_error(backend: Backend) {
    let engine = builder(backend, "unknown-query")
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    client.start::<Inbox>("inbox", ()).await.unwrap();
    let err = client
        .query_raw("inbox", "nope", Payload::encode(&()).unwrap())
        .await
        .unwrap_err();
    match err {
        WfError::QueryError(m) => assert!(m.contains("nope") && m.contains("seen"), "{m}"),
        other => panic!("expected QueryError, got {other:?}"),
    }
}

async fn query_answers_last_good_state_while_task_fails(backend: Backend) {
    let engine = builder(backend, "failing")
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Inbox>("inbox", ()).await.unwrap();
    h.push("good".into()).await.unwrap();
    eventually("good applied", || async {
        (h.seen().await.unwrap().len() == 1).then_some(())
    })
    .await;
    h.push("boom".into()).await.unwrap();
    let d = eventually("the task failure in describe", || async {
        let d = h.describe().await.unwrap();
        d.task_failure.is_some().then_some(d)
    })
    .await;
    let failure = d.task_failure.unwrap();
    assert!(
        failure.message.contains("push refuses boom"),
        "{}",
        failure.message
    );
    assert_eq!(d.status, RunStatus::Running);
    assert_eq!(h.seen().await.unwrap(), vec!["good"]);
    // The failed task wrote nothing: the poison signal is still waiting in the inbox.
    assert_eq!(
        count(&h.history().await.unwrap(), |k| matches!(
            k,
            EventKind::SignalReceived { .. }
        )),
        1
    );
    let _ = Duration::ZERO;
}

both!(
    signals_apply_in_arrival_order,
    signal_id_applies_once,
    signal_to_finished_run_is_run_finished,
    signal_without_handler_is_kept_and_described,
    queries_never_write_history,
    query_on_evicted_run_replays,
    unknown_query_is_query_error,
    query_answers_last_good_state_while_task_fails,
    signals_from_two_engines_race_and_each_applies_once,
    a_signal_is_in_history_when_the_call_returns,
);

/// On an engine that runs the workflow type, a signal without an id is answered once a task
/// recorded it, whether the run is held in memory or was evicted (then it is leased and
/// replayed for the signal).
async fn a_signal_is_in_history_when_the_call_returns(backend: Backend) {
    let engine = builder(backend, "signal-recorded")
        .cache_capacity(1)
        .workflow::<Inbox>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let a = client.start::<Inbox>("a", ()).await.unwrap();
    let b = client.start::<Inbox>("b", ()).await.unwrap();
    // The cache holds one run: `b` (started last), then `a`, then `b` again.
    for (h, evicted) in [(&a, true), (&a, false), (&b, true)] {
        let before = h.history().await.unwrap().len();
        h.push(format!("evicted: {evicted}")).await.unwrap();
        let history = h.history().await.unwrap();
        assert_eq!(
            kinds(&history[before..]),
            ["SignalReceived", "WorkflowTaskCompleted"],
            "evicted: {evicted}"
        );
    }
    assert_eq!(a.seen().await.unwrap(), ["evicted: true", "evicted: false"]);
    engine.shutdown().await;
}

/// Engine A holds the run in memory and records its own signals in lease-free commits; engine
/// B's signals reach the same run through the store's inbox, and A's polled tasks take them.
/// The two paths race on every step: each signal must still apply exactly once, and each
/// sender's signals in the order it sent them.
async fn signals_from_two_engines_race_and_each_applies_once(backend: Backend) {
    let store = shared_store(backend, "race");
    let engine = || store().workflow::<Inbox>().build();
    let a = engine().await.unwrap();
    let b = engine().await.unwrap();
    let h = a.client().start::<Inbox>("race", ()).await.unwrap();
    // Once A answers a query, A holds the run in memory.
    eventually("the first task", || async { h.seen().await.ok() }).await;
    let mut senders = Vec::new();
    for (engine, tag) in [(&a, "a"), (&b, "b"), (&a, "c"), (&b, "d")] {
        let client = engine.client();
        senders.push(tokio::spawn(async move {
            let h = client.handle::<Inbox>("race");
            for i in 0..25 {
                h.push(format!("{tag}{i:02}")).await.unwrap();
            }
        }));
    }
    for s in senders {
        s.await.unwrap();
    }
    h.close().await.unwrap();
    let seen = h.result().await.unwrap();
    assert_eq!(seen.len(), 100, "{seen:?}");
    for tag in ["a", "b", "c", "d"] {
        let mine: Vec<&String> = seen.iter().filter(|s| s.starts_with(tag)).collect();
        let expected: Vec<String> = (0..25).map(|i| format!("{tag}{i:02}")).collect();
        assert_eq!(mine, expected.iter().collect::<Vec<_>>(), "sender {tag}");
    }
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::SignalReceived { .. })),
        101
    );
    a.shutdown().await;
    b.shutdown().await;
}
