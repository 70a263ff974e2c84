//! One mistake (an async query) and code that uses the workflow, its client methods and its
//! definition: the user sees the one error, not errors at every use.
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct W {
    n: u32,
}

#[workflow]
impl W {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, start: u32) -> Result<u32, WorkflowError> {
        Ok(ctx.state(|s| s.n) + start)
    }

    #[signal]
    fn bump(&mut self, by: u32) {
        self.n += by;
    }

    #[query]
    async fn value(&self) -> u32 {
        self.n
    }
}

pub struct Tools;

#[activities]
impl Tools {
    #[activity]
    fn ping(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        Ok(())
    }
}

fn registered<T: wf_sdk::workflow::WorkflowDefinition<Input = u32, Output = u32>>() {}
fn group<T: wf_sdk::__private::ActivityGroup>() {}

#[allow(dead_code)]
async fn client(h: &WorkflowHandle<W>) -> Result<u32, WfError> {
    h.bump(2).await?;
    h.value().await
}

fn main() {
    registered::<W>();
    group::<Tools>();
    let mut w = W::default();
    w.bump(1);
}
