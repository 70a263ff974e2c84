use wf_sdk::prelude::*;

struct Tools;

#[activities(prefix = "tools")]
impl Tools {
    #[activity]
    async fn ping(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        Ok(())
    }
}

fn main() {}
