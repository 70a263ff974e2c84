//! Queries with no, one and several arguments, renamed, returning owned values.
#![deny(warnings)]

use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Ledger {
    entries: Vec<u64>,
}

#[workflow]
impl Ledger {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, opening: u64) -> Result<(), WorkflowError> {
        ctx.state_mut(|s| s.entries.push(opening));
        Ok(())
    }

    #[query]
    fn total(&self) -> u64 {
        self.entries.iter().sum()
    }

    #[query]
    fn entry(&self, i: usize) -> Option<u64> {
        self.entries.get(i).copied()
    }

    #[query(name = "range")]
    fn entries_between(&self, from: usize, to: usize) -> Vec<u64> {
        self.entries.get(from..to).unwrap_or_default().to_vec()
    }
}

#[allow(dead_code)]
async fn client(h: &WorkflowHandle<Ledger>) -> Result<(), WfError> {
    let _: u64 = h.total().await?;
    let _: Option<u64> = h.entry(0).await?;
    let _: Vec<u64> = h.entries_between(0, 2).await?;
    Ok(())
}

fn main() {
    let ledger = Ledger { entries: vec![1, 2, 3] };
    assert_eq!(ledger.total(), 6);
    assert_eq!(ledger.entry(1), Some(2));
    assert_eq!(ledger.entries_between(1, 3), [2, 3]);
    let names: Vec<&str> = <Ledger as wf_sdk::workflow::WorkflowDefinition>::handlers().iter().map(|h| h.name).collect();
    assert_eq!(names, ["total", "entry", "range"]);
}
