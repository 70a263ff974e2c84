//! Why a run is idle: describe names what each part of a run is blocked on (the source line
//! of a `wait_condition`, a signal wait of an update handler, a timer), on a cached run and on
//! an evicted one rebuilt by replay; and `query_at` answers as of a history event.

mod common;
use common::*;
use wf_sdk::prelude::*;
use wf_sdk::{client::BlockKind, history::EventKind};
use wf_testkit::gate::{Gate, GateClient};

/// Checks that `d` shows `run` blocked on the `wait_condition` of `Gate::run`, at `file:line`.
fn assert_blocked_at_condition(d: &wf_sdk::client::Description, (file, line): &(String, u32)) {
    let run = d
        .blocked_on
        .iter()
        .find(|p| p.part == "run")
        .unwrap_or_else(|| panic!("describe names the main method: {:?}", d.blocked_on));
    assert_eq!(run.waits.len(), 1, "{:?}", run.waits);
    let wait = &run.waits[0];
    assert_eq!(wait.kind, BlockKind::Condition);
    let at = wait
        .location
        .as_ref()
        .expect("the call's location is known");
    assert_eq!((&at.file, at.line), (file, *line), "{at}");
    assert!(at.file.ends_with("gate.rs"), "{at}");
}

async fn describe_names_the_wait_condition_line(backend: Backend) {
    let shared = shared_store(backend, "blocked-on");
    let engine = shared()
        .cache_capacity(1)
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Gate>("gate", ()).await.unwrap();
    h.bump().await.unwrap();
    let line = h.wait_at().await.unwrap();
    assert!(line.1 > 0);
    // Cached: the worker's copy answers.
    assert_blocked_at_condition(&h.describe().await.unwrap(), &line);

    // Evicted: another run takes the one cache slot; describe rebuilds `gate` by replay.
    let other = client.start::<Gate>("other", ()).await.unwrap();
    other.bump().await.unwrap();
    eventually("other applied", || async {
        (other.count().await.unwrap() == 1).then_some(())
    })
    .await;
    assert_blocked_at_condition(&h.describe().await.unwrap(), &line);
    // A client-only engine on the same store holds no run in memory: it replays.
    let reader = shared()
        .client_only()
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    let d = reader
        .client()
        .handle::<Gate>("gate")
        .describe()
        .await
        .unwrap();
    assert_blocked_at_condition(&d, &line);

    // An update handler waiting on a signal is a part of its own; then on a timer.
    let update = h.hold().start().await.unwrap();
    let d = eventually("the handler is blocked", || async {
        let d = h.describe().await.unwrap();
        (d.blocked_on.len() == 2).then_some(d)
    })
    .await;
    let hold = &d.blocked_on[1];
    assert!(hold.part.starts_with("update hold"), "{}", hold.part);
    assert_eq!(hold.waits.len(), 1, "{:?}", hold.waits);
    assert_eq!(hold.waits[0].kind, BlockKind::Signal);
    assert_eq!(hold.waits[0].name, "release");
    assert!(hold.waits[0].deadline_ms.is_some());
    assert_blocked_at_condition(&d, &line);

    // `release` has no handler: the signal goes to the handler's `wait_for_signal`.
    let release = wf_sdk::payload::Payload::encode(&((),)).unwrap();
    client
        .signal_raw("gate", "release", release, None)
        .await
        .unwrap();
    let d = eventually("the handler sleeps", || async {
        let d = h.describe().await.unwrap();
        let waits = &d.blocked_on.get(1)?.waits;
        (waits.len() == 1 && waits[0].kind == BlockKind::Timer).then_some(d)
    })
    .await;
    let timer = &d.blocked_on[1].waits[0];
    assert!(timer.deadline_ms.is_some());
    assert_eq!(timer.location.as_ref().unwrap().file, line.0);
    drop(update);

    // A closed run waits on nothing.
    h.open().await.unwrap();
    h.result().await.unwrap();
    assert!(h.describe().await.unwrap().blocked_on.is_empty());
}

async fn query_at_answers_as_of_an_event(backend: Backend) {
    let engine = builder(backend, "query-at")
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let h = client.start::<Gate>("counter", ()).await.unwrap();
    for _ in 0..5 {
        h.bump().await.unwrap();
    }
    let signals: Vec<u64> = h
        .history()
        .await
        .unwrap()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::SignalReceived { name, .. } if name == "bump"))
        .map(|e| e.event_id)
        .collect();
    assert_eq!(signals.len(), 5);
    // Running: as of the third signal, three bumps.
    assert_eq!(h.count().at_event(signals[2]).await.unwrap(), 3);
    assert_eq!(h.count().at_event(signals[0] - 1).await.unwrap(), 0);
    assert_eq!(h.count().await.unwrap(), 5);
    // The raw form, on the closed run too.
    h.open().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 5);
    let raw = client
        .query_at(
            "counter",
            "count",
            wf_sdk::payload::Payload::encode(&()).unwrap(),
            signals[3],
        )
        .await
        .unwrap();
    assert_eq!(raw.decode::<u32>().unwrap(), 4);
    // Out of range: a clear error naming the range.
    let last = h.history().await.unwrap().last().unwrap().event_id;
    for n in [0, last + 1] {
        let err = h.count().at_event(n).await.unwrap_err();
        assert!(
            matches!(&err, WfError::InvalidArgument(m) if m.contains(&format!("1 to {last}"))),
            "{err}"
        );
    }
}

both!(
    describe_names_the_wait_condition_line,
    query_at_answers_as_of_an_event
);
