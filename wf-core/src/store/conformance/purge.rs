//! Retention: purging closed runs deletes them with everything keyed by them, in bounded
//! batches, oldest close first; running runs, what a running parent needs and the dedupe ids of
//! a chain that goes on stay.

use super::fixtures::*;
use crate::store::{
    ChildOutcome, DeliverOutcome, Delivery, Message, NewRun, ParentInfo, RunClose, RunNotice,
    RunStatus, ScheduleRow, Store, StoreError, UpdateOutcome, UpdateState,
};
use std::sync::Arc;

/// Starts `workflow_id` (run `run_id`) at `started_ms` and completes it at `closed_ms`.
async fn completed(
    store: &dyn Store,
    workflow_id: &str,
    run_id: &str,
    started_ms: i64,
    closed_ms: i64,
) {
    start(store, workflow_id, run_id, started_ms).await;
    run_task(store, closed_ms, |_, c| {
        c.close = Some(RunClose::Completed(payload("done")));
    })
    .await;
}

/// Whether the store holds nothing of run `run_id` of `workflow_id` any more: every read
/// finds nothing, and a message is refused as for an unknown workflow.
async fn assert_gone(store: &dyn Store, workflow_id: &str, run_id: &str) {
    assert_eq!(
        store.get_run(workflow_id, Some(run_id)).await.unwrap(),
        None
    );
    assert!(store.read_history(run_id, 1).await.unwrap().is_empty());
    let pending = store.pending_messages(run_id, Some(1)).await.unwrap();
    assert!(pending.inbox.is_empty() && pending.history.is_empty());
    assert_eq!(pending.next_event_id, None);
    assert!(store.pending_updates(run_id).await.unwrap().is_empty());
    assert!(store.pending_activities(run_id).await.unwrap().is_empty());
    let sent = store
        .deliver(Delivery::new(workflow_id, signal("late", None), T0 + 10_000).to_run(run_id))
        .await;
    assert!(
        matches!(sent, Err(StoreError::NotFound { .. })),
        "a message to purged run {run_id} must be NotFound, got {sent:?}"
    );
}

/// Starts `workflow_id` (run `run_id`) at [`T0`] with signal id `s-1` and update `u-1`
/// delivered, and runs a task at `at_ms` that completes the update and closes the run with
/// `close`. Returns the update's final state.
async fn with_dedupe_ids(
    store: &dyn Store,
    workflow_id: &str,
    run_id: &str,
    at_ms: i64,
    close: RunClose,
) -> UpdateState {
    start(store, workflow_id, run_id, T0).await;
    store
        .deliver(Delivery::new(workflow_id, signal("pause", Some("s-1")), T0))
        .await
        .unwrap();
    store
        .deliver(Delivery::new(workflow_id, update("u-1", "rename"), T0))
        .await
        .unwrap();
    let done = UpdateState::Completed(UpdateOutcome::Completed(payload("renamed")));
    run_task(store, at_ms, |_, c| {
        c.updates = vec![update_change("u-1", "rename", done.clone())];
        c.close = Some(close);
    })
    .await;
    done
}

/// Purge deletes closed runs older than the cutoff with everything keyed by them, and only
/// them: a newer closed run, a running run and schedules stay; the workflow id starts again.
pub async fn purge_deletes_closed_runs_before_the_cutoff_with_their_rows(store: Arc<dyn Store>) {
    // wf-old: a signal id and a completed update, closed at T0 + 10.
    let close = RunClose::Completed(payload("done"));
    with_dedupe_ids(&*store, "wf-old", "run-old", T0 + 10, close).await;
    completed(&*store, "wf-new", "run-new", T0 + 20, T0 + 1_000).await;
    start(&*store, "wf-live", "run-live", T0 + 30).await;
    store
        .deliver(Delivery::new(
            "wf-live",
            signal("poke", Some("s-live")),
            T0 + 31,
        ))
        .await
        .unwrap();
    let schedule = ScheduleRow {
        schedule_id: "nightly".into(),
        data: payload("spec"),
        version: 1,
        next_check_ms: Some(T0 + 5_000),
    };
    store
        .admin()
        .create_schedule(schedule.clone())
        .await
        .unwrap();
    let new_before = store.get_run("wf-new", None).await.unwrap();
    let live_before = store.pending_messages("run-live", Some(1)).await.unwrap();

    assert_eq!(store.admin().count_closed_runs(T0 + 500).await.unwrap(), 1);
    assert_eq!(
        store.admin().count_closed_runs(T0 + 10).await.unwrap(),
        0,
        "the cutoff is exclusive"
    );
    assert_eq!(store.admin().count_closed_runs(i64::MAX).await.unwrap(), 2);
    let purged = store
        .admin()
        .purge_closed_runs(T0 + 500, 100)
        .await
        .unwrap();
    assert_eq!(purged, vec!["run-old".to_string()]);

    assert_gone(&*store, "wf-old", "run-old").await;
    assert_eq!(store.get_run("wf-old", None).await.unwrap(), None);
    assert_eq!(store.get_update("wf-old", "u-1").await.unwrap(), None);
    assert_eq!(store.get_run("wf-new", None).await.unwrap(), new_before);
    assert_eq!(
        store.pending_messages("run-live", Some(1)).await.unwrap(),
        live_before
    );
    assert_eq!(
        store.admin().get_schedule("nightly").await.unwrap(),
        Some(schedule)
    );
    assert_eq!(store.admin().count_closed_runs(T0 + 500).await.unwrap(), 0);
    assert!(store
        .admin()
        .purge_closed_runs(T0 + 500, 100)
        .await
        .unwrap()
        .is_empty());

    // The workflow id starts again, as a new chain: the old dedupe ids are gone with it.
    start(&*store, "wf-old", "run-again", T0 + 2_000).await;
    let again = store
        .deliver(Delivery::new(
            "wf-old",
            signal("pause", Some("s-1")),
            T0 + 2_000,
        ))
        .await
        .unwrap();
    assert_eq!(
        again,
        DeliverOutcome::Enqueued {
            run_id: "run-again".into()
        }
    );
}

/// Purge goes in batches of at most `max` runs, oldest close first, whatever the creation
/// order; every status but running is purged.
pub async fn purge_goes_in_bounded_batches_oldest_close_first(store: Arc<dyn Store>) {
    // Created in one order, closed in another.
    completed(&*store, "wf-c", "run-c", T0, T0 + 30).await;
    completed(&*store, "wf-a", "run-a", T0 + 1, T0 + 10).await;
    start(&*store, "wf-t", "run-t", T0 + 2).await;
    store.terminate("wf-t", "stop", T0 + 40).await.unwrap();
    start(&*store, "wf-f", "run-f", T0 + 3).await;
    run_task(&*store, T0 + 20, |_, c| {
        c.close = Some(RunClose::Failed("broken".into()));
    })
    .await;
    start(&*store, "wf-x", "run-x", T0 + 4).await;
    run_task(&*store, T0 + 50, |_, c| {
        c.close = Some(RunClose::Cancelled("asked to".into()));
    })
    .await;
    start(&*store, "wf-live", "run-live", T0 + 5).await;

    let cutoff = T0 + 1_000;
    assert_eq!(store.admin().count_closed_runs(cutoff).await.unwrap(), 5);
    let mut order = Vec::new();
    loop {
        let batch = store.admin().purge_closed_runs(cutoff, 2).await.unwrap();
        assert!(batch.len() <= 2, "a batch of at most 2 runs, got {batch:?}");
        if batch.is_empty() {
            break;
        }
        order.push(batch);
    }
    assert_eq!(
        order,
        vec![
            vec!["run-a".to_string(), "run-f".into()],
            vec!["run-c".into(), "run-t".into()],
            vec!["run-x".into()],
        ]
    );
    assert_eq!(store.admin().count_closed_runs(cutoff).await.unwrap(), 0);
    let live = store.get_run("wf-live", None).await.unwrap().unwrap();
    assert_eq!(live.status, RunStatus::Running);
    assert!(store
        .admin()
        .purge_closed_runs(cutoff, 0)
        .await
        .unwrap()
        .is_empty());
}

/// A running run is never purged, however old; nor are its history, inbox, activities,
/// timers, updates or dedupe ids.
pub async fn purge_never_touches_a_running_run(store: Arc<dyn Store>) {
    populate(&*store).await;
    let before = snapshot(&*store).await;
    let purged = store
        .admin()
        .purge_closed_runs(i64::MAX, 100)
        .await
        .unwrap();
    assert_eq!(
        purged,
        vec!["run-2".to_string()],
        "only the terminated run goes"
    );
    let after = snapshot(&*store).await;
    let kept = |runs: &[crate::store::RunRecord]| -> Vec<usize> {
        runs.iter()
            .enumerate()
            .filter(|(_, r)| r.run_id != "run-2")
            .map(|(i, _)| i)
            .collect()
    };
    let keep = kept(&before.runs);
    assert_eq!(after.runs.len(), keep.len());
    for (a, b) in keep.into_iter().enumerate() {
        assert_eq!(after.runs[a], before.runs[b]);
        assert_eq!(after.histories[a], before.histories[b]);
        assert_eq!(after.activities[a], before.activities[b]);
        assert_eq!(after.updates[a], before.updates[b]);
    }
    assert_eq!(after.update, before.update);
    assert_eq!(after.expired, before.expired);
    assert_eq!(after.wakeup, before.wakeup);
    let dup = store
        .deliver(Delivery::new("wf-1", signal("pause", Some("s-1")), T0 + 7))
        .await
        .unwrap();
    assert!(matches!(dup, DeliverOutcome::DuplicateSignal { .. }));
}

/// A run that continued as new is purged on its own, but its chain's dedupe ids stay while a
/// run of the chain remains; they go with the chain's last run.
pub async fn purge_keeps_a_chains_dedupe_ids_while_a_run_of_it_remains(store: Arc<dyn Store>) {
    let next = NewRun {
        input: payload("round 2"),
        ..new_run("wf-1", "run-2")
    };
    let close = RunClose::ContinuedAsNew(next);
    let done = with_dedupe_ids(&*store, "wf-1", "run-1", T0 + 1, close).await;

    let purged = store
        .admin()
        .purge_closed_runs(T0 + 100, 100)
        .await
        .unwrap();
    assert_eq!(purged, vec!["run-1".to_string()]);
    assert_gone(&*store, "wf-1", "run-1").await;
    let dup = store
        .deliver(Delivery::new(
            "wf-1",
            signal("pause", Some("s-1")),
            T0 + 101,
        ))
        .await
        .unwrap();
    assert_eq!(
        dup,
        DeliverOutcome::DuplicateSignal {
            run_id: "run-2".into()
        },
        "the running run still deduplicates against its predecessor's signal ids"
    );
    let rec = store.get_update("wf-1", "u-1").await.unwrap().unwrap();
    assert_eq!(rec.state, done);

    // The chain's last run closes and goes: so do its dedupe ids. A run that reuses the
    // chain's id (only a test would) starts with none.
    run_task(&*store, T0 + 200, |_, c| {
        c.close = Some(RunClose::Completed(payload("done")));
    })
    .await;
    assert_eq!(
        store
            .admin()
            .purge_closed_runs(T0 + 300, 100)
            .await
            .unwrap(),
        vec!["run-2".to_string()]
    );
    start(&*store, "wf-1", "run-1", T0 + 400).await;
    let fresh = store
        .deliver(Delivery::new(
            "wf-1",
            signal("pause", Some("s-1")),
            T0 + 400,
        ))
        .await
        .unwrap();
    assert_eq!(
        fresh,
        DeliverOutcome::Enqueued {
            run_id: "run-1".into()
        }
    );
    assert_eq!(store.get_update("wf-1", "u-1").await.unwrap(), None);
}

/// A closed child is purged while its parent runs: its result is in the parent's inbox from
/// the moment it closed, and stays there.
pub async fn purging_a_closed_child_keeps_its_result_for_the_running_parent(store: Arc<dyn Store>) {
    start(&*store, "parent", "run-parent", T0).await;
    run_task(&*store, T0 + 1, |_, _| {}).await;
    let mut child = start_request("child", "run-child", T0 + 2);
    child.run.parent = Some(ParentInfo {
        workflow_id: "parent".into(),
        run_id: "run-parent".into(),
        seq: 4,
    });
    store.start_run(child).await.unwrap();
    let result = ChildOutcome::Completed(payload("child done"));
    run_task(&*store, T0 + 3, |_, c| {
        c.close = Some(RunClose::Completed(payload("child done")));
        c.notify = vec![RunNotice {
            run_id: "run-parent".into(),
            message: Message::ChildClosed {
                seq: 4,
                outcome: result.clone(),
            },
        }];
    })
    .await;

    let purged = store
        .admin()
        .purge_closed_runs(T0 + 100, 100)
        .await
        .unwrap();
    assert_eq!(purged, vec!["run-child".to_string()]);
    assert_gone(&*store, "child", "run-child").await;
    let parent = store.get_run("parent", None).await.unwrap().unwrap();
    assert_eq!(parent.status, RunStatus::Running);
    let task = lease_one(&*store, "w", T0 + 101).await;
    let inbox: Vec<Message> = task.messages.into_iter().map(|m| m.message).collect();
    assert_eq!(
        inbox,
        vec![Message::ChildClosed {
            seq: 4,
            outcome: result
        }]
    );
}
