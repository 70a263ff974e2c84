//! Workflow tasks: queue order, leases and their expiry, commits, conflicts, `NewMessages`,
//! task failures and releases.

use super::fixtures::*;
use crate::store::{
    encode_event, Delivery, EventKind, LeaseRequest, NewEvent, TaskFilter, TaskPoll,
};
use crate::store::{Message, RunClose, RunStatus, Store, StoreError, TaskFailure, UpdateState};
use std::sync::Arc;

/// Ready runs are leased oldest ready first.
pub async fn ready_runs_are_leased_oldest_ready_first(store: Arc<dyn Store>) {
    start(&*store, "wf-c", "run-c", T0 + 2).await;
    start(&*store, "wf-a", "run-a", T0).await;
    start(&*store, "wf-b", "run-b", T0 + 1).await;

    let first = store
        .poll_workflow_tasks_any("w1", T0 + 10, 1000, 2)
        .await
        .unwrap();
    let ids: Vec<&str> = first.iter().map(|t| t.run.run_id.as_str()).collect();
    assert_eq!(ids, ["run-a", "run-b"]);
    let second = store
        .poll_workflow_tasks_any("w2", T0 + 10, 1000, 2)
        .await
        .unwrap();
    let ids: Vec<&str> = second.iter().map(|t| t.run.run_id.as_str()).collect();
    assert_eq!(ids, ["run-c"]);
    assert!(store
        .poll_workflow_tasks_any("w3", T0 + 10, 1000, 2)
        .await
        .unwrap()
        .is_empty());
}

/// A leased run is not polled again until its lease expires.
pub async fn a_leased_run_is_not_polled_again_until_its_lease_expires(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let task = store
        .poll_workflow_tasks_any("w1", T0, 1000, 10)
        .await
        .unwrap()
        .remove(0);
    assert!(store
        .poll_workflow_tasks_any("w2", T0 + 999, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.next_wakeup(T0).await.unwrap(),
        Some(T0 + 1000),
        "the lease expiry"
    );

    let stolen = store
        .poll_workflow_tasks_any("w2", T0 + 1000, 1000, 10)
        .await
        .unwrap();
    assert_eq!(stolen.len(), 1, "an expired lease is taken over");
    let err = store
        .commit_workflow_task(commit_for(&task, "w1", T0 + 1001))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { ref run_id, .. } if run_id == "run-1"),
        "{err}"
    );
    let run = store
        .commit_workflow_task(commit_for(&stolen[0], "w2", T0 + 1001))
        .await
        .unwrap();
    assert_eq!(run.next_event_id, 3);
}

/// Commit appends events consumes the inbox and releases the run.
pub async fn commit_appends_events_consumes_the_inbox_and_releases_the_run(store: Arc<dyn Store>) {
    let before = start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("a", Some("s-a")), T0))
        .await
        .unwrap();
    store
        .deliver(Delivery::new("wf-1", signal("b", None), T0))
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0 + 5).await;
    assert_eq!(task.messages.len(), 2);

    let mut commit = commit_for(&task, "w", T0 + 5);
    let events = vec![
        event(
            T0 + 5,
            EventKind::SignalReceived {
                name: "a".into(),
                args: payload(("a",)),
                signal_id: Some("s-a".into()),
                sent_at: None,
            },
        ),
        event(
            T0 + 5,
            EventKind::SignalReceived {
                name: "b".into(),
                args: payload(("b",)),
                signal_id: None,
                sent_at: None,
            },
        ),
        event(
            T0 + 5,
            EventKind::WorkflowTaskCompleted {
                task_time_ms: T0 + 5,
                suggest_continue_as_new: false,
                build_id: None,
            },
        ),
    ];
    commit.events = events.clone();
    commit.summary = payload("summary v1");
    let run = store.commit_workflow_task(commit).await.unwrap();

    let added: u64 = events
        .iter()
        .map(|e| encode_event(e.time_ms, &e.kind).unwrap().len() as u64)
        .sum();
    assert_eq!(run.next_event_id, 5);
    assert_eq!(run.history_bytes, before.history_bytes + added);
    assert_eq!(run.summary, payload("summary v1"));
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(store.get_run("wf-1", None).await.unwrap(), Some(run));

    let history = store.read_history("run-1", 2).await.unwrap();
    let got: Vec<(u64, i64, EventKind)> = history
        .into_iter()
        .map(|e| (e.event_id, e.time_ms, e.kind))
        .collect();
    let want: Vec<(u64, i64, EventKind)> = events
        .into_iter()
        .zip(2..)
        .map(|(e, id)| (id, e.time_ms, e.kind))
        .collect();
    assert_eq!(got, want);
    assert_eq!(store.read_history("run-1", 5).await.unwrap(), vec![]);
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 4);

    assert!(store
        .poll_workflow_tasks_any("w", T0 + 100_000, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store.next_wakeup(T0).await.unwrap(),
        None,
        "nothing is due any more"
    );
}

/// Commit with a stale next event id conflicts and changes nothing.
pub async fn commit_with_a_stale_next_event_id_conflicts_and_changes_nothing(
    store: Arc<dyn Store>,
) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("a", None), T0))
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0).await;
    let mut stale = commit_for(&task, "w", T0);
    stale.expected_next_event_id = 7;
    stale.new_timers = vec![timer(1, T0 + 10)];
    let err = store.commit_workflow_task(stale).await.unwrap_err();
    match &err {
        StoreError::Conflict { run_id, reason } => {
            assert_eq!(run_id, "run-1");
            assert!(
                reason.contains('7') && reason.contains('2'),
                "reason names both ids: {reason}"
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 1);
    assert!(store.fire_due_timers(T0 + 10, 10).await.unwrap().is_empty());
    // The lease is still held, and the inbox intact: the right commit goes through.
    assert!(store
        .poll_workflow_tasks_any("w2", T0, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    let run = store
        .commit_workflow_task(commit_for(&task, "w", T0))
        .await
        .unwrap();
    assert_eq!(run.next_event_id, 3);
}

/// Commit without the lease conflicts.
pub async fn commit_without_the_lease_conflicts(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    let unleased = crate::store::WorkflowTask {
        run,
        messages: vec![],
    };
    let err = store
        .commit_workflow_task(commit_for(&unleased, "w", T0))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");

    let task = lease_one(&*store, "w1", T0).await;
    let err = store
        .commit_workflow_task(commit_for(&task, "w2", T0))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");

    let mut unknown = commit_for(&task, "w1", T0);
    unknown.run_id = "no-such-run".into();
    let err = store.commit_workflow_task(unknown).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 1);
}

/// A lease free commit needs a free run an empty inbox and the same history.
pub async fn a_lease_free_commit_needs_a_free_run_an_empty_inbox_and_the_same_history(
    store: Arc<dyn Store>,
) {
    start(&*store, "wf-1", "run-1", T0).await;
    let first = lease_one(&*store, "w", T0).await;
    let after_first = store
        .commit_workflow_task(commit_for(&first, "w", T0))
        .await
        .unwrap();
    let cached = crate::store::WorkflowTask {
        run: after_first.clone(),
        messages: vec![],
    };
    let lease_free = |now| {
        let mut c = commit_for(&cached, "w", now);
        c.without_lease = true;
        c
    };

    // Another worker holds the lease: refused, nothing written.
    store
        .deliver(Delivery::new("wf-1", signal("a", None), T0 + 1))
        .await
        .unwrap();
    let task = lease_one(&*store, "other", T0 + 1).await;
    let err = store
        .commit_workflow_task(lease_free(T0 + 2))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 2);

    // Its lease expired, but the inbox still holds its message: refused as well.
    let err = store
        .commit_workflow_task(lease_free(T0 + 20_000))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NewMessages { .. }), "{err}");
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 2);

    // Once the other task committed, the history moved on: refused on the event id.
    store
        .commit_workflow_task(commit_for(&task, "other", T0 + 3))
        .await
        .unwrap();
    let err = store
        .commit_workflow_task(lease_free(T0 + 4))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err}");

    // Free run, empty inbox, same history: it commits and leaves the run unleased and idle.
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    let fresh = crate::store::WorkflowTask {
        run,
        messages: vec![],
    };
    let mut c = commit_for(&fresh, "w", T0 + 5);
    c.without_lease = true;
    let record = store.commit_workflow_task(c).await.unwrap();
    assert_eq!(record.next_event_id, fresh.run.next_event_id + 1);
    assert_eq!(store.read_history("run-1", 1).await.unwrap().len(), 4);
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 6, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    let task = store
        .lease_run(LeaseRequest {
            run_id: String::from("run-1"),
            worker_id: String::from("w2"),
            now_ms: T0 + 6,
            lease_ms: 1000,
            build_id: None,
        })
        .await
        .unwrap();
    assert!(task.is_some(), "the run is free for the next lease");
}

/// Messages arriving during a task make the run ready again.
pub async fn messages_arriving_during_a_task_make_the_run_ready_again(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("a", None), T0))
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("b", None), T0 + 1))
        .await
        .unwrap();
    store
        .commit_workflow_task(commit_for(&task, "w", T0 + 2))
        .await
        .unwrap();

    let next = lease_one(&*store, "w", T0 + 2).await;
    assert_eq!(
        next.messages.len(),
        1,
        "only the message the first task did not consume"
    );
    assert!(matches!(&next.messages[0].message, Message::Signal { name, .. } if name == "b"));
    assert!(next.messages[0].seq > task.messages[0].seq);
}

/// Close with unconsumed messages fails with new messages.
pub async fn close_with_unconsumed_messages_fails_with_new_messages(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let task = lease_one(&*store, "w", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("late", None), T0 + 1))
        .await
        .unwrap();

    for consumed_through in [None, task.messages.last().map(|m| m.seq)] {
        let mut closing = commit_for(&task, "w", T0 + 2);
        closing.consumed_through = consumed_through;
        closing.close = Some(RunClose::Completed(payload("done")));
        let err = store.commit_workflow_task(closing).await.unwrap_err();
        assert_eq!(
            err,
            StoreError::NewMessages {
                run_id: "run-1".into()
            }
        );
    }
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!((run.status, run.next_event_id), (RunStatus::Running, 2));

    // The task may still commit without closing, and then sees the message.
    store
        .commit_workflow_task(commit_for(&task, "w", T0 + 2))
        .await
        .unwrap();
    let next = lease_one(&*store, "w", T0 + 2).await;
    let mut closing = commit_for(&next, "w", T0 + 3);
    closing.close = Some(RunClose::Completed(payload("done")));
    let run = store.commit_workflow_task(closing).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
}

/// Close completes or fails the run and drops its pending work.
pub async fn close_completes_or_fails_the_run_and_drops_its_pending_work(store: Arc<dyn Store>) {
    for (i, close) in [
        RunClose::Completed(payload("value")),
        RunClose::Failed("boom".into()),
        RunClose::Cancelled("asked to stop".into()),
    ]
    .into_iter()
    .enumerate()
    {
        let wf = format!("wf-{i}");
        let run_id = format!("run-{i}");
        start(&*store, &wf, &run_id, T0).await;
        store
            .deliver(Delivery::new(&wf, update("u-1", "rename"), T0))
            .await
            .unwrap();
        store
            .deliver(Delivery::new(&wf, update("u-2", "rename"), T0))
            .await
            .unwrap();
        run_task(&*store, T0, |_, c| {
            c.new_activities = vec![activity(1, Default::default())];
            c.new_timers = vec![timer(2, T0 + 50)];
            c.updates = vec![update_change("u-1", "rename", UpdateState::Accepted)];
        })
        .await;
        store
            .deliver(Delivery::new(&wf, update("u-3", "rename"), T0 + 1))
            .await
            .unwrap();
        let closed = run_task(&*store, T0 + 2, |_, c| c.close = Some(close.clone())).await;

        assert_eq!(closed.closed_ms, Some(T0 + 2));
        match &close {
            RunClose::Completed(v) => {
                assert_eq!(closed.status, RunStatus::Completed);
                assert_eq!(closed.result.as_ref(), Some(v));
            }
            RunClose::Failed(m) => {
                assert_eq!(closed.status, RunStatus::Failed);
                assert_eq!(closed.failure.as_ref(), Some(m));
            }
            RunClose::Cancelled(m) => {
                assert_eq!(closed.status, RunStatus::Cancelled);
                assert_eq!(closed.failure.as_ref(), Some(m));
            }
            RunClose::ContinuedAsNew(_) => unreachable!(),
        }
        assert!(store.pending_activities(&run_id).await.unwrap().is_empty());
        assert!(store.pending_updates(&run_id).await.unwrap().is_empty());
        for u in ["u-1", "u-2", "u-3"] {
            let rec = store.get_update(&wf, u).await.unwrap().unwrap();
            assert_eq!(rec.state, UpdateState::Abandoned, "update {u}");
        }
    }
    assert!(store
        .fire_due_timers(T0 + 100, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .poll_activity_tasks_any("a", T0 + 100, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 100, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.next_wakeup(T0).await.unwrap(), None);
}

/// A failed task is recorded and retried at its retry time.
pub async fn a_failed_task_is_recorded_and_retried_at_its_retry_time(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    store
        .deliver(Delivery::new("wf-1", signal("a", None), T0))
        .await
        .unwrap();
    let task = lease_one(&*store, "w", T0).await;
    let failure = TaskFailure {
        message: "panicked at 'oops'".into(),
        nondeterminism: false,
        attempts: 1,
        retry_at_ms: T0 + 5000,
    };
    let err = store
        .fail_workflow_task("run-1", "other", failure.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { .. }),
        "only the lease holder may fail it"
    );
    store
        .fail_workflow_task("run-1", "w", failure.clone())
        .await
        .unwrap();

    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(run.task_failure, Some(failure));
    assert_eq!(run.next_event_id, 2, "nothing else changes");
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 4999, 1000, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.next_wakeup(T0).await.unwrap(), Some(T0 + 5000));
    let retry = lease_one(&*store, "w", T0 + 5000).await;
    assert_eq!(
        retry.messages, task.messages,
        "the inbox is kept for the retry"
    );
    store
        .commit_workflow_task(commit_for(&retry, "w", T0 + 5000))
        .await
        .unwrap();
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(
        run.task_failure, None,
        "a successful task clears the failure"
    );
}

/// Release makes the run ready at once.
pub async fn release_makes_the_run_ready_at_once(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    lease_one(&*store, "w1", T0 + 10).await;
    store.release_workflow_task("run-1", "w2").await.unwrap();
    assert!(
        store
            .poll_workflow_tasks_any("w2", T0 + 10, 1000, 10)
            .await
            .unwrap()
            .is_empty(),
        "a worker that does not hold the lease cannot release it"
    );
    store.release_workflow_task("run-1", "w1").await.unwrap();
    let task = lease_one(&*store, "w2", T0 + 10).await;
    assert_eq!(task.run.run_id, "run-1");
}

/// Polls filtered by type take only those runs.
pub async fn polls_filtered_by_type_take_only_those_runs(store: Arc<dyn Store>) {
    for (wf, run, ty) in [("wf-a", "run-a", "TypeA"), ("wf-b", "run-b", "TypeB")] {
        let mut req = start_request(wf, run, T0);
        req.run.workflow_type = ty.into();
        store.start_run(req).await.unwrap();
    }
    let only_b = store
        .poll_workflow_tasks(poll_of("w", T0 + 1, Some(vec!["TypeB".into()]), "default"))
        .await
        .unwrap();
    let ids: Vec<&str> = only_b.iter().map(|t| t.run.run_id.as_str()).collect();
    assert_eq!(ids, ["run-b"]);
    let none = store
        .poll_workflow_tasks(poll_of("w", T0 + 1, Some(vec!["TypeC".into()]), "default"))
        .await
        .unwrap();
    assert!(none.is_empty());
    let rest = store
        .poll_workflow_tasks_any("w", T0 + 1, 1000, 10)
        .await
        .unwrap();
    let ids: Vec<&str> = rest.iter().map(|t| t.run.run_id.as_str()).collect();
    assert_eq!(ids, ["run-a"]);
}

/// Polls filtered by task queue take only those runs.
pub async fn polls_filtered_by_task_queue_take_only_those_runs(store: Arc<dyn Store>) {
    for (wf, run, queue) in [("wf-a", "run-a", "default"), ("wf-b", "run-b", "gpu")] {
        let mut req = start_request(wf, run, T0);
        req.run.task_queue = queue.into();
        store.start_run(req).await.unwrap();
    }
    let run = store.get_run("wf-b", None).await.unwrap().unwrap();
    assert_eq!(run.task_queue, "gpu");
    let order = vec!["order".to_string()];
    let gpu = store
        .poll_workflow_tasks(poll_of("w", T0 + 1, Some(order.clone()), "gpu"))
        .await
        .unwrap();
    let ids: Vec<&str> = gpu.iter().map(|t| t.run.run_id.as_str()).collect();
    assert_eq!(ids, ["run-b"]);
    let default = store
        .poll_workflow_tasks(poll_of("w", T0 + 1, Some(order), "default"))
        .await
        .unwrap();
    let ids: Vec<&str> = default.iter().map(|t| t.run.run_id.as_str()).collect();
    assert_eq!(ids, ["run-a"]);
}

/// Polls on task queues alone (an engine with a dynamic workflow type) take runs of every
/// type on those queues, and none of another queue.
pub async fn polls_of_any_type_take_every_type_on_their_queues(store: Arc<dyn Store>) {
    for (wf, run, ty, queue) in [
        ("wf-a", "run-a", "TypeA", "default"),
        ("wf-b", "run-b", "TypeB", "default"),
        ("wf-c", "run-c", "TypeC", "gpu"),
    ] {
        let mut req = start_request(wf, run, T0);
        req.run.workflow_type = ty.into();
        req.run.task_queue = queue.into();
        store.start_run(req).await.unwrap();
    }
    let default = store
        .poll_workflow_tasks(poll_of("w", T0 + 1, None, "default"))
        .await
        .unwrap();
    let mut ids: Vec<&str> = default.iter().map(|t| t.run.run_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["run-a", "run-b"]);
    let again = store
        .poll_workflow_tasks(poll_of("w2", T0 + 2, None, "default"))
        .await
        .unwrap();
    assert!(again.is_empty(), "leased runs are not polled again");
    let gpu = store
        .poll_workflow_tasks(poll_of("w", T0 + 2, None, "gpu"))
        .await
        .unwrap();
    let ids: Vec<&str> = gpu.iter().map(|t| t.run.run_id.as_str()).collect();
    assert_eq!(ids, ["run-c"]);
}

/// Three commits of 3, 1 and 2 events: a read from each event id returns exactly the events
/// from that id on, in order, with their ids and bodies, wherever the commits split them.
pub async fn history_reads_from_any_event_including_inside_a_commit(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let received = |name: &str| EventKind::SignalReceived {
        name: name.into(),
        args: payload(name),
        signal_id: None,
        sent_at: None,
    };
    for (i, names) in [vec!["a", "b"], vec![], vec!["c"]].into_iter().enumerate() {
        let now = T0 + 10 * (i as i64 + 1);
        store
            .deliver(Delivery::new("wf-1", signal("poke", None), now))
            .await
            .unwrap();
        run_task(&*store, now, |_, c| {
            let mut events: Vec<NewEvent> = names.iter().map(|n| event(now, received(n))).collect();
            events.append(&mut c.events);
            c.events = events;
        })
        .await;
    }
    let all = store.read_history("run-1", 1).await.unwrap();
    let kinds: Vec<&str> = all.iter().map(|e| e.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "WorkflowStarted",
            "SignalReceived",
            "SignalReceived",
            "WorkflowTaskCompleted",
            "WorkflowTaskCompleted",
            "SignalReceived",
            "WorkflowTaskCompleted"
        ]
    );
    let ids: Vec<u64> = all.iter().map(|e| e.event_id).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<u64>>());
    for from in 1..=9u64 {
        let tail = store.read_history("run-1", from).await.unwrap();
        let expected: Vec<_> = all.iter().filter(|e| e.event_id >= from).cloned().collect();
        assert_eq!(tail, expected, "reading from event {from}");
    }
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    assert_eq!(run.next_event_id, 8);
    let bytes: u64 = all
        .iter()
        .map(|e| encode_event(e.time_ms, &e.kind).unwrap().len() as u64)
        .sum();
    assert_eq!(run.history_bytes, bytes);
}

/// A poll by `worker` at `now_ms` (a 1 s lease, at most 10) for runs of `workflow_types`
/// (`None`: any) on `task_queue`, without a build.
fn poll_of(
    worker: &str,
    now_ms: i64,
    workflow_types: Option<Vec<String>>,
    task_queue: &str,
) -> TaskPoll {
    TaskPoll {
        worker_id: worker.into(),
        now_ms,
        lease_ms: 1000,
        max: 10,
        filter: TaskFilter {
            workflow_types,
            task_queues: Some(vec![task_queue.into()]),
            build_id: None,
        },
    }
}
