//! A dynamic workflow type: `#[run]` with the type name and the raw input, `#[init]` with
//! both borrowed or none, named and dynamic handlers, continue-as-new with a `DynamicInput`.
#![deny(warnings)]

use wf_sdk::prelude::*;
use wf_sdk::{workflow::DynamicInput, payload::Payload};

struct Anything {
    kind: String,
    seen: u32,
}

#[workflow(dynamic)]
impl Anything {
    #[init]
    fn new(name: &str, _input: &Payload) -> Self {
        Anything {
            kind: name.to_string(),
            seen: 0,
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        name: String,
        input: Payload,
    ) -> Result<String, WorkflowError> {
        let n: u32 = input.decode()?;
        if n < 2 {
            let next = DynamicInput::new(name, Payload::encode(&(n + 1))?);
            return Err(ctx.continue_as_new(&next));
        }
        Ok(ctx.state(|s| format!("{} {}", s.kind, s.seen)))
    }

    #[signal]
    fn poke(&mut self) {
        self.seen += 1;
    }

    #[signal(dynamic)]
    fn any(&mut self, _name: String, _args: Payload) {
        self.seen += 1;
    }
}

/// Without `#[init]` the state is `Default`.
#[derive(Default)]
struct Echo;

#[workflow(dynamic, name = "echo")]
impl Echo {
    #[run]
    async fn run(
        _ctx: &mut WorkflowContext<Self>,
        name: String,
        _input: Payload,
    ) -> Result<String, WorkflowError> {
        Ok(name)
    }
}

fn main() {
    let _ = Engine::builder().memory().workflow::<Anything>();
    let _ = Engine::builder().memory().workflow::<Echo>();
    let _ = <Anything as wf_sdk::__private::WorkflowDefinition>::DYNAMIC;
}
