//! A workflow written by a `macro_rules!` macro: the generated code's own names must resolve
//! even though some of its tokens are located on the user's.
#![deny(warnings)]

use wf_sdk::prelude::*;

macro_rules! counter_workflow {
    ($name:ident, $input:ty) => {
        #[derive(Default)]
        pub struct $name {
            n: u32,
        }

        #[workflow]
        impl $name {
            #[init]
            fn new(input: &$input) -> Self {
                $name { n: *input as u32 }
            }

            #[run]
            async fn run(ctx: &mut WorkflowContext<Self>, input: $input) -> Result<u32, WorkflowError> {
                Ok(ctx.state(|s| s.n) + input as u32)
            }

            #[update]
            fn add(&mut self, by: u32) -> Result<u32, UpdateError> {
                self.n += by;
                Ok(self.n)
            }

            #[validator(add)]
            fn check_add(&self, by: &u32) -> Result<(), Rejection> {
                if *by == 0 { Err(Rejection::new("zero")) } else { Ok(()) }
            }
        }
    };
}

counter_workflow!(Counter, u8);

fn main() {
    use wf_sdk::workflow::WorkflowDefinition;
    let mut c = Counter::init_state(&3);
    assert_eq!(c.add(2).unwrap(), 5);
    assert!(c.check_add(&0).is_err());
    let _ = <WorkflowHandle<Counter> as CounterClient>::add;
}
