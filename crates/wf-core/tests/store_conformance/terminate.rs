//! Termination from outside: the run closes and drops all its pending work.

use crate::harness::*;
use std::sync::Arc;
use wf_core::history::EventKind;
use wf_core::store::{RunStatus, Store, StoreError, UpdateState};

conformance!(
    terminate_closes_the_latest_run_and_drops_its_pending_work,
    terminate_refuses_finished_and_unknown_workflows,
);

async fn terminate_closes_the_latest_run_and_drops_its_pending_work(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver("wf-1", None, update("u-1", "rename"), T0)
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0).await;
    let mut c = commit_for(&task, "w", T0);
    c.consumed_through = None; // leave the update in the inbox
    c.new_activities = vec![activity(1, Default::default())];
    c.new_timers = vec![(2, T0 + 100)];
    store.commit_workflow_task(c).await.unwrap();
    store
        .deliver("wf-1", None, signal("pause", None), T0 + 1)
        .await
        .unwrap();
    let leased = lease_one(&*store, "w", T0 + 2).await; // a worker holds the task

    let run = store
        .terminate("wf-1", "operator said so", T0 + 5)
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::Terminated);
    assert_eq!(run.closed_ms, Some(T0 + 5));
    assert_eq!(run.failure.as_deref(), Some("operator said so"));
    assert_eq!(run.next_event_id, 4);
    assert_eq!(store.get_run("wf-1", None).await.unwrap(), Some(run));
    let last = store.read_history("run-1", 3).await.unwrap();
    assert_eq!(last.len(), 1);
    assert_eq!((last[0].event_id, last[0].time_ms), (3, T0 + 5));
    assert_eq!(
        last[0].kind,
        EventKind::WorkflowTerminated {
            reason: "operator said so".into()
        }
    );

    assert!(store.pending_activities("run-1").await.unwrap().is_empty());
    assert!(store.pending_updates("run-1").await.unwrap().is_empty());
    let u = store.get_update("wf-1", "u-1").await.unwrap().unwrap();
    assert_eq!(u.state, UpdateState::Abandoned);
    assert!(store
        .fire_due_timers(T0 + 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .poll_workflow_tasks("w2", T0 + 100_000, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .poll_activity_tasks("a", T0 + 100_000, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.next_wakeup(T0).await.unwrap(), None);

    let err = store
        .commit_workflow_task(commit_for(&leased, "w", T0 + 6))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
}

async fn terminate_refuses_finished_and_unknown_workflows(store: Arc<dyn Store>) {
    let err = store.terminate("nope", "x", T0).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::NotFound {
            workflow_id: "nope".into(),
            run_id: None
        }
    );
    start(&*store, "wf-1", "run-1", T0).await;
    store.terminate("wf-1", "first", T0 + 1).await.unwrap();
    let err = store.terminate("wf-1", "second", T0 + 2).await.unwrap_err();
    assert_eq!(
        err,
        StoreError::RunFinished {
            workflow_id: "wf-1".into(),
            run_id: "run-1".into(),
            status: RunStatus::Terminated,
        }
    );
    assert_eq!(
        store.read_history("run-1", 1).await.unwrap().len(),
        2,
        "one terminate event"
    );
}
