//! Queues of workflow starts: a start on a queue creates its run held (its start time
//! [`QUEUE_HELD_MS`], so no engine leases it), and an admission pass, run by every engine's
//! dispatcher, releases the held runs each queue has room for, in priority then fair order,
//! by setting their start time to now (as a delayed start falls due).
//!
//! Fair order is start-time fair queuing over the runs' fairness keys, as for activity
//! attempts (`rules/fairness.rs`), with a clock and passes per queue: a run held gets the
//! virtual start `max(clock, pass[key])` and moves its key's pass by 1 / its weight; an
//! admission moves the queue's clock to the latest virtual start it admitted. Within one
//! priority, a key with 1,000 held runs and one with 10 are then admitted in turns by
//! weight, not by arrival; runs without a key share the key `""`, so that a queue without
//! keys admits first come, first served.
//!
//! A queue's room is its concurrency less its admitted runs still running, counted from the
//! runs' rows: a run frees its slot as it closes, however it closes, so nothing can leak; and
//! no more than its rate's whole tokens (the flow limits' bucket), spent in the same
//! transaction. On
//! a store whose writers run at once, the queue's settings row is locked first
//! ([`QueueTable::workflow_queue`] with `lock`), so that two engines' passes take turns.

use super::tx::{QueuedRun, Tx};
use crate::data::queue::QueuePass;
use crate::data::queue::QUEUE_HELD_MS;
use crate::data::queue::{QueueAdmission, QueueRow, QueueSpot, QueuedStart, WorkflowQueue};
use crate::error::{BackendErrorKind, StoreError};
use crate::store::records::RunRecord;

/// Holds a created run on its queue: refuses a deduplication id that a running run of the
/// queue holds (`AlreadyStarted`, naming that run), records the run on the queue with its
/// fair turn, and sets its start time to [`QUEUE_HELD_MS`].
pub(crate) async fn hold<X: Tx>(
    tx: &mut X,
    created: &mut RunRecord,
    start: &QueuedStart,
) -> Result<(), StoreError> {
    if let Some(dedupe) = &start.dedupe_id {
        if let Some((workflow_id, run_id)) = tx.queue_dedupe_holder(&start.queue, dedupe).await? {
            return Err(StoreError::AlreadyStarted {
                workflow_id,
                run_id,
            });
        }
    }
    let vstart = tx
        .queue_fair_turn(&start.queue, start.fairness_key(), start.fairness_cost())
        .await?;
    tx.insert_queued_run(&created.run_id, start, vstart).await?;
    tx.delay_start(&created.run_id, QUEUE_HELD_MS).await?;
    created.start_at_ms = Some(QUEUE_HELD_MS);
    Ok(())
}

/// One admission pass at `now_ms`: for each queue with held runs, admits as many as its room
/// allows (all of them for a queue without settings), in admission order.
pub(crate) async fn admit_queued<X: Tx>(
    tx: &mut X,
    now_ms: i64,
) -> Result<QueueAdmission, StoreError> {
    let held = tx.held_runs().await?;
    let mut out = QueueAdmission::default();
    let mut i = 0;
    while i < held.len() {
        let queue = held[i].queue.clone();
        let end = held[i..]
            .iter()
            .position(|r| r.queue != queue)
            .map_or(held.len(), |n| i + n);
        let settings = tx.workflow_queue(&queue, true).await?;
        let mut room = match settings.as_ref().and_then(|r| r.queue.concurrency) {
            Some(max) => u64::from(max).saturating_sub(tx.admitted_running(&queue).await?),
            None => u64::MAX,
        };
        let tokens = settings.as_ref().and_then(|r| r.tokens_at(now_ms));
        if let Some(tokens) = tokens {
            room = room.min(crate::data::flow::whole(tokens));
        }
        // The runs were read before the queue's lock: one may have been admitted since, by
        // another engine, and is skipped.
        let mut left = room;
        let mut j = i;
        let mut clock = None::<f64>;
        while j < end && left > 0 {
            let run_id = &held[j].run_id;
            if tx.mark_admitted(run_id).await? {
                tx.delay_start(run_id, now_ms).await?;
                out.admitted += 1;
                left -= 1;
                clock = Some(clock.map_or(held[j].vstart, |c| c.max(held[j].vstart)));
            }
            j += 1;
        }
        out.held += (end - j) as u64;
        if let Some(clock) = clock {
            tx.advance_queue_clock(&queue, clock).await?;
        }
        out.queues.push(QueuePass {
            queue: queue.clone(),
            admitted: room - left,
            held: (end - j) as u64,
        });
        if let Some(tokens) = tokens {
            let spent = (room - left) as f64;
            tx.set_queue_tokens(&queue, (tokens - spent).max(0.0), now_ms)
                .await?;
        }
        i = end;
    }
    Ok(out)
}

/// A run that goes on as run `to` (continued as new, or retried after a failure) keeps its
/// queue's slot: if run `from` was admitted by its queue, `to` is recorded on the same queue
/// as admitted at once, so the queue goes on counting the chain as one of its running runs
/// (without this a concurrency-1 queue would admit another run beside the chain). A held
/// run never goes on: it has not run.
pub(crate) async fn carry_over<X: Tx>(tx: &mut X, from: &str, to: &str) -> Result<(), StoreError> {
    let Some(row) = tx.queued_runs(&[from.to_string()]).await?.pop() else {
        return Ok(());
    };
    if !row.admitted {
        return Ok(());
    }
    tx.insert_queued_run(to, &QueuedStart::on(row.queue), row.vstart)
        .await?;
    tx.mark_admitted(to).await?;
    Ok(())
}

/// Whether run `run_id` is held on its queue (started on one, not admitted yet).
pub(crate) async fn is_held<X: Tx>(tx: &mut X, run_id: &str) -> Result<bool, StoreError> {
    let rows = tx.queued_runs(&[run_id.to_string()]).await?;
    Ok(rows.iter().any(|r| !r.admitted))
}

/// Where run `run_id` is on its queue, if it was started on one.
pub(crate) async fn queue_spot<X: Tx>(
    tx: &mut X,
    run_id: String,
) -> Result<Option<QueueSpot>, StoreError> {
    Ok(queue_spots(tx, vec![run_id]).await?.pop().flatten())
}

/// Where each of runs `run_ids` is on its queue (`None`: started on none), in their order:
/// one read of their queue rows and, if any of them is held, one of the held runs, whatever
/// their number (what a list shows).
pub(crate) async fn queue_spots<X: Tx>(
    tx: &mut X,
    run_ids: Vec<String>,
) -> Result<Vec<Option<QueueSpot>>, StoreError> {
    use std::collections::HashMap;
    let rows = tx.queued_runs(&run_ids).await?;
    let mut positions: HashMap<String, u64> = HashMap::new();
    if rows.iter().any(|r| !r.admitted) {
        let wanted: std::collections::HashSet<&str> = rows
            .iter()
            .filter(|r| !r.admitted)
            .map(|r| r.run_id.as_str())
            .collect();
        let mut counts: HashMap<String, u64> = HashMap::new();
        for r in tx.held_runs().await? {
            let n = counts.entry(r.queue).or_default();
            *n += 1;
            if wanted.contains(r.run_id.as_str()) {
                positions.insert(r.run_id, *n);
            }
        }
    }
    let mut by_id: HashMap<String, QueuedRun> =
        rows.into_iter().map(|r| (r.run_id.clone(), r)).collect();
    Ok(run_ids
        .iter()
        .map(|id| {
            let row = by_id.remove(id)?;
            Some(QueueSpot {
                queue: row.queue,
                position: positions.get(id).copied().filter(|_| !row.admitted),
            })
        })
        .collect())
}

/// Sets a queue's settings at `now_ms` (a rate set again keeps its bucket's tokens); `Invalid`
/// for settings [`WorkflowQueue::check`] refuses.
pub(crate) async fn set_workflow_queue<X: Tx>(
    tx: &mut X,
    queue: WorkflowQueue,
    now_ms: i64,
) -> Result<(), StoreError> {
    queue
        .check()
        .map_err(|e| StoreError::backend(BackendErrorKind::Invalid, e))?;
    let old = tx.workflow_queue(&queue.name, true).await?;
    tx.put_workflow_queue(&QueueRow::new(queue, old.as_ref(), now_ms))
        .await
}

/// Every queue's settings, by name.
pub(crate) async fn workflow_queues<X: Tx>(tx: &mut X) -> Result<Vec<WorkflowQueue>, StoreError> {
    Ok(tx
        .workflow_queues()
        .await?
        .into_iter()
        .map(|r| r.queue)
        .collect())
}
