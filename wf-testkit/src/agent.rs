//! The agent workflow the HTTP tests drive: a loop of steps (one activity each, then a 20 ms
//! timer, so that tests can catch it between steps) that signals pause, resume and cancel,
//! queries read, and updates change (its goal, through an activity and the deterministic mutex,
//! with a validator; its step count, failing past 1,000; one that waits until paused, for
//! timeouts). `Nap` sleeps for hours: a run surely waiting on a timer.

use std::time::Duration;
use wf_sdk::prelude::*;
use wf_sdk::workflow::sync::Mutex;

/// The agent's start input: what it works on and the step it starts from.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct AgentInput {
    /// What the agent works towards.
    pub goal: String,
    /// The step it has done already.
    pub step: u32,
}

/// What the `status` query answers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Status {
    /// The current goal.
    pub goal: String,
    /// The last step done.
    pub step: u32,
    /// Whether a `pause` signal holds the loop.
    pub paused: bool,
    /// The activities' notes and the `note` signals' texts, in order.
    pub notes: Vec<String>,
}

/// The agent workflow (type name `agent_run`).
#[derive(Default)]
pub struct AgentRun {
    goal: String,
    step: u32,
    paused: bool,
    cancelled: bool,
    notes: Vec<String>,
    lock: Mutex,
}

#[workflow(name = "agent_run")]
impl AgentRun {
    #[init]
    fn new(input: &AgentInput) -> Self {
        AgentRun {
            goal: input.goal.clone(),
            step: input.step,
            ..Default::default()
        }
    }

    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: AgentInput,
    ) -> Result<String, WorkflowError> {
        let _ = input;
        loop {
            ctx.wait_condition(|s| !s.paused || s.cancelled).await;
            if ctx.state(|s| s.cancelled) {
                break;
            }
            let (goal, step) = ctx.state(|s| (s.goal.clone(), s.step));
            let note = ctx.activity(Tools::next_step, (goal, step + 1)).await?;
            ctx.state_mut(|s| {
                s.step += 1;
                s.notes.push(note);
            });
            // Slow the loop down so that the tests can catch it between steps.
            ctx.sleep(Duration::from_millis(20)).await?;
        }
        ctx.handlers_drained().await;
        Ok(ctx.state(|s| format!("stopped at step {} working on {:?}", s.step, s.goal)))
    }

    #[signal]
    fn pause(&mut self) {
        self.paused = true;
    }

    #[signal]
    fn resume(&mut self) {
        self.paused = false;
    }

    #[signal(name = "cancel")]
    fn stop(&mut self) {
        self.cancelled = true;
    }

    /// Two parameters: for keyword and positional arguments.
    #[signal]
    fn note(&mut self, text: String, times: u32) {
        for _ in 0..times {
            self.notes.push(text.clone());
        }
    }

    #[query]
    fn status(&self) -> Status {
        Status {
            goal: self.goal.clone(),
            step: self.step,
            paused: self.paused,
            notes: self.notes.clone(),
        }
    }

    #[query]
    fn notes_with(&self, prefix: String) -> Vec<String> {
        self.notes
            .iter()
            .filter(|n| n.starts_with(&prefix))
            .cloned()
            .collect()
    }

    #[update]
    async fn change_goal(
        ctx: &mut WorkflowContext<Self>,
        goal: String,
    ) -> Result<String, UpdateError> {
        let lock = ctx.state(|s| s.lock.clone());
        let _held = lock.lock().await;
        let plan = ctx.activity(Tools::plan, goal.clone()).await?;
        Ok(ctx.state_mut(|s| {
            s.notes.push(plan);
            std::mem::replace(&mut s.goal, goal)
        }))
    }

    #[validator(change_goal)]
    fn validate_goal(&self, goal: &String) -> Result<(), Rejection> {
        if goal.trim().is_empty() {
            return Err(Rejection::new("the goal must not be empty"));
        }
        Ok(())
    }

    /// Fails when asked to: the handler's error is the caller's `UpdateFailed`.
    #[update]
    fn set_step(&mut self, step: u32) -> Result<u32, UpdateError> {
        if step > 1000 {
            return Err(UpdateError::new("too many steps"));
        }
        Ok(std::mem::replace(&mut self.step, step))
    }

    /// Waits until the run is paused: a slow update, for timeouts.
    #[update]
    async fn when_paused(ctx: &mut WorkflowContext<Self>) -> Result<u32, UpdateError> {
        ctx.wait_condition(|s| s.paused).await;
        Ok(ctx.state(|s| s.step))
    }
}

/// The agent's activities.
#[derive(Default)]
pub struct Tools;

#[activities]
impl Tools {
    /// Describes step `step` towards `goal`.
    #[activity]
    pub async fn next_step(
        &self,
        _ctx: ActivityContext,
        goal: String,
        step: u32,
    ) -> Result<String, ActivityError> {
        Ok(format!("step {step} towards {goal:?}"))
    }

    /// Plans a new goal, in 20 ms.
    #[activity]
    pub async fn plan(&self, _ctx: ActivityContext, goal: String) -> Result<String, ActivityError> {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(format!("planned {goal:?}"))
    }
}

/// Sleeps for `hours`: once its timer is started, a run surely waiting on it. Tests that
/// cancel a run use it, because the engine's cancellation cancels the activities and timers
/// pending when the request is applied: the agent, which never checks
/// `ctx.cancel_requested()`, runs on when the request lands in the same workflow task as the
/// firing of its timer or the completion of its activity.
#[derive(Default)]
pub struct Nap;

#[workflow(name = "nap")]
impl Nap {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, hours: u32) -> Result<(), WorkflowError> {
        ctx.sleep(Duration::from_secs(3600 * u64::from(hours)))
            .await?;
        Ok(())
    }
}

/// An in-memory engine running the agent and the nap.
pub async fn engine() -> Engine {
    agent_engine(Engine::builder().memory()).await
}

/// The engine `builder` makes (its store chosen) running the agent and the nap.
pub async fn agent_engine(builder: wf_sdk::engine::EngineBuilder) -> Engine {
    builder
        .poll_interval(Duration::from_millis(20))
        .workflow::<AgentRun>()
        .workflow::<Nap>()
        .activities(Tools)
        .build()
        .await
        .expect("engine")
}
