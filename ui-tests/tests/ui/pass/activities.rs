//! Activities with zero, one and two arguments, renamed, next to ordinary methods.
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
    assert_eq!(names, ["add", "ping", "shout"]);
}
