//! Lesson 4, retries: an activity that fails with a retryable error is tried again, with
//! backoff, by the engine (the workflow sees only the final outcome); a non-retryable error
//! ends the attempts at once, and the workflow decides what it means. Each attempt's timeout
//! and the whole call's are options of the call.
//!
//! `cargo run --example retries`

use std::time::Duration;
use wf_sdk::prelude::*;

/// A flaky payment provider: the first two charges time out; refunds are refused.
pub struct Provider;

#[activities]
impl Provider {
    /// Charges `cents`, failing twice before it succeeds.
    #[activity]
    async fn charge(&self, ctx: ActivityContext, cents: u64) -> Result<String, ActivityError> {
        if ctx.attempt() <= 2 {
            // Retryable: the engine schedules another attempt after the policy's backoff.
            return Err(ActivityError::retryable("the provider timed out"));
        }
        Ok(format!("charged {cents} on attempt {}", ctx.attempt()))
    }

    /// Refunds: always refused, and no retry would change that.
    #[activity]
    async fn refund(&self, _ctx: ActivityContext, _cents: u64) -> Result<(), ActivityError> {
        Err(ActivityError::non_retryable(
            "card_closed",
            "the card was closed",
        ))
    }
}

/// Charges, then tries a refund and reports why it failed.
#[derive(Default)]
pub struct Payment;

#[workflow(name = "payment_retries")]
impl Payment {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, cents: u64) -> Result<String, WorkflowError> {
        let policy = RetryPolicy {
            initial_interval: Duration::from_millis(10),
            backoff_coefficient: 2.0,
            maximum_attempts: 5, // 0, the default, retries until it succeeds
            ..RetryPolicy::default()
        };
        let receipt = ctx
            .activity(Provider::charge, cents)
            .retry(policy)
            .start_to_close(Duration::from_secs(10)) // each attempt
            .await?;
        // A final failure is an `ActivityCallError` the workflow can match on.
        let refund = match ctx.activity(Provider::refund, cents).await {
            Ok(()) => "refunded".to_string(),
            Err(e) => format!("refund failed: {e}"),
        };
        Ok(format!("{receipt}; {refund}"))
    }
}

/// Runs one payment and prints what the retries did.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let engine = Engine::builder()
        .memory()
        .workflow::<Payment>()
        .activities(Provider)
        .build()
        .await?;
    let run = engine.client().start::<Payment>("pay-1", 1250).await?;
    let outcome = run.result().await?;
    println!("{outcome}");
    assert!(outcome.starts_with("charged 1250 on attempt 3; refund failed"));
    engine.shutdown().await;
    Ok(())
}
