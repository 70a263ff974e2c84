//! Lesson 2, messages: signals change a run's state, queries read it, updates change it and
//! answer, after a validator has had its say. `#[workflow]` generates one typed method per
//! handler on the run's handle (the trait `ThermostatClient`).
//!
//! `cargo run --example messages`

use wf_sdk::prelude::*;

/// A thermostat that runs until it is switched off.
#[derive(Default)]
pub struct Thermostat {
    target: i32,
    on: bool,
    changes: u32,
}

#[workflow(name = "thermostat")]
impl Thermostat {
    /// Builds the state from the input, before any message is applied.
    #[init]
    fn new(target: &i32) -> Self {
        Thermostat {
            target: *target,
            on: true,
            changes: 0,
        }
    }

    /// Waits, durably, until a signal switches it off; returns the changes it took.
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, _target: i32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(|s| !s.on).await;
        Ok(ctx.state(|s| s.changes))
    }

    /// A signal: fire and forget, recorded in history, answered by nothing.
    #[signal]
    fn switch_off(&mut self) {
        self.on = false;
    }

    /// A query: reads the state and writes nothing.
    #[query]
    fn target(&self) -> i32 {
        self.target
    }

    /// An update: changes the state and returns the old target to the caller.
    #[update]
    fn set_target(&mut self, target: i32) -> Result<i32, UpdateError> {
        self.changes += 1;
        Ok(std::mem::replace(&mut self.target, target))
    }

    /// The update's validator: a refused update leaves no trace in history.
    #[validator(set_target)]
    fn check_target(&self, target: &i32) -> Result<(), Rejection> {
        if !(5..=30).contains(target) {
            return Err(Rejection::new(
                "the target must be between 5 and 30 degrees",
            ));
        }
        Ok(())
    }
}

/// Sends each kind of message to one run.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let engine = Engine::builder()
        .memory()
        .workflow::<Thermostat>()
        .build()
        .await?;
    let run = engine.client().start::<Thermostat>("hall", 19).await?;
    assert_eq!(run.set_target(21).await?, 19);
    // The validator refuses this one: the caller gets `WfError::Rejected`.
    let refused = run.set_target(80).await;
    println!("set_target(80): {refused:?}");
    assert!(matches!(refused, Err(WfError::Rejected(_))));
    assert_eq!(run.target().await?, 21);
    // A signal id makes a retried signal count once.
    run.switch_off().signal_id("off-1").await?;
    run.switch_off().signal_id("off-1").await?;
    let changes = run.result().await?;
    println!("switched off after {changes} change(s)");
    assert_eq!(changes, 1);
    engine.shutdown().await;
    Ok(())
}
