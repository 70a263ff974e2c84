//! Local activities (`ctx.activity(..).local()`): run in the workflow worker's process during
//! the workflow task, their outcome recorded once as `LocalActivityCompleted` in the task's
//! commit and never run again on replay; retries in the task, then on a durable timer; final
//! failures and timeouts as `ActivityCallError`; abandoned by a cancelled scope; run again when
//! the worker dies before the commit; nondeterminism when the code changes under a history.
//! Time-based cases use the test clock.

mod common;
use common::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    error::ActivityCallError,
    history::{EventKind, HistoryEvent, LocalOutcome, ReplayError, Replayer},
    payload::Payload,
    workflow::{select, Either},
};

#[derive(Default)]
pub struct Local {
    stop: bool,
}

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub enum Case {
    /// Three local calls in a row, then waits for `stop`.
    Chain,
    /// `flaky` with a short backoff (retried inside the task).
    Flaky,
    /// `flaky` with a backoff longer than the task's window (durable timers).
    FlakyLong,
    /// A non-retryable failure.
    Decline,
    /// `hang` with a start-to-close timeout, two attempts.
    Hang,
    /// Sleeps, then calls `Gate::once` (for the crash test).
    AfterSleep,
    /// A local call requested and cancelled with its scope in the same task; then a call in
    /// durable backoff cancelled when `stop` comes.
    Cancelled,
}

fn backoff(initial: Duration) -> RetryPolicy {
    RetryPolicy {
        initial_interval: initial,
        ..RetryPolicy::default()
    }
}

#[workflow]
impl Local {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, case: Case) -> Result<String, WorkflowError> {
        let short = backoff(Duration::from_millis(100));
        let outcome = match case {
            Case::Chain => {
                let a = ctx.activity(Tools::add_one, 1).local().await?;
                let b = ctx.activity(Tools::add_one, a).local().await?;
                let c = ctx.activity(Tools::add_one, b).local().await?;
                ctx.wait_condition(|s| s.stop).await;
                Ok(format!("{a} {b} {c}"))
            }
            Case::Flaky => ctx
                .activity(Tools::flaky, ())
                .local()
                .retry(short)
                .await
                .map(|n| format!("ok on attempt {n}")),
            Case::FlakyLong => ctx
                .activity(Tools::flaky, ())
                .local()
                .retry(backoff(Duration::from_secs(30)))
                .await
                .map(|n| format!("ok on attempt {n}")),
            Case::Decline => ctx
                .activity(Tools::decline, ())
                .local()
                .retry(short)
                .await
                .map(|()| "ok".to_string()),
            Case::Hang => ctx
                .activity(Tools::hang, ())
                .local()
                .start_to_close(Duration::from_secs(2))
                .retry(RetryPolicy {
                    maximum_attempts: 2,
                    ..short
                })
                .await
                .map(|()| "ok".to_string()),
            Case::AfterSleep => {
                ctx.sleep(Duration::from_secs(1)).await?;
                ctx.activity(Gate::once, ())
                    .local()
                    .await
                    .map(|n| format!("gate passed on call {n}"))
            }
            Case::Cancelled => {
                // Requested in this task, cancelled before the worker ran it.
                let scope = ctx.cancellation_scope();
                let call = scope.run(ctx.activity(Tools::add_one, 1).local());
                let first = match select(Box::pin(call), Box::pin(std::future::ready(()))).await {
                    Either::Left((r, _)) => format!("ran: {r:?}"),
                    Either::Right(((), call)) => {
                        scope.cancel();
                        format!("{:?}", call.await.map_err(cancelled))
                    }
                };
                // Failed once, waiting on its durable backoff timer when `stop` comes.
                let scope = ctx.cancellation_scope();
                let call = scope.run(
                    ctx.activity(Tools::flaky, ())
                        .local()
                        .retry(backoff(Duration::from_secs(30))),
                );
                let stop = ctx.wait_condition(|s| s.stop);
                let second = match select(Box::pin(call), Box::pin(stop)).await {
                    Either::Left((r, _)) => format!("ran: {r:?}"),
                    Either::Right(((), call)) => {
                        scope.cancel();
                        format!("{:?}", call.await.map_err(cancelled))
                    }
                };
                Ok(format!("{first} / {second}"))
            }
        };
        Ok(match outcome {
            Ok(s) => s,
            Err(ActivityCallError::Failed { kind, attempts, .. }) => {
                format!("failed {kind} after {attempts}")
            }
            Err(ActivityCallError::TimedOut {
                timeout, attempts, ..
            }) => format!("timed out {timeout:?} after {attempts}"),
            Err(e) => format!("error {e}"),
        })
    }

    #[signal]
    fn stop(&mut self) {
        self.stop = true;
    }
}

/// "cancelled" for a cancellation, the error otherwise.
fn cancelled(e: ActivityCallError) -> String {
    match e {
        ActivityCallError::Cancelled { .. } => "cancelled".into(),
        other => other.to_string(),
    }
}

/// An activity whose first call never returns (the worker running it is killed meanwhile).
#[derive(Default)]
pub struct Gate {
    calls: AtomicU32,
}

#[activities]
impl Gate {
    #[activity]
    pub async fn once(&self, _ctx: ActivityContext) -> Result<u32, ActivityError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == 1 {
            std::future::pending::<()>().await;
        }
        Ok(n)
    }
}

struct Setup {
    engine: Engine,
    clock: TestClock,
    tools: Arc<Tools>,
}

async fn setup(backend: Backend, tag: &str, fail_first: u32) -> Setup {
    let clock = TestClock::new();
    let tools = shared_tools();
    tools.fail_first.store(fail_first, Ordering::SeqCst);
    let engine = builder(backend, tag)
        .clock(clock.clone())
        .workflow::<Local>()
        .shared_activities(tools.clone())
        .build()
        .await
        .unwrap();
    Setup {
        engine,
        clock,
        tools,
    }
}

/// Starts `case` while advancing the test clock (its first task may wait on in-task backoff),
/// then advances it in steps until the run finishes.
async fn run_case(s: &Setup, id: &str, case: Case, step: Duration) -> (String, Vec<HistoryEvent>) {
    let client = s.engine.client();
    let start = client.start::<Local>(id, case);
    tokio::pin!(start);
    let h = loop {
        tokio::select! {
            h = &mut start => break h.unwrap(),
            _ = tokio::time::sleep(Duration::from_millis(5)) => s.clock.advance(step),
        }
    };
    for _ in 0..400 {
        if h.describe().await.unwrap().status != RunStatus::Running {
            return (h.result().await.unwrap(), h.history().await.unwrap());
        }
        s.clock.advance(step);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the run did not finish: {:?}", h.describe().await.unwrap());
}

fn locals(history: &[HistoryEvent]) -> Vec<(u32, LocalOutcome)> {
    history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::LocalActivityCompleted {
                outcome, attempts, ..
            } => Some((*attempts, outcome.clone())),
            _ => None,
        })
        .collect()
}

fn scheduled(history: &[HistoryEvent]) -> usize {
    count(history, |k| {
        matches!(k, EventKind::ActivityScheduled { .. })
    })
}

async fn local_results_are_recorded_once_and_not_run_again_on_replay(backend: Backend) {
    let store = shared_store(backend, "local-once");
    let tools = shared_tools();
    let engine = store()
        .workflow::<Local>()
        .shared_activities(tools.clone())
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Local>("chain", Case::Chain)
        .await
        .unwrap();
    // The three calls ran in the start's task, before `start` returned.
    let history = h.history().await.unwrap();
    assert_eq!(tools.calls.load(Ordering::SeqCst), 3);
    assert_eq!(scheduled(&history), 0, "no activity task: {history:?}");
    let outcomes: Vec<_> = locals(&history).into_iter().map(|(_, o)| o).collect();
    let expected: Vec<_> = [2u32, 3, 4]
        .iter()
        .map(|n| LocalOutcome::Completed(Payload::encode(n).unwrap()))
        .collect();
    assert_eq!(outcomes, expected);
    engine.shutdown().await;

    // A new engine (a restart) rebuilds the run from its history: no call runs again.
    let engine = store()
        .workflow::<Local>()
        .shared_activities(tools.clone())
        .build()
        .await
        .unwrap();
    let h = engine.client().handle::<Local>("chain");
    h.stop().await.unwrap();
    assert_eq!(h.result().await.unwrap(), "2 3 4");
    assert_eq!(
        tools.calls.load(Ordering::SeqCst),
        3,
        "replay ran an activity"
    );
    assert_eq!(locals(&h.history().await.unwrap()).len(), 3);
    engine.shutdown().await;
}

async fn retries_inside_the_task_then_succeeds(backend: Backend) {
    let s = setup(backend, "local-retry", 2).await;
    let (out, history) = run_case(&s, "flaky", Case::Flaky, Duration::from_millis(50)).await;
    assert_eq!(out, "ok on attempt 3");
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 3);
    assert_eq!(locals(&history).len(), 1, "retries are not events");
    assert_eq!(locals(&history)[0].0, 3);
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::TimerStarted { .. })),
        0,
        "a short backoff needs no durable timer"
    );
    assert_eq!(scheduled(&history), 0);
}

async fn a_long_backoff_continues_on_a_durable_timer(backend: Backend) {
    let s = setup(backend, "local-backoff", 2).await;
    // Steps of 0.5 s: the test clock runs 100 times faster than real time, so that the task
    // lease (10 s) outlives a task still running on a busy machine; with 5 s steps it expired
    // under one and the task ran (and called its activity) again.
    let step = Duration::from_millis(500);
    let (out, history) = run_case(&s, "flaky", Case::FlakyLong, step).await;
    // The attempt count is kept across the timers: the third call is attempt 3.
    assert_eq!(out, "ok on attempt 3");
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 3);
    let recorded = locals(&history);
    assert_eq!(recorded.len(), 3, "{history:?}");
    assert!(
        matches!(
            &recorded[0],
            (
                1,
                LocalOutcome::Backoff {
                    delay_ms: 30_000,
                    ..
                }
            )
        ),
        "{recorded:?}"
    );
    assert!(
        matches!(
            &recorded[1],
            (
                2,
                LocalOutcome::Backoff {
                    delay_ms: 60_000,
                    ..
                }
            )
        ),
        "{recorded:?}"
    );
    assert!(matches!(&recorded[2], (3, LocalOutcome::Completed(_))));
    // One call throughout (one sequence number, so one idempotency key).
    let seqs: Vec<u32> = history
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::LocalActivityCompleted { seq, .. } => Some(seq),
            _ => None,
        })
        .collect();
    assert_eq!(seqs, vec![seqs[0]; 3]);
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::TimerStarted { .. })),
        2
    );
}

async fn a_final_failure_is_an_activity_call_error(backend: Backend) {
    let s = setup(backend, "local-fail", 0).await;
    let (out, history) = run_case(&s, "decline", Case::Decline, Duration::from_millis(50)).await;
    assert_eq!(out, "failed invalid_card after 1");
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 1);
    assert!(matches!(
        &locals(&history)[..],
        [(1, LocalOutcome::Failed(f))] if f.kind == "invalid_card"
    ));
}

async fn start_to_close_bounds_each_attempt(backend: Backend) {
    let s = setup(backend, "local-timeout", 0).await;
    let (out, history) = run_case(&s, "hang", Case::Hang, Duration::from_millis(500)).await;
    assert_eq!(out, "timed out StartToClose after 2");
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 2);
    assert_eq!(locals(&history).len(), 1);
}

async fn a_cancelled_scope_abandons_its_local_activity(backend: Backend) {
    let s = setup(backend, "local-cancel", 5).await;
    let h = s
        .engine
        .client()
        .start::<Local>("cancel", Case::Cancelled)
        .await
        .unwrap();
    until_recorded(&h, "the durable backoff", |k| {
        matches!(k, EventKind::TimerStarted { .. })
    })
    .await;
    h.stop().await.unwrap();
    assert_eq!(
        h.result().await.unwrap(),
        "Err(\"cancelled\") / Err(\"cancelled\")"
    );
    let history = h.history().await.unwrap();
    // `add_one` never ran; `flaky` ran once, then its timer was cancelled.
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 1);
    assert_eq!(locals(&history).len(), 1);
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::TimerCancelled { .. })),
        1
    );
}

async fn a_worker_that_dies_before_the_commit_leaves_it_to_run_again(backend: Backend) {
    let store = shared_store(backend, "local-crash");
    let clock = TestClock::new();
    let gate = Arc::new(Gate::default());
    let engine = store()
        .clock(clock.clone())
        .workflow::<Local>()
        .shared_activities(gate.clone())
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Local>("crash", Case::AfterSleep)
        .await
        .unwrap();
    clock.advance(Duration::from_secs(1));
    eventually("the first call to start", || async {
        (gate.calls.load(Ordering::SeqCst) == 1).then_some(())
    })
    .await;
    // Killed while the local activity runs: nothing of that task was committed.
    drop(engine);
    let history = h.history().await.unwrap();
    assert!(locals(&history).is_empty(), "{history:?}");

    let engine = store()
        .clock(clock.clone())
        .workflow::<Local>()
        .shared_activities(gate.clone())
        .build()
        .await
        .unwrap();
    let h = engine.client().handle::<Local>("crash");
    for _ in 0..400 {
        if h.describe().await.unwrap().status != RunStatus::Running {
            break;
        }
        clock.advance(Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(h.result().await.unwrap(), "gate passed on call 2");
    assert_eq!(
        gate.calls.load(Ordering::SeqCst),
        2,
        "at least once: run again"
    );
    assert_eq!(locals(&h.history().await.unwrap()).len(), 1);
    engine.shutdown().await;
}

both!(
    local_results_are_recorded_once_and_not_run_again_on_replay,
    retries_inside_the_task_then_succeeds,
    a_long_backoff_continues_on_a_durable_timer,
    a_final_failure_is_an_activity_call_error,
    start_to_close_bounds_each_attempt,
    a_cancelled_scope_abandons_its_local_activity,
    a_worker_that_dies_before_the_commit_leaves_it_to_run_again,
);

// ---------------------------------------------------------------------------------------------
// Replay of exported histories, and nondeterminism

/// One local call: the recorded version.
#[derive(Default)]
pub struct Quote;

#[workflow(name = "quote")]
impl Quote {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Tools::add_one, n).local().await?)
    }
}

/// The same step as a regular activity.
#[derive(Default)]
pub struct QuoteRegular;

#[workflow(name = "quote")]
impl QuoteRegular {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Tools::add_one, n).await?)
    }
}

/// Another local activity at the same position.
#[derive(Default)]
pub struct QuoteOther;

#[workflow(name = "quote")]
impl QuoteOther {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, _n: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Tools::flaky, ()).local().await?)
    }
}

async fn exported_histories_replay_and_catch_changed_local_calls(backend: Backend) {
    let engine = builder(backend, "local-replay")
        .workflow::<Quote>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Quote>("q", 41).await.unwrap();
    assert_eq!(h.result().await.unwrap(), 42);
    let local = h.export().await.unwrap();
    let regular_engine = builder(backend, "local-replay-regular")
        .workflow::<QuoteRegular>()
        .activities(tools())
        .build()
        .await
        .unwrap();
    let h = regular_engine
        .client()
        .start::<QuoteRegular>("q", 41)
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), 42);
    let regular = h.export().await.unwrap();

    // The exported document names the event and shows its outcome decoded.
    let json: serde_json::Value = serde_json::from_str(&local.to_json().unwrap()).unwrap();
    let event = json["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "LocalActivityCompleted")
        .expect("the export lists the local activity");
    assert_eq!(event["attributes"]["name"], "add_one");
    assert_eq!(event["attributes"]["outcome"]["Completed"], 42);
    let read_back = wf_sdk::history::History::from_json(&local.to_json().unwrap()).unwrap();
    assert_eq!(read_back, local);
    assert!(local
        .events
        .iter()
        .any(|e| e.kind.details().contains("add_one (local) -> 42")));

    Replayer::new().workflow::<Quote>().replay(&local).unwrap();
    // Local -> regular, regular -> local, another local activity: each is nondeterminism.
    for (what, result) in [
        (
            "regular code on a local history",
            Replayer::new().workflow::<QuoteRegular>().replay(&local),
        ),
        (
            "local code on a regular history",
            Replayer::new().workflow::<Quote>().replay(&regular),
        ),
        (
            "another local activity",
            Replayer::new().workflow::<QuoteOther>().replay(&local),
        ),
    ] {
        assert!(
            matches!(result, Err(ReplayError::NonDeterminism(_))),
            "{what}: {result:?}"
        );
    }
    engine.shutdown().await;
    regular_engine.shutdown().await;
}

both!(exported_histories_replay_and_catch_changed_local_calls);
