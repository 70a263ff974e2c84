//! Handler and activity parameters named like the generated code's own variables (`arg0`,
//! `__arg0`, `__ctx`, ..), a destructuring pattern next to `arg1`, and user items named like
//! the items the generated code uses: the generated code binds hygienic names and reaches its
//! items through the private path, so nothing collides.
#![deny(warnings)]

use wf_sdk::prelude::*;

/// User items with the names of the generated code's items, in scope where it expands.
#[allow(dead_code)]
mod shadows {
    pub struct Box;
    pub struct Vec;
    pub struct Arc;
    pub struct Payload;
    pub struct Handler;
    pub fn signal_call() {}
    pub fn query_call() {}
    pub fn update_call() {}
}
#[allow(unused_imports)]
use shadows::*;

#[derive(Default)]
pub struct Names {
    total: u64,
}

#[workflow]
impl Names {
    #[run]
    async fn run(__ctx: &mut WorkflowContext<Self>, __input: u64) -> Result<u64, WorkflowError> {
        Ok(__ctx.state(|s| s.total) + __input)
    }

    #[signal]
    fn add(&mut self, arg0: u32, arg1: u32, __arg0: u32, __arg1: u32) {
        self.total += (arg0 + arg1 + __arg0 + __arg1) as u64;
    }

    /// A pattern at index 1 was once named `arg1`, like the parameter before it.
    #[signal]
    fn pair(&mut self, arg1: u32, (a, b): (u32, u32), __arg2: u32) {
        self.total += (arg1 + a + b + __arg2) as u64;
    }

    #[signal]
    async fn later(__ctx: &mut WorkflowContext<Self>, __payload: u64, __future: u64) {
        __ctx.state_mut(|s| s.total += __payload + __future);
    }

    #[query]
    fn get(&self, __state: u64, __payload: u64) -> u64 {
        self.total + __state + __payload
    }

    #[update]
    fn set(&mut self, __arg1: u64, arg0: u64) -> Result<u64, UpdateError> {
        self.total = __arg1 + arg0;
        Ok(self.total)
    }

    #[validator(set)]
    fn check_set(&self, __arg1: &u64, arg0: &u64) -> Result<(), Rejection> {
        if *__arg1 == *arg0 { Err(Rejection::new("same")) } else { Ok(()) }
    }

    #[update]
    async fn bump(__ctx: &mut WorkflowContext<Self>, __result: u64, (__verdict, __state): (u64, u64)) -> Result<u64, UpdateError> {
        Ok(__ctx.state_mut(|s| {
            s.total += __result + __verdict + __state;
            s.total
        }))
    }
}

pub struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn mix(
        &self,
        __ctx: ActivityContext,
        __input: u32,
        __arg0: u32,
        __group: u32,
        __output: u32,
    ) -> Result<u32, ActivityError> {
        let _ = __ctx;
        Ok(__input + __arg0 + __group + __output)
    }

    #[activity]
    async fn one(&self, _ctx: ActivityContext, __arg0: (u32, u32)) -> Result<u32, ActivityError> {
        Ok(__arg0.0 + __arg0.1)
    }
}

#[allow(dead_code)]
async fn client(h: &WorkflowHandle<Names>) -> Result<(), WfError> {
    let (arg0, arg1, __arg0) = (1, 2, 3);
    h.add(arg0, arg1, __arg0, 4).await?;
    h.pair(arg1, (arg0, arg1), __arg0).await?;
    h.later(5, 6).await?;
    let _: u64 = h.get(7, 8).await?;
    let _: u64 = h.set(9, 10).await?;
    let _: u64 = h.bump(11, (12, 13)).await?;
    Ok(())
}

fn main() {
    let mut n = Names::default();
    n.add(1, 2, 3, 4);
    n.pair(1, (2, 3), 4);
    assert_eq!(n.get(0, 0), 20);
    assert!(n.check_set(&1, &1).is_err());
    assert_eq!(<Names as wf_sdk::workflow::WorkflowDefinition>::handlers().len(), 6);
}
