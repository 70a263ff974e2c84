//! Run limits: a run's timeout fires once, closes it as timed out and retries a run timeout
//! after its backoff; continue-as-new keeps the chain's execution deadline; a failed commit is
//! retried under the policy, its non-retryable types excepted.

use super::fixtures::*;
use crate::data::run_limits::{RunLimits, RunTimeout};
use crate::store::{
    EventKind, NewRun, RetryPolicy, RunClose, RunRecord, RunStart, RunStatus, Store,
};
use std::sync::Arc;
use std::time::Duration;

/// A start of run `run_id` of `workflow_id` at `now_ms` with these limits.
fn limited_start(
    workflow_id: &str,
    run_id: &str,
    now_ms: i64,
    limits: Option<RunLimits>,
) -> RunStart {
    let mut req = start_request(workflow_id, run_id, now_ms);
    req.run.limits = limits;
    req
}

fn retry(maximum_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        initial_interval: Duration::from_secs(1),
        maximum_attempts,
        ..RetryPolicy::default()
    }
}

/// The limits recorded in a run's first event.
async fn limits_of(store: &dyn Store, run_id: &str) -> Option<RunLimits> {
    match &store.read_history(run_id, 1).await.unwrap()[0].kind {
        EventKind::WorkflowStarted { limits, .. } => limits.clone(),
        other => panic!("run {run_id} starts with {other:?}"),
    }
}

async fn latest(store: &dyn Store, workflow_id: &str) -> RunRecord {
    store.get_run(workflow_id, None).await.unwrap().unwrap()
}

/// A run's timeout fires once, at its deadline: the run closes as timed out with
/// `WorkflowTimedOut` last in its history, and its timer is gone.
pub async fn a_run_times_out_once_at_its_deadline(store: Arc<dyn Store>) {
    let limits = RunLimits::for_start(None, Some(Duration::from_secs(60)), None, T0);
    store
        .start_run(limited_start("wf-1", "run-1", T0, limits))
        .await
        .unwrap();
    run_task(&*store, T0, |_, _| {}).await;
    assert_eq!(store.next_wakeup(T0).await.unwrap(), Some(T0 + 60_000));
    store.fire_due_timers(T0 + 59_999, 10).await.unwrap();
    assert_eq!(latest(&*store, "wf-1").await.status, RunStatus::Running);

    // Two firers at once (engines on one store): one closes the run.
    let (a, b) = tokio::join!(
        store.fire_due_timers(T0 + 60_000, 10),
        store.fire_due_timers(T0 + 60_000, 10)
    );
    a.unwrap();
    b.unwrap();
    store.fire_due_timers(T0 + 120_000, 10).await.unwrap();
    let run = latest(&*store, "wf-1").await;
    assert_eq!(
        (run.run_id.as_str(), run.status, run.closed_ms),
        ("run-1", RunStatus::TimedOut, Some(T0 + 60_000))
    );
    assert!(
        run.failure
            .as_deref()
            .unwrap_or_default()
            .contains("run timeout"),
        "{run:?}"
    );
    let history = store.read_history("run-1", 1).await.unwrap();
    let timed_out: Vec<_> = history
        .iter()
        .filter(|e| matches!(e.kind, EventKind::WorkflowTimedOut { .. }))
        .collect();
    assert_eq!(timed_out.len(), 1, "{history:?}");
    assert_eq!(
        history.last().unwrap().kind,
        EventKind::WorkflowTimedOut {
            timeout: RunTimeout::Run,
            new_run_id: None
        }
    );
    assert_eq!(store.next_wakeup(T0 + 60_000).await.unwrap(), None);
}

/// A run timeout with a retry policy starts the next attempt (same input, the attempt
/// counted, continuing the timed-out run), ready only after the backoff.
pub async fn a_run_timeout_retry_starts_after_its_backoff(store: Arc<dyn Store>) {
    let limits = RunLimits::for_start(None, Some(Duration::from_secs(60)), Some(retry(2)), T0);
    store
        .start_run(limited_start("wf-1", "run-1", T0, limits))
        .await
        .unwrap();
    run_task(&*store, T0, |_, _| {}).await;
    store.fire_due_timers(T0 + 60_000, 10).await.unwrap();
    let history = store.read_history("run-1", 1).await.unwrap();
    let Some(EventKind::WorkflowTimedOut {
        timeout: RunTimeout::Run,
        new_run_id: Some(new_run_id),
    }) = history.last().map(|e| e.kind.clone())
    else {
        panic!("{history:?}");
    };
    let next = latest(&*store, "wf-1").await;
    assert_eq!(
        (next.run_id.as_str(), next.status, next.chain_id.as_str()),
        (new_run_id.as_str(), RunStatus::Running, "run-1")
    );
    let first = &store.read_history(&new_run_id, 1).await.unwrap()[0].kind;
    let EventKind::WorkflowStarted {
        input,
        continued_from,
        limits,
        ..
    } = first
    else {
        panic!("{first:?}");
    };
    assert_eq!(input, &payload(("input", "run-1")));
    assert_eq!(continued_from.as_deref(), Some("run-1"));
    assert_eq!(limits.as_ref().map(|l| l.attempt), Some(2));

    let early = store
        .poll_workflow_tasks_any("w", T0 + 60_999, 10_000, 10)
        .await
        .unwrap();
    assert!(early.is_empty(), "ready before its backoff: {early:?}");
    let task = lease_one(&*store, "w", T0 + 61_000).await;
    assert_eq!(task.run.run_id, new_run_id);
    // Its own run timeout counts from its creation; attempt 2 is the last.
    store
        .commit_workflow_task(commit_for(&task, "w", T0 + 61_000))
        .await
        .unwrap();
    store.fire_due_timers(T0 + 120_000, 10).await.unwrap();
    let last = latest(&*store, "wf-1").await;
    assert_eq!(
        (last.run_id, last.status),
        (new_run_id, RunStatus::TimedOut)
    );
}

/// Continue-as-new keeps the chain's limits (whatever the commit's new run says) with the
/// attempt counted afresh, and the execution deadline of the chain's first start.
pub async fn continue_as_new_keeps_the_chains_execution_deadline(store: Arc<dyn Store>) {
    let limits = RunLimits::for_start(Some(Duration::from_secs(100)), None, Some(retry(0)), T0);
    store
        .start_run(limited_start("wf-1", "run-1", T0, limits.clone()))
        .await
        .unwrap();
    run_task(&*store, T0 + 10_000, |_, c| {
        c.events.push(event(
            T0 + 10_000,
            EventKind::ContinuedAsNew {
                new_run_id: "run-2".into(),
                input: payload("round 2"),
            },
        ));
        c.close = Some(RunClose::ContinuedAsNew(NewRun {
            input: payload("round 2"),
            ..new_run("wf-1", "run-2")
        }));
    })
    .await;
    assert_eq!(limits_of(&*store, "run-2").await, limits);
    run_task(&*store, T0 + 10_000, |_, _| {}).await;
    store.fire_due_timers(T0 + 99_999, 10).await.unwrap();
    assert_eq!(latest(&*store, "wf-1").await.status, RunStatus::Running);
    store.fire_due_timers(T0 + 100_000, 10).await.unwrap();
    let run = latest(&*store, "wf-1").await;
    assert_eq!(
        (run.run_id.as_str(), run.status),
        ("run-2", RunStatus::TimedOut)
    );
    let history = store.read_history("run-2", 1).await.unwrap();
    assert_eq!(
        history.last().unwrap().kind,
        EventKind::WorkflowTimedOut {
            timeout: RunTimeout::Execution,
            new_run_id: None
        },
        "an execution timeout is never retried"
    );
}

/// A commit that fails a run with a retry policy starts the next attempt in the same
/// transaction, unless the failure's type is non-retryable or no attempt is left.
pub async fn a_failed_run_is_retried_under_its_policy(store: Arc<dyn Store>) {
    let fail = |error_type: &'static str| {
        move |_: &crate::store::WorkflowTask, c: &mut crate::store::TaskCommit| {
            c.events.push(event(
                T0,
                EventKind::WorkflowFailed {
                    message: "boom".into(),
                },
            ));
            c.close = Some(RunClose::Failed("boom".into()));
            c.failure_type = Some(error_type.into());
        }
    };
    let mut policy = retry(2);
    policy.non_retryable_error_types = vec!["payload".into()];
    let limits = RunLimits::for_start(None, None, Some(policy), T0);
    store
        .start_run(limited_start("wf-1", "run-1", T0, limits.clone()))
        .await
        .unwrap();
    let closed = run_task(&*store, T0, fail("failed")).await;
    assert_eq!(closed.status, RunStatus::Failed);
    let next = latest(&*store, "wf-1").await;
    assert_ne!(next.run_id, "run-1");
    assert_eq!(next.status, RunStatus::Running);
    assert_eq!(
        limits_of(&*store, &next.run_id).await.map(|l| l.attempt),
        Some(2)
    );
    // The last attempt fails for good.
    run_task(&*store, T0 + 1_000, fail("failed")).await;
    let last = latest(&*store, "wf-1").await;
    assert_eq!((last.run_id, last.status), (next.run_id, RunStatus::Failed));

    store
        .start_run(limited_start("wf-2", "run-a", T0, limits))
        .await
        .unwrap();
    run_task(&*store, T0, fail("payload")).await;
    let run = latest(&*store, "wf-2").await;
    assert_eq!(
        (run.run_id.as_str(), run.status),
        ("run-a", RunStatus::Failed)
    );
}
