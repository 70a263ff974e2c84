//! Starting runs: the first event, the id-conflict policies, start messages, new chains.

use super::fixtures::*;
use crate::store::EventKind;
use crate::store::{
    DeliverOutcome, Delivery, IdConflictPolicy, ListFilter, Message, RunStatus, StartWithTask,
    Store, StoreError, UpdateState,
};
use std::sync::Arc;

/// The first task of run `run_id` as its starter would commit it (lease-free, at event 2).
fn first_task(workflow_id: &str, run_id: &str, now_ms: i64) -> crate::store::TaskCommit {
    let record = crate::store::RunRecord {
        workflow_id: workflow_id.into(),
        run_id: run_id.into(),
        chain_id: run_id.into(),
        workflow_type: "order".into(),
        task_queue: "default".into(),
        status: RunStatus::Running,
        next_event_id: 2,
        history_bytes: 0,
        created_ms: now_ms,
        closed_ms: None,
        result: None,
        failure: None,
        task_failure: None,
        summary: Default::default(),
        build_id: None,
        versioning: None,
        start_at_ms: None,
    };
    let task = crate::store::WorkflowTask {
        run: record,
        messages: vec![],
    };
    let mut c = commit_for(&task, "starter", now_ms);
    c.without_lease = true;
    c.new_timers = vec![timer(1, now_ms + 60_000)];
    c.events.insert(
        0,
        event(
            now_ms,
            EventKind::TimerStarted {
                seq: 1,
                fire_at_ms: now_ms + 60_000,
            },
        ),
    );
    c
}

/// Start with its first task records both.
pub async fn start_with_its_first_task_records_both(store: Arc<dyn Store>) {
    let StartWithTask {
        start: out,
        first_task: first,
    } = store
        .start_run_with_task(
            start_request("wf-1", "run-1", T0),
            first_task("wf-1", "run-1", T0),
        )
        .await
        .unwrap();
    assert!(out.started);
    let record = first.expect("a run was created").unwrap();
    assert_eq!(record.next_event_id, 4);
    let history = store.read_history("run-1", 1).await.unwrap();
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.name()).collect();
    assert_eq!(
        kinds,
        ["WorkflowStarted", "TimerStarted", "WorkflowTaskCompleted"]
    );
    // The first task is done: nothing is ready until the timer fires.
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 1, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.next_wakeup(T0 + 1).await.unwrap(), Some(T0 + 60_000));
}

/// Start with a first task that records nothing leaves the run idle.
pub async fn start_with_a_first_task_that_records_nothing_leaves_the_run_idle(
    store: Arc<dyn Store>,
) {
    let mut quiet = first_task("wf-1", "run-1", T0);
    quiet.events.clear();
    quiet.new_timers.clear();
    quiet.summary = payload("waiting for a signal");
    assert!(quiet.records_nothing());
    let StartWithTask {
        start: out,
        first_task: first,
    } = store
        .start_run_with_task(start_request("wf-1", "run-1", T0), quiet)
        .await
        .unwrap();
    assert!(out.started);
    let record = first.expect("a run was created").unwrap();
    assert_eq!(record, store.get_run("wf-1", None).await.unwrap().unwrap());
    assert_eq!(
        (record.next_event_id, record.summary),
        (2, payload("waiting for a signal"))
    );
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 1);
    // Done with its first task: not ready, not leased; a message makes it ready again.
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 1, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    store
        .deliver(Delivery::new("wf-1", signal("go", None), T0 + 2))
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0 + 2).await;
    assert_eq!(task.messages.len(), 1);
}

/// Start with a failing first task keeps the start alone.
pub async fn start_with_a_failing_first_task_keeps_the_start_alone(store: Arc<dyn Store>) {
    let mut bad = first_task("wf-1", "run-1", T0);
    bad.expected_next_event_id = 7;
    let StartWithTask {
        start: out,
        first_task: first,
    } = store
        .start_run_with_task(start_request("wf-1", "run-1", T0), bad)
        .await
        .unwrap();
    assert!(out.started);
    let err = first.expect("a run was created").unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    // Only the start was written; its first task is ready for any worker.
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 1);
    let task = lease_one(&*store, "w", T0).await;
    assert_eq!(task.run.run_id, "run-1");
}

/// Start with task on a running id follows the policy and skips the task.
pub async fn start_with_task_on_a_running_id_follows_the_policy_and_skips_the_task(
    store: Arc<dyn Store>,
) {
    start(&*store, "wf-1", "run-1", T0).await;
    let err = store
        .start_run_with_task(
            start_request("wf-1", "run-2", T0 + 1),
            first_task("wf-1", "run-2", T0 + 1),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::AlreadyStarted { .. }), "{err}");

    let mut keep = start_request("wf-1", "run-3", T0 + 2);
    keep.policy = IdConflictPolicy::UseExisting;
    let StartWithTask {
        start: out,
        first_task: first,
    } = store
        .start_run_with_task(keep, first_task("wf-1", "run-3", T0 + 2))
        .await
        .unwrap();
    assert_eq!(
        (out.run_id.as_str(), out.started, first),
        ("run-1", false, None)
    );
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 1);
    assert_eq!(store.get_run("wf-1", Some("run-3")).await.unwrap(), None);
}

/// Start writes workflow started and makes the run ready.
pub async fn start_writes_workflow_started_and_makes_the_run_ready(store: Arc<dyn Store>) {
    let run = start(&*store, "wf-1", "run-1", T0).await;
    assert_eq!(run.workflow_id, "wf-1");
    assert_eq!(run.chain_id, "run-1", "a fresh start begins its own chain");
    assert_eq!(run.workflow_type, "order");
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(run.next_event_id, 2);
    assert_eq!(run.created_ms, T0);
    assert_eq!(run.closed_ms, None);
    assert_eq!(
        (
            run.result.clone(),
            run.failure.clone(),
            run.task_failure.clone()
        ),
        (None, None, None)
    );

    let history = store.read_history("run-1", 1).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].event_id, 1);
    assert_eq!(history[0].time_ms, T0);
    assert_eq!(
        history[0].kind,
        EventKind::WorkflowStarted {
            workflow_type: "order".into(),
            input: payload(("input", "run-1")),
            random_seed: 7,
            continued_from: None,
            parent: None,
            limits: None,
            repaired_from: None,
        }
    );
    let encoded = crate::store::encode_event(T0, &history[0].kind).unwrap();
    assert_eq!(run.history_bytes, encoded.len() as u64);

    assert!(store
        .poll_workflow_tasks_any("w", T0 - 1, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    let task = lease_one(&*store, "w", T0).await;
    assert_eq!(task.run, run);
    assert!(task.messages.is_empty());
}

/// Start fails with already started while a run is running.
pub async fn start_fails_with_already_started_while_a_run_is_running(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let err = store
        .start_run(start_request("wf-1", "run-2", T0 + 1))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        StoreError::AlreadyStarted {
            workflow_id: "wf-1".into(),
            run_id: "run-1".into()
        }
    );
    assert_eq!(store.get_run("wf-1", Some("run-2")).await.unwrap(), None);
    assert_eq!(
        store
            .admin()
            .list_runs(ListFilter::default())
            .await
            .unwrap()
            .len(),
        1
    );
}

/// Start use existing delivers messages to the running run.
pub async fn start_use_existing_delivers_messages_to_the_running_run(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let mut req = start_request("wf-1", "run-2", T0 + 5);
    req.policy = IdConflictPolicy::UseExisting;
    req.messages = vec![signal("pause", Some("s-1")), update("u-1", "rename")];
    let out = store.start_run(req).await.unwrap();
    assert_eq!(out.run_id, "run-1");
    assert!(!out.started);
    let enqueued = DeliverOutcome::Enqueued {
        run_id: "run-1".into(),
    };
    assert_eq!(out.messages, vec![enqueued.clone(), enqueued]);
    assert_eq!(store.get_run("wf-1", Some("run-2")).await.unwrap(), None);

    let task = lease_one(&*store, "w", T0 + 5).await;
    assert_eq!(task.run.run_id, "run-1");
    assert_eq!(task.messages.len(), 2);
    assert!(matches!(&task.messages[0].message, Message::Signal { name, .. } if name == "pause"));
    assert!(
        matches!(&task.messages[1].message, Message::Update { update_id, .. } if update_id == "u-1")
    );
}

/// Start terminate existing closes the old run and starts a new one.
pub async fn start_terminate_existing_closes_the_old_run_and_starts_a_new_one(
    store: Arc<dyn Store>,
) {
    start(&*store, "wf-1", "run-1", T0).await;
    let mut req = start_request("wf-1", "run-2", T0 + 10);
    req.policy = IdConflictPolicy::TerminateExisting;
    let out = store.start_run(req).await.unwrap();
    assert_eq!((out.run_id.as_str(), out.started), ("run-2", true));

    let old = store.get_run("wf-1", Some("run-1")).await.unwrap().unwrap();
    assert_eq!(old.status, RunStatus::Terminated);
    assert_eq!(old.closed_ms, Some(T0 + 10));
    let history = store.read_history("run-1", 1).await.unwrap();
    assert_eq!(
        history.last().unwrap().kind,
        EventKind::WorkflowTerminated {
            reason: "terminated by a new start".into()
        }
    );
    assert_eq!(old.next_event_id, 3);

    let latest = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(
        (latest.run_id.as_str(), latest.chain_id.as_str()),
        ("run-2", "run-2")
    );
    assert_eq!(latest.status, RunStatus::Running);
    let task = lease_one(&*store, "w", T0 + 10).await;
    assert_eq!(task.run.run_id, "run-2", "only the new run is ready");
}

/// Start after a closed run begins a new chain.
pub async fn start_after_a_closed_run_begins_a_new_chain(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0))
        .await
        .unwrap();
    store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0))
        .await
        .unwrap();
    store.terminate("wf-1", "done", T0 + 1).await.unwrap();

    start(&*store, "wf-1", "run-2", T0 + 2).await;
    let latest = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(latest.chain_id, "run-2");
    // Dedupe ids belong to the old chain: the new run takes them as new messages.
    let enqueued = DeliverOutcome::Enqueued {
        run_id: "run-2".into(),
    };
    assert_eq!(
        store
            .deliver(Delivery::new("wf-1", update("u-1", "rename"), T0 + 3))
            .await
            .unwrap(),
        enqueued
    );
    assert_eq!(
        store
            .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0 + 3))
            .await
            .unwrap(),
        enqueued
    );
    let u = store.get_update("wf-1", "u-1").await.unwrap().unwrap();
    assert_eq!(
        (u.run_id.as_str(), u.state),
        ("run-2", UpdateState::Requested)
    );
}

/// Start messages are delivered in order with dedupe.
pub async fn start_messages_are_delivered_in_order_with_dedupe(store: Arc<dyn Store>) {
    let mut req = start_request("wf-1", "run-1", T0);
    req.messages = vec![
        signal("a", Some("s-1")),
        update("u-1", "rename"),
        signal("b", Some("s-1")),
        update("u-1", "rename"),
        crate::store::Message::CancelRequested {
            reason: "stop".into(),
        },
    ];
    let out = store.start_run(req).await.unwrap();
    let enqueued = DeliverOutcome::Enqueued {
        run_id: "run-1".into(),
    };
    assert_eq!(out.messages.len(), 5);
    assert_eq!(out.messages[0], enqueued);
    assert_eq!(out.messages[1], enqueued);
    assert_eq!(
        out.messages[2],
        DeliverOutcome::DuplicateSignal {
            run_id: "run-1".into()
        }
    );
    match &out.messages[3] {
        DeliverOutcome::DuplicateUpdate(rec) => {
            assert_eq!(
                (rec.update_id.as_str(), rec.run_id.as_str()),
                ("u-1", "run-1")
            );
            assert_eq!(rec.state, UpdateState::Requested);
        }
        other => panic!("expected a duplicate update, got {other:?}"),
    }
    assert_eq!(out.messages[4], enqueued);

    let task = lease_one(&*store, "w", T0).await;
    let kinds: Vec<&Message> = task.messages.iter().map(|m| &m.message).collect();
    assert_eq!(kinds.len(), 3);
    assert!(matches!(kinds[0], Message::Signal { name, .. } if name == "a"));
    assert!(matches!(kinds[1], Message::Update { update_id, .. } if update_id == "u-1"));
    assert!(matches!(kinds[2], Message::CancelRequested { reason } if reason == "stop"));
    assert!(task.messages.windows(2).all(|w| w[0].seq < w[1].seq));
}
