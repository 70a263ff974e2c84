use wf_sdk::prelude::*;

struct Tools;

#[activities]
impl Tools {
    #[signal]
    fn pause(&mut self) {}
}

fn main() {}
