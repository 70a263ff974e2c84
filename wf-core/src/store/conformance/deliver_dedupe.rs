//! Delivering messages: targets, readiness, and dedupe of signal ids and update ids.

use super::fixtures::*;
use crate::store::{
    DeliverOutcome, Message, RunClose, RunStatus, Store, StoreError, UpdateRecord, UpdateState,
};
use crate::store::{Delivery, LeaseRequest, OutgoingMessage, UpdateOutcome};
use std::sync::Arc;

/// Deliver to an unknown workflow or run is not found.
pub async fn deliver_to_an_unknown_workflow_or_run_is_not_found(store: Arc<dyn Store>) {
    let err = store
        .deliver(Delivery::new("nope", signal("s", None), T0))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::NotFound {
            workflow_id: "nope".into(),
            run_id: None
        }
    );

    start(&*store, "wf-1", "run-1", T0).await;
    start(&*store, "wf-2", "run-2", T0).await;
    let err = store
        .deliver(Delivery::new("wf-1", signal("s", None), T0).to_run("run-2"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::NotFound {
            workflow_id: "wf-1".into(),
            run_id: Some("run-2".into())
        },
        "a run id of another workflow id is not found"
    );
}

/// Deliver enqueues and makes an idle run ready.
pub async fn deliver_enqueues_and_makes_an_idle_run_ready(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    run_task(&*store, T0, |_, _| {}).await;
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 100, 1000, 10)
        .await
        .unwrap()
        .is_empty());

    let out = store
        .deliver(Delivery::new("wf-1", signal("pause", None), T0 + 200))
        .await
        .unwrap();
    assert_eq!(
        out,
        DeliverOutcome::Enqueued {
            run_id: "run-1".into()
        }
    );
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 199, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.next_wakeup(T0 + 100).await.unwrap(), Some(T0 + 200));
    let task = lease_one(&*store, "w", T0 + 200).await;
    assert_eq!(task.messages.len(), 1);
    assert_eq!(
        task.messages[0].message,
        Message::Signal {
            name: "pause".into(),
            args: payload(("pause",)),
            signal_id: None,
            sent_at: None,
        }
    );
}

/// A signal id is delivered once.
pub async fn a_signal_id_is_delivered_once(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let first = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0))
        .await
        .unwrap();
    assert_eq!(
        first,
        DeliverOutcome::Enqueued {
            run_id: "run-1".into()
        }
    );
    for _ in 0..3 {
        let again = store
            .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0))
            .await
            .unwrap();
        assert_eq!(
            again,
            DeliverOutcome::DuplicateSignal {
                run_id: "run-1".into()
            }
        );
    }
    // Signals without an id are never deduped.
    store
        .deliver(Delivery::new("wf-1", signal("pause", None), T0))
        .await
        .unwrap();
    store
        .deliver(Delivery::new("wf-1", signal("pause", None), T0))
        .await
        .unwrap();

    let task = lease_one(&*store, "w", T0).await;
    assert_eq!(task.messages.len(), 3);

    // The dedupe id outlives the inbox message.
    store
        .commit_workflow_task(commit_for(&task, "w", T0))
        .await
        .unwrap();
    let again = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0 + 1))
        .await
        .unwrap();
    assert_eq!(
        again,
        DeliverOutcome::DuplicateSignal {
            run_id: "run-1".into()
        }
    );
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 1, 1000, 10)
        .await
        .unwrap()
        .is_empty());
}

/// A duplicate update is answered with its current record.
pub async fn a_duplicate_update_is_answered_with_its_current_record(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
        .await
        .unwrap();
    let requested = UpdateRecord {
        update_id: "u-1".into(),
        run_id: "run-1".into(),
        name: "rename".into(),
        state: UpdateState::Requested,
    };
    assert_eq!(
        store.get_update("wf-1", "u-1").await.unwrap(),
        Some(requested.clone())
    );
    assert_eq!(
        store.pending_updates("run-1").await.unwrap(),
        vec![requested.clone()]
    );
    assert_eq!(
        store
            .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
            .await
            .unwrap(),
        DeliverOutcome::DuplicateUpdate(requested.clone())
    );

    let done = UpdateState::Completed(UpdateOutcome::Completed(payload("ok")));
    run_task(&*store, T0 + 1, |_, c| {
        c.updates = vec![update_change("u-1", "rename", done.clone())];
    })
    .await;
    let completed = UpdateRecord {
        state: done,
        ..requested
    };
    assert_eq!(
        store
            .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0 + 2))
            .await
            .unwrap(),
        DeliverOutcome::DuplicateUpdate(completed.clone())
    );
    assert_eq!(
        store.get_update("wf-1", "u-1").await.unwrap(),
        Some(completed)
    );
    assert!(store.pending_updates("run-1").await.unwrap().is_empty());
    assert!(
        store
            .poll_workflow_tasks_any("w", T0 + 2, 1000, 10)
            .await
            .unwrap()
            .is_empty(),
        "a duplicate writes nothing"
    );
    assert_eq!(store.get_update("wf-1", "unknown").await.unwrap(), None);
    assert_eq!(store.get_update("unknown", "u-1").await.unwrap(), None);
}

/// An update accepted and completed in one task (the usual case: a synchronous handler), next
/// to one only accepted: each is recorded in its last state.
pub async fn a_task_that_moves_an_update_through_several_states_records_the_last(
    store: Arc<dyn Store>,
) {
    start(&*store, "wf-1", "run-1", T0).await;
    let done = UpdateState::Completed(UpdateOutcome::Completed(payload(7)));
    run_task(&*store, T0 + 1, |_, c| {
        c.updates = vec![
            update_change("u-1", "add", UpdateState::Accepted),
            update_change("u-2", "add", UpdateState::Accepted),
            update_change("u-1", "add", done.clone()),
        ];
    })
    .await;
    let record = |id: &str, state: UpdateState| UpdateRecord {
        update_id: id.into(),
        run_id: "run-1".into(),
        name: "add".into(),
        state,
    };
    assert_eq!(
        store.get_update("wf-1", "u-1").await.unwrap(),
        Some(record("u-1", done))
    );
    assert_eq!(
        store.pending_updates("run-1").await.unwrap(),
        vec![record("u-2", UpdateState::Accepted)]
    );
}

/// A closed run refuses new messages but answers duplicate updates and signal ids.
pub async fn a_closed_run_refuses_new_messages_but_answers_duplicate_updates(
    store: Arc<dyn Store>,
) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
        .await
        .unwrap();
    store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0))
        .await
        .unwrap();
    let rejected = UpdateState::Rejected("no".into());
    run_task(&*store, T0 + 1, |_, c| {
        c.updates = vec![update_change("u-1", "rename", rejected.clone())];
        c.close = Some(RunClose::Completed(payload("result")));
    })
    .await;

    let finished = StoreError::RunFinished {
        workflow_id: "wf-1".into(),
        run_id: "run-1".into(),
        status: RunStatus::Completed,
    };
    for message in [
        signal("pause", None),
        signal("pause", Some("s-2")),
        update("u-2", "rename"),
        Message::CancelRequested {
            reason: "late".into(),
        },
    ] {
        let err = store
            .deliver(Delivery::new("wf-1", message.clone(), T0 + 2))
            .await
            .unwrap_err();
        assert_eq!(err, finished, "delivering {message:?}");
    }
    // The retry of a signal that was applied before the run closed learns that it was.
    let retried = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0 + 2))
        .await
        .unwrap();
    assert_eq!(
        retried,
        DeliverOutcome::DuplicateSignal {
            run_id: "run-1".into()
        }
    );
    let dup = store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0 + 2))
        .await
        .unwrap();
    match dup {
        DeliverOutcome::DuplicateUpdate(rec) => assert_eq!(rec.state, rejected),
        other => panic!("expected a duplicate update, got {other:?}"),
    }
}

/// Deliver to an explicit run id targets that run.
pub async fn deliver_to_an_explicit_run_id_targets_that_run(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store.terminate("wf-1", "replaced", T0 + 1).await.unwrap();
    start(&*store, "wf-1", "run-2", T0 + 2).await;

    let err = store
        .deliver(Delivery::new("wf-1", signal("s", None), T0 + 3).to_run("run-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::RunFinished { ref run_id, .. } if run_id == "run-1"),
        "{err}"
    );
    let out = store
        .deliver(Delivery::new("wf-1", signal("s", None), T0 + 3).to_run("run-2"))
        .await
        .unwrap();
    assert_eq!(
        out,
        DeliverOutcome::Enqueued {
            run_id: "run-2".into()
        }
    );
}

/// A workflow task's outgoing message that names a chain (a signal through a child handle)
/// reaches the workflow id's latest run only if that run belongs to the chain; one without a
/// chain reaches the latest run whatever its chain.
pub async fn a_committed_message_naming_a_chain_reaches_only_that_chain(store: Arc<dyn Store>) {
    start(&*store, "target", "target-run", T0).await;
    run_task(&*store, T0, |_, _| {}).await;
    start(&*store, "sender", "sender-run", T0 + 1).await;
    run_task(&*store, T0 + 1, |_, commit| {
        let to = |chain_id: Option<&str>, message| OutgoingMessage {
            workflow_id: "target".into(),
            chain_id: chain_id.map(str::to_owned),
            message,
        };
        commit.deliver = vec![
            to(Some("another-chain"), signal("lost", None)),
            to(Some("target-run"), signal("kept", None)),
            to(None, signal("any", None)),
        ];
    })
    .await;
    let task = lease_one(&*store, "w", T0 + 2).await;
    assert_eq!(task.run.run_id, "target-run");
    let names: Vec<&str> = task
        .messages
        .iter()
        .map(|m| match &m.message {
            Message::Signal { name, .. } => name.as_str(),
            other => panic!("unexpected message {other:?}"),
        })
        .collect();
    assert_eq!(names, ["kept", "any"]);
}

/// Pending messages are a run's inbox, in arrival order, until a task applies them; read with
/// the history on one snapshot.
pub async fn pending_messages_are_the_inbox_until_a_task_applies_them(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    start(&*store, "wf-2", "run-2", T0).await;
    let pending = store.pending_messages("run-1", Some(1)).await.unwrap();
    assert!(pending.inbox.is_empty(), "{pending:?}");
    assert_eq!(
        pending.history,
        store.read_history("run-1", 1).await.unwrap()
    );
    assert_eq!(pending.history.len(), 1, "a new run has its start event");
    assert_eq!(pending.next_event_id, Some(2));

    for message in [
        signal("a", Some("s-1")),
        signal("b", None),
        signal("a", Some("s-1")),
    ] {
        store
            .deliver(Delivery::new("wf-1", message, T0 + 1))
            .await
            .unwrap();
    }
    store
        .deliver(Delivery::new("wf-2", signal("other", None), T0 + 1))
        .await
        .unwrap();
    let pending = store.pending_messages("run-1", None).await.unwrap();
    let inbox: Vec<Message> = pending.inbox.iter().map(|m| m.message.clone()).collect();
    assert_eq!(
        inbox,
        vec![signal("a", Some("s-1")), signal("b", None)],
        "the inbox in arrival order, a duplicate signal id left out, another run's message too"
    );
    assert!(pending.inbox[0].seq < pending.inbox[1].seq);
    assert!(pending.history.is_empty(), "no history asked for");

    // A task applies the first message only: it leaves the inbox as it enters the history.
    let task = store
        .lease_run(LeaseRequest {
            run_id: String::from("run-1"),
            worker_id: String::from("w"),
            now_ms: T0 + 2,
            lease_ms: 10_000,
            build_id: None,
        })
        .await
        .unwrap()
        .expect("run-1 is free");
    let first = task
        .messages
        .iter()
        .find(|m| m.message == signal("a", Some("s-1")))
        .expect("the signal is in the task")
        .seq;
    let mut commit = commit_for(&task, "w", T0 + 2);
    commit.consumed_through = Some(first);
    store.commit_workflow_task(commit).await.unwrap();
    let pending = store.pending_messages("run-1", Some(2)).await.unwrap();
    let inbox: Vec<Message> = pending.inbox.iter().map(|m| m.message.clone()).collect();
    assert_eq!(inbox, vec![signal("b", None)]);
    assert_eq!(
        pending.history.len(),
        1,
        "events from id 2: the task's one event"
    );
    assert_eq!(pending.history[0].event_id, 2);
    assert_eq!(pending.next_event_id, Some(3));

    let unknown = store.pending_messages("nope", Some(1)).await.unwrap();
    assert!(unknown.inbox.is_empty() && unknown.history.is_empty());
    assert_eq!(unknown.next_event_id, None);
}
