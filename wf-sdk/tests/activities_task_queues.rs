//! Activity task queues, on the three stores with engines sharing one store: an activity sent to
//! a task queue (`ctx.activity(..).task_queue("gpu")`) runs only on engines that serve that queue
//! and waits in the store until one does; activities sent to no queue run anywhere; a flow limit
//! of the queue counts them; a bad queue name fails the call, not the run.

mod common;
use common::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::error::ActivityCallError;
use wf_sdk::flow::{FlowLimit, FlowScope};
use wf_sdk::prelude::*;

/// One pool of workers: its activities say which pool ran them.
pub struct Pool {
    name: &'static str,
    running: Arc<AtomicU32>,
    max: Arc<AtomicU32>,
}

impl Pool {
    fn new(name: &'static str) -> Pool {
        Pool {
            name,
            running: Arc::default(),
            max: Arc::default(),
        }
    }
}

#[activities]
impl Pool {
    /// Renders a frame (for 20 ms), counting how many render at once in this pool.
    #[activity]
    async fn render(&self, _ctx: ActivityContext, _frame: u32) -> Result<String, ActivityError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(self.name.to_string())
    }
}

#[derive(Serialize, Deserialize)]
pub struct Frames {
    frames: u32,
    queue: String,
}

/// Renders `frames` frames on task queue `queue`, then one on no queue: which pool ran each.
#[derive(Default)]
pub struct Job;

#[workflow]
impl Job {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: Frames,
    ) -> Result<Vec<String>, WorkflowError> {
        let mut pools = Vec::new();
        for frame in 0..input.frames {
            let call = ctx
                .activity(Pool::render, frame)
                .task_queue(input.queue.clone());
            pools.push(call.await?);
        }
        pools.push(ctx.activity(Pool::render, input.frames).await?);
        Ok(pools)
    }
}

/// Calls an activity on a task queue whose name no store takes: the error's kind.
#[derive(Default)]
pub struct BadQueue;

#[workflow]
impl BadQueue {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        match ctx.activity(Pool::render, 0).task_queue("gp\0u").await {
            Ok(pool) => Ok(format!("ran on {pool}")),
            Err(ActivityCallError::Failed { kind, attempts, .. }) => {
                Ok(format!("{kind} {attempts}"))
            }
            Err(other) => Ok(format!("another error: {other}")),
        }
    }
}

async fn an_activity_sent_to_a_task_queue_waits_for_an_engine_serving_it(backend: Backend) {
    let shared = shared_store(backend, "activity-queues");
    let cpu = shared()
        .workflow::<Job>()
        .activities(Pool::new("cpu"))
        .build()
        .await
        .unwrap();
    let input = Frames {
        frames: 3,
        queue: "gpu".into(),
    };
    let run = cpu.client().start::<Job>("job-1", input).await.unwrap();
    // No engine serves "gpu": the first frame waits in the store, on the cpu engine too.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let waiting = run.describe().await.unwrap();
    assert_eq!(waiting.status, RunStatus::Running);
    assert_eq!(waiting.pending_activities.len(), 1, "{waiting:?}");
    assert_eq!(waiting.pending_activities[0].attempt_deadline, None);
    // A pool that serves only "gpu" (its workflow worker on that queue runs no workflows here).
    let gpu = shared()
        .task_queue("gpu")
        .activities(Pool::new("gpu"))
        .build()
        .await
        .unwrap();
    let pools = run.result().await.unwrap();
    assert_eq!(&pools[..3], ["gpu", "gpu", "gpu"], "{pools:?}");
    assert_eq!(pools.len(), 4);
    gpu.shutdown().await;
    cpu.shutdown().await;
}

async fn a_flow_limit_of_a_task_queue_counts_the_activities_sent_to_it(backend: Backend) {
    let shared = shared_store(backend, "activity-queues-limit");
    let gpu = Pool::new("gpu");
    let max = gpu.max.clone();
    // One engine runs the workflows and also serves "gpu"; the limit binds that queue only.
    let engine = shared()
        .workflow::<Job>()
        .activity_task_queue("gpu")
        .activities(gpu)
        .flow_limit(FlowLimit::concurrency(FlowScope::task_queue("gpu"), 1))
        .build()
        .await
        .unwrap();
    let mut runs = Vec::new();
    for i in 0..4 {
        let input = Frames {
            frames: 3,
            queue: "gpu".into(),
        };
        runs.push(
            engine
                .client()
                .start::<Job>(&format!("job-{i}"), input)
                .await
                .unwrap(),
        );
    }
    for run in runs {
        assert_eq!(run.result().await.unwrap().len(), 4);
    }
    // The frame on no queue counts under the run's queue, "default", which no limit binds: it
    // may overlap one on "gpu", so at most 2 rendered at once, and never 2 "gpu" frames.
    let max = max.load(Ordering::SeqCst);
    assert!(max <= 2, "{max} rendered at once");
    let pending = engine.client().flow_limits().list().await.unwrap();
    assert_eq!(pending.len(), 1);
    engine.shutdown().await;
}

async fn a_bad_task_queue_name_fails_the_call(backend: Backend) {
    let engine = builder(backend, "activity-queues-bad")
        .workflow::<BadQueue>()
        .activities(Pool::new("cpu"))
        .build()
        .await
        .unwrap();
    let run = engine.client().start::<BadQueue>("bad", ()).await.unwrap();
    assert_eq!(run.result().await.unwrap(), "invalid_task_queue 0");
    engine.shutdown().await;
    let refused = builder(backend, "activity-queues-bad-2")
        .activity_task_queue("")
        .build()
        .await;
    assert!(
        matches!(refused, Err(WfError::InvalidConfig(_))),
        "{refused:?}"
    );
}

both!(
    an_activity_sent_to_a_task_queue_waits_for_an_engine_serving_it,
    a_flow_limit_of_a_task_queue_counts_the_activities_sent_to_it,
    a_bad_task_queue_name_fails_the_call,
);
