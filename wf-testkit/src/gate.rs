//! The gate workflow the blocked-on and `query_at` tests drive (client, HTTP, CLI): its main
//! method waits on a `wait_condition` until `open`, `bump` counts, and the update `hold` waits
//! for the signal `release` and then sleeps. It records where its `wait_condition` call is
//! (`file!()`, `line!()`), for tests to compare with what describe names.

use std::time::Duration;
use wf_sdk::prelude::*;

/// Counts `bump`s until `open`; its main method blocks on a `wait_condition`.
#[derive(Default)]
pub struct Gate {
    open: bool,
    count: u32,
    /// The source file and line of `run`'s `wait_condition` call.
    wait_at: (String, u32),
}

#[workflow(name = "gate")]
impl Gate {
    /// Waits until `open`, then returns the count.
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.state_mut(|s| s.wait_at = (file!().to_string(), line!() + 1));
        ctx.wait_condition(|s| s.open).await;
        Ok(ctx.state(|s| s.count))
    }

    /// Counts one.
    #[signal]
    fn bump(&mut self) {
        self.count += 1;
    }

    /// Lets `run` return.
    #[signal]
    fn open(&mut self) {
        self.open = true;
    }

    /// Waits for the signal `release` (an hour at most), then sleeps a minute.
    #[update]
    async fn hold(ctx: &mut WorkflowContext<Self>) -> Result<u32, UpdateError> {
        let _ = ctx
            .wait_for_signal::<()>("release")
            .timeout(Duration::from_secs(3600))
            .await;
        ctx.sleep(Duration::from_secs(60)).await?;
        Ok(ctx.state(|s| s.count))
    }

    /// The count so far.
    #[query]
    fn count(&self) -> u32 {
        self.count
    }

    /// Where `run`'s `wait_condition` call is: its file and line.
    #[query]
    fn wait_at(&self) -> (String, u32) {
        self.wait_at.clone()
    }
}
