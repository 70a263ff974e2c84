//! `WorkflowHandle::update_handle(update_id)`: attach to an update sent earlier, by another
//! client or before a restart, and await its outcome.

mod common;
use common::*;
use wf_sdk::error::WfError;
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Gate {
    open: bool,
    done: bool,
}

#[workflow]
impl Gate {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(())
    }

    #[signal]
    fn open(&mut self) {
        self.open = true;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    /// Waits until the gate opens, then answers `n * 10`.
    #[update]
    async fn pass(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, UpdateError> {
        ctx.wait_condition(|s| s.open).await;
        if n == 0 {
            return Err(UpdateError::new("zero cannot pass"));
        }
        Ok(n * 10)
    }
}

async fn an_update_sent_before_a_restart_is_awaited_by_its_id(backend: Backend) {
    let engines = shared_store(backend, "update-handle");
    let engine = engines().workflow::<Gate>().build().await.unwrap();
    let h = engine.client().start::<Gate>("gate", ()).await.unwrap();
    let sent = h.pass(4).update_id("u-4").start().await.unwrap();
    assert_eq!(sent.update_id(), "u-4");
    h.pass(0).update_id("u-0").start().await.unwrap();
    engine.shutdown().await;

    let engine = engines().workflow::<Gate>().build().await.unwrap();
    let h = engine.client().handle::<Gate>("gate");
    let attached = h.update_handle::<u32>("u-4");
    assert_eq!(attached.update_id(), "u-4");
    h.open().await.unwrap();
    assert_eq!(attached.result().await.unwrap(), 40);
    // A failed update's handle gets its failure, and a finished update answers at once.
    match h.update_handle::<u32>("u-0").result().await {
        Err(WfError::UpdateFailed(msg)) => assert!(msg.contains("zero cannot pass"), "{msg}"),
        other => panic!("expected UpdateFailed, got {other:?}"),
    }
    assert_eq!(h.update_handle::<u32>("u-4").result().await.unwrap(), 40);
    // An id no update has is not found.
    match h.update_handle::<u32>("never-sent").result().await {
        Err(e @ WfError::NotFound { .. }) => {
            let WfError::NotFound { update_id, .. } = &e else {
                unreachable!()
            };
            assert_eq!(update_id.as_deref(), Some("never-sent"));
            assert!(e.to_string().contains("\"never-sent\""), "{e}");
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    let waited = engine
        .client()
        .wait_update(
            "gate",
            "never-sent-2",
            wf_sdk::client::UpdateStage::Completed,
        )
        .await;
    assert!(
        waited
            .as_ref()
            .is_err_and(|e| e.to_string().contains("never-sent-2")),
        "{waited:?}"
    );
    h.finish().await.unwrap();
    h.result().await.unwrap();
}

async fn another_client_attaches_to_a_running_update(backend: Backend) {
    let engine = builder(backend, "update-handle-other")
        .workflow::<Gate>()
        .build()
        .await
        .unwrap();
    let h = engine.client().start::<Gate>("gate", ()).await.unwrap();
    let first = h.pass(2).update_id("u-2").start().await.unwrap();
    let other = engine.client().handle::<Gate>("gate");
    let attached = other.update_handle::<u32>("u-2");
    let waiter = tokio::spawn(async move { attached.result().await });
    h.open().await.unwrap();
    assert_eq!(waiter.await.unwrap().unwrap(), 20);
    assert_eq!(first.result().await.unwrap(), 20);
}

both!(
    an_update_sent_before_a_restart_is_awaited_by_its_id,
    another_client_attaches_to_a_running_update,
);
