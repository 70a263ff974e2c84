//! Lesson 6, continue-as-new: a run that would go on forever (a loop over days, a queue of
//! work) keeps its history short by ending itself and starting a fresh run of the same
//! workflow id, handing its state over as the new run's input. Clients keep the workflow id;
//! `result()` follows the chain to its last run.
//!
//! `cargo run --example continue_as_new`

use wf_sdk::prelude::*;

/// What one run of the chain starts from.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Tally {
    /// The items counted by the runs before this one.
    pub counted: u32,
    /// Which run of the chain this is (1 for the first).
    pub generation: u32,
}

/// Counts `item` signals, ten per run, and stops at thirty.
#[derive(Default)]
pub struct Counter {
    items: u32,
}

#[workflow(name = "counter")]
impl Counter {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, tally: Tally) -> Result<String, WorkflowError> {
        ctx.wait_condition(|s| s.items >= 10).await;
        let counted = tally.counted + ctx.state(|s| s.items);
        if counted < 30 {
            // Let handlers that are still running finish, then hand over: the error value
            // tells the engine to close this run and start the next one with this input.
            ctx.handlers_drained().await;
            let next = Tally {
                counted,
                generation: tally.generation + 1,
            };
            return Err(ctx.continue_as_new(&next));
        }
        Ok(format!("{counted} items over {} runs", tally.generation))
    }

    #[signal]
    fn item(&mut self) {
        self.items += 1;
    }

    /// How many items the current run has counted.
    #[query]
    fn items(&self) -> u32 {
        self.items
    }
}

/// Sends thirty items to one workflow id, ten per run.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let engine = Engine::builder()
        .memory()
        .workflow::<Counter>()
        .build()
        .await?;
    let first = Tally {
        counted: 0,
        generation: 1,
    };
    let counter = engine.client().start::<Counter>("counter-1", first).await?;
    let mut run_id = counter.describe().await?.run_id;
    for batch in 1..=3 {
        println!("batch {batch} goes to run {run_id}");
        for _ in 0..10 {
            counter.item().await?; // the handle sends to the chain's latest run
        }
        // After its tenth item the run hands over: wait for the next run's id.
        while batch < 3 && counter.describe().await?.run_id == run_id {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        run_id = counter.describe().await?.run_id;
    }
    let outcome = counter.result().await?;
    println!("{outcome}");
    assert_eq!(outcome, "30 items over 3 runs");
    engine.shutdown().await;
    Ok(())
}
