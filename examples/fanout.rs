//! Fan-out with bounded concurrency, on the embedded SQLite store: a `fanout` run starts 100
//! `square` child runs, at most 10 at a time (`wf_sdk::workflow::join_bounded`: each time a child ends
//! the next one starts, in the same workflow task), and sums their results. Each child runs
//! one activity. The order in which children start and the parent's history are the same on
//! every replay: the combinator polls its futures in order, never by wake-up order.
//!
//! `cargo run --example fanout`

#[path = "support/demo_db.rs"]
mod demo_db;

use demo_db::DemoDb;

use std::time::{Duration, Instant};
use wf_sdk::history::{EventKind, HistoryEvent};
use wf_sdk::prelude::*;

/// What to fan out.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Plan {
    /// How many children.
    pub children: u32,
    /// How many may run at once.
    pub at_once: usize,
}

/// What the fan-out found (the run's result).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Summary {
    /// Children that completed.
    pub completed: u32,
    /// Children that failed, with why.
    pub failed: Vec<String>,
    /// The sum of the completed children's results.
    pub sum: u64,
}

/// Starts the children, at most `at_once` at a time, and sums what they return.
#[derive(Default)]
pub struct FanOut;

#[workflow(name = "fanout")]
impl FanOut {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, plan: Plan) -> Result<Summary, WorkflowError> {
        let prefix = ctx.workflow_id();
        let children = (0..plan.children)
            .map(|i| ctx.child::<Square>(format!("{prefix}-square-{i}"), &u64::from(i)));
        let results = wf_sdk::workflow::join_bounded(children, plan.at_once).await;
        let mut summary = Summary {
            completed: 0,
            failed: Vec::new(),
            sum: 0,
        };
        for (i, result) in results.into_iter().enumerate() {
            match result {
                Ok(v) => {
                    summary.completed += 1;
                    summary.sum += v;
                }
                Err(e) => summary.failed.push(format!("child {i}: {e}")),
            }
        }
        Ok(summary)
    }
}

/// One child: squares its input with an activity.
#[derive(Default)]
pub struct Square;

#[workflow(name = "square")]
impl Square {
    #[run]
    async fn run(ctx: &mut WorkflowContext<Self>, n: u64) -> Result<u64, WorkflowError> {
        Ok(ctx.activity(Maths::square, n).await?)
    }
}

/// The children's activity.
pub struct Maths;

#[activities]
impl Maths {
    /// `n * n`.
    #[activity]
    async fn square(&self, _ctx: ActivityContext, n: u64) -> Result<u64, ActivityError> {
        Ok(n * n)
    }
}

/// The most children of the parent's history running at once (started, not yet closed).
pub fn most_at_once(history: &[HistoryEvent]) -> usize {
    let (mut open, mut most) = (0usize, 0usize);
    for e in history {
        match e.kind {
            EventKind::ChildWorkflowStarted { .. } => open += 1,
            EventKind::ChildWorkflowClosed { .. } => open = open.saturating_sub(1),
            _ => {}
        }
        most = most.max(open);
    }
    most
}

/// Fans out 100 children, 10 at a time, and prints a summary.
#[tokio::main]
pub async fn main() -> Result<(), WfError> {
    let db = DemoDb::new("fanout");
    let engine = Engine::builder()
        .sqlite(db.path())
        .poll_interval(Duration::from_millis(20))
        .workflow::<FanOut>()
        .workflow::<Square>()
        .activities(Maths)
        .build()
        .await?;
    let plan = Plan {
        children: 100,
        at_once: 10,
    };
    println!(
        "fan out {} children, {} at a time, on {}",
        plan.children,
        plan.at_once,
        db.path().display()
    );
    let began = Instant::now();
    let h = engine.client().start::<FanOut>("fanout-1", plan).await?;
    let summary = h.result().await?;
    let history = h.history().await?;
    let most = most_at_once(&history);
    println!(
        "{} completed, {} failed, sum of squares {} ({:.0} ms)",
        summary.completed,
        summary.failed.len(),
        summary.sum,
        began.elapsed().as_secs_f64() * 1000.0
    );
    println!(
        "the parent's history: {} events; at most {most} children ran at once",
        history.len()
    );
    // 0² + 1² + ... + 99² = 99·100·199/6
    assert_eq!(summary.sum, 328_350);
    assert_eq!(summary.completed, 100);
    assert!(most <= 10, "{most} children ran at once");
    engine.shutdown().await;
    Ok(())
}
