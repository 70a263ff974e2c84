//! Repairs of one run: a reset closes the run as `Reset` and starts a run of its chain from a
//! history prefix, with the prefix's pending activities and timers armed again and the later
//! signals in its inbox, in one transaction; a fork leaves its source untouched; a delete takes
//! the run with its chain's dedupe ids.

use super::fixtures::*;
use crate::data::repair::{RepairKind, ResetPoint};
use crate::store::{
    ActivityOptions, DeliverOutcome, Delivery, EventKind, Message, ResetRequest, RunStatus, Store,
    StoreError,
};
use std::sync::Arc;

fn reset_request(
    workflow_id: &str,
    new_run_id: &str,
    point: ResetPoint,
    now_ms: i64,
) -> ResetRequest {
    ResetRequest {
        workflow_id: workflow_id.into(),
        run_id: None,
        point,
        kind: RepairKind::Reset,
        new_workflow_id: None,
        new_run_id: new_run_id.into(),
        drop_messages: false,
        reason: "fix".into(),
        identity: "ops".into(),
        now_ms,
    }
}

/// Run `r-1` of `wf-1`: a task (events 2-4) scheduling activity 1 and timer 2, then a task
/// (5-6) recording signal `s-1`; then signal `s-2` waits in its inbox.
async fn a_run_with_work(store: &dyn Store) {
    start(store, "wf-1", "r-1", T0).await;
    run_task(store, T0 + 1, |_, c| {
        let at = c.now_ms;
        c.events.insert(
            0,
            event(
                at,
                EventKind::ActivityScheduled {
                    seq: 1,
                    name: "charge".into(),
                    input: payload(("charge", 1)),
                    options: ActivityOptions::default(),
                },
            ),
        );
        c.events.insert(
            1,
            event(
                at,
                EventKind::TimerStarted {
                    seq: 2,
                    fire_at_ms: T0 + 60_000,
                },
            ),
        );
        c.new_activities
            .push(activity(1, ActivityOptions::default()));
        c.new_timers.push(timer(2, T0 + 60_000));
    })
    .await;
    store
        .deliver(Delivery::new("wf-1", signal("s", Some("s-1")), T0 + 2))
        .await
        .unwrap();
    run_task(store, T0 + 3, |_, c| {
        let at = c.now_ms;
        c.events.insert(
            0,
            event(
                at,
                EventKind::SignalReceived {
                    name: "s".into(),
                    args: payload(("s",)),
                    signal_id: Some("s-1".into()),
                    sent_at: None,
                },
            ),
        );
    })
    .await;
    store
        .deliver(Delivery::new("wf-1", signal("s", Some("s-2")), T0 + 4))
        .await
        .unwrap();
}

/// A reset to the first task's end: the old run closes as `Reset` with `WorkflowReset`; the new
/// run of the chain holds the prefix (its first event naming the reset), activity 1 and timer 2
/// armed again, signals `s-1` (from history) and `s-2` (from the inbox) in its inbox in that
/// order, and the chain still deduplicates both signal ids.
pub async fn a_reset_starts_a_run_of_the_chain_from_a_prefix(store: Arc<dyn Store>) {
    let store = &*store;
    a_run_with_work(store).await;
    let before = store.read_history("r-1", 1).await.unwrap();
    assert_eq!(before.len(), 6);
    let new = store
        .admin()
        .reset_run(reset_request("wf-1", "r-2", ResetPoint::Event(4), T0 + 10))
        .await
        .unwrap();
    assert_eq!((new.run_id.as_str(), new.chain_id.as_str()), ("r-2", "r-1"));
    assert_eq!((new.status, new.next_event_id), (RunStatus::Running, 5));

    let old = store.get_run("wf-1", Some("r-1")).await.unwrap().unwrap();
    assert_eq!(old.status, RunStatus::Reset);
    let old_history = store.read_history("r-1", 1).await.unwrap();
    assert_eq!(old_history[..6], before[..]);
    assert!(
        matches!(&old_history[6].kind, EventKind::WorkflowReset { new_run_id, at_event: 4, identity, .. }
            if new_run_id == "r-2" && identity == "ops"),
        "{old_history:?}"
    );
    assert!(store.pending_activities("r-1").await.unwrap().is_empty());

    let history = store.read_history("r-2", 1).await.unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[1..], before[1..4]);
    let origin = store.admin().repair_origin("r-2").await.unwrap().unwrap();
    assert_eq!(
        (origin.kind, origin.run_id.as_str(), origin.at_event),
        (RepairKind::Reset, "r-1", 4)
    );
    let activities = store.pending_activities("r-2").await.unwrap();
    assert_eq!(activities.iter().map(|a| a.seq).collect::<Vec<_>>(), [1]);
    assert_eq!(
        store.get_run("wf-1", None).await.unwrap().unwrap().run_id,
        "r-2"
    );

    let task = lease_one(store, "w", T0 + 11).await;
    assert_eq!(task.run.run_id, "r-2");
    let ids: Vec<_> = task
        .messages
        .iter()
        .map(|m| match &m.message {
            Message::Signal { signal_id, .. } => signal_id.clone(),
            other => panic!("only signals are re-applied: {other:?}"),
        })
        .collect();
    assert_eq!(ids, [Some("s-1".to_string()), Some("s-2".to_string())]);
    for id in ["s-1", "s-2"] {
        let again = store
            .deliver(Delivery::new("wf-1", signal("s", Some(id)), T0 + 12))
            .await
            .unwrap();
        assert!(
            matches!(again, DeliverOutcome::DuplicateSignal { .. }),
            "{id}: {again:?}"
        );
    }
    // The timer fires into the new run.
    let fired = store.fire_due_timers(T0 + 60_000, 10).await.unwrap();
    assert!(
        fired.iter().any(|f| f.run_id == "r-2" && f.seq == 2),
        "{fired:?}"
    );
}

/// A fork writes nothing to its source; a reset to an event that ends no task, or of a run that
/// is not the latest, is refused and writes nothing.
pub async fn a_fork_leaves_its_source_and_bad_resets_change_nothing(store: Arc<dyn Store>) {
    let store = &*store;
    a_run_with_work(store).await;
    let before = store.read_history("r-1", 1).await.unwrap();
    let run = store.get_run("wf-1", None).await.unwrap().unwrap();
    let fork = ResetRequest {
        kind: RepairKind::Fork,
        new_workflow_id: Some("wf-2".into()),
        drop_messages: true,
        ..reset_request("wf-1", "f-1", ResetPoint::Event(6), T0 + 10)
    };
    let forked = store.admin().reset_run(fork).await.unwrap();
    assert_eq!(
        (forked.workflow_id.as_str(), forked.chain_id.as_str()),
        ("wf-2", "f-1")
    );
    assert_eq!(store.read_history("r-1", 1).await.unwrap(), before);
    assert_eq!(store.get_run("wf-1", None).await.unwrap().unwrap(), run);
    assert_eq!(
        store.read_history("f-1", 1).await.unwrap()[1..],
        before[1..]
    );

    for point in [ResetPoint::Event(2), ResetPoint::Event(99)] {
        let err = store
            .admin()
            .reset_run(reset_request("wf-1", "r-9", point, T0 + 11))
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict { .. }),
            "{point}: {err:?}"
        );
    }
    assert_eq!(store.get_run("wf-1", None).await.unwrap().unwrap(), run);
    assert_eq!(store.get_run("wf-1", Some("r-9")).await.unwrap(), None);
    let stale = ResetRequest {
        run_id: Some("r-1".into()),
        ..reset_request("wf-1", "r-2", ResetPoint::FirstTask, T0 + 12)
    };
    store.admin().reset_run(stale.clone()).await.unwrap();
    let err = store
        .admin()
        .reset_run(ResetRequest {
            new_run_id: "r-3".into(),
            ..stale
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
}

/// Deleting a running run terminates it and takes it with its chain's signal ids.
pub async fn delete_takes_a_run_and_its_dedupe_ids(store: Arc<dyn Store>) {
    let store = &*store;
    a_run_with_work(store).await;
    let gone = store
        .admin()
        .delete_run("wf-1", None, "erase", T0 + 10)
        .await
        .unwrap();
    assert_eq!(gone, ["r-1"]);
    assert_eq!(store.get_run("wf-1", None).await.unwrap(), None);
    assert!(store.read_history("r-1", 1).await.unwrap().is_empty());
    assert!(store.pending_activities("r-1").await.unwrap().is_empty());
    let err = store
        .admin()
        .delete_run("wf-1", None, "again", T0 + 11)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    start(store, "wf-1", "r-5", T0 + 12).await;
    let sent = store
        .deliver(Delivery::new("wf-1", signal("s", Some("s-1")), T0 + 13))
        .await
        .unwrap();
    assert!(
        !matches!(sent, DeliverOutcome::DuplicateSignal { .. }),
        "{sent:?}"
    );
}
