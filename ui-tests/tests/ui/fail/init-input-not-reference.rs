use wf_sdk::prelude::*;

#[derive(Serialize, Deserialize)]
struct Input {
    n: u32,
}

#[derive(Default)]
struct W {
    n: u32,
}

#[workflow]
impl W {
    #[init]
    fn new(input: Input) -> Self {
        W { n: input.n }
    }

    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, input: Input) -> Result<u32, WorkflowError> {
        Ok(ctx.state(|s| s.n) + input.n)
    }
}

fn main() {}
