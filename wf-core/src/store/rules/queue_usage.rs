//! What the queues of workflow starts hold now, for operators: each queue with settings, and
//! each queue with runs on it, with its held runs, its admitted runs still running and its
//! rate's whole tokens. One read; it changes nothing (the admission pass retires closed runs,
//! this read only leaves them out).

use super::tx::Tx;
use crate::data::queue::{QueueCount, QueueUsage, WorkflowQueue};
use crate::error::StoreError;

/// [`StoreAdmin::workflow_queue_usage`](crate::store::StoreAdmin::workflow_queue_usage): the
/// usage of every queue at `now_ms`, by name.
pub(crate) async fn workflow_queue_usage<X: Tx>(
    tx: &mut X,
    now_ms: i64,
) -> Result<Vec<QueueUsage>, StoreError> {
    let rows = tx.workflow_queues().await?;
    let mut counts = tx.queue_counts().await?.into_iter().peekable();
    let mut usage = Vec::with_capacity(rows.len());
    let count = |c: Option<QueueCount>| c.unwrap_or_default();
    let unset = |c: QueueCount| QueueUsage {
        queue: WorkflowQueue::new(c.queue),
        configured: false,
        waiting: c.held,
        running: c.running,
        tokens: None,
    };
    for row in rows {
        // Both lists are by name: the queues with runs and no settings come in between.
        while counts.peek().is_some_and(|c| c.queue < row.queue.name) {
            usage.extend(counts.next().map(unset));
        }
        let c = count(counts.next_if(|c| c.queue == row.queue.name));
        let tokens = row.tokens_at(now_ms).map(|t| t.max(0.0).floor() as u64);
        usage.push(QueueUsage {
            queue: row.queue,
            configured: true,
            waiting: c.held,
            running: c.running,
            tokens,
        });
    }
    usage.extend(counts.map(unset));
    Ok(usage)
}
