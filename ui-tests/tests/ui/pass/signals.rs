//! Every signal form: sync with no, one and several arguments; async; renamed; abandoned.
#![deny(warnings)]

use wf_sdk::prelude::*;

#[derive(Default)]
pub struct Inbox {
    items: Vec<String>,
    weights: Vec<(u32, u32)>,
    closed: bool,
}

#[workflow]
impl Inbox {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<usize, WorkflowError> {
        ctx.wait_condition(|s| s.closed).await;
        Ok(ctx.state(|s| s.items.len()))
    }

    #[signal]
    fn close(&mut self) {
        self.closed = true;
    }

    #[signal]
    fn push(&mut self, item: String) {
        self.items.push(item);
    }

    #[signal]
    fn weigh(&mut self, a: u32, b: u32) -> () {
        self.weights.push((a, b));
    }

    /// Pushes after a context call, so it is async.
    #[signal(name = "push_later")]
    async fn push_async(ctx: &mut WorkflowContext<Self>, item: String) {
        ctx.state_mut(|s| s.items.push(item));
    }

    #[signal(unfinished = "abandon")]
    async fn peek(ctx: &WorkflowContext<Self>) {
        let _ = ctx.state(|s| s.items.len());
    }

    #[signal(name = "note", unfinished = "warn")]
    fn note(&mut self, (a, b): (u32, u32)) {
        self.weights.push((a, b));
    }
}

#[allow(dead_code)]
async fn client(h: &WorkflowHandle<Inbox>) -> Result<(), WfError> {
    h.push("a".to_string()).await?;
    h.weigh(1, 2).await?;
    h.push_async("b".to_string()).await?;
    h.peek().await?;
    h.note((3, 4)).await?;
    h.close().await?;
    Ok(())
}

fn main() {
    let names: Vec<&str> = <Inbox as wf_sdk::workflow::WorkflowDefinition>::handlers().iter().map(|h| h.name).collect();
    assert_eq!(names, ["close", "push", "weigh", "push_later", "peek", "note"]);
    let mut inbox = Inbox::default();
    inbox.push("x".into());
    inbox.weigh(1, 2);
    assert_eq!(inbox.items, ["x"]);
    assert_eq!(inbox.weights, [(1, 2)]);
}
