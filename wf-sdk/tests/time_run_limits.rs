//! Workflow execution and run timeouts and the workflow retry policy (`StartOptions`), on the
//! three stores, with the engine's test clock: a timed-out run closes as `TimedOut` once, its
//! caller learns which timeout, its children get their parent close policy; a failed run is
//! retried as a new run of its chain with the same input, after a durable backoff.

mod common;
use common::*;
use std::collections::HashSet;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{
    activity::RetryPolicy,
    client::{ListFilter, RunInfo, RunTimeout, StartOptions},
    history::EventKind,
};

const MINUTE: Duration = Duration::from_secs(60);

/// Waits for a `finish` signal; returns its attempt.
#[derive(Default)]
pub struct Waiter {
    done: bool,
}

#[workflow]
impl Waiter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.attempt())
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }
}

/// Fails until its attempt reaches `succeed_at` (an input every attempt gets again).
#[derive(Default)]
pub struct Flaky;

#[workflow]
impl Flaky {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, succeed_at: u32) -> Result<u32, WorkflowError> {
        let attempt = ctx.attempt();
        if attempt < succeed_at {
            return Err(WorkflowError::new(format!("attempt {attempt} failed")));
        }
        Ok(attempt)
    }
}

/// Sleeps a minute, then continues as new, for ever.
#[derive(Default)]
pub struct Looper;

#[workflow]
impl Looper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, round: u32) -> Result<u32, WorkflowError> {
        ctx.sleep(MINUTE).await?;
        Err(ctx.continue_as_new(&(round + 1)))
    }
}

/// Starts a `Waiter` child and waits for it.
#[derive(Default)]
pub struct Parent;

#[workflow]
impl Parent {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, child_id: String) -> Result<u32, WorkflowError> {
        Ok(ctx.child::<Waiter>(&child_id, &()).await?)
    }
}

fn engine(backend: Backend, tag: &str) -> wf_sdk::engine::EngineBuilder {
    builder(backend, tag)
        .workflow::<Waiter>()
        .workflow::<Flaky>()
        .workflow::<Looper>()
        .workflow::<Parent>()
}

/// The runs of `workflow_id` of type `workflow_type`, oldest first.
async fn runs_of(client: &Client, workflow_type: &str, workflow_id: &str) -> Vec<RunInfo> {
    let mut runs: Vec<RunInfo> = client
        .list(ListFilter {
            workflow_type: Some(workflow_type.into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.workflow_id == workflow_id)
        .collect();
    runs.reverse();
    runs
}

/// Waits until the latest run of `h` has `status`.
async fn status_is<W: wf_sdk::workflow::WorkflowDefinition>(
    h: &WorkflowHandle<W>,
    status: RunStatus,
) {
    eventually(&format!("status {status:?}"), || async {
        (h.describe().await.ok()?.status == status).then_some(())
    })
    .await
}

async fn run_timeout_closes_the_run_as_timed_out(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "run-timeout")
        .clock(clock.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let options = StartOptions::new().run_timeout(10 * MINUTE);
    let h = client
        .start_with::<Waiter>("w-1", (), options)
        .await
        .unwrap();
    status_is(&h, RunStatus::Running).await;
    clock.advance(9 * MINUTE);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(h.describe().await.unwrap().status, RunStatus::Running);
    clock.advance(MINUTE);
    status_is(&h, RunStatus::TimedOut).await;

    let err = h.result().await.unwrap_err();
    let WfError::TimedOut(message) = &err else {
        panic!("expected TimedOut, got {err:?}");
    };
    assert!(message.contains("run timeout of 600s"), "{message}");
    let history = h.history().await.unwrap();
    assert_eq!(
        history.last().unwrap().kind,
        EventKind::WorkflowTimedOut {
            timeout: RunTimeout::Run,
            new_run_id: None
        }
    );
    // Closed: a signal is refused, and the list shows the status.
    assert!(matches!(h.finish().await, Err(WfError::RunFinished { .. })));
    let runs = runs_of(&client, "Waiter", "w-1").await;
    assert_eq!(
        runs.iter().map(|r| r.status).collect::<Vec<_>>(),
        [RunStatus::TimedOut]
    );
    engine.shutdown().await;
}

async fn execution_timeout_spans_continue_as_new_and_is_not_retried(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "execution-timeout")
        .clock(clock.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let options = StartOptions::new()
        .execution_timeout(Duration::from_secs(150))
        .retry_policy(RetryPolicy::default());
    let h = client
        .start_with::<Looper>("loop-1", 0, options)
        .await
        .unwrap();
    for round in 1..=2 {
        eventually("the round's timer", || async {
            let history = h.history().await.ok()?;
            history
                .iter()
                .any(|e| matches!(e.kind, EventKind::TimerStarted { .. }))
                .then_some(())
        })
        .await;
        clock.advance(MINUTE);
        eventually("the next run", || async {
            (runs_of(&client, "Looper", "loop-1").await.len() == round + 1).then_some(())
        })
        .await;
    }
    clock.advance(Duration::from_secs(30));
    status_is(&h, RunStatus::TimedOut).await;
    let err = h.result().await.unwrap_err();
    assert!(
        matches!(&err, WfError::TimedOut(m) if m.contains("execution timeout of 150s")),
        "{err:?}"
    );
    let history = h.history().await.unwrap();
    assert_eq!(
        history.last().unwrap().kind,
        EventKind::WorkflowTimedOut {
            timeout: RunTimeout::Execution,
            new_run_id: None
        }
    );
    // No retry after an execution timeout, whatever the policy.
    clock.advance(10 * MINUTE);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let statuses: Vec<RunStatus> = runs_of(&client, "Looper", "loop-1")
        .await
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(
        statuses,
        [
            RunStatus::ContinuedAsNew,
            RunStatus::ContinuedAsNew,
            RunStatus::TimedOut
        ]
    );
    engine.shutdown().await;
}

async fn children_of_a_timed_out_run_get_their_parent_close_policy(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "timeout-children")
        .clock(clock.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let options = StartOptions::new().run_timeout(MINUTE);
    let parent = client
        .start_with::<Parent>("parent-1", "child-1".to_string(), options)
        .await
        .unwrap();
    let child = client.handle::<Waiter>("child-1");
    status_is(&child, RunStatus::Running).await;
    clock.advance(MINUTE);
    status_is(&parent, RunStatus::TimedOut).await;
    // The default policy terminates the child, in the same transaction.
    assert_eq!(
        child.describe().await.unwrap().status,
        RunStatus::Terminated
    );
    let err = child.result().await.unwrap_err();
    assert!(
        matches!(&err, WfError::Terminated(m) if m.contains("timed out")),
        "{err:?}"
    );
    engine.shutdown().await;
}

async fn a_failed_run_is_retried_with_its_input_after_a_durable_backoff(backend: Backend) {
    let clock = TestClock::new();
    let engines = shared_store(backend, "retry-backoff");
    let build = || engines().clock(clock.clone()).workflow::<Flaky>().build();
    let engine = build().await.unwrap();
    let client = engine.client();
    let policy = RetryPolicy {
        initial_interval: Duration::from_secs(10),
        maximum_attempts: 5,
        ..RetryPolicy::default()
    };
    let options = StartOptions::new().retry_policy(policy);
    let h = client
        .start_with::<Flaky>("flaky-1", 3, options)
        .await
        .unwrap();
    // Attempt 1 failed at once; attempt 2 waits out its backoff.
    eventually("the first retry", || async {
        let runs = runs_of(&client, "Flaky", "flaky-1").await;
        (runs.len() == 2).then_some(())
    })
    .await;
    let d = h.describe().await.unwrap();
    assert_eq!((d.status, d.attempt), (RunStatus::Running, 2));
    assert_eq!(d.history_length, 1, "nothing ran during the backoff");

    // A crash during the backoff loses nothing: another engine takes over.
    engine.shutdown().await;
    let engine = build().await.unwrap();
    let client = engine.client();
    let h = client.handle::<Flaky>("flaky-1");
    clock.advance(Duration::from_secs(10));
    eventually("the second retry", || async {
        (runs_of(&client, "Flaky", "flaky-1").await.len() == 3).then_some(())
    })
    .await;
    assert_eq!(h.describe().await.unwrap().attempt, 3);
    clock.advance(Duration::from_secs(20));
    assert_eq!(h.result().await.unwrap(), 3);
    let runs = runs_of(&client, "Flaky", "flaky-1").await;
    assert_eq!(
        runs.iter().map(|r| r.status).collect::<Vec<_>>(),
        [RunStatus::Failed, RunStatus::Failed, RunStatus::Completed]
    );
    let history = h.history().await.unwrap();
    let EventKind::WorkflowStarted {
        continued_from,
        input,
        ..
    } = &history[0].kind
    else {
        panic!("{history:?}");
    };
    assert_eq!(continued_from.as_deref(), Some(runs[1].run_id.as_str()));
    assert_eq!(input.decode::<u32>().unwrap(), 3);
    engine.shutdown().await;
}

async fn retries_stop_at_the_maximum_attempts_and_non_retryable_types(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "retry-stop")
        .clock(clock.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let policy = RetryPolicy {
        initial_interval: Duration::from_secs(1),
        maximum_attempts: 2,
        ..RetryPolicy::default()
    };
    let h = client
        .start_with::<Flaky>(
            "limited",
            10,
            StartOptions::new().retry_policy(policy.clone()),
        )
        .await
        .unwrap();
    eventually("the retry", || async {
        (runs_of(&client, "Flaky", "limited").await.len() == 2).then_some(())
    })
    .await;
    clock.advance(Duration::from_secs(1));
    let err = h.result().await.unwrap_err();
    assert!(
        matches!(&err, WfError::WorkflowFailed(m) if m == "attempt 2 failed"),
        "{err:?}"
    );
    assert_eq!(runs_of(&client, "Flaky", "limited").await.len(), 2);

    let never = RetryPolicy {
        non_retryable_error_types: vec!["failed".into()],
        ..policy
    };
    let h = client
        .start_with::<Flaky>("typed", 10, StartOptions::new().retry_policy(never))
        .await
        .unwrap();
    let err = h.result().await.unwrap_err();
    assert!(matches!(&err, WfError::WorkflowFailed(m) if m == "attempt 1 failed"));
    assert_eq!(runs_of(&client, "Flaky", "typed").await.len(), 1);
    engine.shutdown().await;
}

async fn a_run_timeout_is_retried_within_the_execution_timeout(backend: Backend) {
    let clock = TestClock::new();
    let engine = engine(backend, "run-timeout-retry")
        .clock(clock.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let policy = RetryPolicy {
        initial_interval: Duration::from_secs(1),
        ..RetryPolicy::default()
    };
    let options = StartOptions::new()
        .run_timeout(MINUTE)
        .execution_timeout(Duration::from_secs(150))
        .retry_policy(policy);
    let h = client
        .start_with::<Waiter>("retried", (), options)
        .await
        .unwrap();
    status_is(&h, RunStatus::Running).await;
    clock.advance(MINUTE);
    eventually("the retry of the run timeout", || async {
        (runs_of(&client, "Waiter", "retried").await.len() == 2).then_some(())
    })
    .await;
    let runs = runs_of(&client, "Waiter", "retried").await;
    assert_eq!(runs[0].status, RunStatus::TimedOut);
    let first = client.handle::<Waiter>("retried");
    assert_eq!(first.describe().await.unwrap().attempt, 2);
    // The retry starts after its backoff, with the same input, and knows its attempt.
    clock.advance(Duration::from_secs(1));
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 2);
    engine.shutdown().await;
}

async fn a_zero_timeout_is_refused(backend: Backend) {
    let engine = engine(backend, "zero-timeout").build().await.unwrap();
    let client = engine.client();
    let err = client
        .start_with::<Waiter>("zero", (), StartOptions::new().run_timeout(Duration::ZERO))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, WfError::InvalidArgument(m) if m.contains("run timeout is zero")),
        "{err:?}"
    );
    assert!(runs_of(&client, "Waiter", "zero").await.is_empty());
    engine.shutdown().await;
}

/// Two engines on one store race to fire every run's timeout: each run times out once, and
/// each retry starts once.
async fn a_timeout_fires_once_with_two_engines(backend: Backend) {
    const RUNS: usize = 20;
    let clock = TestClock::new();
    let engines = shared_store(backend, "timeout-once");
    let mut workers = Vec::new();
    for _ in 0..2 {
        workers.push(
            engines()
                .clock(clock.clone())
                .workflow::<Waiter>()
                .build()
                .await
                .unwrap(),
        );
    }
    let client = workers[1].client();
    let policy = RetryPolicy {
        maximum_attempts: 2,
        ..RetryPolicy::default()
    };
    for i in 0..RUNS {
        let options = StartOptions::new()
            .run_timeout(MINUTE)
            .retry_policy(policy.clone());
        workers[i % 2]
            .client()
            .start_with::<Waiter>(&format!("once-{i}"), (), options)
            .await
            .unwrap();
    }
    clock.advance(MINUTE);
    eventually("every first run timed out and retried", || async {
        let all = client
            .list(ListFilter {
                workflow_type: Some("Waiter".into()),
                ..Default::default()
            })
            .await
            .ok()?;
        (all.iter()
            .filter(|r| r.status == RunStatus::TimedOut)
            .count()
            == RUNS)
            .then_some(())
    })
    .await;
    // Past the backoff and the retries' own run timeout: the second attempts time out too.
    clock.advance(Duration::from_secs(1));
    clock.advance(MINUTE);
    eventually("every retry timed out", || async {
        let all = client
            .list(ListFilter {
                workflow_type: Some("Waiter".into()),
                ..Default::default()
            })
            .await
            .ok()?;
        (all.iter()
            .filter(|r| r.status == RunStatus::TimedOut)
            .count()
            == 2 * RUNS)
            .then_some(())
    })
    .await;
    let all = client
        .list(ListFilter {
            workflow_type: Some("Waiter".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 2 * RUNS, "one retry per workflow: {all:?}");
    let ids: HashSet<&str> = all.iter().map(|r| r.workflow_id.as_str()).collect();
    assert_eq!(ids.len(), RUNS);
    for i in 0..RUNS {
        let h = client.handle::<Waiter>(&format!("once-{i}"));
        let history = h.history().await.unwrap();
        let timed_out = count(&history, |k| {
            matches!(k, EventKind::WorkflowTimedOut { .. })
        });
        assert_eq!(timed_out, 1, "{history:?}");
    }
    for w in workers {
        w.shutdown().await;
    }
}

both!(
    run_timeout_closes_the_run_as_timed_out,
    execution_timeout_spans_continue_as_new_and_is_not_retried,
    children_of_a_timed_out_run_get_their_parent_close_policy,
    a_failed_run_is_retried_with_its_input_after_a_durable_backoff,
    retries_stop_at_the_maximum_attempts_and_non_retryable_types,
    a_run_timeout_is_retried_within_the_execution_timeout,
    a_zero_timeout_is_refused,
    a_timeout_fires_once_with_two_engines,
);
