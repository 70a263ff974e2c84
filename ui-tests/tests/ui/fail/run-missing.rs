use wf_sdk::prelude::*;

#[derive(Default)]
struct W {
    n: u32,
}

#[workflow]
impl W {
    #[signal]
    fn bump(&mut self) {
        self.n += 1;
    }
}

fn main() {}
