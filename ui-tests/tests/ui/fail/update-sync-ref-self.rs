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

    #[update]
    fn bump(&self, by: u32) -> Result<u32, UpdateError> {
        Ok(self.n + by)
    }
}

fn main() {}
