//! Replay: nondeterminism is reported (naming both sides) and the run is kept until fixed code
//! replays it; 10,000 waiting runs with a cache of 100 all resume correctly.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    history::EventKind,
    store::{MemoryStore, Store},
    workflow::WorkflowDefinition,
};

/// Version 2 changed the first command: a timer instead of the activity.
#[derive(Default)]
pub struct FlowV2 {
    go: bool,
}

#[workflow(name = "flow")]
impl FlowV2 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.sleep(Duration::from_secs(1)).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(0)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

fn engine_on<W: WorkflowDefinition>(
    store: std::sync::Arc<dyn Store>,
    clock: &TestClock,
) -> wf_sdk::engine::EngineBuilder {
    Engine::builder()
        .store(store)
        .clock(clock.clone())
        .poll_interval(Duration::from_millis(20))
        .workflow::<W>()
        .activities(tools())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_code_fails_the_task_with_nondeterminism_and_keeps_the_run() {
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(MemoryStore::new());
    let clock = TestClock::new();
    let v1 = engine_on::<FlowV1>(store.clone(), &clock)
        .build()
        .await
        .unwrap();
    let h = v1.client().start::<FlowV1>("f", ()).await.unwrap();
    eventually("the activity result", || async {
        let hist = h.history().await.unwrap();
        (count(&hist, |k| matches!(k, EventKind::ActivityCompleted { .. })) == 1).then_some(())
    })
    .await;
    v1.shutdown().await;
    let history = h.history().await.unwrap();

    // New code, empty cache: the signal makes it replay, and replay disagrees.
    let v2 = engine_on::<FlowV2>(store.clone(), &clock)
        .build()
        .await
        .unwrap();
    let h2 = v2.client().handle::<FlowV2>("f");
    h2.go().await.unwrap();
    let failure = eventually("the nondeterminism failure", || async {
        h2.describe().await.unwrap().task_failure
    })
    .await;
    assert!(failure.nondeterminism, "{failure:?}");
    assert!(
        failure.message.contains("ActivityScheduled #1 add_one"),
        "{}",
        failure.message
    );
    assert!(
        failure.message.contains("TimerStarted #1"),
        "{}",
        failure.message
    );
    // Nothing was written, the run is still running, and queries of v2 see the error.
    assert_eq!(h2.history().await.unwrap(), history);
    assert_eq!(h2.describe().await.unwrap().status, RunStatus::Running);
    v2.shutdown().await;

    // The old code replays it and finishes (after the task retry backoff).
    let fixed = engine_on::<FlowV1>(store.clone(), &clock)
        .build()
        .await
        .unwrap();
    let h3 = fixed.client().handle::<FlowV1>("f");
    clock.advance(Duration::from_secs(5));
    assert_eq!(h3.result().await.unwrap(), 2);
    assert!(h3.describe().await.unwrap().task_failure.is_none());
}

#[derive(Default)]
pub struct Waiter {
    got: Option<u32>,
}

#[workflow]
impl Waiter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, id: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.got.is_some()).await;
        Ok(ctx.state(|s| s.got.unwrap_or(0)) + id)
    }

    #[signal]
    fn deliver(&mut self, value: u32) {
        self.got = Some(value);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_waiting_runs_with_a_cache_of_100_all_resume() {
    let engine = Engine::builder()
        .memory()
        .cache_capacity(100)
        .workflow::<Waiter>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    const N: u32 = 10_000;
    let mut starts = Vec::new();
    for i in 0..N {
        let client = client.clone();
        starts.push(tokio::spawn(async move {
            client
                .start::<Waiter>(format!("w-{i}"), i)
                .await
                .map(|_| ())
        }));
    }
    for s in starts {
        s.await.unwrap().unwrap();
    }
    let mut signals = Vec::new();
    for i in 0..N {
        let h = client.handle::<Waiter>(format!("w-{i}"));
        signals.push(tokio::spawn(async move { h.deliver(1_000_000).await }));
    }
    for s in signals {
        s.await.unwrap().unwrap();
    }
    for i in (0..N).step_by(1) {
        let h = client.handle::<Waiter>(format!("w-{i}"));
        assert_eq!(h.result().await.unwrap(), 1_000_000 + i);
    }
}
