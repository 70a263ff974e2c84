use wf_sdk::prelude::*;
use wf_sdk::payload::Payload;

struct Anything {
    kind: String,
}

#[workflow(dynamic)]
impl Anything {
    #[init]
    fn new(name: String, _input: &Payload) -> Self {
        Anything { kind: name }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        _name: String,
        _input: Payload,
    ) -> Result<String, WorkflowError> {
        Ok(ctx.state(|s| s.kind.clone()))
    }
}

fn main() {}
