use wf_sdk::prelude::*;

#[derive(Default)]
struct W {
    seen: Vec<String>,
}

#[workflow]
impl W {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>) -> Result<usize, WorkflowError> {
        Ok(ctx.state(|s| s.seen.len()))
    }

    #[signal(dynamic)]
    fn any(&mut self, name: String) {
        self.seen.push(name);
    }
}

fn main() {}
