//! Shared test fixtures: wf-testkit's (engines on the three stores and the `both!` macro,
//! scratch files, waiting, history helpers, child processes), re-exported, and the activities
//! with knobs that wf-sdk's tests turn.
#![allow(dead_code)]

pub use wf_testkit::*;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use wf_sdk::prelude::*;

// ---------------------------------------------------------------------------------------------
// Activities

/// Activities with knobs the tests turn.
#[derive(Default)]
pub struct Tools {
    pub calls: AtomicU32,
    /// `flaky` fails this many times before succeeding.
    pub fail_first: AtomicU32,
}

#[activities]
impl Tools {
    /// Returns its input plus one.
    #[activity]
    pub async fn add_one(&self, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(n + 1)
    }

    /// Fails `fail_first` times (retryable), then returns the attempt number.
    #[activity]
    pub async fn flaky(&self, ctx: ActivityContext) -> Result<u32, ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail_first.load(Ordering::SeqCst) >= ctx.attempt() {
            return Err(ActivityError::retryable(format!(
                "attempt {} failed",
                ctx.attempt()
            )));
        }
        Ok(ctx.attempt())
    }

    /// Always fails with a non-retryable `invalid_card` error.
    #[activity]
    pub async fn decline(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(ActivityError::non_retryable(
            "invalid_card",
            "card declined",
        ))
    }

    /// Never finishes (for timeouts).
    #[activity]
    pub async fn hang(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
        Ok(())
    }

    /// Heartbeats progress from where the previous attempt stopped; the first attempt stops
    /// (hangs) after reaching `stop_at`.
    #[activity]
    pub async fn count_to(
        &self,
        ctx: ActivityContext,
        target: u32,
        stop_at: u32,
    ) -> Result<Vec<u32>, ActivityError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let start: u32 = ctx.last_heartbeat().unwrap_or(0);
        let mut done = Vec::new();
        for i in start + 1..=target {
            done.push(i);
            ctx.heartbeat(&i).await?;
            if ctx.attempt() == 1 && i == stop_at {
                std::future::pending::<()>().await;
            }
        }
        Ok(done)
    }

    /// Echoes a string.
    #[activity]
    pub async fn echo(&self, _ctx: ActivityContext, s: String) -> Result<String, ActivityError> {
        Ok(s)
    }
}

pub fn tools() -> Tools {
    Tools::default()
}

pub fn shared_tools() -> Arc<Tools> {
    Arc::new(Tools::default())
}

// ---------------------------------------------------------------------------------------------
// Workflows

/// Version 1 of a workflow whose later versions change its first command (the repair and
/// nondeterminism tests each write their own version 2): one activity, then waits for `go`.
#[derive(Default)]
pub struct FlowV1 {
    go: bool,
}

#[workflow(name = "flow")]
impl FlowV1 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        let n = ctx.activity(Tools::add_one, 1).await?;
        ctx.wait_condition(|s| s.go).await;
        Ok(n)
    }

    #[signal]
    fn go(&mut self) {
        self.go = true;
    }
}

/// A bug: fails after its activity (the repair and batch tests fix it with [`Fixed`]).
#[derive(Default)]
pub struct Buggy;

#[workflow(name = "buggy")]
impl Buggy {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        let n = ctx.activity(Tools::add_one, n).await?;
        Err(WorkflowError::new(format!("bug after {n}")))
    }
}

/// The fix, under the same name.
#[derive(Default)]
pub struct Fixed;

#[workflow(name = "buggy")]
impl Fixed {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<u32, WorkflowError> {
        let n = ctx.activity(Tools::add_one, n).await?;
        Ok(n * 10)
    }
}
