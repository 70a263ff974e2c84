use wf_sdk::prelude::*;

#[derive(Default)]
struct W {
    n: u32,
}

#[workflow]
impl W {
    #[run]
    async fn run(&mut self) -> Result<u32, WorkflowError> {
        Ok(self.n)
    }
}

fn main() {}
