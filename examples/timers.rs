//! Lesson 3, timers and waits: `ctx.sleep` is a durable timer (it survives restarts and
//! costs nothing while it waits), and a wait on the run's state can have a deadline. The test
//! clock (`TestClock`) moves engine time only when told to, so a day passes in a millisecond.
//!
//! `cargo run --example timers`

use std::time::Duration;
use wf_sdk::prelude::*;

const DAY: Duration = Duration::from_secs(86_400);
const HOUR: Duration = Duration::from_secs(3600);

/// An invitation that waits a day for an answer, then reminds once and waits a day more.
#[derive(Default)]
pub struct Invitation {
    accepted: bool,
}

#[workflow(name = "invitation")]
impl Invitation {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<String, WorkflowError> {
        // A bounded wait: true when the condition held before the deadline.
        if ctx.wait_condition(|s| s.accepted).timeout(DAY).await {
            return Ok("accepted on day one".into());
        }
        // A plain durable timer: an hour's grace before the reminder goes out.
        ctx.sleep(HOUR).await?;
        if ctx.wait_condition(|s| s.accepted).timeout(DAY).await {
            return Ok("accepted after the reminder".into());
        }
        Ok("expired".into())
    }

    #[signal]
    fn accept(&mut self) {
        self.accepted = true;
    }
}

/// Waits until the run has started `n` timers: it is parked, so moving the clock is safe.
async fn timers_started(run: &WorkflowHandle<Invitation>, n: usize) -> Result<(), WfError> {
    loop {
        let history = run.history().await?;
        if history
            .iter()
            .filter(|e| e.kind.name() == "TimerStarted")
            .count()
            >= n
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One invitation accepted after the reminder, one left to expire: two days each, instantly.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let clock = TestClock::new();
    let engine = Engine::builder()
        .memory()
        .clock(clock.clone())
        .workflow::<Invitation>()
        .build()
        .await?;
    let client = engine.client();
    let late = client.start::<Invitation>("invite-ann", ()).await?;
    let never = client.start::<Invitation>("invite-bob", ()).await?;
    // Each step: wait until both runs wait on their next timer, then move the clock past it.
    for (timers, step) in [(1, DAY), (2, HOUR)] {
        timers_started(&late, timers).await?;
        timers_started(&never, timers).await?;
        clock.advance(step); // the first day without an answer, then the grace hour
    }
    timers_started(&late, 3).await?;
    timers_started(&never, 3).await?;
    late.accept().await?;
    let ann = late.result().await?;
    clock.advance(DAY); // bob's second day passes without an answer
    let bob = never.result().await?;
    println!("ann: {ann}; bob: {bob}");
    assert_eq!(
        (ann.as_str(), bob.as_str()),
        ("accepted after the reminder", "expired")
    );
    engine.shutdown().await;
    Ok(())
}
