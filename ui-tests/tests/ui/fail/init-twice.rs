use wf_sdk::prelude::*;

#[derive(Default)]
struct W {
    n: u32,
}

#[workflow]
impl W {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        Ok(ctx.state(|s| s.n))
    }

    #[init]
    fn new() -> Self {
        W { n: 1 }
    }

    #[init]
    fn other() -> Self {
        W { n: 2 }
    }
}

fn main() {}
