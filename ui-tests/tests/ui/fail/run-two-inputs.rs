use wf_sdk::prelude::*;

#[derive(Default)]
struct W {
    n: u32,
}

#[workflow]
impl W {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, a: u32, b: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.state(|s| s.n) + a + b)
    }
}

fn main() {}
