//! What an engine that stops does with the work in hand: an activity's result that reaches
//! its workflow worker as the engine stops is recorded all the same (through the store), not
//! dropped with the worker's thread to wait out the attempt's start-to-close timeout.

mod common;
use common::*;
use std::time::Duration;
use wf_sdk::prelude::*;

/// An activity that sleeps for its input (microseconds) and returns it.
pub struct Naps;

#[activities]
impl Naps {
    /// Sleeps `micros`, then returns it.
    #[activity]
    pub async fn nap(&self, _ctx: ActivityContext, micros: u64) -> Result<u64, ActivityError> {
        tokio::time::sleep(Duration::from_micros(micros)).await;
        Ok(micros)
    }
}

/// Runs one `nap` and returns its result.
#[derive(Default)]
pub struct Napper;

#[workflow]
impl Napper {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, micros: u64) -> Result<u64, WorkflowError> {
        Ok(ctx.activity(Naps::nap, micros).await?)
    }
}

async fn an_activity_result_reaching_a_stopping_engine_is_recorded(backend: Backend) {
    let make = shared_store(backend, "stopping");
    let open = || async {
        make()
            .workflow::<Napper>()
            .activities(Naps)
            .build()
            .await
            .unwrap()
    };
    // The engine stops about when the activity finishes: the sweep moves the result's arrival
    // across the worker's last moments (before them, during, after).
    for i in 0..16u64 {
        let micros = 150 * i;
        let engine = open().await;
        let id = format!("nap-{i}");
        engine.client().start::<Napper>(&id, micros).await.unwrap();
        tokio::time::sleep(Duration::from_micros(micros)).await;
        engine.shutdown().await;

        let engine = open().await;
        let result = tokio::time::timeout(
            Duration::from_secs(30),
            engine.client().handle::<Napper>(&id).result(),
        )
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{id}: no result after 30 s: the activity's result was lost with the stopping \
                 engine (its attempt waits out the 5-minute start-to-close)"
            )
        });
        assert_eq!(result.unwrap(), micros, "{id}");
        engine.shutdown().await;
    }
}

both!(an_activity_result_reaching_a_stopping_engine_is_recorded);
