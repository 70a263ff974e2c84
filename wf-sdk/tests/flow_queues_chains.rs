//! Queued runs outside admission, on the three stores: a run of a concurrency-1 queue that
//! continues as new, or fails and is retried by its retry policy, goes on counting as the
//! queue's one running run, so the next run stays held until the chain ends, and is then
//! admitted; a held run that is cancelled closes at once, as cancelled, and never takes the
//! queue's slot.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::client::StartOptions;
use wf_sdk::flow::WorkflowQueue;
use wf_sdk::prelude::*;

/// Continues as new `laps` times, then waits for `finish`.
#[derive(Default)]
pub struct Lapper {
    finish: bool,
}

#[workflow]
impl Lapper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, laps: u32) -> Result<u32, WorkflowError> {
        if laps > 0 {
            return Err(ctx.continue_as_new(&(laps - 1)));
        }
        ctx.wait_condition(|s| s.finish).await;
        Ok(ctx.attempt())
    }

    #[signal]
    fn finish(&mut self) {
        self.finish = true;
    }
}

/// Fails its first attempt (the retry policy starts a second run), then waits for `finish`.
#[derive(Default)]
pub struct Retried {
    finish: bool,
}

#[workflow]
impl Retried {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, _: ()) -> Result<u32, WorkflowError> {
        if ctx.attempt() == 1 {
            return Err(WorkflowError::new("the first attempt fails"));
        }
        ctx.wait_condition(|s| s.finish).await;
        Ok(ctx.attempt())
    }

    #[signal]
    fn finish(&mut self) {
        self.finish = true;
    }
}

/// Waits until the workflow's current run is past its first one and running, and returns its
/// run id.
async fn wait_for_next_run(client: &Client, workflow_id: &str, first_run: &str) -> String {
    let h = client.handle::<Lapper>(workflow_id);
    eventually("the chain's next run", || async {
        let d = h.describe().await.ok()?;
        (d.run_id != first_run && d.status == RunStatus::Running).then_some(d.run_id)
    })
    .await
}

async fn a_run_continued_as_new_keeps_its_queue_slot(backend: Backend) {
    let engine = builder(backend, "queue-chain-can")
        .workflow::<Lapper>()
        .workflow_queue(WorkflowQueue::new("one").concurrency(1))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let on = || StartOptions::new().queue("one");
    let chain = client.start_with::<Lapper>("chain", 1, on()).await.unwrap();
    let first = chain.start_outcome().unwrap().run_id.clone();
    let last = wait_for_next_run(&client, "chain", &first).await;
    // The chain is on its last run, waiting: it holds the queue's one slot. Each start put on
    // the queue runs an admission pass of its own at once; none may admit `next`.
    let next = client.start_with::<Lapper>("next", 0, on()).await.unwrap();
    client.start_with::<Lapper>("after", 0, on()).await.unwrap();
    let d = client.handle::<Lapper>("chain").describe().await.unwrap();
    assert_eq!(d.run_id, last);
    assert_eq!((d.queue.as_deref(), d.queue_position), (Some("one"), None));
    let held = client.handle::<Lapper>("next").describe().await.unwrap();
    assert_eq!(
        held.queue_position,
        Some(1),
        "the chain's run continued as new must keep the queue's one slot"
    );
    client.handle::<Lapper>("chain").finish().await.unwrap();
    assert_eq!(chain.result().await.unwrap(), 1);
    // The chain ended: `next` is admitted, and runs.
    eventually("next admitted", || async {
        let d = client.handle::<Lapper>("next").describe().await.ok()?;
        d.queue_position.is_none().then_some(())
    })
    .await;
    client.handle::<Lapper>("next").finish().await.unwrap();
    assert_eq!(next.result().await.unwrap(), 1);
    engine.shutdown().await;
}

async fn a_retried_run_keeps_its_queue_slot(backend: Backend) {
    let engine = builder(backend, "queue-chain-retry")
        .workflow::<Retried>()
        .workflow_queue(WorkflowQueue::new("one").concurrency(1))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let retry = RetryPolicy {
        initial_interval: Duration::from_millis(10),
        maximum_attempts: 2,
        ..RetryPolicy::default()
    };
    let on = || StartOptions::new().queue("one");
    let first = client
        .start_with::<Retried>("flaky", (), on().retry_policy(retry.clone()))
        .await
        .unwrap();
    let run = first.start_outcome().unwrap().run_id.clone();
    let h = client.handle::<Retried>("flaky");
    eventually("the retry running", || async {
        let d = h.describe().await.ok()?;
        (d.run_id != run && d.status == RunStatus::Running).then_some(())
    })
    .await;
    client
        .start_with::<Retried>("next", (), on())
        .await
        .unwrap();
    let held = client.handle::<Retried>("next").describe().await.unwrap();
    assert_eq!(
        held.queue_position,
        Some(1),
        "the retried run must keep the queue's one slot"
    );
    h.finish().await.unwrap();
    assert_eq!(first.result().await.unwrap(), 2);
    eventually("next admitted", || async {
        let d = client.handle::<Retried>("next").describe().await.ok()?;
        d.queue_position.is_none().then_some(())
    })
    .await;
    engine.shutdown().await;
}

async fn a_cancelled_held_run_closes_at_once(backend: Backend) {
    let engine = builder(backend, "queue-cancel-held")
        .workflow::<Lapper>()
        .workflow_queue(WorkflowQueue::new("one").concurrency(1))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let on = || StartOptions::new().queue("one");
    let first = client.start_with::<Lapper>("first", 0, on()).await.unwrap();
    let victim = client
        .start_with::<Lapper>("victim", 0, on())
        .await
        .unwrap();
    let after = client.start_with::<Lapper>("after", 0, on()).await.unwrap();
    let held = client.handle::<Lapper>("victim").describe().await.unwrap();
    assert_eq!(held.queue_position, Some(1), "{held:?}");
    client.handle::<Lapper>("victim").cancel().await.unwrap();
    // Closed without waiting for the queue: `first` still holds its slot.
    assert!(matches!(victim.result().await, Err(WfError::Cancelled(_))));
    let d = client.handle::<Lapper>("victim").describe().await.unwrap();
    assert_eq!(d.status, RunStatus::Cancelled);
    let history = client.handle::<Lapper>("victim").history().await.unwrap();
    let kinds: Vec<&str> = history.iter().map(|e| e.kind.name()).collect();
    assert_eq!(kinds, ["WorkflowStarted", "WorkflowCancelled"]);
    let next = client.handle::<Lapper>("after").describe().await.unwrap();
    assert_eq!(
        next.queue_position,
        Some(1),
        "the cancelled run left the queue"
    );
    client.handle::<Lapper>("first").finish().await.unwrap();
    first.result().await.unwrap();
    eventually("after admitted", || async {
        let d = client.handle::<Lapper>("after").describe().await.ok()?;
        d.queue_position.is_none().then_some(())
    })
    .await;
    client.handle::<Lapper>("after").finish().await.unwrap();
    after.result().await.unwrap();
    engine.shutdown().await;
}

both!(
    a_cancelled_held_run_closes_at_once,
    a_run_continued_as_new_keeps_its_queue_slot,
    a_retried_run_keeps_its_queue_slot,
);
