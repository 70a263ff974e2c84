//! Activities with zero, one, two and five (the most) arguments, renamed, next to ordinary
//! methods.
#![deny(warnings)]

use std::sync::Arc;
use wf_sdk::prelude::*;
use wf_sdk::__private::{type_id_of_val, ActivityGroup, ActivityRegistry};

pub struct Tools {
    base: u32,
}

#[activities]
impl Tools {
    pub fn new(base: u32) -> Self {
        Tools { base }
    }

    #[activity]
    async fn ping(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        Ok(())
    }

    #[activity]
    async fn shout(&self, _ctx: ActivityContext, text: String) -> Result<String, ActivityError> {
        Ok(text.to_uppercase())
    }

    /// Adds two numbers to the base.
    #[activity(name = "add")]
    async fn sum(&self, _ctx: ActivityContext, a: u32, b: u32) -> Result<u32, ActivityError> {
        Ok(self.base + a + b)
    }

    #[activity]
    async fn mix(
        &self,
        _ctx: ActivityContext,
        a: u8,
        b: u16,
        c: u32,
        d: String,
        e: bool,
    ) -> Result<u64, ActivityError> {
        Ok(a as u64 + b as u64 + c as u64 + d.len() as u64 + e as u64)
    }
}

#[derive(Default)]
struct Caller;

#[workflow]
impl Caller {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<u32, WorkflowError> {
        ctx.activity(Tools::ping, ()).await?;
        let s: String = ctx.activity(Tools::shout, "hi".to_string()).await?;
        let n = ctx.activity(Tools::sum, (1, 2)).await?;
        let m = ctx
            .activity(Tools::mix, (1, 2, 3, "four".to_string(), true))
            .await?;
        let n = n + m as u32;
        Ok(n + s.len() as u32)
    }
}

fn main() {
    assert_eq!(Tools::activity_name(type_id_of_val(&Tools::ping)), Some("ping"));
    assert_eq!(Tools::activity_name(type_id_of_val(&Tools::shout)), Some("shout"));
    assert_eq!(Tools::activity_name(type_id_of_val(&Tools::sum)), Some("add"));
    assert_eq!(Tools::activity_name(type_id_of_val(&Tools::new)), None);
    let mut registry = ActivityRegistry::default();
    Arc::new(Tools::new(1)).register(&mut registry);
    let mut names: Vec<&str> = registry.names().collect();
    names.sort();
    assert_eq!(names, ["add", "mix", "ping", "shout"]);
}
