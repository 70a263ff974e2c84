//! `Self` in argument and return types, qualified role attributes, and items that are not
//! handlers inside the impl block.
#![deny(warnings)]

use serde::{Deserialize, Serialize};
use wf_sdk::{workflow::WorkflowContext, error::WorkflowError};

#[derive(Default, Clone, Serialize, Deserialize, PartialEq, Debug)]
pub struct Snapshot {
    n: u32,
}

#[wf_sdk::workflow]
impl Snapshot {
    const LIMIT: u32 = 3;

    #[wf_sdk::run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<Self, WorkflowError> {
        ctx.wait_condition(|s| s.n >= Self::LIMIT).await;
        Ok(ctx.state(|s| s.clone()))
    }

    #[wf_sdk::signal]
    fn replace(&mut self, with: Self) {
        *self = with;
    }

    #[wf_sdk::query]
    fn snapshot(&self) -> Self {
        self.clone()
    }

    fn helper(&self) -> u32 {
        self.n
    }
}

#[allow(dead_code)]
async fn client(h: &wf_sdk::client::WorkflowHandle<Snapshot>) -> Result<Snapshot, wf_sdk::error::WfError> {
    use SnapshotClient as _;
    h.replace(Snapshot { n: 3 }).await?;
    h.snapshot().await
}

fn main() {
    let s = Snapshot { n: 2 };
    assert_eq!(s.helper(), 2);
    assert_eq!(s.snapshot(), s);
}
