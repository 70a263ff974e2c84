use wf_sdk::prelude::*;

struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn shout(&self, _ctx: ActivityContext, text: String) -> String {
        text.to_uppercase()
    }
}

fn main() {}
