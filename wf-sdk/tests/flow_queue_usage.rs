//! What the queues of workflow starts and the flow limits hold and did, on the three stores:
//! `client.workflow_queues().usage()` / `describe()` count a queue's held runs as waiting and
//! its admitted ones as running (and its rate's tokens); the engine's counters count the runs
//! its passes admitted and the starts that had to wait (`wf_queue_admitted_total`,
//! `wf_queue_throttled_total`), and the attempts leased under a flow limit and those it
//! refused (`wf_flow_started_total`, `wf_flow_throttled_total`). The work holds until the test
//! releases it, so every count is exact.

mod common;
use common::*;
use std::sync::atomic::Ordering;
use std::time::Duration;
use wf_sdk::flow::{FlowLimit, FlowScope, QueueUsage, WorkflowQueue};
use wf_sdk::prelude::*;
use wf_testkit::held::{HeldCall as Job, Hold};

/// A counter of `engine` (0 before it counted anything).
fn counter(engine: &Engine, name: &str, labels: &[(&str, &str)]) -> f64 {
    engine.metrics().value(name, labels).unwrap_or(0.0)
}

async fn queue_usage_counts_held_and_running_runs(backend: Backend) {
    let (hold, release) = Hold::new();
    // A slow rate: its tokens do not visibly refill while the test runs.
    let jobs = WorkflowQueue::new("jobs")
        .concurrency(2)
        .rate(10, Duration::from_secs(3600));
    let engine = builder(backend, "queue-usage")
        .workflow::<Job>()
        .activities(hold)
        .workflow_queue(jobs.clone())
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let mut handles = Vec::new();
    for i in 0..5 {
        let id = format!("job-{i}");
        handles.push(client.enqueue::<Job>("jobs", &id, ()).await.unwrap());
    }
    let queues = client.workflow_queues();
    let held = QueueUsage {
        queue: jobs.clone(),
        configured: true,
        waiting: 3,
        running: 2,
        tokens: Some(8),
    };
    assert_eq!(queues.describe("jobs").await.unwrap(), held);
    assert_eq!(queues.usage().await.unwrap(), [held]);
    let nothing = queues.describe("nothing").await.unwrap();
    assert_eq!(
        (nothing.configured, nothing.waiting, nothing.running),
        (false, 0, 0)
    );
    // Two admitted by the passes of their starts; the three others had to wait.
    let jobs_label = [("queue", "jobs")];
    assert_eq!(
        counter(&engine, "wf_queue_admitted_total", &jobs_label),
        2.0
    );
    assert_eq!(
        counter(&engine, "wf_queue_throttled_total", &jobs_label),
        3.0
    );

    release.store(true, Ordering::SeqCst);
    for h in handles {
        h.result().await.unwrap();
    }
    let idle = queues.describe("jobs").await.unwrap();
    assert_eq!((idle.waiting, idle.running), (0, 0), "{idle:?}");
    assert_eq!(
        counter(&engine, "wf_queue_admitted_total", &jobs_label),
        5.0
    );
    assert_eq!(
        counter(&engine, "wf_queue_throttled_total", &jobs_label),
        3.0
    );
    engine.shutdown().await;
}

async fn flow_counters_count_the_attempts_started_and_refused(backend: Backend) {
    let (hold, release) = Hold::new();
    let model = FlowScope::key("model");
    let engine = builder(backend, "flow-counters")
        .workflow::<Job>()
        .activities(hold)
        .flow_limit(FlowLimit::concurrency(model.clone(), 1))
        .build()
        .await
        .unwrap();
    let client = engine.client();
    let mut handles = Vec::new();
    for i in 0..3 {
        handles.push(client.start::<Job>(format!("call-{i}"), ()).await.unwrap());
    }
    let limits = client.flow_limits();
    eventually("one attempt running, two waiting", || async {
        let usage = limits.usage().await.unwrap();
        (usage[0].running == 1 && usage[0].waiting == 2).then_some(())
    })
    .await;
    release.store(true, Ordering::SeqCst);
    for h in handles {
        h.result().await.unwrap();
    }
    let labels = [
        ("scope_kind", "key"),
        ("scope", "model"),
        ("kind", "concurrency"),
    ];
    assert_eq!(counter(&engine, "wf_flow_started_total", &labels), 3.0);
    // Two attempts waited on a limit of one: each was refused at least once (at its commit,
    // or by the poll that leased the other one when the first slot freed).
    let throttled = counter(&engine, "wf_flow_throttled_total", &labels);
    eprintln!("{backend:?}: 3 attempts under a limit of 1, refused {throttled} times");
    assert!(throttled >= 1.0, "no refusal counted: {throttled}");
    engine.shutdown().await;
}

both!(
    queue_usage_counts_held_and_running_runs,
    flow_counters_count_the_attempts_started_and_refused,
);
