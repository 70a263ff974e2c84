//! Delivering a message to a run: the dedupe of signal ids and update ids (per continue-as-new
//! chain), the closed-run check, the inbox, the ready mark.

use super::tx::{RunRow, Tx, UpdateRow};
use crate::data::message::Message;
use crate::data::run::{RunStatus, RunSummary};
use crate::data::update::UpdateState;
use crate::error::StoreError;
use crate::store::records::{DeliverOutcome, RunRecord};

/// [`Store::deliver`](crate::store::Store::deliver).
pub(crate) async fn deliver<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    run_id: Option<String>,
    message: Message,
    now_ms: i64,
) -> Result<DeliverOutcome, StoreError> {
    let run = find_run(tx, &workflow_id, run_id.as_deref())
        .await?
        .ok_or(StoreError::NotFound {
            workflow_id,
            run_id,
        })?;
    deliver_to(tx, &run.record, message, now_ms).await
}

/// The run `run_id` of `workflow_id`, or its latest run.
pub(crate) async fn find_run<X: Tx>(
    tx: &mut X,
    workflow_id: &str,
    run_id: Option<&str>,
) -> Result<Option<RunRow>, StoreError> {
    match run_id {
        Some(id) => Ok(tx
            .load_run(id)
            .await?
            .filter(|r| r.record.workflow_id == workflow_id)),
        None => tx.latest_run(workflow_id).await,
    }
}

/// Delivers a message to a run: a known update id is answered with its record and a known
/// signal id as a duplicate (even by a closed run); a closed run refuses; else the message goes to
/// the inbox (an update also to the chain's updates, as `Requested`) and the run is ready.
pub(crate) async fn deliver_to<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    message: Message,
    now_ms: i64,
) -> Result<DeliverOutcome, StoreError> {
    if let Message::Update { update_id, .. } = &message {
        if let Some(existing) = tx.get_update(&run.chain_id, update_id).await? {
            return Ok(DeliverOutcome::DuplicateUpdate(existing));
        }
    }
    // The status a refusal reports: the run's own once closed; `Cancelled` for a signal to a
    // run whose cancellation was requested (a run whose cancellation was requested is on its way
    // out and takes no more signals; updates still reach its handlers, and a dedupe hit above answers).
    let refusal = if run.status != RunStatus::Running {
        Some(run.status)
    } else if matches!(message, Message::Signal { .. })
        && RunSummary::cancel_requested_in(&run.summary)
    {
        Some(RunStatus::Cancelled)
    } else {
        None
    };
    if let Some(status) = refusal {
        // A signal id the chain already holds is answered as a duplicate even by a run that
        // has closed or refuses signals since: the sender's first try was applied (its answer
        // was lost, say), and a retry must learn that rather than a refusal.
        if let Message::Signal {
            signal_id: Some(id),
            ..
        } = &message
        {
            if tx.has_signal_id(&run.chain_id, id).await? {
                return Ok(DeliverOutcome::DuplicateSignal {
                    run_id: run.run_id.clone(),
                });
            }
        }
        return Err(StoreError::RunFinished {
            workflow_id: run.workflow_id.clone(),
            run_id: run.run_id.clone(),
            status,
        });
    }
    // A run held on its queue has not run: a cancellation closes it at once, as DBOS
    // cancels an enqueued workflow (it would otherwise wait for the queue to admit it).
    if let Message::CancelRequested { reason } = &message {
        if super::queues::is_held(tx, &run.run_id).await? {
            super::terminate::cancel_unstarted_run(tx, run, reason, now_ms).await?;
            return Ok(DeliverOutcome::Enqueued {
                run_id: run.run_id.clone(),
            });
        }
    }
    if let Message::Signal {
        signal_id: Some(id),
        ..
    } = &message
    {
        if !tx.insert_signal_id(&run.chain_id, id).await? {
            return Ok(DeliverOutcome::DuplicateSignal {
                run_id: run.run_id.clone(),
            });
        }
    }
    if let Message::Update {
        update_id, name, ..
    } = &message
    {
        let row = UpdateRow {
            chain_id: &run.chain_id,
            run_id: &run.run_id,
            update_id,
            name,
            state: &UpdateState::Requested,
        };
        tx.put_update(&row).await?;
    }
    tx.push_inbox(&run.run_id, message).await?;
    tx.set_ready(&run.run_id, ready_at(run, now_ms)).await?;
    Ok(DeliverOutcome::Enqueued {
        run_id: run.run_id.clone(),
    })
}

/// Puts a message in a running run's inbox and makes it ready; false if the run is closed or
/// unknown (a child's result for a parent that is gone).
pub(crate) async fn notify_run<X: Tx>(
    tx: &mut X,
    run_id: &str,
    message: Message,
    now_ms: i64,
) -> Result<bool, StoreError> {
    match tx.load_run(run_id).await? {
        Some(run) if run.record.status == RunStatus::Running => {
            tx.push_inbox(run_id, message).await?;
            tx.set_ready(run_id, ready_at(&run.record, now_ms)).await?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// When a message that reaches `run` at `now_ms` makes it ready: at once, but not before its
/// delayed start (a start delay holds against signals too).
pub(crate) fn ready_at(run: &RunRecord, now_ms: i64) -> i64 {
    run.start_at_ms.map_or(now_ms, |at| at.max(now_ms))
}
