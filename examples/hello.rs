//! Lesson 1, hello: a workflow, an activity, an engine. The workflow's `run` is its main line;
//! the activity is where side effects go; the engine runs both and records every step in the
//! run's durable history.
//!
//! `cargo run --example hello`

use wf_sdk::prelude::*;

/// The workflow's state. A workflow without `#[init]` starts from `Default`.
#[derive(Default)]
pub struct Hello;

// `#[workflow]` makes the type a workflow: its wire name is `hello` (the type's by default).
#[workflow(name = "hello")]
impl Hello {
    /// The main line: its input and result are anything serde can encode.
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, name: String) -> Result<String, WorkflowError> {
        // An activity call: recorded once in history, never run again when the run replays.
        let greeting = ctx.activity(Greeter::greet, name).await?;
        Ok(greeting)
    }
}

/// Activities are plain async methods; the struct carries what they need (clients, config).
pub struct Greeter {
    /// The greeting's first word.
    pub word: String,
}

#[activities]
impl Greeter {
    /// Greets `name`.
    #[activity]
    async fn greet(&self, _ctx: ActivityContext, name: String) -> Result<String, ActivityError> {
        Ok(format!("{}, {name}!", self.word))
    }
}

/// Starts one run in memory, prints its result and its history.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    // `.memory()` keeps everything in this process; `.sqlite("app.db")` makes it durable.
    let engine = Engine::builder()
        .memory()
        .workflow::<Hello>()
        .activities(Greeter {
            word: "Hello".into(),
        })
        .build()
        .await?;
    // A run is started under a workflow id of your choosing; the handle reaches it.
    let run = engine
        .client()
        .start::<Hello>("hello-1", "world".to_string())
        .await?;
    let greeting = run.result().await?;
    println!("{greeting}");
    assert_eq!(greeting, "Hello, world!");
    // The history: what replay rebuilds the run from after a crash.
    for event in run.history().await? {
        println!("{:>3} {}", event.event_id, event.kind.name());
    }
    engine.shutdown().await;
    Ok(())
}
