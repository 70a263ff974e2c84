//! Idempotent starts: a start retried with its request id returns the run its first attempt
//! started (even after that run closed), and the id-reuse policies decide whether a workflow
//! id whose latest run is closed may start again.

mod common;
use common::*;
use wf_sdk::prelude::*;
use wf_sdk::{
    client::{ListFilter, StartOptions},
    payload::Payload,
};

/// A job that completes, or fails when asked to, at once.
#[derive(Default)]
pub struct Job;

#[workflow]
impl Job {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, fail: bool) -> Result<String, WorkflowError> {
        if fail {
            return Err(WorkflowError::Failed("the job failed".into()));
        }
        Ok("done".into())
    }
}

/// A run that waits for its `release` signal.
#[derive(Default)]
pub struct Hold {
    released: u32,
}

#[workflow]
impl Hold {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.released > 0).await;
        Ok(ctx.state(|s| s.released))
    }

    #[signal]
    fn release(&mut self) {
        self.released += 1;
    }
}

/// How many runs the workflow id has.
async fn runs_of(client: &Client, workflow_id: &str) -> usize {
    let all = client.list(ListFilter::default()).await.unwrap();
    all.iter().filter(|r| r.workflow_id == workflow_id).count()
}

async fn a_retried_start_returns_the_same_run_even_after_it_completed(backend: Backend) {
    let engine = builder(backend, "retried-start")
        .workflow::<Job>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let options = StartOptions::new().request_id("req-1");
    let first = client
        .start_with::<Job>("job-1", false, options.clone())
        .await
        .unwrap();
    let started = first.start_outcome().expect("a start's handle").clone();
    assert!(started.started);
    assert_eq!(first.result().await.unwrap(), "done");

    // The reply was lost; the caller retries with the same request id: same run, not a second.
    let retry = client
        .start_with::<Job>("job-1", false, options.clone())
        .await
        .unwrap();
    let again = retry.start_outcome().unwrap();
    assert_eq!(again.run_id, started.run_id);
    assert!(!again.started, "the retry did not start it");
    // Even under a policy that refuses a second run, and through the raw start.
    let strict = options
        .clone()
        .id_reuse_policy(IdReusePolicy::RejectDuplicate);
    let run_id = client
        .start_raw("job-1", "Job", Payload::encode(&false).unwrap(), strict)
        .await
        .unwrap();
    assert_eq!(run_id, started.run_id);
    assert_eq!(runs_of(&client, "job-1").await, 1);
    assert_eq!(retry.describe().await.unwrap().status, RunStatus::Completed);

    // A start without the request id is a new start (the default policy allows it).
    let fresh = client.start::<Job>("job-1", false).await.unwrap();
    let fresh = fresh.start_outcome().unwrap();
    assert!(fresh.started);
    assert_ne!(fresh.run_id, started.run_id);
    assert_eq!(runs_of(&client, "job-1").await, 2);
    engine.shutdown().await;
}

async fn a_retried_start_of_a_running_run_is_not_already_started(backend: Backend) {
    let engine = builder(backend, "retried-running")
        .workflow::<Hold>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let options = StartOptions::new().request_id("req-7");
    let first = client
        .start_with::<Hold>("hold-7", (), options.clone())
        .await
        .unwrap();
    let run_id = first.start_outcome().unwrap().run_id.clone();
    let retry = client
        .start_with::<Hold>("hold-7", (), options.clone())
        .await
        .expect("a retry is never AlreadyStarted");
    assert_eq!(retry.start_outcome().unwrap().run_id, run_id);
    assert!(!retry.start_outcome().unwrap().started);
    // Another request id is another start: the conflict policy refuses it as before.
    let other = client
        .start_with::<Hold>("hold-7", (), StartOptions::new().request_id("req-8"))
        .await;
    assert!(
        matches!(other, Err(WfError::AlreadyStarted { .. })),
        "{other:?}"
    );
    first.release().await.unwrap();
    assert_eq!(first.result().await.unwrap(), 1);
    let late = client
        .start_with::<Hold>("hold-7", (), options)
        .await
        .unwrap();
    assert_eq!(late.start_outcome().unwrap().run_id, run_id);
    assert_eq!(runs_of(&client, "hold-7").await, 1);
    engine.shutdown().await;
}

async fn id_reuse_policies_against_completed_and_failed_runs(backend: Backend) {
    let engine = builder(backend, "id-reuse")
        .workflow::<Job>()
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let with = |policy| StartOptions::new().id_reuse_policy(policy);
    let ok = client.start::<Job>("ok", false).await.unwrap();
    ok.result().await.unwrap();
    let bad = client.start::<Job>("bad", true).await.unwrap();
    assert!(bad.result().await.is_err());

    // After a completed run: only AllowDuplicate starts again.
    for policy in [
        IdReusePolicy::AllowDuplicateFailedOnly,
        IdReusePolicy::RejectDuplicate,
    ] {
        match client.start_with::<Job>("ok", false, with(policy)).await {
            Err(WfError::DuplicateRejected {
                workflow_id,
                status,
                ..
            }) => assert_eq!((workflow_id.as_str(), status), ("ok", RunStatus::Completed)),
            other => panic!("{policy:?} after a completed run: {other:?}"),
        }
    }
    assert_eq!(runs_of(&client, "ok").await, 1);
    let again = client
        .start_with::<Job>("ok", false, with(IdReusePolicy::AllowDuplicate))
        .await
        .unwrap();
    assert!(again.start_outcome().unwrap().started);
    assert_eq!(again.result().await.unwrap(), "done");

    // After a failed run: RejectDuplicate refuses, AllowDuplicateFailedOnly starts.
    match client
        .start_with::<Job>("bad", false, with(IdReusePolicy::RejectDuplicate))
        .await
    {
        Err(WfError::DuplicateRejected { status, .. }) => assert_eq!(status, RunStatus::Failed),
        other => panic!("RejectDuplicate after a failed run: {other:?}"),
    }
    let retried = client
        .start_with::<Job>("bad", false, with(IdReusePolicy::AllowDuplicateFailedOnly))
        .await
        .unwrap();
    assert_eq!(retried.result().await.unwrap(), "done");
    assert_eq!(runs_of(&client, "bad").await, 2);
    engine.shutdown().await;
}

both!(
    a_retried_start_returns_the_same_run_even_after_it_completed,
    a_retried_start_of_a_running_run_is_not_already_started,
    id_reuse_policies_against_completed_and_failed_runs,
);
