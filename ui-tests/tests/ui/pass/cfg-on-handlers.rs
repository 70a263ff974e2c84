//! `#[cfg]` on a handler or an activity goes with everything generated for it: compiled out,
//! it has no table entry, no client method and no registration.
#![deny(warnings)]

use std::sync::Arc;
use wf_sdk::__private::{ActivityGroup, ActivityRegistry};
use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Toggles {
    on: bool,
}

#[workflow]
impl Toggles {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<(), WorkflowError> {
        ctx.wait_condition(|s| s.on).await;
        Ok(())
    }

    #[signal]
    fn switch_on(&mut self) {
        self.on = true;
    }

    #[cfg(any())]
    #[signal]
    fn compiled_out(&mut self, _value: NotSerializable) {}

    #[cfg(all())]
    #[query]
    fn is_on(&self) -> bool {
        self.on
    }
}

/// Only the compiled-out methods mention it: nothing generated for them may remain.
#[cfg(any())]
pub struct NotSerializable;

pub struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn kept(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        Ok(())
    }

    #[cfg(any())]
    #[activity]
    async fn dropped(&self, _ctx: ActivityContext, _v: NotSerializable) -> Result<(), ActivityError> {
        Ok(())
    }
}

#[allow(dead_code)]
async fn client(h: &WorkflowHandle<Toggles>) -> Result<bool, WfError> {
    h.switch_on().await?;
    h.is_on().await
}

fn main() {
    let names: Vec<&str> = <Toggles as wf_sdk::workflow::WorkflowDefinition>::handlers()
        .iter()
        .map(|h| h.name)
        .collect();
    assert_eq!(names, ["switch_on", "is_on"]);
    let mut registry = ActivityRegistry::default();
    Arc::new(Tools).register(&mut registry);
    assert_eq!(registry.names().collect::<Vec<_>>(), ["kept"]);
}
