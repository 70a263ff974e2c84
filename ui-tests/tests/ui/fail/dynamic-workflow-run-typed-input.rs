use wf_sdk::prelude::*;

#[derive(Serialize, Deserialize)]
struct Order {
    total: u32,
}

#[derive(Default)]
struct Anything;

#[workflow(dynamic)]
impl Anything {
    #[run]
    async fn run(
        _ctx: &mut WorkflowContext<Self>,
        name: String,
        input: Order,
    ) -> Result<String, WorkflowError> {
        Ok(format!("{name} {}", input.total))
    }
}

fn main() {}
