//! No `#[init]`: the state starts as `Default`. A run without input has `Input = ()`.
#![deny(warnings)]

use wf_sdk::prelude::*;

#[derive(Default)]
struct Ticker {
    ticks: u32,
}

#[workflow]
impl Ticker {
    #[run]
    async fn main_loop(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.state_mut(|s| s.ticks += 1);
        Ok(())
    }
}

fn assert_input<W: wf_sdk::workflow::WorkflowDefinition<Input = (), Output = ()>>() {}

fn main() {
    assert_input::<Ticker>();
    let t = <Ticker as wf_sdk::workflow::WorkflowDefinition>::init_state(&());
    assert_eq!(t.ticks, 0);
    assert!(<Ticker as wf_sdk::workflow::WorkflowDefinition>::handlers().is_empty());
}
