//! Every example runs as a test, so none can rot.

#[path = "../agent_run.rs"]
mod agent_run;

#[test]
fn agent_run_scenario_completes() {
    agent_run::main().expect("the agent_run scenario");
}
