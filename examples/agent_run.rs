//! The agent scenario, end to end on the embedded SQLite store:
//!
//! start an agent loop; pause it at some step; kill every worker; start a new engine on the
//! same file and find the run exactly where it was; resume; see an invalid update rejected with
//! no trace in history; race two updates and a pause while a handler awaits an activity (the
//! workflow's mutex serializes them); retry a signal with the same id (applied once); drain the
//! handlers and continue as new (dedupe ids carry over); cancel, and print the history. Each
//! step's output also goes to the run's stream `steps` (closed when the run continues as new
//! or ends): a reader follows the first run's while it goes, and the entries of both runs are
//! printed as read back from the store. Served (`examples/serve.rs`), it is
//! `curl -N http://127.0.0.1:8233/agent_run/runs/ID/streams/steps?from=0`.
//!
//! `cargo run --release --example agent_run`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wf_sdk::history::{EventKind, HistoryEvent};
use wf_sdk::prelude::*;
use wf_sdk::workflow::sync::Mutex;

/// The agent's input; a continue-as-new carries the progress in it.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct AgentInput {
    /// What the agent works towards.
    pub goal: String,
    /// Steps done by earlier runs of this chain.
    pub step: u32,
    /// Steps per run before continuing as new (keeps each history short).
    pub steps_per_run: u32,
}

/// What the `status` query answers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Status {
    /// Current goal.
    pub goal: String,
    /// Steps done.
    pub step: u32,
    /// Whether a pause is in effect.
    pub paused: bool,
    /// The latest notes the agent took.
    pub last_note: Option<String>,
}

/// One entry of the stream `steps`: a step's number and what it did.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Step {
    /// The step's number (counted across continue-as-new).
    pub step: u32,
    /// What the step's activity answered.
    pub note: String,
}

/// The stream each step's output goes to.
pub const STEPS: &str = "steps";

/// The agent loop's state.
#[derive(Default)]
pub struct AgentRun {
    goal: String,
    step: u32,
    paused: bool,
    cancelled: bool,
    notes: Vec<String>,
    /// Serializes goal changes across their `.await`s.
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
        let stop_at = input.step + input.steps_per_run;
        loop {
            ctx.wait_condition(|s| !s.paused || s.cancelled).await;
            if ctx.state(|s| s.cancelled) {
                break;
            }
            if ctx.state(|s| s.step) >= stop_at {
                // Let running updates finish, then start a fresh history with the progress
                // (and a stream of its own: this run's readers end here).
                ctx.handlers_drained().await;
                ctx.stream(STEPS).close()?;
                let next = ctx.state(|s| AgentInput {
                    goal: s.goal.clone(),
                    step: s.step,
                    ..input.clone()
                });
                return Err(ctx.continue_as_new(&next));
            }
            let (goal, step) = ctx.state(|s| (s.goal.clone(), s.step));
            let note = ctx
                .activity(Tools::next_step, (goal, step + 1))
                .start_to_close(Duration::from_secs(10))
                .await?;
            let step = ctx.state_mut(|s| {
                s.step += 1;
                s.notes.push(note.clone());
                s.step
            });
            ctx.stream(STEPS).write(&Step { step, note })?;
        }
        ctx.handlers_drained().await;
        ctx.stream(STEPS).close()?;
        Ok(ctx.state(|s| format!("stopped at step {} working on {:?}", s.step, s.goal)))
    }

    /// Holds the loop before its next step.
    #[signal]
    fn pause(&mut self) {
        self.paused = true;
    }

    /// Lets the loop go on.
    #[signal]
    fn resume(&mut self) {
        self.paused = false;
    }

    /// Ends the loop after the current step. `cancel` is the wire name; the method is `stop`
    /// because `h.cancel()` is the handle's own method (it cancels the whole run).
    #[signal(name = "cancel")]
    fn stop(&mut self) {
        self.cancelled = true;
    }

    /// Where the agent stands.
    #[query]
    fn status(&self) -> Status {
        Status {
            goal: self.goal.clone(),
            step: self.step,
            paused: self.paused,
            last_note: self.notes.last().cloned(),
        }
    }

    /// Replaces the goal after planning it (an activity); returns the previous goal.
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
    // A validator receives `&T` of each update argument, so `&String` here, not `&str`.
    fn validate_goal(&self, goal: &String) -> Result<(), Rejection> {
        if goal.trim().is_empty() {
            return Err(Rejection::new("the goal must not be empty"));
        }
        Ok(())
    }
}

/// The agent's tools: the side effects, run as activities.
#[derive(Default)]
pub struct Tools {
    calls: AtomicU32,
}

#[activities]
impl Tools {
    /// One step of work towards the goal.
    #[activity]
    pub async fn next_step(
        &self,
        _ctx: ActivityContext,
        goal: String,
        step: u32,
    ) -> Result<String, ActivityError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(15)).await;
        Ok(format!("step {step} towards {goal:?}"))
    }

    /// Plans a new goal (slow enough for messages to race with it).
    #[activity]
    pub async fn plan(&self, _ctx: ActivityContext, goal: String) -> Result<String, ActivityError> {
        tokio::time::sleep(Duration::from_millis(60)).await;
        Ok(format!("planned {goal:?}"))
    }
}

struct Timeline(Instant);

impl Timeline {
    fn say(&self, what: impl AsRef<str>) {
        println!(
            "[{:>6.1} ms] {}",
            self.0.elapsed().as_secs_f64() * 1000.0,
            what.as_ref()
        );
    }
}

async fn engine(path: &Path, tools: Arc<Tools>) -> Result<Engine, WfError> {
    Engine::builder()
        .sqlite(path)
        .poll_interval(Duration::from_millis(50))
        .workflow::<AgentRun>()
        .shared_activities(tools)
        .build()
        .await
}

async fn wait_for(
    h: &WorkflowHandle<AgentRun>,
    what: &str,
    pred: impl Fn(&Status) -> bool,
) -> Result<Status, WfError> {
    for _ in 0..1000 {
        let s = h.status().await?;
        if pred(&s) {
            return Ok(s);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Err(WfError::Timeout(format!("waiting for {what}")))
}

/// Prints a run's `steps` as read back, and checks they are `first..` with one entry each.
fn print_steps(run_id: &str, steps: &[(u64, Step)], first: u32) {
    println!("steps of run {run_id} (stream {STEPS:?}):");
    for (offset, s) in steps {
        println!("  {offset:>4}  step {:<3} {}", s.step, s.note);
    }
    for (i, (offset, s)) in steps.iter().enumerate() {
        assert_eq!((*offset, s.step), (i as u64, first + i as u32));
    }
}

fn print_history(history: &[HistoryEvent]) {
    println!("  {:>4}  {:<22} details", "id", "event");
    for e in history {
        println!(
            "  {:>4}  {:<22} {}",
            e.event_id,
            e.kind.name(),
            e.kind.details()
        );
    }
}

#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let t = Timeline(Instant::now());
    let db = DemoDb::new("agent-run");
    let path = db.path();
    let tools = Arc::new(Tools::default());

    t.say(format!("open the SQLite store at {}", path.display()));
    let first = engine(path, tools.clone()).await?;
    let input = AgentInput {
        goal: "ship v1".into(),
        step: 0,
        steps_per_run: 6,
    };
    let h = first.client().start::<AgentRun>("agent-42", input).await?;
    t.say("started agent-42 with goal \"ship v1\"");

    let s = wait_for(&h, "step 2", |s| s.step >= 2).await?;
    h.pause().signal_id("cmd-pause-1").await?;
    t.say(format!(
        "sent pause at step {} (signal id cmd-pause-1)",
        s.step
    ));
    let paused = wait_for(&h, "the pause", |s| s.paused).await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let paused = h.status().await.unwrap_or(paused);
    t.say(format!(
        "paused at step {}: {:?}",
        paused.step, paused.last_note
    ));

    drop(first);
    t.say("dropped the engine: every worker is gone, the run lives only in the file");

    let second = engine(path, tools.clone()).await?;
    let h = second.client().handle::<AgentRun>("agent-42");
    let survived = h.status().await?;
    t.say(format!(
        "new engine on the same file: status {:?} at step {} (paused: {}) — replayed from history",
        survived.goal, survived.step, survived.paused
    ));
    assert_eq!(survived, paused, "the status survived the restart");
    // Follows the first run's steps as they come, until that run closes its stream.
    let first_steps = h
        .stream::<Step>(STEPS)
        .run_id(h.describe().await?.run_id)
        .collect();
    let first_steps = tokio::spawn(first_steps);

    let before = h.history().await?.len();
    match h.change_goal(String::new()).await {
        Err(WfError::Rejected(msg)) => t.say(format!(
            "change_goal(\"\") rejected by the validator: {msg}"
        )),
        other => panic!("expected a rejection, got {other:?}"),
    }
    let after = h.history().await?.len();
    t.say(format!(
        "history length before/after the rejected update: {before}/{after} (no event written)"
    ));
    assert_eq!(before, after);

    h.resume().await?;
    t.say("resumed");

    // Two updates and a pause race while the first update's handler awaits its activity.
    let (a, b) = (h.clone(), h.clone());
    let first_update = tokio::spawn(async move {
        a.change_goal("tests first".into())
            .update_id("cmd-goal-1")
            .await
    });
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second_update = tokio::spawn(async move {
        b.change_goal("docs next".into())
            .update_id("cmd-goal-2")
            .await
    });
    h.pause().signal_id("cmd-pause-2").await?;
    let prev1 = first_update
        .await
        .expect("the first update's task panicked")?;
    let prev2 = second_update
        .await
        .expect("the second update's task panicked")?;
    t.say(format!("update 1 replaced {prev1:?}; update 2 replaced {prev2:?} (serialized by the workflow mutex)"));
    assert_eq!((prev1.as_str(), prev2.as_str()), ("ship v1", "tests first"));
    let s = wait_for(&h, "the racing pause", |s| s.paused).await?;
    t.say(format!(
        "the racing pause applied too: paused at step {} with goal {:?}",
        s.step, s.goal
    ));

    // A client retry of an update returns the first outcome without running it again.
    let again = h
        .change_goal("tests first".into())
        .update_id("cmd-goal-1")
        .await?;
    t.say(format!(
        "retried update cmd-goal-1: answered {again:?} from its first outcome"
    ));

    h.resume().await?;
    // The retried pause (same id as before the restart) is applied once: it changes nothing.
    h.pause().signal_id("cmd-pause-1").await?;
    tokio::time::sleep(Duration::from_millis(30)).await;
    let s = h.status().await?;
    t.say(format!(
        "retried pause cmd-pause-1: applied once already, so still running (paused: {})",
        s.paused
    ));
    assert!(!s.paused);

    let first_run = h.describe().await?.run_id;
    let d = loop {
        let d = h.describe().await?;
        if d.run_id != first_run {
            break d;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    t.say(format!(
        "after 6 steps the run drained its handlers and continued as new: run {}",
        d.run_id
    ));
    h.pause().signal_id("cmd-pause-2").await?;
    tokio::time::sleep(Duration::from_millis(30)).await;
    t.say(format!(
        "retried pause cmd-pause-2 in the new run: deduped across continue-as-new (paused: {})",
        h.status().await?.paused
    ));

    wait_for(&h, "step 8", |s| s.step >= 8).await?;
    h.stop().await?;
    let out = h.result().await?;
    t.say(format!("result: {out}"));
    let steps = h.status().await?.step;
    let executions = tools.calls.load(Ordering::Relaxed);
    t.say(format!(
        "{executions} next_step executions for {steps} steps: none ran twice across the restart"
    ));
    assert_eq!(executions, steps);

    let old = h.client().run_history(&first_run, "agent-42").await?;
    let terminal = old
        .iter()
        .rev()
        .find(|e| e.kind.is_terminal())
        .map(|e| e.kind.name());
    println!(
        "\nfirst run {first_run}: {} events, ended with {:?}",
        old.len(),
        terminal.unwrap_or("?")
    );
    let followed = first_steps.await.expect("the steps reader panicked")?;
    print_steps(&first_run, &followed, 1);
    assert_eq!(followed.len(), 6, "the first run did 6 steps");
    let last_steps = h.stream::<Step>(STEPS).from(0).collect().await?;
    print_steps(&d.run_id, &last_steps, 7);
    assert_eq!(followed.len() + last_steps.len(), steps as usize);
    let history = h.history().await?;
    println!("last run {}: {} events", d.run_id, history.len());
    print_history(&history);
    assert!(matches!(
        history
            .iter()
            .rev()
            .find(|e| e.kind.is_terminal())
            .map(|e| &e.kind),
        Some(EventKind::WorkflowCompleted { .. })
    ));
    second.shutdown().await;
    Ok(())
}
