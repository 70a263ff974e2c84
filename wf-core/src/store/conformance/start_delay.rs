//! Delayed starts: a run created with a start time exists at once, keeps the messages sent to
//! it, and no engine gets its first workflow task before that time (a poll, a lease of the run,
//! a commit without a lease), a signal notwithstanding.

use super::fixtures::*;
use crate::store::{DeliverOutcome, Delivery, LeaseRequest, Store, StoreError};
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
