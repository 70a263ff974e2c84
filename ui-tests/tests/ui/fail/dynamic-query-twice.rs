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

    #[query(dynamic)]
    fn first(&self, name: String, _args: Payload) -> String {
        name
    }

    #[query(dynamic)]
    fn second(&self, name: String, _args: Payload) -> String {
        name
    }
}

fn main() {}
