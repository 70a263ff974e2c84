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
    fn set(&mut self, n: u32, why: String) -> Result<u32, UpdateError> {
        let _ = why;
        self.n = n;
        Ok(n)
    }

    #[validator(set)]
    fn check(&mut self, n: &u32, why: &String) -> Result<(), Rejection> {
        let _ = (n, why);
        Ok(())
    }
}

fn main() {}
