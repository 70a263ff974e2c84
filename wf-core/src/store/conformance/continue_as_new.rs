//! Continue-as-new: the new run joins the chain, so dedupe ids carry over.

use super::fixtures::*;
use crate::store::{
    DeliverOutcome, Delivery, ListFilter, NewRun, RunClose, RunStatus, Store, StoreError,
    UpdateState,
};
use crate::store::{EventKind, UpdateOutcome};
use std::sync::Arc;

fn next_run(run_id: &str) -> NewRun {
    NewRun {
        workflow_id: "wf-1".into(),
        run_id: run_id.into(),
        workflow_type: "order".into(),
        input: payload("round 2"),
        random_seed: 99,
        continued_from: None,
        parent: None,
        task_queue: "default".into(),
        memo: Default::default(),
        limits: None,
    }
}

/// Continue as new starts the next run in the same chain.
pub async fn continue_as_new_starts_the_next_run_in_the_same_chain(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let old = run_task(&*store, T0 + 1, |_, c| {
        c.events.push(event(
            T0 + 1,
            EventKind::ContinuedAsNew {
                new_run_id: "run-2".into(),
                input: payload("round 2"),
            },
        ));
        c.close = Some(RunClose::ContinuedAsNew(next_run("run-2")));
    })
    .await;
    assert_eq!(
        (old.run_id.as_str(), old.status),
        ("run-1", RunStatus::ContinuedAsNew)
    );
    assert_eq!(old.closed_ms, Some(T0 + 1));

    let new = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(new.run_id, "run-2");
    assert_eq!(
        new.chain_id, "run-1",
        "the chain is named for its first run"
    );
    assert_eq!(
        (new.status, new.next_event_id, new.created_ms),
        (RunStatus::Running, 2, T0 + 1)
    );
    let history = store.read_history("run-2", 1).await.unwrap();
    assert_eq!(
        history.iter().map(|e| e.kind.clone()).collect::<Vec<_>>(),
        [EventKind::WorkflowStarted {
            workflow_type: "order".into(),
            input: payload("round 2"),
            random_seed: 99,
            continued_from: Some("run-1".into()),
            parent: None,
            limits: None,
            repaired_from: None,
        }]
    );
    let task = lease_one(&*store, "w", T0 + 1).await;
    assert_eq!(task.run, new);

    let latest = ListFilter {
        latest_only: true,
        ..Default::default()
    };
    let listed = store.admin().list_runs(latest).await.unwrap();
    assert_eq!(
        listed.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(),
        ["run-2"]
    );
    let all = store
        .admin()
        .list_runs(ListFilter::default())
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(),
        ["run-2", "run-1"]
    );
}

/// Dedupe ids carry over continue as new.
pub async fn dedupe_ids_carry_over_continue_as_new(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0))
        .await
        .unwrap();
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
        .await
        .unwrap();
    let done = UpdateState::Completed(UpdateOutcome::Failed("bad name".into()));
    run_task(&*store, T0 + 1, |_, c| {
        c.updates = vec![update_change("u-1", "rename", done.clone())];
        c.close = Some(RunClose::ContinuedAsNew(next_run("run-2")));
    })
    .await;

    let dup = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0 + 2))
        .await
        .unwrap();
    assert_eq!(
        dup,
        DeliverOutcome::DuplicateSignal {
            run_id: "run-2".into()
        }
    );
    match store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0 + 2))
        .await
        .unwrap()
    {
        DeliverOutcome::DuplicateUpdate(rec) => {
            assert_eq!((rec.run_id.as_str(), &rec.state), ("run-1", &done));
        }
        other => panic!("expected a duplicate update, got {other:?}"),
    }
    let rec = store.get_update("wf-1", "u-1").await.unwrap().unwrap();
    assert_eq!(rec.state, done, "get_update looks in the whole chain");

    let fresh = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-2")), T0 + 2))
        .await
        .unwrap();
    assert_eq!(
        fresh,
        DeliverOutcome::Enqueued {
            run_id: "run-2".into()
        }
    );

    // A second continue-as-new keeps the same chain.
    let task = lease_one(&*store, "w", T0 + 3).await;
    let mut c = commit_for(&task, "w", T0 + 3);
    c.close = Some(RunClose::ContinuedAsNew(next_run("run-3")));
    store.commit_workflow_task(c).await.unwrap();
    let third = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(
        (third.run_id.as_str(), third.chain_id.as_str()),
        ("run-3", "run-1")
    );
    let dup = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-2")), T0 + 4))
        .await
        .unwrap();
    assert_eq!(
        dup,
        DeliverOutcome::DuplicateSignal {
            run_id: "run-3".into()
        }
    );
}

/// Continue as new abandons the unfinished updates of the old run.
pub async fn continue_as_new_abandons_the_unfinished_updates_of_the_old_run(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
        .await
        .unwrap();
    run_task(&*store, T0 + 1, |_, c| {
        c.updates = vec![update_change("u-1", "rename", UpdateState::Accepted)];
        c.close = Some(RunClose::ContinuedAsNew(next_run("run-2")));
    })
    .await;
    let rec = store.get_update("wf-1", "u-1").await.unwrap().unwrap();
    assert_eq!(rec.state, UpdateState::Abandoned);
    assert!(store.pending_updates("run-1").await.unwrap().is_empty());
    assert!(store.pending_updates("run-2").await.unwrap().is_empty());
}

/// Continue as new must keep the workflow id.
pub async fn continue_as_new_must_keep_the_workflow_id(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let task = lease_one(&*store, "w", T0).await;
    let mut c = commit_for(&task, "w", T0);
    c.close = Some(RunClose::ContinuedAsNew(NewRun {
        workflow_id: "other".into(),
        ..next_run("run-2")
    }));
    let err = store.commit_workflow_task(c).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(
        (run.run_id.as_str(), run.status, run.next_event_id),
        ("run-1", RunStatus::Running, 2)
    );
    assert_eq!(store.get_run("other", None).await.unwrap(), None);
}
