//! Start delay on the three stores, with the engine's test clock: a delayed run exists at once
//! (describe shows when it starts), keeps the signals sent to it, and runs its first workflow
//! task only once its delay has passed.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::client::StartOptions;
use wf_sdk::prelude::*;

const MINUTE: Duration = Duration::from_secs(60);

/// Greets its input once poked; counts the pokes it saw before its first task.
#[derive(Default)]
pub struct Greeter {
    pokes: u32,
}

#[workflow]
impl Greeter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, name: String) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.pokes > 0).await;
        Ok(format!("hello {name}, poked {}", ctx.state(|s| s.pokes)))
    }

    #[signal]
    fn poke(&mut self) {
        self.pokes += 1;
    }
}

fn engine(backend: Backend, tag: &str, clock: &TestClock) -> wf_sdk::engine::EngineBuilder {
    builder(backend, tag)
        .clock(clock.clone())
        .workflow::<Greeter>()
}

/// Waits long enough (in real time) for a poll of the engine to have run a ready task.
async fn a_few_polls() {
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn a_delayed_run_waits_for_its_delay_then_runs(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "start-delay", &clock)
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let options = StartOptions::new().start_delay(MINUTE);
    let h = client
        .start_with::<Greeter>("g-1", "ada".into(), options)
        .await
        .unwrap();
    assert!(h.start_outcome().is_some_and(|s| s.started));

    // It exists at once, and says when it starts.
    let d = h.describe().await.unwrap();
    assert_eq!(d.status, RunStatus::Running);
    assert_eq!(d.start_at, Some(d.started_at + MINUTE));
    assert_eq!(d.history_length, 1, "no task before the delay: {d:?}");
    // A signal is kept, and runs nothing before the delay.
    h.poke().await.unwrap();
    a_few_polls().await;
    clock.advance(MINUTE - Duration::from_secs(1));
    a_few_polls().await;
    let d = h.describe().await.unwrap();
    assert_eq!(d.history_length, 1, "ran before its delay: {d:?}");

    clock.advance(Duration::from_secs(1));
    assert_eq!(h.result().await.unwrap(), "hello ada, poked 1");
    engine.shutdown().await;
}

async fn an_undelayed_start_runs_at_once(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "start-now", &clock).build().await.unwrap();
    let client = engine.client();
    let options = StartOptions::new().start_delay(Duration::ZERO);
    let h = client
        .start_with::<Greeter>("g-0", "bob".into(), options)
        .await
        .unwrap();
    assert_eq!(h.describe().await.unwrap().start_at, None);
    h.poke().await.unwrap();
    assert_eq!(h.result().await.unwrap(), "hello bob, poked 1");
    engine.shutdown().await;
}

both!(
    a_delayed_run_waits_for_its_delay_then_runs,
    an_undelayed_start_runs_at_once,
);
