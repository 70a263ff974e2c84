//! Delayed and debounced starts: a run created with a start time exists at once, keeps the
//! messages sent to it, and no engine gets its first workflow task before that time (a poll, a
//! lease of the run, a commit without a lease), a signal notwithstanding; debounced starts of
//! one type and key make one run while it waits, even from several stores on one database.

use super::fixtures::*;
use crate::store::{DeliverOutcome, Delivery, LeaseRequest, Payload, Store, StoreError};
use std::sync::Arc;

/// The start delay of the properties.
const DELAY_MS: i64 = 60_000;

/// A delayed run is listed with its start time at once; before that time neither a poll, nor
/// a lease of the run, nor a commit without a lease runs it, though a signal reached it; at
/// that time a poll leases it, with the signal in its inbox.
pub async fn a_delayed_run_waits_for_its_start_even_when_signalled(store: Arc<dyn Store>) {
    let mut req = start_request("wf-1", "run-1", T0);
    req.start_at_ms = Some(T0 + DELAY_MS);
    let out = store.start_run(req).await.unwrap();
    assert!(out.started);
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(run.start_at_ms, Some(T0 + DELAY_MS));

    let sent = store
        .deliver(Delivery::new("wf-1", signal("poke", Some("s-1")), T0 + 1))
        .await
        .unwrap();
    assert!(matches!(sent, DeliverOutcome::Enqueued { .. }), "{sent:?}");
    let early = store
        .poll_workflow_tasks_any("w-1", T0 + DELAY_MS - 1, 10_000, 10)
        .await
        .unwrap();
    assert!(early.is_empty(), "leased before its start: {early:?}");
    let leased = store
        .lease_run(LeaseRequest {
            run_id: "run-1".into(),
            worker_id: "w-1".into(),
            now_ms: T0 + 2,
            lease_ms: 10_000,
            build_id: None,
        })
        .await
        .unwrap();
    assert!(leased.is_none(), "leased before its start: {leased:?}");
    let task = crate::store::WorkflowTask {
        run: run.clone(),
        messages: Vec::new(),
    };
    let mut lease_free = commit_for(&task, "w-1", T0 + 2);
    lease_free.without_lease = true;
    let refused = store.commit_workflow_task(lease_free).await;
    assert!(
        matches!(refused, Err(StoreError::Conflict { .. })),
        "a commit without a lease ran it before its start: {refused:?}"
    );

    let task = lease_one(&*store, "w-1", T0 + DELAY_MS).await;
    assert_eq!(task.run.run_id, "run-1");
    assert_eq!(
        task.messages.len(),
        1,
        "the signal is kept: {:?}",
        task.messages
    );
    store
        .commit_workflow_task(commit_for(&task, "w-1", T0 + DELAY_MS))
        .await
        .unwrap();
    // Begun: a signal now makes it ready at once.
    store
        .deliver(Delivery::new(
            "wf-1",
            signal("poke", None),
            T0 + DELAY_MS + 1,
        ))
        .await
        .unwrap();
    lease_one(&*store, "w-1", T0 + DELAY_MS + 1).await;
}

/// A start of run `run_id` of `workflow_id` with input `input`, debounced by `key` with a
/// window of 5 s and this maximum wait.
fn debounced(
    workflow_id: &str,
    run_id: &str,
    input: &str,
    now_ms: i64,
    max_wait_ms: Option<i64>,
) -> crate::store::RunStart {
    let mut req = start_request(workflow_id, run_id, now_ms);
    req.run.input = payload(input);
    req.start_at_ms = Some(now_ms + WINDOW_MS);
    req.debounce = Some(crate::store::StartDebounce {
        key: "user-7".into(),
        window_ms: WINDOW_MS,
        max_wait_ms,
    });
    req
}

/// The debounce window of the properties.
const WINDOW_MS: i64 = 5_000;

/// The input the run's `WorkflowStarted` records.
async fn input_of(store: &dyn Store, run_id: &str) -> Payload {
    let history = store.read_history(run_id, 1).await.unwrap();
    match &history[0].kind {
        crate::store::EventKind::WorkflowStarted { input, .. } => input.clone(),
        other => panic!("run {run_id} starts with {other:?}"),
    }
}

/// Debounced starts of one type and key make one run while it waits: each later start (of
/// another workflow id) replaces its input and pushes its start, returns it (the first start's
/// workflow id, not started); once the run has begun, the next start makes a new run, and a
/// maximum wait bounds how far later starts push it.
pub async fn debounced_starts_make_one_run_with_the_latest_input(store: Arc<dyn Store>) {
    let first = store
        .start_run(debounced("wf-1", "run-1", "a", T0, None))
        .await
        .unwrap();
    assert_eq!((first.workflow_id.as_str(), first.started), ("wf-1", true));
    let later = store
        .start_run(debounced("wf-2", "run-2", "b", T0 + 1_000, None))
        .await
        .unwrap();
    assert_eq!(
        (
            later.workflow_id.as_str(),
            later.run_id.as_str(),
            later.started
        ),
        ("wf-1", "run-1", false)
    );
    assert_eq!(store.get_run("wf-2", None).await.unwrap(), None);
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(run.start_at_ms, Some(T0 + 1_000 + WINDOW_MS));
    assert_eq!(input_of(&*store, "run-1").await, payload("b"));
    let history = store.read_history("run-1", 1).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        run.history_bytes,
        crate::data::codec::encode_event(history[0].time_ms, &history[0].kind)
            .unwrap()
            .len() as u64,
        "history_bytes follows the new input"
    );
    // Not at the first start's time: at the pushed one.
    let early = store
        .poll_workflow_tasks_any("w-1", T0 + WINDOW_MS, 10_000, 10)
        .await
        .unwrap();
    assert!(early.is_empty(), "{early:?}");
    let task = lease_one(&*store, "w-1", T0 + 1_000 + WINDOW_MS).await;
    assert_eq!(task.run.run_id, "run-1");

    // Begun (leased): the next start makes a new run, under its own workflow id.
    let now = T0 + 1_000 + WINDOW_MS + 1;
    let next = store
        .start_run(debounced("wf-3", "run-3", "c", now, Some(1_000)))
        .await
        .unwrap();
    assert_eq!((next.workflow_id.as_str(), next.started), ("wf-3", true));
    // A maximum wait of 1 s after run-3's start bounds the push.
    let pushed = store
        .start_run(debounced("wf-4", "run-4", "d", now + 500, Some(1_000)))
        .await
        .unwrap();
    assert_eq!((pushed.run_id.as_str(), pushed.started), ("run-3", false));
    let run = store.get_run("wf-3", None).await.unwrap().unwrap();
    assert_eq!(run.start_at_ms, Some(now + 1_000));
    // Another key, or another type, is another run.
    let mut other = debounced("wf-5", "run-5", "e", now + 600, None);
    other.run.workflow_type = "invoice".into();
    assert!(store.start_run(other).await.unwrap().started);
}

/// Debounced starts of one key through several stores open on one database at once (several
/// processes) make one run.
pub async fn concurrent_debounced_starts_on_one_database_make_one_run(
    db: Arc<dyn super::StoreUnderTest>,
) {
    let stores = [db.open().await, db.open().await, db.open().await];
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..12 {
        let store = stores[i % 3].clone();
        calls.spawn(async move {
            let req = debounced(
                &format!("wf-{i}"),
                &format!("run-{i}"),
                "x",
                T0 + i as i64,
                None,
            );
            store.start_run(req).await.unwrap()
        });
    }
    let mut started = Vec::new();
    while let Some(out) = calls.join_next().await {
        let out = out.unwrap();
        if out.started {
            started.push(out.run_id.clone());
        }
    }
    assert_eq!(
        started.len(),
        1,
        "12 debounced starts made runs {started:?}"
    );
    let runs = stores[0]
        .admin()
        .list_runs(crate::store::ListFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
}
