use wf_sdk::prelude::*;
use wf_sdk::payload::Payload;

#[derive(Default)]
struct Anything;

#[workflow(dynamic)]
impl Anything {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, input: Payload) -> Result<u32, WorkflowError> {
        Ok(input.decode()?)
    }
}

fn main() {}
