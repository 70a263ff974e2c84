use wf_sdk::prelude::*;

#[derive(Default)]
struct W<T> {
    n: T,
}

#[workflow]
impl<T: Default + Copy + 'static> W<T> {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        let _ = ctx.state(|s| s.n);
        Ok(())
    }
}

fn main() {}
