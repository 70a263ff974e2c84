//! Every form of dynamic handler, next to named ones, and how clients reach them.
#![deny(warnings)]

use wf_sdk::prelude::*;
use wf_sdk::payload::Payload;

#[derive(Default)]
struct Plain {
    seen: Vec<String>,
}

#[workflow]
impl Plain {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<usize, WorkflowError> {
        Ok(ctx.state(|s| s.seen.len()))
    }

    #[signal]
    fn named(&mut self) {}

    #[signal(dynamic)]
    fn any_signal(&mut self, name: String, _args: Payload) {
        self.seen.push(name);
    }

    #[query(dynamic)]
    fn any_query(&self, name: String, args: Payload) -> Option<u32> {
        let _ = name;
        args.decode::<(u32,)>().ok().map(|(n,)| n)
    }

    #[update(dynamic)]
    fn any_update(&mut self, name: String, _args: Payload) -> Result<(), UpdateError> {
        self.seen.push(name);
        Ok(())
    }

    #[validator(dynamic)]
    fn check(&self, name: &str, _args: &Payload) -> Result<(), Rejection> {
        if name.is_empty() {
            return Err(Rejection::new("a name"));
        }
        Ok(())
    }
}

#[derive(Default)]
struct Awaiting {
    seen: Vec<String>,
}

#[workflow]
impl Awaiting {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<usize, WorkflowError> {
        Ok(ctx.state(|s| s.seen.len()))
    }

    #[signal(dynamic, unfinished = "abandon")]
    async fn any_signal(ctx: &mut WorkflowContext<Self>, name: String, _args: wf_sdk::payload::Payload) {
        ctx.state_mut(|s| s.seen.push(name));
    }

    #[update(unfinished = "abandon", dynamic)]
    async fn any_update(
        ctx: &mut WorkflowContext<Self>,
        name: String,
        _args: Payload,
    ) -> Result<String, UpdateError> {
        ctx.state_mut(|s| s.seen.push(name.clone()));
        Ok(name)
    }
}

fn main() {
    let sync = wf_sdk::workflow::WorkflowType::of::<Plain>();
    assert!(sync.dynamic.signal && sync.dynamic.query && sync.dynamic.update);
    assert!(sync.dynamic.update_validated);
    let asynchronous = wf_sdk::workflow::WorkflowType::of::<Awaiting>();
    assert!(asynchronous.dynamic.signal && !asynchronous.dynamic.query);
}
