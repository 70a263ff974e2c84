//! Start delay and debounce on the three stores, with the engine's test clock: a delayed run
//! exists at once (describe shows when it starts), keeps the signals sent to it, and runs its
//! first workflow task only once its delay has passed; debounced starts within the window make
//! one run that sees the last input, a start after it began makes another, and two engines
//! sharing a store debouncing at once make one run.

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

/// Returns the input it ran with.
#[derive(Default)]
pub struct Digest;

#[workflow]
impl Digest {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, input: String) -> Result<String, WorkflowError> {
        Ok(input)
    }
}

fn engine(backend: Backend, tag: &str, clock: &TestClock) -> wf_sdk::engine::EngineBuilder {
    builder(backend, tag)
        .clock(clock.clone())
        .workflow::<Greeter>()
        .workflow::<Digest>()
}

const WINDOW: Duration = Duration::from_secs(5);

fn debounced() -> StartOptions {
    StartOptions::new().debounce("user-7", WINDOW)
}

/// The runs of `Digest` in the store, newest first.
async fn digests(client: &Client) -> Vec<wf_sdk::client::RunInfo> {
    client
        .list(wf_sdk::client::ListFilter {
            workflow_type: Some("Digest".into()),
            ..Default::default()
        })
        .await
        .unwrap()
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

async fn debounced_starts_within_the_window_make_one_run_with_the_last_input(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "debounce-5", &clock).build().await.unwrap();
    let client = engine.client();
    let mut handles = Vec::new();
    for i in 0..5 {
        let h = client
            .start_with::<Digest>(&format!("digest-{i}"), format!("input {i}"), debounced())
            .await
            .unwrap();
        handles.push(h);
        clock.advance(Duration::from_secs(1));
    }
    for (i, h) in handles.iter().enumerate() {
        // Every call answers the first call's run; only the first started it.
        assert_eq!(h.workflow_id(), "digest-0");
        let started = h.start_outcome().map(|s| s.started);
        assert_eq!(started, Some(i == 0), "call {i}");
    }
    assert_eq!(digests(&client).await.len(), 1);
    // The last start (at 4 s) pushed the start to 9 s: not run at 8 s.
    clock.advance(Duration::from_secs(3));
    a_few_polls().await;
    let d = handles[0].describe().await.unwrap();
    assert_eq!(
        d.history_length, 1,
        "ran before the window after the last start: {d:?}"
    );
    clock.advance(Duration::from_secs(1));
    assert_eq!(handles[4].result().await.unwrap(), "input 4");
    assert_eq!(digests(&client).await.len(), 1);
    engine.shutdown().await;
}

async fn a_debounced_start_after_the_run_began_makes_a_second_run(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "debounce-again", &clock)
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let first = client
        .start_with::<Digest>("first", "a".into(), debounced())
        .await
        .unwrap();
    clock.advance(WINDOW);
    assert_eq!(first.result().await.unwrap(), "a");
    let second = client
        .start_with::<Digest>("second", "b".into(), debounced())
        .await
        .unwrap();
    assert_eq!(second.workflow_id(), "second");
    assert!(second.start_outcome().is_some_and(|s| s.started));
    clock.advance(WINDOW);
    assert_eq!(second.result().await.unwrap(), "b");
    assert_eq!(digests(&client).await.len(), 2);
    engine.shutdown().await;
}

async fn two_engines_debouncing_at_once_make_one_run(backend: Backend) {
    let clock = TestClock::new();
    let shared = shared_store(backend, "debounce-shared");
    let mut engines = Vec::new();
    for _ in 0..2 {
        let b = shared().clock(clock.clone()).workflow::<Digest>();
        engines.push(b.build().await.unwrap());
    }
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..10 {
        let client = engines[i % 2].client();
        calls.spawn(async move {
            client
                .start_with::<Digest>(&format!("shared-{i}"), format!("input {i}"), debounced())
                .await
                .unwrap()
                .start_outcome()
                .is_some_and(|s| s.started)
        });
    }
    let mut started = 0;
    while let Some(s) = calls.join_next().await {
        started += u32::from(s.unwrap());
    }
    assert_eq!(
        started, 1,
        "10 debounced starts on two engines started {started} runs"
    );
    let runs = digests(&engines[0].client()).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    clock.advance(WINDOW);
    let h = engines[1].client().handle::<Digest>(&runs[0].workflow_id);
    assert!(h.result().await.unwrap().starts_with("input "));
    for e in engines {
        e.shutdown().await;
    }
}

both!(
    a_delayed_run_waits_for_its_delay_then_runs,
    an_undelayed_start_runs_at_once,
    debounced_starts_within_the_window_make_one_run_with_the_last_input,
    a_debounced_start_after_the_run_began_makes_a_second_run,
    two_engines_debouncing_at_once_make_one_run,
);
