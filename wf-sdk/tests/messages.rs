//! Message semantics: updates whose wait times out (and stay queued), what a signal reports
//! (delivered or buffered), signals to runs whose cancellation was requested, signal metadata
//! for `wait_for_signal`, and the details of a wait that timed out.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::{EventKind, UpdateStage};

#[derive(Default)]
pub struct Desk {
    goal: String,
    pings: u32,
    done: bool,
}

#[workflow(name = "desk")]
impl Desk {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.done).await;
        Ok(ctx.state(|s| format!("{} after {} pings", s.goal, s.pings)))
    }

    #[signal]
    fn ping(&mut self) {
        self.pings += 1;
    }

    #[signal]
    fn finish(&mut self) {
        self.done = true;
    }

    #[query]
    fn pings(&self) -> u32 {
        self.pings
    }

    #[update]
    fn set_goal(&mut self, goal: String) -> Result<String, UpdateError> {
        self.goal = goal.clone();
        Ok(format!("goal is {goal}"))
    }
}

fn is_accepted(k: &EventKind) -> bool {
    matches!(k, EventKind::UpdateAccepted { .. })
}

fn is_completed(k: &EventKind) -> bool {
    matches!(k, EventKind::UpdateCompleted { .. })
}

/// A client-only engine (no worker anywhere yet) starts a run and sends it an update: the
/// wait runs out with `Timeout` naming the id, the update stays queued, a worker started later
/// applies it, and the same update id then returns its value; history holds it once.
async fn update_times_out_then_a_retry_with_its_id_returns_the_value(backend: Backend) {
    let engines = shared_store(backend, "update-timeout");
    let client_engine = engines().workflow::<Desk>().client_only().build().await.unwrap();
    let client = client_engine.client();
    let h = client.start::<Desk>("desk-1", ()).await.unwrap();
    let err = h
        .set_goal("ship".into())
        .update_id("u-1")
        .timeout(Duration::from_millis(200))
        .await
        .unwrap_err();
    let WfError::Timeout(message) = &err else {
        panic!("expected Timeout, got {err:?}");
    };
    assert!(message.contains("\"u-1\"") && message.contains("stays queued"), "{message}");
    assert!(err.is_retryable());
    // The update is queued in the store, not lost.
    let pending = h.describe().await.unwrap().pending_updates;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].update_id, "u-1");

    let worker = engines().workflow::<Desk>().build().await.unwrap();
    let value = h
        .set_goal("ship".into())
        .update_id("u-1")
        .timeout(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(value, "goal is ship");
    h.finish().await.unwrap();
    assert_eq!(h.result().await.unwrap(), "ship after 0 pings");
    let history = h.history().await.unwrap();
    assert_eq!(count(&history, is_accepted), 1, "{:?}", kinds(&history));
    assert_eq!(count(&history, is_completed), 1, "{:?}", kinds(&history));
    drop(worker);
}

/// The engine's default (`EngineBuilder::update_timeout`) applies to a call that sets none,
/// and to `.start()` (waiting for acceptance) as well; the update is applied later all the
/// same, and `wait_update` under the same id sees its outcome.
async fn engine_default_timeout_and_accepted_stage(backend: Backend) {
    let engines = shared_store(backend, "update-timeout-default");
    let client_engine = engines()
        .workflow::<Desk>()
        .client_only()
        .update_timeout(Duration::from_millis(150))
        .build()
        .await
        .unwrap();
    let client = client_engine.client();
    let h = client.start::<Desk>("desk-2", ()).await.unwrap();
    let err = h.set_goal("a".into()).update_id("u-a").await.unwrap_err();
    assert!(matches!(err, WfError::Timeout(_)), "{err:?}");
    let Err(err) = h.set_goal("b".into()).update_id("u-b").start().await else {
        panic!("no worker can accept the update");
    };
    let WfError::Timeout(message) = &err else {
        panic!("expected Timeout, got {err:?}");
    };
    assert!(message.contains("was not accepted"), "{message}");
    // Without an id the message names the generated one, which a retry can carry.
    let err = h.set_goal("c".into()).await.unwrap_err();
    let WfError::Timeout(message) = &err else {
        panic!("expected Timeout, got {err:?}");
    };
    let id = message
        .split("update id \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the message names the update id")
        .to_string();

    let _worker = engines().workflow::<Desk>().build().await.unwrap();
    let b = client
        .wait_update("desk-2", "u-b", UpdateStage::Completed)
        .await
        .unwrap();
    assert_eq!(b.decode::<String>().unwrap(), "goal is b");
    let c = h
        .set_goal("c".into())
        .update_id(id)
        .timeout(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(c, "goal is c");
    let history = h.history().await.unwrap();
    assert_eq!(count(&history, is_accepted), 3, "{:?}", kinds(&history));
}

both!(
    update_times_out_then_a_retry_with_its_id_returns_the_value,
    engine_default_timeout_and_accepted_stage,
);
