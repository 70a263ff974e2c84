use wf_sdk::prelude::*;

struct Opaque(u32);

#[derive(Default)]
struct W {
    n: u32,
}

#[workflow]
impl W {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<Opaque, WorkflowError> {
        Ok(Opaque(ctx.state(|s| s.n)))
    }
}

fn main() {}
