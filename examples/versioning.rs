//! Lesson 7, versioning: a run replays its history through the code that runs it now, so a
//! change to a workflow's steps must not break the runs already under way. `ctx.patched(id)`
//! guards the change: true for runs that reach it under the new code, false for runs whose
//! history was recorded without it. Here version 1 starts a run and stops; version 2, on the
//! same file, adds an audit step, finishes the old run the old way and runs new ones the new way.
//!
//! `cargo run --example versioning`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;
use wf_sdk::prelude::*;

/// Version 1: charge order `n`, then wait for the shipment.
#[derive(Default)]
pub struct OrderV1 {
    shipped: bool,
}

#[workflow(name = "order")]
impl OrderV1 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<String, WorkflowError> {
        let charged = ctx.activity(Shop::charge, n).await?;
        ctx.wait_condition(|s| s.shipped).await;
        Ok(charged)
    }

    #[signal]
    fn ship(&mut self) {
        self.shipped = true;
    }
}

/// Version 2, the same wire name: an audit before the charge, for runs that start under it.
#[derive(Default)]
pub struct OrderV2 {
    shipped: bool,
}

#[workflow(name = "order")]
impl OrderV2 {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u32) -> Result<String, WorkflowError> {
        let mut steps = String::new();
        if ctx.patched("audit-before-charge") {
            steps = ctx.activity(Shop::audit, n).await? + ", ";
        }
        steps += &ctx.activity(Shop::charge, n).await?;
        ctx.wait_condition(|s| s.shipped).await;
        Ok(steps)
    }

    #[signal]
    fn ship(&mut self) {
        self.shipped = true;
    }
}

/// The shop's activities.
pub struct Shop;

#[activities]
impl Shop {
    #[activity]
    async fn audit(&self, _ctx: ActivityContext, n: u32) -> Result<String, ActivityError> {
        Ok(format!("order {n} audited"))
    }

    #[activity]
    async fn charge(&self, _ctx: ActivityContext, n: u32) -> Result<String, ActivityError> {
        Ok(format!("order {n} charged"))
    }
}

/// Deploys version 2 over a run version 1 started.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let db = DemoDb::new("versioning");
    let v1 = Engine::builder().sqlite(db.path()).workflow::<OrderV1>();
    let v1 = v1.activities(Shop).build().await?;
    let old = v1.client().start::<OrderV1>("order-1", 1).await?;
    // Let version 1 record its first steps (the charge), then stop it: the deploy.
    loop {
        let history = old.history().await?;
        if history.iter().any(|e| e.kind.name() == "ActivityCompleted") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    v1.shutdown().await;

    let v2 = Engine::builder().sqlite(db.path()).workflow::<OrderV2>();
    let v2 = v2.activities(Shop).build().await?;
    let old = v2.client().handle::<OrderV2>("order-1");
    old.ship().await?;
    let new = v2.client().start::<OrderV2>("order-2", 2).await?;
    new.ship().await?;
    let (old, new) = (old.result().await?, new.result().await?);
    println!("the old run: {old}; the new run: {new}");
    assert_eq!(old, "order 1 charged");
    assert_eq!(new, "order 2 audited, order 2 charged");
    v2.shutdown().await;
    Ok(())
}
