//! Queues of workflow starts: a run started on a queue is held (no poll leases it) until an
//! admission pass lets it in; a queue of concurrency 1 admits one run at a time, by priority
//! then arrival, the next one once the one admitted closes; a queue's rate admits as its
//! token bucket refills; a deduplication id is refused while a run of the queue holds it; a
//! queue without settings admits at once; within one priority, fairness keys are admitted in
//! turns by weight, whatever their backlogs.

use super::fixtures::*;
use crate::data::queue::{QueueSpot, QueuedStart, WorkflowQueue};
use crate::error::StoreError;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Starts run `run_id` of workflow `workflow_id` on `queue` with `priority` and `dedupe`.
pub(super) async fn enqueue(
    store: &dyn Store,
    id: &str,
    queue: &str,
    priority: i32,
    dedupe: Option<&str>,
    now_ms: i64,
) -> Result<(), StoreError> {
    let start = QueuedStart {
        priority,
        dedupe_id: dedupe.map(str::to_owned),
        ..QueuedStart::on(queue)
    };
    enqueue_start(store, id, start, now_ms).await
}

/// Starts run `run-{id}` of workflow `id` as `start` says.
async fn enqueue_start(
    store: &dyn Store,
    id: &str,
    start: QueuedStart,
    now_ms: i64,
) -> Result<(), StoreError> {
    let mut req = start_request(id, &format!("run-{id}"), now_ms);
    req.queue = Some(start);
    store.start_run(req).await.map(drop)
}

/// Sets queue `name` to a concurrency of 1.
async fn queue_of_one(store: &dyn Store, name: &str) {
    store
        .admin()
        .set_workflow_queue(WorkflowQueue::new(name).concurrency(1), T0)
        .await
        .unwrap();
}

/// Puts `n` runs of fairness key `key` of weight `weight` on queue `queue`, ids `{key}{i}`,
/// at `now_ms` and after.
async fn enqueue_keyed(
    store: &dyn Store,
    queue: &str,
    key: &str,
    weight: f64,
    n: usize,
    now_ms: i64,
) {
    for i in 0..n {
        let start = QueuedStart {
            fairness_key: Some(key.into()),
            fairness_weight: Some(weight),
            ..QueuedStart::on(queue)
        };
        enqueue_start(store, &format!("{key}{i}"), start, now_ms + i as i64)
            .await
            .unwrap();
    }
}

/// The fairness keys (the ids' letters) of the next `n` runs a queue of concurrency 1
/// admits, each closed before the next pass.
async fn admit_one_by_one(store: &dyn Store, n: usize, now_ms: i64) -> String {
    let mut keys = String::new();
    for step in 0..n as i64 {
        let now = now_ms + 10 * step;
        let pass = store.admin().admit_queued(now).await.unwrap();
        assert_eq!(pass.admitted, 1, "a queue of one with held runs");
        let leased = ready(store, now + 1).await;
        assert_eq!(leased.len(), 1, "one run at a time: {leased:?}");
        store.terminate(&leased[0], "done", now + 2).await.unwrap();
        keys.extend(leased[0].chars().next());
    }
    keys
}

/// The workflow ids of the tasks ready at `now_ms`.
async fn ready(store: &dyn Store, now_ms: i64) -> Vec<String> {
    let tasks = store
        .poll_workflow_tasks_any("w-1", now_ms, 10_000, 100)
        .await
        .unwrap();
    tasks.into_iter().map(|t| t.run.workflow_id).collect()
}

/// A queue of concurrency 1 holds every run until a pass, admits one at a time (priority,
/// then arrival), and the next only once the admitted one closed; describe's position counts
/// the held runs in that order.
pub async fn a_queue_of_one_admits_one_at_a_time_by_priority(store: Arc<dyn Store>) {
    let admin = store.admin();
    queue_of_one(&*store, "q").await;
    assert_eq!(
        admin.workflow_queues().await.unwrap(),
        [WorkflowQueue::new("q").concurrency(1)]
    );
    enqueue(&*store, "a", "q", 5, None, T0).await.unwrap();
    enqueue(&*store, "b", "q", 5, None, T0 + 1).await.unwrap();
    enqueue(&*store, "c", "q", 1, None, T0 + 2).await.unwrap();
    assert!(ready(&*store, T0 + 10).await.is_empty(), "held runs leased");
    let spot = admin.queue_spot("run-b").await.unwrap();
    assert_eq!(
        spot,
        Some(QueueSpot {
            queue: "q".into(),
            position: Some(3)
        })
    );

    let mut order = Vec::new();
    for step in 0..3 {
        let now = T0 + 100 * (step + 1);
        let pass = admin.admit_queued(now).await.unwrap();
        assert_eq!((pass.admitted, pass.held), (1, 2 - step as u64));
        // Full: another pass admits nothing while the admitted run runs.
        let again = admin.admit_queued(now + 1).await.unwrap();
        assert_eq!(again.admitted, 0, "a full queue admitted another run");
        let leased = ready(&*store, now + 2).await;
        assert_eq!(leased.len(), 1, "one run at a time: {leased:?}");
        let id = leased[0].clone();
        let spot = admin
            .queue_spot(&format!("run-{id}"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(spot.position, None, "an admitted run has no position");
        store.terminate(&id, "done", now + 3).await.unwrap();
        order.push(id);
    }
    assert_eq!(order, ["c", "a", "b"], "priority first, then arrival");
    assert!(admin.remove_workflow_queue("q").await.unwrap());
    assert!(admin.workflow_queues().await.unwrap().is_empty());
}

/// A deduplication id is refused (`AlreadyStarted`, naming the run that holds it) while a
/// run of the queue holds it, held or admitted; once that run closed, or on another queue,
/// it is taken again.
pub async fn a_queue_refuses_a_dedupe_id_held_by_a_running_run(store: Arc<dyn Store>) {
    let admin = store.admin();
    queue_of_one(&*store, "q").await;
    enqueue(&*store, "a", "q", 0, Some("d-1"), T0)
        .await
        .unwrap();
    let refused = enqueue(&*store, "b", "q", 0, Some("d-1"), T0 + 1).await;
    match refused {
        Err(StoreError::AlreadyStarted {
            workflow_id,
            run_id,
        }) => assert_eq!((workflow_id.as_str(), run_id.as_str()), ("a", "run-a")),
        other => panic!("a duplicate dedupe id was taken: {other:?}"),
    }
    assert!(store.get_run("b", None).await.unwrap().is_none());
    enqueue(&*store, "c", "other", 0, Some("d-1"), T0 + 2)
        .await
        .unwrap();
    admin.admit_queued(T0 + 3).await.unwrap();
    let admitted = enqueue(&*store, "d", "q", 0, Some("d-1"), T0 + 4).await;
    assert!(
        matches!(admitted, Err(StoreError::AlreadyStarted { .. })),
        "{admitted:?}"
    );
    store.terminate("a", "done", T0 + 5).await.unwrap();
    enqueue(&*store, "e", "q", 0, Some("d-1"), T0 + 6)
        .await
        .unwrap();
}

/// A queue without settings holds its runs only until the next pass, which admits them all.
pub async fn a_queue_without_settings_admits_at_once(store: Arc<dyn Store>) {
    for (n, id) in ["a", "b", "c"].into_iter().enumerate() {
        enqueue(&*store, id, "free", 0, None, T0 + n as i64)
            .await
            .unwrap();
    }
    assert!(ready(&*store, T0 + 10).await.is_empty(), "held runs leased");
    let pass = store.admin().admit_queued(T0 + 20).await.unwrap();
    assert_eq!((pass.admitted, pass.held), (3, 0));
    let mut leased = ready(&*store, T0 + 21).await;
    leased.sort();
    assert_eq!(leased, ["a", "b", "c"]);
    let run = store.get_run("a", None).await.unwrap().unwrap();
    assert_eq!(
        run.start_at_ms,
        Some(T0 + 20),
        "admitted at the pass's time"
    );
}

/// A queue's rate admits as its token bucket refills (full, 2, when first set; 2 a second);
/// setting the queue again keeps the bucket's tokens: no fresh burst.
pub async fn a_queue_rate_admits_as_its_bucket_refills(store: Arc<dyn Store>) {
    let admin = store.admin();
    let rate = WorkflowQueue::new("r").rate(2, Duration::from_secs(1));
    admin.set_workflow_queue(rate.clone(), T0).await.unwrap();
    assert_eq!(
        admin.workflow_queues().await.unwrap(),
        std::slice::from_ref(&rate)
    );
    for n in 0..5 {
        enqueue(&*store, &format!("r{n}"), "r", 0, None, T0 + n)
            .await
            .unwrap();
    }
    let admitted = |at: i64| {
        let admin = store.admin();
        async move { admin.admit_queued(at).await.unwrap().admitted }
    };
    assert_eq!(admitted(T0 + 10).await, 2, "the full bucket");
    assert_eq!(admitted(T0 + 11).await, 0, "an empty bucket admitted");
    assert_eq!(admitted(T0 + 610).await, 1, "1.2 tokens after 600 ms");
    assert_eq!(admitted(T0 + 1110).await, 1, "0.2 + 1 tokens 500 ms later");
    admin.set_workflow_queue(rate, T0 + 1110).await.unwrap();
    assert_eq!(
        admitted(T0 + 1111).await,
        0,
        "setting the queue again refilled it"
    );
    assert_eq!(admitted(T0 + 1610).await, 1);
    let mut leased = ready(&*store, T0 + 1611).await;
    leased.sort();
    assert_eq!(leased, ["r0", "r1", "r2", "r3", "r4"]);
}

/// Within one priority, fairness keys of equal weight are admitted in turns though one has 5
/// times the backlog and came first; a run of a lower priority still goes first; a key that
/// was idle starts at the queue's clock, with no credit for its idling.
pub async fn queue_keys_of_equal_weight_take_turns_whatever_their_backlogs(store: Arc<dyn Store>) {
    queue_of_one(&*store, "fair").await;
    enqueue_keyed(&*store, "fair", "a", 1.0, 20, T0).await;
    enqueue_keyed(&*store, "fair", "b", 1.0, 4, T0 + 100).await;
    let urgent = QueuedStart {
        priority: -1,
        fairness_key: Some("u".into()),
        ..QueuedStart::on("fair")
    };
    enqueue_start(&*store, "u", urgent, T0 + 200).await.unwrap();
    let keys = admit_one_by_one(&*store, 9, T0 + 1_000).await;
    assert_eq!(keys, "uabababab", "priority first, then the keys in turns");
    enqueue_keyed(&*store, "fair", "e", 1.0, 4, T0 + 2_000).await;
    let keys = admit_one_by_one(&*store, 4, T0 + 3_000).await;
    assert_eq!(keys, "eaea", "a new key starts at the clock, not before it");
}

/// Fairness keys of weights 2 and 1 share the admissions 2 to 1 while both have runs held.
pub async fn queue_keys_share_admissions_by_weight(store: Arc<dyn Store>) {
    let admin = store.admin();
    queue_of_one(&*store, "w").await;
    enqueue_keyed(&*store, "w", "c", 2.0, 20, T0).await;
    enqueue_keyed(&*store, "w", "d", 1.0, 20, T0 + 100).await;
    let keys = admit_one_by_one(&*store, 12, T0 + 1_000).await;
    let heavy = keys.chars().filter(|k| *k == 'c').count();
    assert_eq!(
        heavy, 8,
        "weight 2 of 3 took {heavy} of 12 admissions: {keys}"
    );
    let spot = admin.queue_spot("run-d19").await.unwrap().unwrap();
    assert_eq!(spot.position, Some(28), "the last of 28 held in fair order");
}

/// Deleting a run (held on its queue, so terminated first) or purging a closed one removes its
/// queue row: the queue no longer knows it, and its deduplication id is free.
pub async fn a_deleted_or_purged_run_leaves_its_queue(store: Arc<dyn Store>) {
    let admin = store.admin();
    queue_of_one(&*store, "q").await;
    enqueue(&*store, "a", "q", 0, Some("d-1"), T0)
        .await
        .unwrap();
    enqueue(&*store, "b", "q", 0, None, T0 + 1).await.unwrap();
    assert!(admin.queue_spot("run-a").await.unwrap().is_some());
    admin.delete_run("a", None, "erase", T0 + 2).await.unwrap();
    assert_eq!(admin.queue_spot("run-a").await.unwrap(), None);
    let spot = admin.queue_spot("run-b").await.unwrap().unwrap();
    assert_eq!(spot.position, Some(1), "the deleted run no longer counts");
    enqueue(&*store, "c", "q", 0, Some("d-1"), T0 + 2)
        .await
        .unwrap();
    store.terminate("b", "done", T0 + 3).await.unwrap();
    let purged = admin.purge_closed_runs(T0 + 4, 10).await.unwrap();
    assert!(!purged.is_empty(), "the closed run was purged");
    assert_eq!(admin.queue_spot("run-b").await.unwrap(), None);
}
