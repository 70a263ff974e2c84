//! Every lesson of the ladder runs as a test, so none can rot: each checks its own outcome
//! with asserts, and a failed one fails here.

// The versioning lesson includes the module for its database file, as it must when built alone.
#![allow(clippy::duplicate_mod)]

#[path = "../hello.rs"]
mod hello;

#[path = "../messages.rs"]
mod messages;

#[path = "../timers.rs"]
mod timers;

#[path = "../retries.rs"]
mod retries;

#[path = "../children.rs"]
mod children;

#[path = "../continue_as_new.rs"]
mod continue_as_new;

#[path = "../versioning.rs"]
mod versioning;

#[path = "../http.rs"]
mod http;

// Its `main` reads WF_POSTGRES_URL; the test calls `run` on a schema of its own instead.
#[allow(dead_code)]
#[path = "../postgres.rs"]
mod postgres;

#[test]
fn hello_greets_through_an_activity() {
    hello::main().expect("the hello lesson");
}

#[test]
fn messages_signal_query_and_validated_update() {
    messages::main().expect("the messages lesson");
}

#[test]
fn timers_remind_after_a_day_and_expire_after_two() {
    timers::main().expect("the timers lesson");
}

#[test]
fn retries_charge_on_the_third_attempt_and_report_a_final_failure() {
    retries::main().expect("the retries lesson");
}

#[test]
fn children_are_awaited_alone_and_three_at_a_time() {
    children::main().expect("the children lesson");
}

#[test]
fn continue_as_new_counts_thirty_items_over_three_runs() {
    continue_as_new::main().expect("the continue-as-new lesson");
}

#[test]
fn versioning_finishes_the_old_run_the_old_way() {
    versioning::main().expect("the versioning lesson");
}

#[test]
fn http_serves_and_the_remote_client_drives_a_run() {
    http::main().expect("the HTTP lesson");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_runs_a_job_started_by_a_client_only_engine() {
    if !wf_testkit::postgres_available() {
        return; // wf_postgres::testing says so, loudly (and fails under WF_REQUIRE_POSTGRES=1)
    }
    let (url, options) = wf_testkit::postgres_schema("example_postgres");
    let outcome = postgres::run(&url, &options.schema)
        .await
        .expect("the PostgreSQL lesson");
    assert_eq!(outcome, "report for 2026-12-01 written");
}
