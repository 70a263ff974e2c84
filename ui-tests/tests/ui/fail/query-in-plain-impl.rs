use wf_sdk::prelude::*;

struct W {
    n: u32,
}

impl W {
    #[query]
    fn value(&self) -> u32 {
        self.n
    }
}

fn main() {
    let _ = W { n: 1 }.value();
}
