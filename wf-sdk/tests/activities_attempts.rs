//! Activities: retries with backoff, non-retryable errors, attempt limits, timeouts
//! (start-to-close, schedule-to-close, heartbeat) and heartbeat details handed to the next
//! attempt, and to the workflow with a final failure or time-out. Time-based cases use the test
//! clock.

mod common;
use common::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    activity::TimeoutKind,
    error::ActivityCallError,
    history::{EventKind, Replayer},
};

/// Activities that report progress and then stop.
pub struct Progress;

#[activities]
impl Progress {
    /// Heartbeats 1..=n, then fails for good.
    #[activity]
    pub async fn fail_after(&self, ctx: ActivityContext, n: u32) -> Result<(), ActivityError> {
        for i in 1..=n {
            ctx.heartbeat(&i).await?;
        }
        Err(ActivityError::non_retryable(
            "stuck",
            format!("stuck after {n}"),
        ))
    }

    /// Heartbeats 1..=n, then hangs (until its start-to-close timeout).
    #[activity]
    pub async fn hang_after(&self, ctx: ActivityContext, n: u32) -> Result<(), ActivityError> {
        for i in 1..=n {
            ctx.heartbeat(&i).await?;
        }
        std::future::pending::<()>().await;
        Ok(())
    }
}

#[derive(Default)]
pub struct Runner;

#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub enum Case {
    Flaky,
    FlakyTwoAttempts,
    Decline,
    DeclineListed,
    StartToClose,
    ScheduleToClose,
    Heartbeat,
    FailAfterProgress,
    TimeOutAfterProgress,
}

#[workflow]
impl Runner {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, case: Case) -> Result<String, WorkflowError> {
        let fast = RetryPolicy {
            initial_interval: Duration::from_secs(1),
            ..RetryPolicy::default()
        };
        let outcome = match case {
            Case::Flaky => ctx
                .activity(Tools::flaky, ())
                .retry(fast)
                .await
                .map(|n| format!("ok on attempt {n}")),
            Case::FlakyTwoAttempts => ctx
                .activity(Tools::flaky, ())
                .retry(RetryPolicy {
                    maximum_attempts: 2,
                    ..fast
                })
                .await
                .map(|n| format!("ok on attempt {n}")),
            Case::Decline => ctx
                .activity(Tools::decline, ())
                .retry(fast)
                .await
                .map(|_| "ok".to_string()),
            Case::DeclineListed => ctx
                .activity(Tools::flaky, ())
                .retry(RetryPolicy {
                    non_retryable_error_types: vec!["retryable".into()],
                    ..fast
                })
                .await
                .map(|n| format!("ok on attempt {n}")),
            Case::StartToClose => ctx
                .activity(Tools::hang, ())
                .start_to_close(Duration::from_secs(10))
                .retry(RetryPolicy {
                    maximum_attempts: 2,
                    ..fast
                })
                .await
                .map(|_| "ok".to_string()),
            Case::ScheduleToClose => ctx
                .activity(Tools::hang, ())
                .start_to_close(Duration::from_secs(10))
                .schedule_to_close(Duration::from_secs(15))
                .retry(fast)
                .await
                .map(|_| "ok".to_string()),
            Case::Heartbeat => ctx
                .activity(Tools::count_to, (5, 3))
                .heartbeat_timeout(Duration::from_secs(5))
                .retry(fast)
                .await
                .map(|v| format!("{v:?}")),
            Case::FailAfterProgress | Case::TimeOutAfterProgress => {
                let call = if case == Case::FailAfterProgress {
                    ctx.activity(Progress::fail_after, 3)
                } else {
                    ctx.activity(Progress::hang_after, 4)
                };
                let once = RetryPolicy {
                    maximum_attempts: 1,
                    ..fast
                };
                let e = match call
                    .start_to_close(Duration::from_secs(10))
                    .retry(once)
                    .await
                {
                    Ok(()) => return Err(WorkflowError::new("the activity succeeded")),
                    Err(e) => e,
                };
                return Ok(format!("stopped at {:?}", e.last_heartbeat::<u32>()));
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
        .workflow::<Runner>()
        .shared_activities(tools.clone())
        .activities(Progress)
        .build()
        .await
        .unwrap();
    Setup {
        engine,
        clock,
        tools,
    }
}

/// Advances the test clock in steps until the run finishes.
async fn finish(s: &Setup, h: &WorkflowHandle<Runner>, step: Duration) -> String {
    for _ in 0..400 {
        if h.describe().await.unwrap().status != RunStatus::Running {
            return h.result().await.unwrap();
        }
        s.clock.advance(step);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the run did not finish: {:?}", h.describe().await.unwrap());
}

async fn retryable_errors_are_retried_with_backoff(backend: Backend) {
    let s = setup(backend, "retry", 2).await;
    let h = s
        .engine
        .client()
        .start::<Runner>("r", Case::Flaky)
        .await
        .unwrap();
    // The first retry waits 1 s, the second 2 s: not before the clock moves.
    let d = eventually("attempt 2 pending", || async {
        let d = h.describe().await.unwrap();
        d.pending_activities
            .first()
            .filter(|a| a.attempt == 2)
            .cloned()
    })
    .await;
    assert_eq!(d.last_failure.as_deref(), Some("attempt 1 failed"));
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        finish(&s, &h, Duration::from_millis(500)).await,
        "ok on attempt 3"
    );
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 3);
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityScheduled { .. }
        )),
        1,
        "retries are not events"
    );
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityCompleted { attempts: 3, .. }
        )),
        1
    );
}

async fn maximum_attempts_bounds_retries(backend: Backend) {
    let s = setup(backend, "max-attempts", 5).await;
    let h = s
        .engine
        .client()
        .start::<Runner>("r", Case::FlakyTwoAttempts)
        .await
        .unwrap();
    assert_eq!(
        finish(&s, &h, Duration::from_millis(500)).await,
        "failed retryable after 2"
    );
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 2);
}

async fn non_retryable_errors_fail_at_once(backend: Backend) {
    let s = setup(backend, "non-retryable", 0).await;
    let h = s
        .engine
        .client()
        .start::<Runner>("r", Case::Decline)
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), "failed invalid_card after 1");
    let s2 = setup(backend, "listed", 5).await;
    let h2 = s2
        .engine
        .client()
        .start::<Runner>("r", Case::DeclineListed)
        .await
        .unwrap();
    assert_eq!(h2.result().await.unwrap(), "failed retryable after 1");
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(k, EventKind::ActivityFailed { .. })),
        1
    );
}

async fn start_to_close_times_out_each_attempt(backend: Backend) {
    let s = setup(backend, "stc", 0).await;
    let h = s
        .engine
        .client()
        .start::<Runner>("r", Case::StartToClose)
        .await
        .unwrap();
    eventually("attempt 1 running", || async {
        (s.tools.calls.load(Ordering::SeqCst) == 1).then_some(())
    })
    .await;
    assert_eq!(
        finish(&s, &h, Duration::from_secs(3)).await,
        "timed out StartToClose after 2"
    );
    let history = h.history().await.unwrap();
    assert_eq!(
        count(&history, |k| matches!(
            k,
            EventKind::ActivityTimedOut {
                timeout: TimeoutKind::StartToClose,
                ..
            }
        )),
        1
    );
}

async fn schedule_to_close_bounds_all_attempts(backend: Backend) {
    let s = setup(backend, "s2c", 0).await;
    let h = s
        .engine
        .client()
        .start::<Runner>("r", Case::ScheduleToClose)
        .await
        .unwrap();
    eventually("attempt 1 running", || async {
        (s.tools.calls.load(Ordering::SeqCst) == 1).then_some(())
    })
    .await;
    let out = finish(&s, &h, Duration::from_secs(2)).await;
    assert!(out.starts_with("timed out ScheduleToClose"), "{out}");
}

async fn heartbeat_details_reach_the_next_attempt(backend: Backend) {
    let s = setup(backend, "heartbeat", 0).await;
    let h = s
        .engine
        .client()
        .start::<Runner>("r", Case::Heartbeat)
        .await
        .unwrap();
    // Attempt 1 heartbeats 1, 2, 3 and then hangs.
    eventually("attempt 1 stuck", || async {
        (s.tools.calls.load(Ordering::SeqCst) == 1).then_some(())
    })
    .await;
    let history_before = h.history().await.unwrap().len();
    eventually("heartbeat 3 recorded", || async {
        let d = h.describe().await.unwrap();
        let details = d.pending_activities.first()?.heartbeat_details.as_ref()?;
        (details.decode::<u32>().ok()? == 3).then_some(())
    })
    .await;
    // Its heartbeat timeout expires; the retry waits 1 s of backoff.
    s.clock.advance(Duration::from_secs(6));
    eventually("attempt 2 scheduled", || async {
        let d = h.describe().await.unwrap();
        d.pending_activities
            .first()
            .filter(|a| a.attempt == 2)
            .cloned()
    })
    .await;
    s.clock.advance(Duration::from_secs(1));
    // Attempt 2 resumes after the last heartbeat (3) and does 4, 5.
    assert_eq!(h.result().await.unwrap(), "[4, 5]");
    assert_eq!(s.tools.calls.load(Ordering::SeqCst), 2);
    assert!(h.history().await.unwrap().len() > history_before);
}

async fn a_final_failure_carries_the_last_heartbeat(backend: Backend) {
    let s = setup(backend, "heartbeat-failure", 0).await;
    let client = s.engine.client();
    let h = client
        .start::<Runner>("failed", Case::FailAfterProgress)
        .await
        .unwrap();
    assert_eq!(h.result().await.unwrap(), "stopped at Some(3)");
    let h2 = client
        .start::<Runner>("timed-out", Case::TimeOutAfterProgress)
        .await
        .unwrap();
    eventually("heartbeat 4 recorded", || async {
        let d = h2.describe().await.unwrap();
        let details = d.pending_activities.first()?.heartbeat_details.as_ref()?;
        (details.decode::<u32>().ok()? == 4).then_some(())
    })
    .await;
    assert_eq!(
        finish(&s, &h2, Duration::from_secs(11)).await,
        "stopped at Some(4)"
    );
    // Recorded with the failure: the history says it, and replay hands it to the code again.
    let history = h2.history().await.unwrap();
    let details = history.iter().find_map(|e| match &e.kind {
        EventKind::ActivityTimedOut { last_heartbeat, .. } => last_heartbeat.clone(),
        _ => None,
    });
    assert_eq!(details.map(|d| d.decode::<u32>().unwrap()), Some(4));
    let replayer = Replayer::new().workflow::<Runner>();
    for h in [&h, &h2] {
        replayer.replay(&h.export().await.unwrap()).unwrap();
    }
}

both!(
    a_final_failure_carries_the_last_heartbeat,
    retryable_errors_are_retried_with_backoff,
    maximum_attempts_bounds_retries,
    non_retryable_errors_fail_at_once,
    start_to_close_times_out_each_attempt,
    schedule_to_close_bounds_all_attempts,
    heartbeat_details_reach_the_next_attempt,
);
