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
    async fn any(&self, name: String, _args: Payload) -> String {
        name
    }
}

fn main() {}
