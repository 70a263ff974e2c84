//! Queues of workflow starts, on the three stores: fairness keys with weights share a queue's
//! admissions by weight whatever their backlogs (priorities still first), a fairness key or
//! weight without a queue, or a weight of 0, is refused, list shows each run's queue and a
//! held run's position, and a run closing (terminated or completed) frees its slot at once.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wf_sdk::client::{ListFilter, StartOptions};
use wf_sdk::flow::WorkflowQueue;
use wf_sdk::prelude::*;

/// What the runs saw.
#[derive(Default)]
pub struct Seen {
    /// The labels of the runs, in the order their step started.
    order: Mutex<Vec<String>>,
    /// The run labelled `hold` waits until this is set.
    release: AtomicBool,
}

impl Seen {
    fn order(&self) -> Vec<String> {
        self.order.lock().unwrap().clone()
    }
}

/// The step of a queued run.
pub struct Steps {
    seen: Arc<Seen>,
}

#[activities]
impl Steps {
    /// Records `label`; the label `hold` waits until released.
    #[activity]
    async fn step(&self, _ctx: ActivityContext, label: String) -> Result<(), ActivityError> {
        self.seen.order.lock().unwrap().push(label.clone());
        while label == "hold" && !self.seen.release.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}

/// A queued run: one step.
#[derive(Default)]
pub struct Queued;

#[workflow]
impl Queued {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, label: String) -> Result<(), WorkflowError> {
        ctx.activity(Steps::step, label).await?;
        Ok(())
    }
}

/// An engine with queue `queue` of concurrency 1, taken by a run labelled `hold` until
/// released.
async fn held_queue(backend: Backend, tag: &str, queue: &str) -> (Engine, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let engine = builder(backend, tag)
        .workflow::<Queued>()
        .activities(Steps { seen: seen.clone() })
        .workflow_queue(WorkflowQueue::new(queue).concurrency(1))
        .build()
        .await
        .unwrap();
    engine
        .client()
        .enqueue::<Queued>(queue, "hold", "hold".to_string())
        .await
        .unwrap();
    eventually("the first run admitted", || async {
        (!seen.order().is_empty()).then_some(())
    })
    .await;
    (engine, seen)
}

/// How many runs key `b` has held; key `a` has 100 times as many.
const SMALL: usize = 5;

/// A queue of one, held by a first run while key `a` (weight `wa`) puts `100 × SMALL` runs
/// on it and then key `b` (weight 1) `SMALL`, and one run of key `a` of a lower priority
/// number comes last; once released, the urgent run goes first, then of the next
/// `2 × SMALL` admissions key `a` gets about `wa / (wa + 1)`.
async fn keys_share_admissions(backend: Backend, tag: &str, wa: f64) {
    let (engine, seen) = held_queue(backend, tag, "fair").await;
    let client = engine.client();
    let keyed = |key: &str, weight: f64| {
        StartOptions::new()
            .queue("fair")
            .fairness_key(key)
            .fairness_weight(weight)
    };
    for i in 0..100 * SMALL {
        client
            .start_with::<Queued>(&format!("a-{i}"), "a".to_string(), keyed("a", wa))
            .await
            .unwrap();
    }
    for i in 0..SMALL {
        client
            .start_with::<Queued>(&format!("b-{i}"), "b".to_string(), keyed("b", 1.0))
            .await
            .unwrap();
    }
    let urgent = keyed("a", wa).queue_priority(-1);
    client
        .start_with::<Queued>("urgent", "urgent".to_string(), urgent)
        .await
        .unwrap();
    let d = client.handle::<Queued>("b-0").describe().await.unwrap();
    let b0 = d.queue_position.expect("b-0 is held");
    assert!(
        b0 <= 3,
        "the first run of key b is at {b0}, behind the backlog of key a"
    );
    seen.release.store(true, Ordering::SeqCst);
    let order = eventually("the first admissions", || async {
        let order = seen.order();
        (order.len() >= 2 + 2 * SMALL).then_some(order)
    })
    .await;
    assert_eq!(order[..2], ["hold", "urgent"], "priority first: {order:?}");
    let first = &order[2..2 + 2 * SMALL];
    let of_a = first.iter().filter(|l| *l == "a").count() as f64;
    let share = of_a / first.len() as f64;
    let want = wa / (wa + 1.0);
    eprintln!("{backend:?}: key a of weight {wa} took {share:.2} of the first admissions");
    assert!(
        (share - want).abs() <= 0.2 * want,
        "key a of weight {wa} (100 × the backlog) took {of_a} of {}: {first:?}",
        first.len()
    );
    engine.shutdown().await;
}

async fn fairness_keys_of_equal_weight_share_a_queue_whatever_their_backlogs(backend: Backend) {
    keys_share_admissions(backend, "queue-fair-1-1", 1.0).await;
}

async fn fairness_keys_share_a_queue_by_weight(backend: Backend) {
    keys_share_admissions(backend, "queue-fair-2-1", 2.0).await;
}

async fn fairness_without_a_queue_or_of_weight_0_is_refused(backend: Backend) {
    let seen = Arc::new(Seen::default());
    let engine = builder(backend, "queue-fair-refused")
        .workflow::<Queued>()
        .activities(Steps { seen })
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let refused = [
        StartOptions::new().fairness_key("t"),
        StartOptions::new().fairness_weight(2.0),
        StartOptions::new().queue("q").fairness_weight(0.0),
        StartOptions::new().queue("q").fairness_weight(f64::NAN),
    ];
    for options in refused {
        let r = client
            .start_with::<Queued>("x", "x".to_string(), options.clone())
            .await
            .map(drop);
        match r {
            Err(WfError::InvalidArgument(msg)) => {
                assert!(msg.contains("fairness"), "{msg}");
            }
            other => panic!("{options:?} was taken: {other:?}"),
        }
    }
    assert!(client.handle::<Queued>("x").describe().await.is_err());
    engine.shutdown().await;
}

async fn list_shows_a_runs_queue_and_a_held_runs_position(backend: Backend) {
    let (engine, seen) = held_queue(backend, "queue-list", "q").await;
    let client = engine.client();
    for (id, priority) in [("late", 5), ("soon", 1), ("later", 5)] {
        let options = StartOptions::new().queue("q").queue_priority(priority);
        client
            .start_with::<Queued>(id, id.to_string(), options)
            .await
            .unwrap();
    }
    client
        .start::<Queued>("free", "free".to_string())
        .await
        .unwrap();
    let runs = client.list(ListFilter::default()).await.unwrap();
    let mut spots: Vec<(String, Option<String>, Option<u64>)> = runs
        .into_iter()
        .map(|r| (r.workflow_id, r.queue, r.queue_position))
        .collect();
    spots.sort();
    let q = || Some("q".to_string());
    assert_eq!(
        spots,
        [
            ("free".to_string(), None, None),
            ("hold".to_string(), q(), None),
            ("late".to_string(), q(), Some(2)),
            ("later".to_string(), q(), Some(3)),
            ("soon".to_string(), q(), Some(1)),
        ]
    );
    for id in ["late", "soon"] {
        let d = client.handle::<Queued>(id).describe().await.unwrap();
        let listed = spots.iter().find(|s| s.0 == id).unwrap();
        assert_eq!(
            d.queue_position, listed.2,
            "list and describe agree on {id}"
        );
    }
    seen.release.store(true, Ordering::SeqCst);
    client.handle::<Queued>("later").result().await.unwrap();
    let runs = client.list(ListFilter::default()).await.unwrap();
    assert!(
        runs.iter().all(|r| r.queue_position.is_none()),
        "a run admitted keeps no position"
    );
    engine.shutdown().await;
}

async fn a_closing_run_frees_its_queue_slot_at_once(backend: Backend) {
    let seen = Arc::new(Seen::default());
    // The dispatcher's own passes come an hour apart: only the pass each close makes (or an
    // enqueue's) can admit the next run.
    let engine = builder(backend, "queue-freed")
        .queue_recheck(Duration::from_secs(3600))
        .workflow::<Queued>()
        .activities(Steps { seen: seen.clone() })
        .workflow_queue(WorkflowQueue::new("solo").concurrency(1))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    client
        .enqueue::<Queued>("solo", "hold", "hold".to_string())
        .await
        .unwrap();
    for i in 0..5 {
        let id = format!("s{i}");
        client
            .enqueue::<Queued>("solo", &id, id.clone())
            .await
            .unwrap();
    }
    eventually("the first run admitted", || async {
        (!seen.order().is_empty()).then_some(())
    })
    .await;
    assert_eq!(seen.order(), ["hold"], "a queue of one admitted two");
    // Terminated while it holds the slot: the next run is admitted by the termination's pass,
    // and each completion admits the one after it.
    client
        .handle::<Queued>("hold")
        .terminate("make room")
        .await
        .unwrap();
    let order = eventually("the five runs after the terminated one", || async {
        let order = seen.order();
        (order.len() == 6).then_some(order)
    })
    .await;
    assert_eq!(order, ["hold", "s0", "s1", "s2", "s3", "s4"]);
    client.handle::<Queued>("s4").result().await.unwrap();
    engine.shutdown().await;
}

both!(
    a_closing_run_frees_its_queue_slot_at_once,
    list_shows_a_runs_queue_and_a_held_runs_position,
    fairness_keys_of_equal_weight_share_a_queue_whatever_their_backlogs,
    fairness_keys_share_a_queue_by_weight,
    fairness_without_a_queue_or_of_weight_0_is_refused,
);
