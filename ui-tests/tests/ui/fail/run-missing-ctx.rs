use wf_sdk::prelude::*;

#[derive(Default)]
struct W {
    n: u32,
}

#[workflow]
impl W {
    #[run]
    async fn run(start: u32) -> Result<u32, WorkflowError> {
        Ok(start)
    }
}

fn main() {}
