//! Asynchronous activity completion: an activity hands its task token to someone else and
//! returns `ActivityError::will_complete_async()`; that caller completes, fails or heartbeats
//! it later with the token, from any process, after restarts. The attempt's timeouts still
//! apply, and a stale or forged token is a clear error. Time-based cases use the test clock.

mod common;
use common::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{engine::EngineBuilder, error::ActivityCallError, history::EventKind};

#[derive(Default)]
pub struct Approval;

/// How the workflow schedules its approval request.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub enum Limits {
    /// Start-to-close 1 min, two attempts.
    TwoAttempts,
    /// Start-to-close 1 min, heartbeat timeout 10 s, one attempt.
    Heartbeat,
    /// No timeout set (the default start-to-close applies), one attempt.
    NoTimeout,
}

#[workflow]
impl Approval {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, limits: Limits) -> Result<String, WorkflowError> {
        let policy = RetryPolicy {
            initial_interval: Duration::from_secs(1),
            maximum_attempts: if limits == Limits::TwoAttempts { 2 } else { 1 },
            ..RetryPolicy::default()
        };
        let mut call = ctx
            .activity(Desk::request_approval, "contract.pdf".to_string())
            .retry(policy);
        if limits != Limits::NoTimeout {
            call = call.start_to_close(Duration::from_secs(60));
        }
        if limits == Limits::Heartbeat {
            call = call.heartbeat_timeout(Duration::from_secs(10));
        }
        Ok(match call.await {
            Ok(verdict) => verdict,
            Err(ActivityCallError::Failed { kind, attempts, .. }) => {
                format!("failed {kind} after {attempts}")
            }
            Err(ActivityCallError::TimedOut {
                timeout, attempts, ..
            }) => format!("timed out {timeout:?} after {attempts}"),
            Err(e) => format!("error {e}"),
        })
    }
}

/// The approval desk: it files each request with its token, for an approver to answer later.
#[derive(Default)]
pub struct Desk {
    tokens: Mutex<Vec<String>>,
}

#[activities]
impl Desk {
    #[activity]
    async fn request_approval(
        &self,
        ctx: ActivityContext,
        _document: String,
    ) -> Result<String, ActivityError> {
        self.tokens
            .lock()
            .expect("no test panics holding it")
            .push(ctx.task_token());
        Err(ActivityError::will_complete_async())
    }
}

impl Desk {
    /// The token of the `n`th request (from 1), once it is filed and its attempt held open.
    async fn token(&self, engine: &Engine, n: usize) -> String {
        eventually("the request is filed and held", || async {
            let held = engine
                .metrics()
                .value(
                    "wf_activity_async_holds_total",
                    &[("activity", "request_approval")],
                )
                .unwrap_or(0.0);
            let tokens = self.tokens.lock().expect("no test panics holding it");
            (held >= n as f64)
                .then(|| tokens.get(n - 1).cloned())
                .flatten()
        })
        .await
    }
}

fn not_pending(e: WfError) -> String {
    match e {
        WfError::ActivityNotPending(message) => message,
        other => panic!("expected ActivityNotPending, got {other:?}"),
    }
}

async fn engine(make: &impl Fn() -> EngineBuilder, clock: &TestClock, desk: &Arc<Desk>) -> Engine {
    make()
        .clock(clock.clone())
        .workflow::<Approval>()
        .shared_activities(desk.clone())
        .build()
        .await
        .unwrap()
}

/// The activity's engine stops and its liveness lease runs out while the approver thinks; the
/// approver then completes the activity through another engine, and the workflow goes on.
async fn a_token_completes_the_activity_from_another_engine_after_a_crash(backend: Backend) {
    let make = shared_store(backend, "async-complete");
    let clock = TestClock::new();
    let desk = Arc::new(Desk::default());
    let first = engine(&make, &clock, &desk).await;
    first
        .client()
        .start::<Approval>("deal-1", Limits::TwoAttempts)
        .await
        .unwrap();
    let token = desk.token(&first, 1).await;
    drop(first); // a crash: its liveness lease is left to run out

    let second = engine(&make, &clock, &desk).await;
    let client = second.client();
    let h = client.handle::<Approval>("deal-1");
    // Past the dead engine's liveness lease, well within the attempt's start-to-close.
    clock.advance(Duration::from_secs(20));
    // Let the time keeper go round: without the hold it would end the attempt as lost.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let d = h.describe().await.unwrap();
    assert_eq!(d.status, RunStatus::Running);
    assert_eq!(d.pending_activities.len(), 1);
    assert_eq!(
        d.pending_activities[0].attempt, 1,
        "the attempt is still open"
    );

    client.complete_activity(&token, "approved").await.unwrap();
    assert_eq!(h.result().await.unwrap(), "approved");
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityCompleted { .. }
        )),
        1
    );
    assert_eq!(desk.tokens.lock().unwrap().len(), 1, "it ran once");

    let again = client
        .complete_activity(&token, "approved")
        .await
        .unwrap_err();
    assert!(not_pending(again).contains("is not open"));
    second.shutdown().await;
}

/// A retryable failure reported by token is retried per the policy (the next attempt gets a
/// token of its own); the old token is stale; a non-retryable failure fails the activity.
async fn failing_by_token_follows_the_retry_policy(backend: Backend) {
    let make = shared_store(backend, "async-fail");
    let clock = TestClock::new();
    let desk = Arc::new(Desk::default());
    let engine = engine(&make, &clock, &desk).await;
    let client = engine.client();
    let h = client
        .start::<Approval>("deal-2", Limits::TwoAttempts)
        .await
        .unwrap();
    let first = desk.token(&engine, 1).await;
    client
        .fail_activity(&first, ActivityError::retryable("the approver is away"))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(1)); // the retry's backoff
    let second = desk.token(&engine, 2).await;
    assert_ne!(first, second, "a token is good for one attempt");
    let stale = client.complete_activity(&first, "approved").await;
    let message = not_pending(stale.unwrap_err());
    assert!(message.contains("attempt 2 replaced it"), "{message}");

    client
        .fail_activity(
            &second,
            ActivityError::non_retryable("declined", "not this contract"),
        )
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), "failed declined after 2");
    engine.shutdown().await;
}

/// Heartbeats by token keep an async attempt alive past its heartbeat timeout; without them it
/// times out, and its token is then refused.
async fn an_async_attempt_keeps_its_heartbeat_timeout(backend: Backend) {
    let make = shared_store(backend, "async-heartbeat");
    let clock = TestClock::new();
    let desk = Arc::new(Desk::default());
    let engine = engine(&make, &clock, &desk).await;
    let client = engine.client();
    let h = client
        .start::<Approval>("deal-3", Limits::Heartbeat)
        .await
        .unwrap();
    let token = desk.token(&engine, 1).await;
    for step in 1..=3 {
        clock.advance(Duration::from_secs(8));
        client.heartbeat_activity(&token, &step).await.unwrap();
    }
    // 24 s in: heartbeats kept it open past its 10 s heartbeat timeout.
    let d = h.describe().await.unwrap();
    assert_eq!(d.status, RunStatus::Running);
    let details = d.pending_activities[0].heartbeat_details.as_ref().unwrap();
    assert_eq!(details.decode::<u32>().unwrap(), 3);

    clock.advance(Duration::from_secs(11));
    assert_eq!(h.result().await.unwrap(), "timed out Heartbeat after 1");
    let late = client.complete_activity(&token, "approved").await;
    assert!(not_pending(late.unwrap_err()).contains("is not open"));
    engine.shutdown().await;
}

/// The attempt's start-to-close timeout applies to an async activity as to any other.
async fn an_async_attempt_keeps_its_start_to_close_timeout(backend: Backend) {
    let make = shared_store(backend, "async-timeout");
    let clock = TestClock::new();
    let desk = Arc::new(Desk::default());
    let engine = engine(&make, &clock, &desk).await;
    let h = engine
        .client()
        .start::<Approval>("deal-4", Limits::TwoAttempts)
        .await
        .unwrap();
    desk.token(&engine, 1).await;
    clock.advance(Duration::from_secs(61));
    eventually("attempt 1 timed out and attempt 2 is scheduled", || async {
        let d = h.describe().await.unwrap();
        d.pending_activities
            .first()
            .filter(|a| a.attempt == 2)
            .cloned()
    })
    .await;
    clock.advance(Duration::from_secs(1)); // the retry's backoff
    desk.token(&engine, 2).await;
    clock.advance(Duration::from_secs(61));
    assert_eq!(h.result().await.unwrap(), "timed out StartToClose after 2");
    engine.shutdown().await;
}

/// An async activity scheduled with no timeout gets the documented default start-to-close of
/// five minutes, which describe shows as its attempt's deadline.
async fn an_async_attempt_without_a_timeout_gets_the_default_five_minutes(backend: Backend) {
    let make = shared_store(backend, "async-default");
    let clock = TestClock::new();
    let desk = Arc::new(Desk::default());
    let engine = engine(&make, &clock, &desk).await;
    let h = engine
        .client()
        .start::<Approval>("deal-6", Limits::NoTimeout)
        .await
        .unwrap();
    desk.token(&engine, 1).await;
    // The clock has not moved since the attempt started.
    let started = std::time::UNIX_EPOCH + Duration::from_millis(clock.now_ms() as u64);
    let d = h.describe().await.unwrap();
    let deadline = d.pending_activities[0]
        .attempt_deadline
        .expect("a held attempt has a deadline");
    assert_eq!(deadline, started + Duration::from_secs(300));
    clock.advance(Duration::from_secs(299));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(h.describe().await.unwrap().pending_activities.len(), 1);
    clock.advance(Duration::from_secs(1));
    assert_eq!(h.result().await.unwrap(), "timed out StartToClose after 1");
    engine.shutdown().await;
}

/// Strings that are not tokens are invalid arguments, never panics; the token of a closed run
/// is not pending.
async fn forged_tokens_are_clear_errors(backend: Backend) {
    let make = shared_store(backend, "async-forged");
    let clock = TestClock::new();
    let desk = Arc::new(Desk::default());
    let engine = engine(&make, &clock, &desk).await;
    let client = engine.client();
    client
        .start::<Approval>("deal-5", Limits::TwoAttempts)
        .await
        .unwrap();
    let token = desk.token(&engine, 1).await;
    let cut = &token[..token.len() - 4];
    for bad in ["", "hello", "wfat1.", "wfat1.%%%", cut] {
        match client.complete_activity(bad, "approved").await {
            Err(WfError::InvalidArgument(m)) => assert!(m.contains("not an activity task token")),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    client
        .terminate("deal-5", "closing the deal")
        .await
        .unwrap();
    let closed = client.complete_activity(&token, "approved").await;
    assert!(not_pending(closed.unwrap_err()).contains("its run closed"));
    engine.shutdown().await;
}

both!(
    a_token_completes_the_activity_from_another_engine_after_a_crash,
    failing_by_token_follows_the_retry_policy,
    an_async_attempt_keeps_its_heartbeat_timeout,
    an_async_attempt_keeps_its_start_to_close_timeout,
    forged_tokens_are_clear_errors,
    an_async_attempt_without_a_timeout_gets_the_default_five_minutes,
);
