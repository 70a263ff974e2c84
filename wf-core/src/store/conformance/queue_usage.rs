//! What the queues of workflow starts hold, as an operator reads it: each queue with settings
//! or with runs on it, by name, with its held runs, its admitted runs still running and its
//! rate's tokens; and what each admission pass did per queue.

use super::fixtures::*;
use super::queues::enqueue;
use crate::data::queue::{QueuePass, QueueUsage, WorkflowQueue};
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// A queue's usage, for the asserts.
fn usage(
    queue: WorkflowQueue,
    configured: bool,
    counts: (u64, u64),
    tokens: Option<u64>,
) -> QueueUsage {
    QueueUsage {
        queue,
        configured,
        waiting: counts.0,
        running: counts.1,
        tokens,
    }
}

/// Held runs count as waiting, admitted ones as running until they close; a queue without
/// settings is listed while runs are on it; a pass says what it did per queue.
pub async fn queue_usage_counts_held_and_running_runs(store: Arc<dyn Store>) {
    let admin = store.admin();
    let q = WorkflowQueue::new("q")
        .concurrency(2)
        .rate(5, Duration::from_secs(1));
    let idle = WorkflowQueue::new("idle").concurrency(1);
    admin.set_workflow_queue(q.clone(), T0).await.unwrap();
    admin.set_workflow_queue(idle.clone(), T0).await.unwrap();
    for (n, id) in ["a", "b", "c"].into_iter().enumerate() {
        enqueue(&*store, id, "q", 0, None, T0 + n as i64)
            .await
            .unwrap();
    }
    enqueue(&*store, "d", "loose", 0, None, T0 + 3)
        .await
        .unwrap();
    let loose = WorkflowQueue::new("loose");
    assert_eq!(
        admin.workflow_queue_usage(T0 + 5).await.unwrap(),
        [
            usage(idle.clone(), true, (0, 0), None),
            usage(loose.clone(), false, (1, 0), None),
            usage(q.clone(), true, (3, 0), Some(5)),
        ]
    );

    let pass = admin.admit_queued(T0 + 10).await.unwrap();
    let per_queue = |queue: &str, admitted, held| QueuePass {
        queue: queue.into(),
        admitted,
        held,
    };
    assert_eq!(
        pass.queues,
        [per_queue("loose", 1, 0), per_queue("q", 2, 1)],
        "{pass:?}"
    );
    assert_eq!(
        admin.workflow_queue_usage(T0 + 10).await.unwrap(),
        [
            usage(idle.clone(), true, (0, 0), None),
            usage(loose, false, (0, 1), None),
            usage(q.clone(), true, (1, 2), Some(3)),
        ]
    );

    // A closed run stops counting at once, before any pass retires it; a queue without
    // settings and without runs is no longer listed.
    store.terminate("a", "done", T0 + 20).await.unwrap();
    store.terminate("d", "done", T0 + 20).await.unwrap();
    assert_eq!(
        admin.workflow_queue_usage(T0 + 20).await.unwrap(),
        [
            usage(idle, true, (0, 0), None),
            usage(q, true, (1, 1), Some(3)),
        ]
    );
}
