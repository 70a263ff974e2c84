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

    #[signal]
    fn bump(ctx: &mut WorkflowContext<Self>) {
        ctx.state_mut(|s| s.n += 1);
    }
}

fn main() {}
