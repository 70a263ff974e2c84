//! Lesson 5, children and fan-out: a workflow starts other workflows as its children, each a
//! run of its own with its own history, and awaits their results like activity calls. Many
//! children at once, with a bound, go through `wf_sdk::workflow::join_bounded`, which polls them in
//! order, so the parent's history is the same on every replay. (`fanout` does the same with a
//! hundred children on a file.)
//!
//! `cargo run --example children`

use wf_sdk::prelude::*;

/// A parent: one child awaited alone, then one per line, at most three at a time.
#[derive(Default)]
pub struct Report;

#[workflow(name = "report")]
impl Report {
    #[run]
    async fn run(
        ctx: &mut WorkflowContext<Self>,
        lines: Vec<String>,
    ) -> Result<String, WorkflowError> {
        // A child's workflow id is the parent's to choose; deriving it from the parent's
        // keeps it unique and the same on replay.
        let id = ctx.workflow_id();
        let title = ctx
            .child::<Count>(format!("{id}-title"), &"report".to_string())
            .await?;
        let children = lines
            .iter()
            .enumerate()
            .map(|(i, line)| ctx.child::<Count>(format!("{id}-line-{i}"), line));
        let mut total = 0;
        for result in wf_sdk::workflow::join_bounded(children, 3).await {
            total += result?; // a failed child is an error the parent may handle
        }
        Ok(format!(
            "{title} letters of title, {total} letters in {} lines",
            lines.len()
        ))
    }
}

/// A child: counts the letters of its input.
#[derive(Default)]
pub struct Count;

#[workflow(name = "count_letters")]
impl Count {
    #[run]
    async fn run(_ctx: &mut WorkflowContext<Self>, text: String) -> Result<usize, WorkflowError> {
        Ok(text.chars().filter(|c| c.is_alphabetic()).count())
    }
}

/// Runs one report of five lines.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    // Every workflow type a run starts must be registered, children included.
    let engine = Engine::builder()
        .memory()
        .workflow::<Report>()
        .workflow::<Count>()
        .build()
        .await?;
    let lines = ["one", "two", "three", "four", "five"]
        .map(String::from)
        .to_vec();
    let run = engine.client().start::<Report>("report-1", lines).await?;
    let summary = run.result().await?;
    println!("{summary}");
    assert_eq!(summary, "6 letters of title, 19 letters in 5 lines");
    // Each child is a run of its own, found by its id.
    let child = engine.client().handle::<Count>("report-1-line-2");
    assert_eq!(child.result().await?, 5);
    engine.shutdown().await;
    Ok(())
}
