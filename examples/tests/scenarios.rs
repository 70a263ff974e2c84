//! Every example runs as a test, so none can rot.

// Each example includes the module for its database file, as it must when built alone.
#![allow(clippy::duplicate_mod)]

#[path = "../agent_run.rs"]
mod agent_run;

#[path = "../approval.rs"]
mod approval;

#[path = "../payment.rs"]
mod payment;

#[path = "../cart.rs"]
mod cart;

#[path = "../backfill.rs"]
mod backfill;

#[path = "../fanout.rs"]
mod fanout;

#[test]
fn agent_run_scenario_completes() {
    agent_run::main().expect("the agent_run scenario");
}

#[test]
fn approval_is_approved_in_time_or_expires_after_24_hours() {
    approval::main().expect("the approval scenario");
}

#[test]
fn payment_charges_once_across_a_retry_and_releases_the_hold_on_timeout() {
    payment::main().expect("the payment scenario");
}

#[test]
fn cart_validates_items_and_answers_queries_after_checkout() {
    cart::main().expect("the cart scenario");
}

#[test]
fn backfill_resumes_from_the_last_heartbeat_after_losing_workers() {
    backfill::main().expect("the backfill scenario");
}

#[test]
fn fanout_runs_a_hundred_children_ten_at_a_time() {
    fanout::main().expect("the fanout scenario");
}
