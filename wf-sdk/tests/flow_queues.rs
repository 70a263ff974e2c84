//! Queues of workflow starts, on the three stores, with several engines sharing one store: a
//! queue of concurrency 2 never runs more than 2 of its runs at once over every engine (and
//! all of them finish); priorities order the admissions, describe shows a held run's
//! position, a deduplication id is refused while its run runs; and a run whose engine
//! crashed mid-run does not block a concurrency-1 queue (dbos-transact-py#805): another
//! engine finishes it and the rest follow, one at a time; a queue's rate spaces admissions
//! after its burst.

mod common;
use common::*;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wf_sdk::client::StartOptions;
use wf_sdk::flow::WorkflowQueue;
use wf_sdk::prelude::*;

/// What the runs saw, shared by every engine of a test.
#[derive(Default)]
pub struct Gauge {
    running: AtomicU32,
    /// The most steps running at once.
    max: AtomicU32,
    /// The labels of the steps, in the order they started.
    order: Mutex<Vec<String>>,
    /// Steps labelled `hold` wait until this is set.
    release: AtomicBool,
    /// A step on a crashing engine started (and never ends).
    stuck: AtomicBool,
    /// When each step started.
    starts: Mutex<Vec<Instant>>,
}

impl Gauge {
    fn max(&self) -> u32 {
        self.max.load(Ordering::SeqCst)
    }

    fn order(&self) -> Vec<String> {
        self.order.lock().unwrap().clone()
    }
}

/// The one activity of a queued run; `crashy` on the engine that is to crash: there its first
/// step hangs, as in a process that dies mid-run.
pub struct Steps {
    gauge: Arc<Gauge>,
    crashy: bool,
}

#[activities]
impl Steps {
    /// Runs for `ms` (until released, for the label `hold`), counting how many run at once.
    #[activity]
    async fn step(&self, _ctx: ActivityContext, job: Job) -> Result<(), ActivityError> {
        let g = &self.gauge;
        if self.crashy {
            g.stuck.store(true, Ordering::SeqCst);
            g.order.lock().unwrap().push(job.label);
            return std::future::pending().await;
        }
        let now = g.running.fetch_add(1, Ordering::SeqCst) + 1;
        g.max.fetch_max(now, Ordering::SeqCst);
        g.order.lock().unwrap().push(job.label.clone());
        g.starts.lock().unwrap().push(Instant::now());
        if job.label == "hold" {
            while !g.release.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(job.ms)).await;
        g.running.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

#[derive(Clone, Serialize, Deserialize)]
pub struct Job {
    label: String,
    ms: u64,
}

/// A queued run: one step.
#[derive(Default)]
pub struct Queued;

#[workflow]
impl Queued {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, job: Job) -> Result<String, WorkflowError> {
        ctx.activity(Steps::step, job.clone()).await?;
        Ok(job.label)
    }
}

fn job(label: &str, ms: u64) -> Job {
    Job {
        label: label.into(),
        ms,
    }
}

async fn a_queue_of_two_never_runs_more_than_two_at_once(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let shared = shared_store(backend, "queue-two");
    let mut engines = Vec::new();
    for i in 0..3 {
        let mut b = shared().workflow::<Queued>().activities(Steps {
            gauge: gauge.clone(),
            crashy: false,
        });
        if i == 0 {
            b = b.workflow_queue(WorkflowQueue::new("jobs").concurrency(2));
        }
        engines.push(b.build().await.unwrap());
    }
    let mut handles = Vec::new();
    for i in 0..30 {
        let client = engines[i % 3].client();
        let id = format!("j{i}");
        let h = client
            .enqueue::<Queued>("jobs", &id, job(&id, 10))
            .await
            .unwrap();
        handles.push(h);
    }
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.result().await.unwrap(), format!("j{i}"));
    }
    assert_eq!(gauge.order().len(), 30);
    let max = gauge.max();
    eprintln!("{backend:?}: at most {max} runs of a queue of concurrency 2 ran at once");
    assert!(
        max <= 2,
        "{max} runs ran at once on a queue of concurrency 2"
    );
    assert_eq!(max, 2, "30 runs waiting never filled the queue's 2 slots");
    for e in engines {
        e.shutdown().await;
    }
}

async fn priorities_order_admissions_and_describe_shows_the_position(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let engine = builder(backend, "queue-priority")
        .workflow::<Queued>()
        .activities(Steps {
            gauge: gauge.clone(),
            crashy: false,
        })
        .workflow_queue(WorkflowQueue::new("q").concurrency(1))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let on = |priority: i32| StartOptions::new().queue("q").queue_priority(priority);
    let first = client
        .start_with::<Queued>("hold", job("hold", 0), on(3))
        .await
        .unwrap();
    eventually("the first run admitted", || async {
        (!gauge.order().is_empty()).then_some(())
    })
    .await;
    let mut handles = vec![first];
    for (id, priority) in [("late-a", 5), ("late-b", 5), ("urgent", 1)] {
        let h = client
            .start_with::<Queued>(id, job(id, 0), on(priority))
            .await
            .unwrap();
        handles.push(h);
    }
    let d = client.handle::<Queued>("hold").describe().await.unwrap();
    assert_eq!((d.queue.as_deref(), d.queue_position), (Some("q"), None));
    let mut positions = Vec::new();
    for id in ["urgent", "late-a", "late-b"] {
        let d = client.handle::<Queued>(id).describe().await.unwrap();
        assert_eq!(d.queue.as_deref(), Some("q"));
        assert_eq!(d.start_at, None, "a held run has no start time yet");
        positions.push(d.queue_position);
    }
    assert_eq!(positions, [Some(1), Some(2), Some(3)]);

    // Priority 9: after the others (0, the default, would go first).
    let dedupe = on(9).dedupe_id("order-7");
    client
        .start_with::<Queued>("d-1", job("d-1", 0), dedupe.clone())
        .await
        .unwrap();
    let refused = client
        .start_with::<Queued>("d-2", job("d-2", 0), dedupe)
        .await
        .map(drop)
        .unwrap_err();
    match refused {
        WfError::AlreadyStarted {
            workflow_id,
            run_id: _,
        } => assert_eq!(workflow_id, "d-1"),
        other => panic!("a duplicate dedupe id was taken: {other:?}"),
    }
    gauge.release.store(true, Ordering::SeqCst);
    for h in handles {
        h.result().await.unwrap();
    }
    client.handle::<Queued>("d-1").result().await.unwrap();
    assert_eq!(
        gauge.order(),
        ["hold", "urgent", "late-a", "late-b", "d-1"],
        "priority first, then arrival"
    );
    assert_eq!(gauge.max(), 1);
    let queues = client.workflow_queues();
    assert_eq!(
        queues.list().await.unwrap(),
        [WorkflowQueue::new("q").concurrency(1)]
    );
    assert!(queues.remove("q").await.unwrap());
    let bad = queues.set(WorkflowQueue::new("q").concurrency(0)).await;
    assert!(matches!(bad, Err(WfError::InvalidArgument(_))), "{bad:?}");
    engine.shutdown().await;
}

async fn a_crashed_engines_run_does_not_block_a_queue_of_one(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let lease = Duration::from_secs(1);
    let shared = shared_store(backend, "queue-crash");
    let first = shared()
        .liveness_lease(lease)
        .workflow::<Queued>()
        .activities(Steps {
            gauge: gauge.clone(),
            crashy: true,
        })
        .workflow_queue(WorkflowQueue::new("solo").concurrency(1))
        .build()
        .await
        .unwrap();
    let client = first.client();
    for i in 0..5 {
        let id = format!("s{i}");
        client
            .enqueue::<Queued>("solo", &id, job(&id, 20))
            .await
            .unwrap();
    }
    eventually("the first run's step running", || async {
        gauge.stuck.load(Ordering::SeqCst).then_some(())
    })
    .await;
    let second = shared()
        .liveness_lease(lease)
        .workflow::<Queued>()
        .activities(Steps {
            gauge: gauge.clone(),
            crashy: false,
        })
        .build()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        gauge.order(),
        ["s0"],
        "another run started in the taken slot"
    );
    // The process dies mid-run: its run stays admitted until the second engine finishes it.
    drop(first);
    let client = second.client();
    for i in 0..5 {
        let id = format!("s{i}");
        let result = client.handle::<Queued>(&id).result().await.unwrap();
        assert_eq!(result, id);
    }
    assert_eq!(
        gauge.order(),
        ["s0", "s0", "s1", "s2", "s3", "s4"],
        "the recovered run finished first, then the rest in order"
    );
    assert_eq!(
        gauge.max(),
        1,
        "more than one run at once on a queue of one"
    );
    second.shutdown().await;
}

async fn a_queue_rate_spaces_admissions(backend: Backend) {
    let gauge = Arc::new(Gauge::default());
    let shared = shared_store(backend, "queue-rate");
    let mut engines = Vec::new();
    for i in 0..2 {
        let mut b = shared().workflow::<Queued>().activities(Steps {
            gauge: gauge.clone(),
            crashy: false,
        });
        if i == 0 {
            // A burst of 4, then 4 a second.
            b = b.workflow_queue(WorkflowQueue::new("paced").rate(4, Duration::from_secs(1)));
        }
        engines.push(b.build().await.unwrap());
    }
    let mut handles = Vec::new();
    for i in 0..8 {
        let id = format!("p{i}");
        let client = engines[i % 2].client();
        let h = client
            .enqueue::<Queued>("paced", &id, job(&id, 0))
            .await
            .unwrap();
        handles.push(h);
    }
    for h in handles {
        h.result().await.unwrap();
    }
    let mut starts = gauge.starts.lock().unwrap().clone();
    starts.sort();
    let span = starts[7] - starts[0];
    eprintln!("{backend:?}: 8 runs on a queue of 4/s (burst 4) started over {span:?}");
    // The 4 after the burst need a second of refill; a bound well under it, for a loaded VM.
    assert!(
        span >= Duration::from_millis(700),
        "8 runs on a queue of 4 a second started within {span:?}"
    );
    for e in engines {
        e.shutdown().await;
    }
}

both!(
    a_queue_rate_spaces_admissions,
    a_queue_of_two_never_runs_more_than_two_at_once,
    priorities_order_admissions_and_describe_shows_the_position,
    a_crashed_engines_run_does_not_block_a_queue_of_one,
);
