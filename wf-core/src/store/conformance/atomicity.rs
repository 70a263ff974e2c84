//! Atomicity and isolation: a failed operation changes nothing, and many concurrent callers
//! (folded into group commits by SQLite) each get their own, correct answer.

use super::fixtures::*;
use crate::store::EventKind;
use crate::store::Payload;
use crate::store::{
    DeliverOutcome, Delivery, IdConflictPolicy, ListFilter, RunStatus, Store, StoreError,
    UpdateState,
};
use std::sync::Arc;

/// A commit that fails midway changes nothing.
pub async fn a_commit_that_fails_midway_changes_nothing(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    run_task(&*store, T0, |_, c| {
        c.new_activities = vec![activity(1, Default::default())]
    })
    .await;
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0 + 1))
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0 + 1).await;
    let before = store.get_run("wf-1", None).await.unwrap().unwrap();

    // Everything a commit can change, plus one activity seq that is already pending.
    let mut bad = commit_for(&task, "w", T0 + 2);
    bad.events.insert(
        0,
        event(
            T0 + 2,
            EventKind::TimerStarted {
                seq: 5,
                fire_at_ms: T0 + 10,
            },
        ),
    );
    bad.new_timers = vec![timer(5, T0 + 10)];
    bad.updates = vec![update_change("u-1", "rename", UpdateState::Accepted)];
    bad.summary = Payload::from_bytes(vec![0xc0]).unwrap();
    bad.new_activities = vec![
        activity(2, Default::default()),
        activity(1, Default::default()),
    ];
    let err = store.commit_workflow_task(bad).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend(..)), "{err}");

    assert_eq!(store.get_run("wf-1", None).await.unwrap(), Some(before));
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 2);
    let seqs: Vec<u32> = store
        .pending_activities("run-1")
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.seq)
        .collect();
    assert_eq!(seqs, [1]);
    assert_eq!(
        store
            .get_update("wf-1", "u-1")
            .await
            .unwrap()
            .unwrap()
            .state,
        UpdateState::Requested
    );
    assert!(store.fire_due_timers(T0 + 10, 10).await.unwrap().is_empty());

    // The lease and the inbox are intact: the worker can still commit.
    let run = store
        .commit_workflow_task(commit_for(&task, "w", T0 + 3))
        .await
        .unwrap();
    assert_eq!(run.next_event_id, 4);
}

/// A start that fails midway changes nothing.
pub async fn a_start_that_fails_midway_changes_nothing(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    start(&*store, "wf-2", "run-2", T0).await;
    // Terminating run-2 would succeed, but the new run id is taken: the whole start fails.
    let mut req = start_request("wf-2", "run-1", T0 + 1);
    req.policy = IdConflictPolicy::TerminateExisting;
    let err = store.start_run(req).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend(..)), "{err}");
    let run = store.get_run("wf-2", None).await.unwrap().unwrap();
    assert_eq!(
        (run.run_id.as_str(), run.status, run.next_event_id),
        ("run-2", RunStatus::Running, 2)
    );
    assert_eq!(store.read_history("run-2", 1).await.unwrap().len(), 1);
}

/// Concurrent callers each get their own result.
pub async fn concurrent_callers_each_get_their_own_result(store: Arc<dyn Store>) {
    let mut starts = Vec::new();
    for i in 0..64 {
        let store = Arc::clone(&store);
        starts.push(tokio::spawn(async move {
            let run_id = format!("run-{i}");
            let out = store
                .start_run(start_request(&format!("wf-{i}"), &run_id, T0))
                .await;
            (run_id, out)
        }));
    }
    let mut contested = Vec::new();
    for i in 0..16 {
        let store = Arc::clone(&store);
        contested.push(tokio::spawn(async move {
            store
                .start_run(start_request("contested", &format!("c-{i}"), T0))
                .await
        }));
    }
    for handle in starts {
        let (run_id, out) = handle.await.unwrap();
        let out = out.unwrap();
        assert_eq!((out.run_id, out.started), (run_id, true));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for handle in contested {
        match handle.await.unwrap() {
            Ok(out) => winners.push(out.run_id),
            Err(StoreError::AlreadyStarted { run_id, .. }) => losers.push(run_id),
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one start of a contested id wins");
    assert!(
        losers.iter().all(|r| *r == winners[0]),
        "losers name the winner"
    );

    let mut signals = Vec::new();
    for _ in 0..32 {
        let store = Arc::clone(&store);
        signals.push(tokio::spawn(async move {
            store
                .deliver(Delivery::new(
                    "wf-0",
                    signal("once", Some("same-id")),
                    T0 + 1,
                ))
                .await
        }));
    }
    let mut enqueued = 0;
    for handle in signals {
        match handle.await.unwrap().unwrap() {
            DeliverOutcome::Enqueued { .. } => enqueued += 1,
            DeliverOutcome::DuplicateSignal { run_id } => assert_eq!(run_id, "run-0"),
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    assert_eq!(enqueued, 1);
    assert_eq!(
        store
            .admin()
            .list_runs(ListFilter::default())
            .await
            .unwrap()
            .len(),
        65
    );

    // Concurrent pollers never lease the same run twice.
    let mut polls = Vec::new();
    for w in 0..8 {
        let store = Arc::clone(&store);
        polls.push(tokio::spawn(async move {
            store
                .poll_workflow_tasks_any(&format!("w{w}"), T0 + 1, 10_000, 5)
                .await
                .unwrap()
        }));
    }
    let mut leased = Vec::new();
    for handle in polls {
        leased.extend(handle.await.unwrap().into_iter().map(|t| t.run.run_id));
    }
    leased.sort();
    let before = leased.len();
    leased.dedup();
    assert_eq!(leased.len(), before, "a run was leased twice");
    assert_eq!(before, 40, "8 pollers x 5 of the 65 ready runs");
}
