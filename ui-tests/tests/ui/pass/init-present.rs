//! `#[init]` with the run's input, and `#[init]` without parameters; the return type may be
//! spelled `Self` or with the type's name.
#![deny(warnings)]

use wf_sdk::prelude::*;

#[derive(Serialize, Deserialize)]
pub struct Order {
    pub id: u64,
}

pub struct Shipment {
    id: u64,
}

#[workflow]
impl Shipment {
    #[init]
    fn from_order(order: &Order) -> Shipment {
        Shipment { id: order.id }
    }

    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, order: Order) -> Result<u64, WorkflowError> {
        Ok(ctx.state(|s| s.id) + order.id)
    }
}

pub struct Counter {
    n: u32,
}

#[workflow(name = "counter_v2")]
impl Counter {
    #[init]
    fn new() -> Self {
        Counter { n: 10 }
    }

    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, target: u32) -> Result<u32, WorkflowError> {
        ctx.wait_condition(move |s| s.n >= target).await;
        Ok(ctx.state(|s| s.n))
    }

    #[query]
    fn value(&self) -> u32 {
        self.n
    }
}

fn main() {
    use wf_sdk::workflow::WorkflowDefinition;
    assert_eq!(Shipment::init_state(&Order { id: 7 }).id, 7);
    assert_eq!(Counter::init_state(&3).n, 10);
    assert_eq!(Counter::NAME, "counter_v2");
    assert_eq!(Shipment::NAME, "Shipment");
}
