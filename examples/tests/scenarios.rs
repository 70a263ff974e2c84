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

#[path = "../agent_limits.rs"]
mod agent_limits;

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

/// Set in the second worker process that `agent_limits_hold_over_two_worker_processes` starts
/// (this test binary again, running only `agent_limits_worker_process`): the file it serves.
const AGENT_LIMITS_WORKER: &str = "WF_EXAMPLE_AGENT_LIMITS_WORKER";

#[test]
fn agent_limits_hold_over_two_worker_processes() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(agent_limits::run(|db| {
        let mut cmd = std::process::Command::new(exe);
        cmd.args([
            "agent_limits_worker_process",
            "--exact",
            "--nocapture",
            "-q",
        ])
        .env(AGENT_LIMITS_WORKER, db);
        cmd
    }))
    .expect("the agent_limits scenario");
}

/// The second worker process of `agent_limits_hold_over_two_worker_processes`; does nothing
/// when run with the other tests.
#[test]
fn agent_limits_worker_process() {
    let Some(db) = std::env::var_os(AGENT_LIMITS_WORKER) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(agent_limits::worker_process(std::path::Path::new(&db)))
        .expect("the second worker");
}
