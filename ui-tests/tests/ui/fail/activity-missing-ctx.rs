use wf_sdk::prelude::*;

struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn shout(&self, text: String) -> Result<String, ActivityError> {
        Ok(text.to_uppercase())
    }
}

fn main() {}
