use wf_sdk::prelude::*;

struct Opaque(u32);

struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn double(&self, _ctx: ActivityContext, x: Opaque) -> Result<u32, ActivityError> {
        Ok(x.0 * 2)
    }
}

fn main() {}
