use wf_sdk::prelude::*;

#[derive(Serialize)]
struct Report(u32);

struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn report(&self, _ctx: ActivityContext, a: u32, b: u32) -> Result<Report, ActivityError> {
        Ok(Report(a + b))
    }
}

fn main() {}
