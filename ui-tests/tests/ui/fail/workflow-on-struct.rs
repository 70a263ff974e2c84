use wf_sdk::prelude::*;

#[workflow]
#[derive(Default)]
struct W {
    n: u32,
}

fn main() {
    let _ = W::default().n;
}
