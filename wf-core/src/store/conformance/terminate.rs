//! Termination from outside: the run closes and drops all its pending work.

use super::fixtures::*;
use crate::store::{
    ChildOutcome, Delivery, EventKind, LeaseRequest, ParentClosePolicy, ParentInfo,
};
use crate::store::{Message, RunStatus, Store, StoreError, UpdateState};
use crate::{Payload, RunSummary};
use std::sync::Arc;

/// Starts `workflow_id` as a child of run `parent_run_id` (its command `seq`), and runs its
/// first task, which leaves `children` open with their policies in the run's summary.
async fn start_child(
    store: &dyn Store,
    workflow_id: &str,
    parent: Option<(&str, &str, u32)>,
    children: Vec<(String, ParentClosePolicy)>,
) {
    let mut req = start_request(workflow_id, &format!("run-{workflow_id}"), T0);
    req.run.parent = parent.map(|(workflow_id, run_id, seq)| ParentInfo {
        workflow_id: workflow_id.into(),
        run_id: run_id.into(),
        seq,
    });
    store.start_run(req).await.unwrap();
    let summary = RunSummary {
        open_children: children,
        ..Default::default()
    };
    run_task(store, T0, |_, c| {
        c.summary = Payload::encode(&summary).unwrap()
    })
    .await;
}

/// Terminating a child tells its parent and applies its childrens policies.
pub async fn terminating_a_child_tells_its_parent_and_applies_its_childrens_policies(
    store: Arc<dyn Store>,
) {
    use ParentClosePolicy::*;
    let open = |ids: &[(&str, ParentClosePolicy)]| {
        ids.iter()
            .map(|(id, p)| (id.to_string(), *p))
            .collect::<Vec<_>>()
    };
    // parent -> child -> {grandchild (Terminate) -> great (Terminate), polite (RequestCancel),
    // free (Abandon)}; "impostor" is named by the child but is nobody's child.
    start_child(&*store, "parent", None, open(&[("child", Terminate)])).await;
    let child_open = open(&[
        ("grandchild", Terminate),
        ("polite", RequestCancel),
        ("free", Abandon),
        ("impostor", Terminate),
    ]);
    start_child(
        &*store,
        "child",
        Some(("parent", "run-parent", 3)),
        child_open,
    )
    .await;
    let from_child = Some(("child", "run-child", 1));
    start_child(
        &*store,
        "grandchild",
        from_child,
        open(&[("great", Terminate)]),
    )
    .await;
    start_child(
        &*store,
        "great",
        Some(("grandchild", "run-grandchild", 1)),
        vec![],
    )
    .await;
    start_child(&*store, "polite", from_child, vec![]).await;
    start_child(&*store, "free", from_child, vec![]).await;
    start_child(&*store, "impostor", None, vec![]).await;

    store.terminate("child", "enough", T0 + 1).await.unwrap();

    let status = |id: &'static str| {
        let store = store.clone();
        async move { store.get_run(id, None).await.unwrap().unwrap().status }
    };
    assert_eq!(status("child").await, RunStatus::Terminated);
    assert_eq!(status("grandchild").await, RunStatus::Terminated);
    assert_eq!(status("great").await, RunStatus::Terminated);
    for id in ["parent", "polite", "free", "impostor"] {
        assert_eq!(status(id).await, RunStatus::Running, "{id}");
    }
    // The parent learns which child closed and how; the polite child is asked to cancel.
    let parent = lease_one_of(&*store, "run-parent", T0 + 2).await;
    assert_eq!(
        parent,
        vec![Message::ChildClosed {
            seq: 3,
            outcome: ChildOutcome::Terminated("enough".into()),
        }]
    );
    let polite = lease_one_of(&*store, "run-polite", T0 + 2).await;
    assert_eq!(
        polite,
        vec![Message::CancelRequested {
            reason: "its parent run run-child was terminated".into(),
        }]
    );
    let great = store.get_run("great", None).await.unwrap().unwrap();
    assert_eq!(
        great.failure.as_deref(),
        Some("its parent run run-grandchild was terminated")
    );
}

/// The inbox of run `run_id`, which must be ready, as a worker leasing it sees it.
async fn lease_one_of(store: &dyn Store, run_id: &str, now_ms: i64) -> Vec<Message> {
    let task = store
        .lease_run(LeaseRequest {
            run_id: String::from(run_id),
            worker_id: String::from("w-check"),
            now_ms,
            lease_ms: 1000,
            build_id: None,
        })
        .await
        .unwrap()
        .expect("the run is running and free");
    task.messages.into_iter().map(|m| m.message).collect()
}

/// Terminate closes the latest run and drops its pending work.
pub async fn terminate_closes_the_latest_run_and_drops_its_pending_work(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0).await;
    let mut c = commit_for(&task, "w", T0);
    c.consumed_through = None; // leave the update in the inbox
    c.new_activities = vec![activity(1, Default::default())];
    c.new_timers = vec![timer(2, T0 + 100)];
    store.commit_workflow_task(c).await.unwrap();
    store
        .deliver(Delivery::new("wf-1", signal("pause", None), T0 + 1))
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
        .poll_workflow_tasks_any("w2", T0 + 100_000, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .poll_activity_tasks_any("a", T0 + 100_000, 10)
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

/// Terminate refuses finished and unknown workflows.
pub async fn terminate_refuses_finished_and_unknown_workflows(store: Arc<dyn Store>) {
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
