//! Activity tasks: leases and deadlines, heartbeats, retries, stale attempts, resolution,
//! release and expiry.

use super::fixtures::*;
use crate::data::flow::{FlowLimit, FlowScope};
use crate::store::{activity_lease, ActivityPoll, ActivityResolution, Delivery, Message, Store};
use crate::store::{ActivityFailure, ActivityOptions, TimeoutKind};
use std::sync::Arc;
use std::time::Duration;

fn timed(start_to_close: u64, heartbeat: Option<u64>) -> ActivityOptions {
    ActivityOptions {
        start_to_close: Some(Duration::from_millis(start_to_close)),
        heartbeat_timeout: heartbeat.map(Duration::from_millis),
        ..Default::default()
    }
}

fn failure(message: &str) -> ActivityFailure {
    ActivityFailure {
        kind: "retryable".into(),
        message: message.into(),
        non_retryable: false,
    }
}

/// Starts `wf-1`/`run-1` and schedules one activity (seq 1) at `T0`.
async fn schedule(store: &dyn Store, options: ActivityOptions) {
    start(store, "wf-1", "run-1", T0).await;
    run_task(store, T0, |_, c| {
        c.new_activities = vec![activity(1, options)]
    })
    .await;
}

/// A scheduled activity is leased once with its deadlines.
pub async fn a_scheduled_activity_is_leased_once_with_its_deadlines(store: Arc<dyn Store>) {
    let options = timed(60_000, Some(10_000));
    schedule(&*store, options.clone()).await;
    let pending = store.pending_activities("run-1").await.unwrap();
    assert_eq!(pending.len(), 1);
    let a = &pending[0];
    assert_eq!(
        (a.run_id.as_str(), a.workflow_id.as_str(), a.seq),
        ("run-1", "wf-1", 1)
    );
    assert_eq!(
        (a.name.as_str(), &a.input),
        ("charge", &payload(("charge", 1u32)))
    );
    assert_eq!((a.attempt, a.scheduled_ms, &a.options), (1, T0, &options));
    assert_eq!(
        (a.started_ms, a.attempt_deadline_ms, a.lease_until_ms),
        (None, None, None)
    );
    assert_eq!((a.heartbeat.clone(), a.last_failure.clone()), (None, None));

    let leased = store
        .poll_activity_tasks_any("aw", T0 + 100, 10)
        .await
        .unwrap();
    assert_eq!(leased.len(), 1);
    let (deadline, lease) = activity_lease(&options, T0, T0 + 100);
    assert_eq!((deadline, lease), (T0 + 60_100, T0 + 10_100));
    let t = &leased[0];
    assert_eq!(
        (t.started_ms, t.attempt_deadline_ms, t.lease_until_ms),
        (Some(T0 + 100), Some(deadline), Some(lease))
    );
    assert_eq!(store.pending_activities("run-1").await.unwrap(), leased);
    assert!(store
        .poll_activity_tasks_any("aw2", T0 + 200, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.next_wakeup(T0 + 100).await.unwrap(), Some(lease));
}

/// Activities are leased in visible order.
pub async fn activities_are_leased_in_visible_order(store: Arc<dyn Store>) {
    start(&*store, "wf-b", "run-b", T0).await;
    run_task(&*store, T0, |_, c| {
        c.new_activities = vec![activity(1, Default::default())]
    })
    .await;
    start(&*store, "wf-a", "run-a", T0 + 5).await;
    run_task(&*store, T0 + 5, |_, c| {
        c.new_activities = vec![
            activity(1, Default::default()),
            activity(2, Default::default()),
        ]
    })
    .await;
    assert!(store
        .poll_activity_tasks_any("aw", T0 - 1, 10)
        .await
        .unwrap()
        .is_empty());
    let first = store
        .poll_activity_tasks_any("aw", T0 + 10, 1)
        .await
        .unwrap();
    assert_eq!((first[0].run_id.as_str(), first[0].seq), ("run-b", 1));
    let rest = store
        .poll_activity_tasks_any("aw", T0 + 10, 10)
        .await
        .unwrap();
    let keys: Vec<(&str, u32)> = rest.iter().map(|t| (t.run_id.as_str(), t.seq)).collect();
    assert_eq!(keys, [("run-a", 1), ("run-a", 2)]);
}

/// A heartbeat extends the lease and keeps its details.
pub async fn a_heartbeat_extends_the_lease_and_keeps_its_details(store: Arc<dyn Store>) {
    schedule(&*store, timed(60_000, Some(10_000))).await;
    assert!(
        !store
            .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0)
            .await
            .unwrap(),
        "an attempt that is not leased cannot heartbeat"
    );
    store.poll_activity_tasks_any("aw", T0, 10).await.unwrap();
    let beat = payload("page 3");
    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), Some(beat.clone()), T0 + 5_000)
        .await
        .unwrap());
    let a = store.pending_activities("run-1").await.unwrap().remove(0);
    assert_eq!(
        (a.heartbeat.as_ref(), a.lease_until_ms),
        (Some(&beat), Some(T0 + 15_000))
    );

    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 14_000)
        .await
        .unwrap());
    let a = store.pending_activities("run-1").await.unwrap().remove(0);
    assert_eq!(
        a.heartbeat.as_ref(),
        Some(&beat),
        "a heartbeat without details keeps the last ones"
    );
    assert_eq!(a.lease_until_ms, Some(T0 + 24_000));

    // Near the end the lease is capped by the attempt deadline.
    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 23_000)
        .await
        .unwrap());
    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 32_000)
        .await
        .unwrap());
    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 41_000)
        .await
        .unwrap());
    assert!(store
        .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 50_000)
        .await
        .unwrap());
    let a = store.pending_activities("run-1").await.unwrap().remove(0);
    assert_eq!(a.lease_until_ms, Some(T0 + 60_000));

    assert!(
        !store
            .heartbeat_activity(attempt_of("run-1", 1, 2), None, T0 + 56_000)
            .await
            .unwrap(),
        "wrong attempt"
    );
    assert!(
        !store
            .heartbeat_activity(attempt_of("run-1", 9, 1), None, T0 + 56_000)
            .await
            .unwrap(),
        "unknown seq"
    );
    assert!(
        !store
            .heartbeat_activity(attempt_of("run-1", 1, 1), Some(payload("x")), T0 + 60_000)
            .await
            .unwrap(),
        "a heartbeat after the lease expired is refused"
    );
    let a = store.pending_activities("run-1").await.unwrap().remove(0);
    assert_eq!(
        (a.heartbeat.as_ref(), a.lease_until_ms),
        (Some(&beat), Some(T0 + 60_000))
    );
}

/// A retry schedules the next attempt and makes older attempts stale.
pub async fn a_retry_schedules_the_next_attempt_and_makes_older_attempts_stale(
    store: Arc<dyn Store>,
) {
    schedule(&*store, timed(60_000, Some(10_000))).await;
    store.poll_activity_tasks_any("aw", T0, 10).await.unwrap();
    let beat = payload("cursor");
    store
        .heartbeat_activity(attempt_of("run-1", 1, 1), Some(beat.clone()), T0 + 1)
        .await
        .unwrap();

    assert!(!store
        .retry_activity(attempt_of("run-1", 1, 2), T0 + 1000, failure("x"), T0)
        .await
        .unwrap());
    assert!(store
        .retry_activity(attempt_of("run-1", 1, 1), T0 + 1000, failure("flaky"), T0)
        .await
        .unwrap());
    let a = store.pending_activities("run-1").await.unwrap().remove(0);
    assert_eq!(a.attempt, 2);
    assert_eq!(
        (a.started_ms, a.attempt_deadline_ms, a.lease_until_ms),
        (None, None, None)
    );
    assert_eq!(
        a.heartbeat.as_ref(),
        Some(&beat),
        "heartbeat details carry to the next attempt"
    );
    assert_eq!(a.last_failure, Some(failure("flaky")));
    assert_eq!(
        a.scheduled_ms, T0,
        "schedule time is per activity, not per attempt"
    );
    assert_eq!(store.next_wakeup(T0 + 2).await.unwrap(), Some(T0 + 1000));

    // The old attempt is stale everywhere.
    assert!(!store
        .retry_activity(attempt_of("run-1", 1, 1), T0, failure("again"), T0)
        .await
        .unwrap());
    assert!(!store
        .heartbeat_activity(attempt_of("run-1", 1, 1), None, T0 + 3)
        .await
        .unwrap());
    let done = ActivityResolution::Completed {
        result: payload("late"),
        attempts: 1,
    };
    assert!(!store
        .resolve_activity(attempt_of("run-1", 1, 1), done, T0 + 3)
        .await
        .unwrap());
    assert!(store
        .poll_workflow_tasks_any("w", T0 + 3, 1000, 10)
        .await
        .unwrap()
        .is_empty());

    assert!(store
        .poll_activity_tasks_any("aw", T0 + 999, 10)
        .await
        .unwrap()
        .is_empty());
    let next = store
        .poll_activity_tasks_any("aw", T0 + 1000, 10)
        .await
        .unwrap();
    assert_eq!(next.len(), 1);
    assert_eq!(
        (next[0].attempt, next[0].heartbeat.as_ref()),
        (2, Some(&beat))
    );
}

/// Resolving an activity puts its result in the inbox once.
pub async fn resolving_an_activity_puts_its_result_in_the_inbox_once(store: Arc<dyn Store>) {
    schedule(&*store, timed(60_000, None)).await;
    let leased = store
        .poll_activity_tasks_any("aw", T0 + 10, 10)
        .await
        .unwrap();
    let resolution = ActivityResolution::Completed {
        result: payload(42),
        attempts: 1,
    };
    assert!(store
        .resolve_activity(attempt_of("run-1", 1, 1), resolution.clone(), T0 + 20)
        .await
        .unwrap());
    assert!(!store
        .resolve_activity(attempt_of("run-1", 1, 1), resolution.clone(), T0 + 21)
        .await
        .unwrap());
    assert!(store.pending_activities("run-1").await.unwrap().is_empty());
    assert_eq!(leased[0].attempt, 1);

    let task = lease_one(&*store, "w", T0 + 20).await;
    assert_eq!(task.messages.len(), 1);
    assert_eq!(
        task.messages[0].message,
        Message::ActivityResolved { seq: 1, resolution }
    );

    // A failure and a time-out resolve the same way.
    let mut c = commit_for(&task, "w", T0 + 30);
    c.new_activities = vec![
        activity(2, timed(1000, None)),
        activity(3, timed(1000, None)),
    ];
    store.commit_workflow_task(c).await.unwrap();
    let failed = ActivityResolution::Failed {
        failure: failure("bad card"),
        attempts: 3,
        last_heartbeat: Some(payload("charged 2 of 3")),
    };
    let timed_out = ActivityResolution::TimedOut {
        timeout: TimeoutKind::StartToClose,
        attempts: 1,
        last_heartbeat: None,
    };
    assert!(store
        .resolve_activity(attempt_of("run-1", 2, 1), failed.clone(), T0 + 40)
        .await
        .unwrap());
    assert!(store
        .resolve_activity(attempt_of("run-1", 3, 1), timed_out.clone(), T0 + 41)
        .await
        .unwrap());
    let task = lease_one(&*store, "w", T0 + 41).await;
    let kinds: Vec<Message> = task.messages.into_iter().map(|m| m.message).collect();
    assert_eq!(
        kinds,
        [
            Message::ActivityResolved {
                seq: 2,
                resolution: failed
            },
            Message::ActivityResolved {
                seq: 3,
                resolution: timed_out
            },
        ]
    );
}

/// A released activity is visible again with the same attempt.
pub async fn a_released_activity_is_visible_again_with_the_same_attempt(store: Arc<dyn Store>) {
    schedule(&*store, timed(60_000, None)).await;
    store
        .poll_activity_tasks_any("aw", T0 + 10, 10)
        .await
        .unwrap();
    store
        .release_activity(attempt_of("run-1", 1, 2))
        .await
        .unwrap();
    assert!(
        store
            .poll_activity_tasks_any("aw2", T0 + 10, 10)
            .await
            .unwrap()
            .is_empty(),
        "releasing a stale attempt changes nothing"
    );
    store
        .release_activity(attempt_of("run-1", 1, 1))
        .await
        .unwrap();
    let a = store.pending_activities("run-1").await.unwrap().remove(0);
    assert_eq!((a.attempt, a.started_ms, a.lease_until_ms), (1, None, None));
    let again = store
        .poll_activity_tasks_any("aw2", T0 + 10, 10)
        .await
        .unwrap();
    assert_eq!((again.len(), again[0].attempt), (1, 1));
}

/// Expired activities lists expired leases and passed schedule deadlines.
pub async fn expired_activities_lists_expired_leases_and_passed_schedule_deadlines(
    store: Arc<dyn Store>,
) {
    start(&*store, "wf-1", "run-1", T0).await;
    let s2c = ActivityOptions {
        schedule_to_close: Some(Duration::from_millis(30_000)),
        ..Default::default()
    };
    run_task(&*store, T0, |_, c| {
        c.new_activities = vec![
            activity(1, timed(10_000, None)),
            activity(2, s2c.clone()),
            activity(3, s2c.clone()),
        ]
    })
    .await;
    let leased = store.poll_activity_tasks_any("aw", T0, 2).await.unwrap();
    assert_eq!(leased.len(), 2);
    // seq 2 runs until its schedule-to-close deadline; seq 3 is never started.
    assert_eq!(leased[1].lease_until_ms, Some(T0 + 30_000));

    let seqs = |tasks: Vec<crate::store::ActivityTask>| -> Vec<u32> {
        tasks.into_iter().map(|t| t.seq).collect()
    };
    assert!(store
        .expired_activities(T0 + 9_999, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.next_wakeup(T0).await.unwrap(), Some(T0 + 10_000));
    assert_eq!(
        seqs(store.expired_activities(T0 + 10_000, 10).await.unwrap()),
        [1]
    );
    assert_eq!(
        seqs(store.expired_activities(T0 + 30_000, 10).await.unwrap()),
        [1, 2, 3]
    );
    assert_eq!(
        seqs(store.expired_activities(T0 + 30_000, 2).await.unwrap()),
        [1, 2]
    );
    assert!(
        store
            .poll_activity_tasks_any("aw", T0 + 30_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "an activity past its schedule-to-close deadline is not started"
    );
    // Listing is not claiming: the expiry stays until a retry or resolution handles it.
    assert_eq!(
        seqs(store.expired_activities(T0 + 30_000, 10).await.unwrap()),
        [1, 2, 3]
    );
    assert!(store
        .retry_activity(
            attempt_of("run-1", 1, 1),
            T0 + 31_000,
            failure("timeout"),
            T0
        )
        .await
        .unwrap());
    assert_eq!(
        seqs(store.expired_activities(T0 + 30_000, 10).await.unwrap()),
        [2, 3]
    );
}

/// Cancelled activities are dropped.
pub async fn cancelled_activities_are_dropped(store: Arc<dyn Store>) {
    schedule(&*store, timed(60_000, None)).await;
    store
        .deliver(Delivery::new("wf-1", signal("cancel-it", None), T0 + 1))
        .await
        .unwrap();
    run_task(&*store, T0 + 2, |_, c| {
        c.cancel_activities = vec![1];
        c.new_activities = vec![activity(2, timed(1000, None))];
    })
    .await;
    let seqs: Vec<u32> = store
        .pending_activities("run-1")
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.seq)
        .collect();
    assert_eq!(seqs, [2]);
    let out = ActivityResolution::Completed {
        result: payload(()),
        attempts: 1,
    };
    assert!(!store
        .resolve_activity(attempt_of("run-1", 1, 1), out, T0 + 3)
        .await
        .unwrap());
}

/// An attempt is current while it is leased and its task stands: a cancelled activity's, a
/// retried attempt's, an unleased or a closed run's attempts are not (the engine that runs them
/// tells them they were cancelled).
pub async fn attempts_stop_being_current_when_cancelled_retried_or_closed(store: Arc<dyn Store>) {
    schedule(&*store, timed(60_000, None)).await;
    let key = |seq: u32, attempt: u32| attempt_of("run-1", seq, attempt);
    // Scheduled, not yet leased.
    assert_eq!(
        store.current_attempts(vec![key(1, 1)]).await.unwrap(),
        [false]
    );
    store
        .deliver(Delivery::new("wf-1", signal("more", None), T0 + 1))
        .await
        .unwrap();
    run_task(&*store, T0 + 1, |_, c| {
        c.new_activities = vec![
            activity(2, timed(60_000, None)),
            activity(3, timed(60_000, None)),
        ];
    })
    .await;
    assert_eq!(
        store
            .poll_activity_tasks_any("aw", T0 + 2, 10)
            .await
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        store
            .current_attempts(vec![key(1, 1), key(2, 1), key(3, 1), key(3, 2), key(9, 1)])
            .await
            .unwrap(),
        [true, true, true, false, false]
    );
    assert!(store
        .retry_activity(attempt_of("run-1", 2, 1), T0 + 3, failure("boom"), T0)
        .await
        .unwrap());
    store
        .deliver(Delivery::new("wf-1", signal("cancel-it", None), T0 + 4))
        .await
        .unwrap();
    run_task(&*store, T0 + 5, |_, c| c.cancel_activities = vec![1]).await;
    assert_eq!(
        store
            .current_attempts(vec![key(1, 1), key(2, 1), key(3, 1)])
            .await
            .unwrap(),
        [false, false, true]
    );
    store.terminate("wf-1", "enough", T0 + 6).await.unwrap();
    assert_eq!(
        store.current_attempts(vec![key(3, 1)]).await.unwrap(),
        [false]
    );
}

/// Polls filtered by name take only those activities.
pub async fn polls_filtered_by_name_take_only_those_activities(store: Arc<dyn Store>) {
    schedule(&*store, timed(60_000, None)).await;
    let other = store
        .poll_activity_tasks(ActivityPoll {
            worker_id: String::from("aw"),
            now_ms: T0 + 1,
            max: 10,
            names: Some(vec!["refund".into()]),
            task_queues: None,
        })
        .await
        .unwrap();
    assert!(
        other.is_empty(),
        "a worker without `charge` must not lease it"
    );
    let mine = store
        .poll_activity_tasks(ActivityPoll {
            worker_id: String::from("aw"),
            now_ms: T0 + 1,
            max: 10,
            names: Some(vec!["charge".into()]),
            task_queues: None,
        })
        .await
        .unwrap();
    assert_eq!(mine.len(), 1);
}

/// An activity sent to a task queue is leased only by polls that serve its queue, and counts
/// under that queue; one sent to no queue is leased by any poll, under its run's queue.
pub async fn an_activity_sent_to_a_task_queue_is_leased_only_where_served(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let gpu = ActivityOptions {
        task_queue: Some("gpu".into()),
        ..timed(60_000, None)
    };
    run_task(&*store, T0, |_, c| {
        c.new_activities = vec![activity(1, gpu.clone()), activity(2, gpu), {
            activity(3, timed(60_000, None))
        }]
    })
    .await;
    let poll = |worker: &str, queues: &[&str], max: usize| ActivityPoll {
        worker_id: worker.into(),
        now_ms: T0 + 1,
        max,
        names: None,
        task_queues: Some(queues.iter().map(|q| q.to_string()).collect()),
    };
    let cpu = store
        .poll_activity_tasks(poll("cpu", &["default", "other"], 10))
        .await
        .unwrap();
    assert_eq!(cpu.len(), 1, "only the activity sent to no queue: {cpu:?}");
    assert_eq!((cpu[0].seq, cpu[0].task_queue.as_str()), (3, "default"));
    let limit = FlowLimit::concurrency(FlowScope::task_queue("gpu"), 1);
    store.admin().set_flow_limit(limit, T0).await.unwrap();
    let leased = store
        .poll_activity_tasks(poll("gpu", &["gpu"], 10))
        .await
        .unwrap();
    assert_eq!(leased.len(), 1, "the gpu queue's limit of 1: {leased:?}");
    assert_eq!(leased[0].task_queue, "gpu");
    assert_eq!(leased[0].options.task_queue.as_deref(), Some("gpu"));
    let pending = store.pending_activities("run-1").await.unwrap();
    let queues: Vec<(u32, &str)> = pending
        .iter()
        .map(|a| (a.seq, a.task_queue.as_str()))
        .collect();
    assert_eq!(queues, [(1, "gpu"), (2, "gpu"), (3, "default")]);
}

/// Activities leased in their commit are not polled.
pub async fn activities_leased_in_their_commit_are_not_polled(store: Arc<dyn Store>) {
    start(&*store, "wf-1", "run-1", T0).await;
    let task = lease_one(&*store, "w", T0).await;
    let mut c = commit_for(&task, "w", T0);
    c.new_activities.push(activity(1, timed(60_000, None)));
    c.lease_activities_to = Some("w".into());
    store.commit_workflow_task(c).await.unwrap();
    assert!(store
        .poll_activity_tasks_any("aw", T0 + 1, 10)
        .await
        .unwrap()
        .is_empty());
    let pending = store.pending_activities("run-1").await.unwrap();
    assert_eq!(pending[0].started_ms, Some(T0));
    assert_eq!(pending[0].lease_until_ms, Some(T0 + 60_000));
    // Its attempt can be resolved as usual.
    assert!(store
        .resolve_activity(
            attempt_of("run-1", 1, 1),
            ActivityResolution::Completed {
                result: payload(1),
                attempts: 1
            },
            T0 + 5
        )
        .await
        .unwrap());
}
