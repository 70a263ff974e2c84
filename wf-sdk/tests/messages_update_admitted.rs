//! The ADMITTED update stage: `UpdateCall::admit` returns once the update is durably recorded,
//! before any validator ran; its `UpdateHandle` awaits the verdict and the outcome later, across
//! worker restarts.

mod common;
use common::*;
use wf_sdk::prelude::*;
use wf_sdk::{client::UpdateStage, error::WfError, history::EventKind, payload::Payload};

#[derive(Default)]
pub struct Counter {
    total: u32,
    done: bool,
}

#[workflow]
impl Counter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| s.total))
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[update]
    fn add(&mut self, n: u32) -> Result<u32, UpdateError> {
        self.total += n;
        Ok(self.total)
    }

    #[validator(add)]
    fn check_add(&self, n: &u32) -> Result<(), Rejection> {
        if *n == 0 {
            return Err(Rejection::new("adding zero changes nothing"));
        }
        Ok(())
    }
}

fn accepted_updates(history: &[wf_sdk::history::HistoryEvent]) -> Vec<String> {
    history
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::UpdateAccepted { update_id, .. } => Some(update_id.clone()),
            _ => None,
        })
        .collect()
}

async fn an_admitted_update_is_applied_after_the_worker_restarts(backend: Backend) {
    let engines = shared_store(backend, "admitted-restart");
    let worker = engines().workflow::<Counter>().build().await.unwrap();
    worker
        .client()
        .start::<Counter>("counter", ())
        .await
        .unwrap();
    worker.shutdown().await;
    // No worker runs the run now: the update is admitted (recorded), not validated.
    let client_engine = engines().client_only().build().await.unwrap();
    let h = client_engine.client().handle::<Counter>("counter");
    let admitted = h.add(5).update_id("add-5").admit().await.unwrap();
    assert_eq!(admitted.update_id(), "add-5");
    assert!(accepted_updates(&h.history().await.unwrap()).is_empty());
    // A worker that starts later validates and applies it; the handle gets the result.
    let worker = engines().workflow::<Counter>().build().await.unwrap();
    admitted.accepted().await.unwrap();
    assert_eq!(admitted.result().await.unwrap(), 5);
    // Admitting it again (a retry) is the same update, applied once.
    let again = h.add(5).update_id("add-5").admit().await.unwrap();
    assert_eq!(again.result().await.unwrap(), 5);
    let wh = worker.client().handle::<Counter>("counter");
    wh.finish().await.unwrap();
    assert_eq!(wh.result().await.unwrap(), 5);
    assert_eq!(accepted_updates(&wh.history().await.unwrap()), ["add-5"]);
}

async fn an_admitted_update_rejected_by_its_validator_reaches_the_handle(backend: Backend) {
    let engine = builder(backend, "admitted-rejected")
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Counter>("counter", ())
        .await
        .unwrap();
    let admitted = h.add(0).admit().await.unwrap();
    match admitted.accepted().await {
        Err(WfError::Rejected(msg)) => assert!(msg.contains("adding zero"), "{msg}"),
        other => panic!("expected Rejected, got {other:?}"),
    }
    match admitted.result().await {
        Err(WfError::Rejected(msg)) => assert!(msg.contains("adding zero"), "{msg}"),
        other => panic!("expected Rejected, got {other:?}"),
    }
    // An untyped update admitted by name goes the same way, and an accepted one completes.
    let (id, value) = engine
        .client()
        .update_raw(
            "counter",
            "add",
            Payload::encode(&(3u32,)).unwrap(),
            Some("raw-3".into()),
            UpdateStage::Admitted,
        )
        .await
        .unwrap();
    assert_eq!((id.as_str(), value), ("raw-3", Payload::default()));
    assert_eq!(h.update_handle::<u32>("raw-3").result().await.unwrap(), 3);
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), 3);
    // The rejected update left no event.
    assert_eq!(accepted_updates(&h.history().await.unwrap()), ["raw-3"]);
}

async fn a_finished_run_refuses_a_new_admission(backend: Backend) {
    let engine = builder(backend, "admitted-finished")
        .workflow::<Counter>()
        .build()
        .await
        .unwrap();
    let h = engine
        .client()
        .start::<Counter>("counter", ())
        .await
        .unwrap();
    h.finish().await.unwrap();
    h.result().await.unwrap();
    let refused = h.add(1).admit().await;
    assert!(
        matches!(refused, Err(WfError::RunFinished { .. })),
        "{:?}",
        refused.map(|u| u.update_id().to_string())
    );
}

both!(
    an_admitted_update_is_applied_after_the_worker_restarts,
    an_admitted_update_rejected_by_its_validator_reaches_the_handle,
    a_finished_run_refuses_a_new_admission,
);
