//! A workflow whose one activity holds until the test releases it, under flow key `model`:
//! the flow-limit and queue tests use it so that what runs and what waits stays put while they
//! look (usage, counters), with no timing to guess.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wf_sdk::prelude::*;

/// The activity: `wait` returns once `release` is set.
pub struct Hold {
    /// Set by the test to let every `wait` return.
    pub release: Arc<AtomicBool>,
}

impl Hold {
    /// A hold not released yet, and the flag that releases it.
    pub fn new() -> (Hold, Arc<AtomicBool>) {
        let release = Arc::new(AtomicBool::new(false));
        (
            Hold {
                release: release.clone(),
            },
            release,
        )
    }
}

#[activities]
impl Hold {
    /// Returns once the test releases it.
    #[activity]
    pub async fn wait(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        while !self.release.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}

/// One `wait` under flow key `model`.
#[derive(Default)]
pub struct HeldCall;

#[workflow(name = "held_call")]
impl HeldCall {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        Ok(ctx.activity(Hold::wait, ()).flow_key("model").await?)
    }
}
