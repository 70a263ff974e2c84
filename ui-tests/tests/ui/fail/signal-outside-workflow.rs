use wf_sdk::prelude::*;

#[signal]
fn pause() {}

fn main() {
    pause();
}
