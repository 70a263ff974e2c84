//! A workflow whose activity runs outside Rust: `summarize` sends activity `summarize` to task
//! queue `python`, which no Rust worker serves, and returns what the outside worker answered
//! (the Python worker of `examples/clients/python/` takes it over HTTP). The workflow calls it
//! by name, so that its input reaches the worker with field names; it cannot tell where the
//! activity ran.

use std::time::Duration;
use wf_sdk::prelude::*;

/// The task queue of the activities left to outside workers.
pub const REMOTE_QUEUE: &str = "python";

/// What to summarize (the start input, and the activity's).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Document {
    /// Its title.
    pub title: String,
    /// Its text.
    pub text: String,
}

/// What the outside worker answers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Summary {
    /// The document's title.
    pub title: String,
    /// How many words its text has.
    pub words: u32,
    /// The first words.
    pub headline: String,
    /// Who summarized it (the worker says).
    pub by: String,
}

/// The workflow (type name `summarize`).
#[derive(Default)]
pub struct Summarize;

#[workflow(name = "summarize")]
impl Summarize {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, doc: Document) -> Result<Summary, WorkflowError> {
        let summary = ctx
            .activity_by_name::<Summary>("summarize", &doc)
            .task_queue(REMOTE_QUEUE)
            .start_to_close(Duration::from_secs(60))
            .heartbeat_timeout(Duration::from_secs(10))
            .retry(RetryPolicy {
                initial_interval: Duration::from_millis(200),
                maximum_attempts: 5,
                ..RetryPolicy::default()
            })
            .await?;
        Ok(summary)
    }
}
