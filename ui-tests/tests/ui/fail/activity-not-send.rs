use std::rc::Rc;
use wf_sdk::prelude::*;

struct Tools;

async fn pause() {}

#[activities]
impl Tools {
    #[activity]
    async fn count(&self, _ctx: ActivityContext) -> Result<u32, ActivityError> {
        let shared = Rc::new(1);
        pause().await;
        Ok(*shared)
    }
}

fn main() {}
