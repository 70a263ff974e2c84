//! The workflow of the public contract (the names users' code compiles against), and the
//! client calls made on it.
#![deny(warnings)]

use wf_sdk::prelude::*;

#[derive(Serialize, Deserialize)]
pub struct AgentInput {
    pub goal: String,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
pub struct Status {
    pub step: u32,
    pub paused: bool,
}

#[derive(Default)]
pub struct AgentRun {
    goal: String,
    step: u32,
    paused: bool,
    cancelled: bool,
}

#[workflow(name = "agent_run")]
impl AgentRun {
    #[init]
    fn new(input: &AgentInput) -> Self {
        AgentRun { goal: input.goal.clone(), ..Default::default() }
    }

    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, input: AgentInput) -> Result<String, WorkflowError> {
        let _ = input;
        loop {
            ctx.wait_condition(|s| !s.paused || s.cancelled).await;
            if ctx.state(|s| s.cancelled) {
                break;
            }
            let goal = ctx.state(|s| s.goal.clone());
            ctx.activity(Tools::next_step, goal).await?;
            ctx.state_mut(|s| s.step += 1);
        }
        Ok(ctx.state(|s| format!("stopped at {}", s.step)))
    }

    /// Stops the agent before its next step.
    #[signal]
    fn pause(&mut self) {
        self.paused = true;
    }

    #[signal]
    fn resume(&mut self) {
        self.paused = false;
    }

    /// `cancel` is the wire name; `h.cancel()` is the handle's own (it cancels the run).
    #[signal(name = "cancel")]
    fn stop(&mut self) {
        self.cancelled = true;
    }

    #[query]
    fn status(&self) -> Status {
        Status { step: self.step, paused: self.paused }
    }

    #[update]
    async fn change_goal(ctx: &mut WorkflowContext<Self>, goal: String) -> Result<String, UpdateError> {
        ctx.state_mut(|s| s.goal = goal.clone());
        Ok(goal)
    }

    #[validator(change_goal)]
    fn validate_goal(&self, goal: &String) -> Result<(), Rejection> {
        if goal.is_empty() {
            Err(Rejection::new("the goal is empty"))
        } else {
            Ok(())
        }
    }
}

pub struct Tools;

#[activities]
impl Tools {
    #[activity]
    async fn next_step(&self, _ctx: ActivityContext, goal: String) -> Result<(), ActivityError> {
        let _ = goal;
        Ok(())
    }
}

#[allow(dead_code)]
async fn steer(h: &WorkflowHandle<AgentRun>) -> Result<(), WfError> {
    h.pause().await?;
    h.pause().signal_id("cmd-1").await?;
    let st: Status = h.status().await?;
    assert!(st.paused);
    let g: String = h.change_goal("tests first".into()).await?;
    let g = h.change_goal(g).update_id("cmd-9f1e").await?;
    let u = h.change_goal(g).start().await?;
    let _: String = u.result().await?;
    h.resume().await?;
    h.stop().await?;
    Ok(())
}

fn main() {
    assert_eq!(<AgentRun as wf_sdk::workflow::WorkflowDefinition>::NAME, "agent_run");
    let state = AgentRun::new(&AgentInput { goal: "ship".into() });
    assert_eq!(state.status(), Status { step: 0, paused: false });
    assert!(state.validate_goal(&String::new()).is_err());
}
