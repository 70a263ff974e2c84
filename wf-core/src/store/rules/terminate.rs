//! Terminating a run from outside, and what it means for its relatives ([`Fallout`]): its
//! parent is told, and each child it still runs gets its parent close policy — all in the same
//! transaction, so that a crash cannot leave a parent waiting on a child that is gone, or a
//! child running that its parent's policy says to stop. Also what every close drops.

use super::deliver::{deliver_to, notify_run};
use super::encode_failed;
use super::tx::{RunChange, RunClosing, Tx};
use crate::data::codec::{decode_event, encode_event};
use crate::data::history::EventKind;
use crate::data::message::Message;
use crate::data::run::{ChildOutcome, ParentClosePolicy, ParentInfo, RunStatus, RunSummary};
use crate::error::StoreError;
use crate::store::records::RunRecord;

/// [`Store::terminate`](crate::store::Store::terminate).
pub(crate) async fn terminate<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    reason: String,
    now_ms: i64,
) -> Result<RunRecord, StoreError> {
    let Some(run) = tx.latest_run(&workflow_id).await? else {
        return Err(StoreError::NotFound {
            workflow_id,
            run_id: None,
        });
    };
    let run = run.record;
    if run.status != RunStatus::Running {
        return Err(StoreError::RunFinished {
            workflow_id,
            run_id: run.run_id,
            status: run.status,
        });
    }
    terminate_run(tx, &run, &reason, now_ms).await?;
    tx.load_run(&run.run_id)
        .await?
        .map(|r| r.record)
        .ok_or_else(|| StoreError::bug(format!("run {} vanished mid-transaction", run.run_id)))
}

/// Terminates the running `run` and applies its [`Fallout`] (for children it terminates too:
/// a work list, not recursion).
pub(crate) async fn terminate_run<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    reason: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let mut work = vec![(run.clone(), reason.to_string())];
    while let Some((run, reason)) = work.pop() {
        close_terminated(tx, &run, &reason, now_ms).await?;
        let parent = first_parent(tx, &run.run_id).await?;
        let outcome = ChildOutcome::Terminated(reason.to_string());
        let why = format!("its parent run {} was terminated", run.run_id);
        let fallout = Fallout::of(&run, parent.map(|p| (p, outcome)), &why);
        work.extend(apply_fallout(tx, &run, fallout, now_ms).await?);
    }
    Ok(())
}

/// Tells the parent of the closed `run` and asks its children to cancel as the [`Fallout`]
/// says; returns the children to terminate in turn, with the reason (the caller terminates
/// them: a work list, not recursion).
pub(crate) async fn apply_fallout<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    fallout: Fallout,
    now_ms: i64,
) -> Result<Vec<(RunRecord, String)>, StoreError> {
    if let Some((parent, message)) = fallout.parent {
        notify_run(tx, &parent, message, now_ms).await?;
    }
    let mut terminate = Vec::new();
    for (child, why) in fallout.terminate {
        if let Some(child) = child_run(tx, &child, &run.run_id).await? {
            terminate.push((child, why));
        }
    }
    for (child, message) in fallout.cancel {
        if let Some(child) = child_run(tx, &child, &run.run_id).await? {
            deliver_to(tx, &child, message, now_ms).await?;
        }
    }
    Ok(terminate)
}

/// Appends `WorkflowTerminated` and closes the run.
async fn close_terminated<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    reason: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let kind = EventKind::WorkflowTerminated {
        reason: reason.to_string(),
    };
    close_from_outside(tx, run, kind, RunStatus::Terminated, reason, now_ms).await
}

/// Cancels the running `run`, which never ran (held on its queue of workflow starts): no
/// workflow code can handle the request, so the run closes as cancelled at once, with a
/// `WorkflowCancelled` event, and its parent is told, as a terminated run's is.
pub(crate) async fn cancel_unstarted_run<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    reason: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let kind = EventKind::WorkflowCancelled {
        reason: reason.to_string(),
    };
    close_from_outside(tx, run, kind, RunStatus::Cancelled, reason, now_ms).await?;
    // A run that never ran has started no children: only a parent to tell.
    if let Some(parent) = first_parent(tx, &run.run_id).await? {
        let message = Message::ChildClosed {
            seq: parent.seq,
            outcome: ChildOutcome::Cancelled(reason.to_string()),
        };
        notify_run(tx, &parent.run_id, message, now_ms).await?;
    }
    Ok(())
}

/// Closes `run` with the event `kind` and the status `status`, for `reason`.
async fn close_from_outside<X: Tx>(
    tx: &mut X,
    run: &RunRecord,
    kind: EventKind,
    status: RunStatus,
    reason: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    let data = encode_event(now_ms, &kind).map_err(encode_failed)?;
    tx.insert_events(&run.run_id, run.next_event_id, &data)
        .await?;
    let feed = super::feed::FeedRun::of(run);
    let event = std::iter::once((now_ms, &kind));
    super::feed::record_events(tx, feed, run.next_event_id, event).await?;
    tx.update_run(&RunChange {
        run_id: &run.run_id,
        next_event_id: run.next_event_id + 1,
        added_bytes: data.len() as u64,
        summary: None,
        ready_at: None,
        close: Some(RunClosing {
            status,
            closed_ms: now_ms,
            result: None,
            failure: Some(reason),
        }),
        versioning: None,
    })
    .await?;
    clear_closed_run(tx, &run.run_id).await
}

/// Drops a closed run's inbox, activities and timers, and abandons its unfinished updates (the
/// caller closes the run's row, its ready and lease marks cleared in the same change).
pub(crate) async fn clear_closed_run<X: Tx>(tx: &mut X, run_id: &str) -> Result<(), StoreError> {
    tx.clear_run(run_id).await
}

/// The running latest run of `workflow_id`, if it is a child of run `parent_run_id`.
async fn child_run<X: Tx>(
    tx: &mut X,
    workflow_id: &str,
    parent_run_id: &str,
) -> Result<Option<RunRecord>, StoreError> {
    let Some(run) = tx.latest_run(workflow_id).await? else {
        return Ok(None);
    };
    if run.record.status != RunStatus::Running {
        return Ok(None);
    }
    let parent = first_parent(tx, &run.record.run_id).await?;
    Ok(parent
        .filter(|p| p.run_id == parent_run_id)
        .map(|_| run.record))
}

/// The parent named by a run's `WorkflowStarted` event, if the run is a child.
pub(crate) async fn first_parent<X: Tx>(
    tx: &mut X,
    run_id: &str,
) -> Result<Option<ParentInfo>, StoreError> {
    let Some(data) = tx.event_row(run_id, 1).await? else {
        return Ok(None);
    };
    let first =
        decode_event(1, &data).map_err(|e| StoreError::corrupt(format!("run {run_id}: {e}")))?;
    Ok(parent_in(Some(&first.kind)))
}

/// The parent recorded in a run's first event, if the run is a child.
fn parent_in(first: Option<&EventKind>) -> Option<ParentInfo> {
    match first {
        Some(EventKind::WorkflowStarted { parent, .. }) => parent.clone(),
        _ => None,
    }
}

/// What terminating a run means for its relatives.
pub(crate) struct Fallout {
    /// The parent's run id and the message telling it its child was terminated.
    pub parent: Option<(String, Message)>,
    /// Children (by workflow id) to terminate in turn, with the reason.
    pub terminate: Vec<(String, String)>,
    /// Children (by workflow id) to ask to cancel, with the message.
    pub cancel: Vec<(String, Message)>,
}

impl Fallout {
    /// The fallout of closing `run` from outside (terminated, timed out): its parent, if it
    /// is a child and is to be told, gets the outcome; each child it still runs gets its parent
    /// close policy, for the reason `why`.
    pub(crate) fn of(
        run: &RunRecord,
        parent: Option<(ParentInfo, ChildOutcome)>,
        why: &str,
    ) -> Fallout {
        let parent = parent.map(|(p, outcome)| {
            let kind = Message::ChildClosed {
                seq: p.seq,
                outcome,
            };
            (p.run_id, kind)
        });
        // A summary that does not decode names no children: nothing to apply.
        let summary = RunSummary::of(&run.summary);
        let why = why.to_string();
        let mut fallout = Fallout {
            parent,
            terminate: Vec::new(),
            cancel: Vec::new(),
        };
        for (child, policy) in summary.open_children {
            match policy {
                ParentClosePolicy::Terminate => fallout.terminate.push((child, why.clone())),
                ParentClosePolicy::RequestCancel => fallout.cancel.push((
                    child,
                    Message::CancelRequested {
                        reason: why.clone(),
                    },
                )),
                ParentClosePolicy::Abandon => {}
            }
        }
        fallout
    }
}
