use wf_sdk::prelude::*;
use wf_sdk::payload::Payload;

#[derive(Default)]
struct W {
    seen: Vec<String>,
}

#[workflow]
impl W {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<usize, WorkflowError> {
        Ok(ctx.state(|s| s.seen.len()))
    }

    #[validator(dynamic)]
    fn check(&self, _name: &str, _args: &Payload) -> Result<(), Rejection> {
        Ok(())
    }
}

fn main() {}
