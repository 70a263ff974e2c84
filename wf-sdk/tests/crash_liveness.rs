//! A crashed engine's work resumes within seconds, with the engine's default options: each
//! engine keeps a liveness lease in the store, and the leases of an engine that stopped
//! renewing it are free once it runs out, whatever the activities' own timeouts (the default
//! start-to-close is five minutes).

mod common;
use common::*;
use std::time::{Duration, Instant};
use wf_sdk::history::EventKind;
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct OneStep;

#[workflow]
impl OneStep {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        Ok(ctx.activity(Steps::work, ()).await?)
    }
}

/// Its first attempt never ends (the process running it will die); later ones answer their
/// attempt number.
#[derive(Default)]
pub struct Steps;

#[activities]
impl Steps {
    #[activity]
    async fn work(&self, ctx: ActivityContext) -> Result<u32, ActivityError> {
        if ctx.attempt() == 1 {
            std::future::pending::<()>().await;
        }
        Ok(ctx.attempt())
    }
}

async fn a_crashed_engines_activity_is_retried_within_seconds(backend: Backend) {
    let engines = shared_store(backend, "liveness");
    let first = engines()
        .workflow::<OneStep>()
        .activities(Steps)
        .build()
        .await
        .unwrap();
    let h = first.client().start::<OneStep>("one", ()).await.unwrap();
    eventually("attempt 1 running", || async {
        let d = h.describe().await.ok()?;
        (d.pending_activities.first()?.attempt == 1).then_some(())
    })
    .await;
    // A crash: nothing is released, the liveness lease is no longer renewed.
    drop(h);
    drop(first);
    let second = engines()
        .workflow::<OneStep>()
        .activities(Steps)
        .build()
        .await
        .unwrap();
    let h = second.client().handle::<OneStep>("one");
    let started = Instant::now();
    // A bound, not a measurement: without liveness leases this waits for the attempt's
    // five-minute default start-to-close.
    let result = tokio::time::timeout(Duration::from_secs(60), h.result())
        .await
        .expect("the crashed engine's attempt was retried within a minute")
        .unwrap();
    eprintln!("recovered {:?} after the crash", started.elapsed());
    assert_eq!(result, 2);
    let history = h.history().await.unwrap();
    let completed = history.iter().find_map(|e| match &e.kind {
        EventKind::ActivityCompleted { attempts, .. } => Some(*attempts),
        _ => None,
    });
    assert_eq!(completed, Some(2));
    second.shutdown().await;
}

both!(a_crashed_engines_activity_is_retried_within_seconds);
