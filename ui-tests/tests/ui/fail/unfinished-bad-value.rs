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

    #[update(unfinished = "ignore")]
    fn bump(&mut self) -> Result<u32, UpdateError> {
        self.n += 1;
        Ok(self.n)
    }
}

fn main() {}
