use wf_sdk::prelude::*;

struct Tools;

#[activities(crate = ::wf_sdk)]
impl Tools {
    #[activity]
    async fn ping(&self, _ctx: ActivityContext) -> Result<(), ActivityError> {
        Ok(())
    }
}

fn main() {}
