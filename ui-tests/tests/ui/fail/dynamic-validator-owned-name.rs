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

    #[update(dynamic)]
    fn any(&mut self, name: String, _args: Payload) -> Result<String, UpdateError> {
        Ok(name)
    }

    #[validator(dynamic)]
    fn check(&self, _name: String, _args: &Payload) -> Result<(), Rejection> {
        Ok(())
    }
}

fn main() {}
