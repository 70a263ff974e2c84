//! Several stores (processes) on one schema: every ready workflow task is leased by exactly
//! one of them, however they race. Skipped (loudly) without `WF_POSTGRES_URL`.

use std::collections::HashSet;
use std::sync::Arc;
use wf_core::store::conformance::{start, PollAny, T0};
use wf_core::store::Store;
use wf_postgres::testing::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_pollers_on_two_stores_lease_each_task_once() {
    let Some(db) = TestSchema::new("racing_pollers") else {
        return;
    };
    let a: Arc<dyn Store> = Arc::new(db.open().await);
    let b: Arc<dyn Store> = Arc::new(db.open().await);
    const RUNS: usize = 200;
    for i in 0..RUNS {
        start(a.as_ref(), &format!("wf-{i}"), &format!("run-{i}"), T0).await;
    }
    // Four pollers, two per store, each polling until nothing is left; leases last an hour.
    let pollers = (0..4).map(|p| {
        let store = Arc::clone(if p % 2 == 0 { &a } else { &b });
        tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let tasks = store
                    .poll_workflow_tasks_any(&format!("worker-{p}"), T0 + 10, 3_600_000, 7)
                    .await
                    .expect("poll");
                if tasks.is_empty() {
                    return got;
                }
                got.extend(tasks.into_iter().map(|t| t.run.run_id));
            }
        })
    });
    let mut all = Vec::new();
    for poller in pollers {
        all.extend(poller.await.expect("join"));
    }
    let distinct: HashSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len(), "a task was leased twice");
    assert_eq!(all.len(), RUNS, "every ready task is leased once");
}
