use wf_sdk::prelude::*;

struct Opaque(u32);

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

    #[query]
    fn value(&self) -> Opaque {
        Opaque(self.n)
    }
}

fn main() {}
