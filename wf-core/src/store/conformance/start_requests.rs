//! Idempotent starts: a start's request id (a retry returns the run its first attempt
//! addressed, running or closed, and writes nothing) and the id-reuse policies for a workflow
//! id whose latest run is closed.

use super::fixtures::*;
use crate::store::{
    DeliverOutcome, IdConflictPolicy, IdReusePolicy, ListFilter, RunClose, RunStart, RunStatus,
    StartWithTask, Store, StoreError,
};
use std::sync::Arc;

/// A start of run `run_id` of `workflow_id` carrying `request_id`.
fn with_request_id(workflow_id: &str, run_id: &str, request_id: &str, now_ms: i64) -> RunStart {
    let mut req = start_request(workflow_id, run_id, now_ms);
    req.request_id = Some(request_id.into());
    req
}

/// How many runs the store holds.
async fn runs(store: &dyn Store) -> usize {
    store
        .admin()
        .list_runs(ListFilter::default())
        .await
        .unwrap()
        .len()
}

/// Closes the one ready run with `close` at `now_ms`.
async fn close(store: &dyn Store, now_ms: i64, close: RunClose) {
    run_task(store, now_ms, |_, c| c.close = Some(close)).await;
}

/// A start retried with its request id returns the first run, running and after it closed,
/// whatever the policies say; it writes nothing, and another request id starts anew.
pub async fn a_retried_start_returns_the_run_its_request_id_started(store: Arc<dyn Store>) {
    let first = store
        .start_run(with_request_id("wf-1", "run-1", "req-1", T0))
        .await
        .unwrap();
    assert_eq!((first.run_id.as_str(), first.started), ("run-1", true));

    // While it runs: the retry is not `AlreadyStarted`, and makes no run of its own.
    let again = store
        .start_run(with_request_id("wf-1", "run-2", "req-1", T0 + 1))
        .await
        .unwrap();
    assert_eq!((again.run_id.as_str(), again.started), ("run-1", false));
    assert_eq!(store.get_run("wf-1", Some("run-2")).await.unwrap(), None);
    // Through the start-with-first-task path too.
    let mut with_task = with_request_id("wf-1", "run-2", "req-1", T0 + 1);
    with_task.policy = IdConflictPolicy::TerminateExisting;
    let task_run = store.get_run("wf-1", None).await.unwrap().unwrap();
    let task = crate::store::WorkflowTask {
        run: task_run,
        messages: Vec::new(),
    };
    let StartWithTask {
        start: out,
        first_task: created,
    } = store
        .start_run_with_task(with_task, commit_for(&task, "starter", T0 + 1))
        .await
        .unwrap();
    assert_eq!(
        (out.run_id.as_str(), out.started, created),
        ("run-1", false, None)
    );
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(
        (run.run_id.as_str(), run.status),
        ("run-1", RunStatus::Running)
    );

    // After it completed: even a policy that refuses duplicates returns it.
    close(&*store, T0 + 2, RunClose::Completed(payload("done"))).await;
    let mut late = with_request_id("wf-1", "run-3", "req-1", T0 + 3);
    late.reuse = IdReusePolicy::RejectDuplicate;
    let late = store.start_run(late).await.unwrap();
    assert_eq!((late.run_id.as_str(), late.started), ("run-1", false));
    assert_eq!(runs(&*store).await, 1);

    // Another request id is another start.
    let other = store
        .start_run(with_request_id("wf-1", "run-4", "req-2", T0 + 4))
        .await
        .unwrap();
    assert_eq!((other.run_id.as_str(), other.started), ("run-4", true));
    // The same request id under another workflow id is another start too.
    let elsewhere = store
        .start_run(with_request_id("wf-2", "run-5", "req-1", T0 + 4))
        .await
        .unwrap();
    assert_eq!(
        (elsewhere.run_id.as_str(), elsewhere.started),
        ("run-5", true)
    );
    assert_eq!(runs(&*store).await, 3);
}

/// A retried signal-with-start delivers its signal once: the first attempt did.
pub async fn a_retried_start_delivers_its_signals_once(store: Arc<dyn Store>) {
    let mut req = with_request_id("wf-1", "run-1", "req-1", T0);
    req.policy = IdConflictPolicy::UseExisting;
    req.messages = vec![signal("note", None)];
    let first = store.start_run(req.clone()).await.unwrap();
    assert_eq!(
        first.messages,
        vec![DeliverOutcome::Enqueued {
            run_id: "run-1".into()
        }]
    );
    req.run.run_id = "run-2".into();
    let again = store.start_run(req).await.unwrap();
    assert_eq!((again.run_id.as_str(), again.started), ("run-1", false));
    assert_eq!(
        again.messages,
        vec![DeliverOutcome::DuplicateSignal {
            run_id: "run-1".into()
        }]
    );
    let task = lease_one(&*store, "w", T0 + 1).await;
    assert_eq!(
        task.messages.len(),
        1,
        "the retry's signal is not delivered again"
    );
}

/// A use-existing start records its request id for the run it kept: a retry returns that
/// run even after it closed, where a start without the id would make a new one.
pub async fn a_use_existing_start_remembers_the_run_it_kept(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let mut keep = with_request_id("wf-1", "run-2", "req-1", T0 + 1);
    keep.policy = IdConflictPolicy::UseExisting;
    let kept = store.start_run(keep.clone()).await.unwrap();
    assert_eq!((kept.run_id.as_str(), kept.started), ("run-1", false));
    close(&*store, T0 + 2, RunClose::Failed("boom".into())).await;
    keep.run.run_id = "run-3".into();
    let again = store.start_run(keep).await.unwrap();
    assert_eq!((again.run_id.as_str(), again.started), ("run-1", false));
    assert_eq!(runs(&*store).await, 1);
}

/// The id-reuse policies after a closed run: `AllowDuplicate` starts after any close,
/// `AllowDuplicateFailedOnly` only after a failed, terminated or cancelled run,
/// `RejectDuplicate` never; a refused start writes nothing.
pub async fn id_reuse_policies_decide_after_a_closed_run(store: Arc<dyn Store>) {
    let attempt = |workflow_id: &str, run_id: &str, policy: IdReusePolicy, now_ms: i64| {
        let mut req = start_request(workflow_id, run_id, now_ms);
        req.reuse = policy;
        req
    };
    // wf-ok completed; wf-bad failed; wf-term terminated.
    start(&*store, "wf-ok", "ok-1", T0).await;
    close(&*store, T0 + 1, RunClose::Completed(payload("done"))).await;
    start(&*store, "wf-bad", "bad-1", T0 + 2).await;
    close(&*store, T0 + 3, RunClose::Failed("boom".into())).await;
    start(&*store, "wf-term", "term-1", T0 + 4).await;
    store.terminate("wf-term", "stop", T0 + 5).await.unwrap();

    let refused = |workflow_id: &str, run_id: &str, status, policy: IdReusePolicy| {
        StoreError::DuplicateRejected {
            workflow_id: workflow_id.into(),
            run_id: run_id.into(),
            status,
            policy: policy.as_str(),
        }
    };
    use IdReusePolicy::*;
    for policy in [AllowDuplicateFailedOnly, RejectDuplicate] {
        let err = store
            .start_run(attempt("wf-ok", "ok-2", policy, T0 + 10))
            .await
            .unwrap_err();
        assert_eq!(err, refused("wf-ok", "ok-1", RunStatus::Completed, policy));
    }
    let err = store
        .start_run(attempt("wf-bad", "bad-2", RejectDuplicate, T0 + 10))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        refused("wf-bad", "bad-1", RunStatus::Failed, RejectDuplicate)
    );
    assert_eq!(runs(&*store).await, 3, "a refused start writes nothing");

    for (workflow_id, run_id) in [("wf-bad", "bad-2"), ("wf-term", "term-2")] {
        let out = store
            .start_run(attempt(
                workflow_id,
                run_id,
                AllowDuplicateFailedOnly,
                T0 + 11,
            ))
            .await
            .unwrap();
        assert_eq!((out.run_id.as_str(), out.started), (run_id, true));
    }
    let out = store
        .start_run(attempt("wf-ok", "ok-2", AllowDuplicate, T0 + 12))
        .await
        .unwrap();
    assert_eq!((out.run_id.as_str(), out.started), ("ok-2", true));
    // A running run is the id-conflict policy's business, whatever the reuse policy.
    let err = store
        .start_run(attempt("wf-ok", "ok-3", AllowDuplicate, T0 + 13))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyStarted { .. }), "{err}");
}

/// Retention's purge forgets a chain's request ids with its last run: the same request id
/// then starts a new run.
pub async fn purge_forgets_the_request_ids_of_a_purged_chain(store: Arc<dyn Store>) {
    store
        .start_run(with_request_id("wf-1", "run-1", "req-1", T0))
        .await
        .unwrap();
    close(&*store, T0 + 1, RunClose::Completed(payload("done"))).await;
    let kept = store
        .start_run(with_request_id("wf-1", "run-2", "req-1", T0 + 2))
        .await
        .unwrap();
    assert_eq!((kept.run_id.as_str(), kept.started), ("run-1", false));

    assert_eq!(
        store.admin().purge_closed_runs(T0 + 5, 10).await.unwrap(),
        ["run-1"]
    );
    let fresh = store
        .start_run(with_request_id("wf-1", "run-2", "req-1", T0 + 6))
        .await
        .unwrap();
    assert_eq!((fresh.run_id.as_str(), fresh.started), ("run-2", true));
}
