use wf_sdk::prelude::*;

struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn mix(
        &self,
        _ctx: ActivityContext,
        a: u8,
        b: u8,
        c: u8,
        d: u8,
        e: u8,
        f: u8,
    ) -> Result<u8, ActivityError> {
        Ok(a + b + c + d + e + f)
    }
}

fn main() {}
