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

    #[update]
    async fn set(ctx: &mut WorkflowContext<Self>, by: u32, value: Opaque) -> Result<u32, UpdateError> {
        Ok(ctx.state_mut(|s| {
            s.n = value.0 + by;
            s.n
        }))
    }
}

fn main() {}
