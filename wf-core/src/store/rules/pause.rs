//! An operator's pause and unpause of a run ([`PauseMark`]), and the marks describe and list
//! read. A pause takes the run's workflow task lease for ever (its holder's name is the
//! mark) and holds each activity waiting for an attempt the same way, in one transaction:
//! from then on no engine polls or leases the run, a commit without a lease or of a task
//! leased before is refused (its messages go back to the inbox), and no activity attempt
//! starts. Messages, fired timers and activity results keep arriving in the inbox, in order.
//! Unpause releases both, and makes the run ready at once: its next task applies the inbox in
//! arrival order.

use super::feed::{record_fact, FeedRun};
use super::tx::{Attempt, RunLease, RunRow, Tx};
use crate::data::feed::{FeedDetail, FeedKind};
use crate::data::pause::{PauseMark, PAUSE_LEASE_UNTIL};
use crate::data::run::RunStatus;
use crate::error::StoreError;
use crate::store::records::RunRecord;

/// [`StoreAdmin::pause_run`](crate::store::StoreAdmin::pause_run).
pub(crate) async fn pause<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    mark: PauseMark,
) -> Result<RunRecord, StoreError> {
    let row = latest_running(tx, workflow_id).await?;
    if pause_of(&row).is_some() {
        // Paused already: the first mark stands (who paused it, and why).
        return Ok(row.record);
    }
    let run_id = row.record.run_id.as_str();
    let owner = mark.to_owner();
    tx.set_lease(&RunLease {
        run_id,
        owner: &owner,
        until_ms: PAUSE_LEASE_UNTIL,
        build_id: row.record.build_id.as_deref(),
    })
    .await?;
    for mut task in tx.run_activities(run_id).await? {
        // An attempt running now goes on; one waiting to start waits for the unpause.
        if task.lease_until_ms.is_none() {
            task.lease_until_ms = Some(PAUSE_LEASE_UNTIL);
            tx.lease_activity(&task, &owner).await?;
        }
    }
    let detail = FeedDetail {
        name: Some(mark.by.clone()),
        error: (!mark.reason.is_empty()).then(|| mark.reason.clone()),
        ..FeedDetail::default()
    };
    let feed = FeedRun::of(&row.record);
    record_fact(tx, feed, FeedKind::Paused, mark.at_ms, &detail).await?;
    Ok(row.record)
}

/// [`StoreAdmin::unpause_run`](crate::store::StoreAdmin::unpause_run).
pub(crate) async fn unpause<X: Tx>(
    tx: &mut X,
    workflow_id: String,
    now_ms: i64,
) -> Result<RunRecord, StoreError> {
    let row = latest_running(tx, workflow_id).await?;
    let Some(owner) = row
        .lease_owner
        .as_deref()
        .filter(|o| PauseMark::from_owner(o).is_some())
    else {
        // Not paused: nothing to do.
        return Ok(row.record);
    };
    let run_id = row.record.run_id.as_str();
    tx.release_lease(run_id, owner).await?;
    for task in tx.run_activities(run_id).await? {
        if task.started_ms.is_none() && task.lease_until_ms == Some(PAUSE_LEASE_UNTIL) {
            let attempt = Attempt {
                run_id,
                seq: task.seq,
                attempt: task.attempt,
            };
            tx.release_activity(&attempt).await?;
        }
    }
    let feed = FeedRun::of(&row.record);
    record_fact(tx, feed, FeedKind::Unpaused, now_ms, &FeedDetail::default()).await?;
    Ok(row.record)
}

/// [`StoreAdmin::run_pauses`](crate::store::StoreAdmin::run_pauses).
pub(crate) async fn run_pauses<X: Tx>(
    tx: &mut X,
    run_ids: Vec<String>,
) -> Result<Vec<Option<PauseMark>>, StoreError> {
    let mut marks = Vec::with_capacity(run_ids.len());
    for run_id in &run_ids {
        let row = tx.load_run(run_id).await?;
        marks.push(row.as_ref().and_then(pause_of));
    }
    Ok(marks)
}

/// [`StoreAdmin::latest_run_paused`](crate::store::StoreAdmin::latest_run_paused): the
/// latest run of `workflow_id`, and whether an operator paused it, in one read of its row.
pub(crate) async fn latest_run_paused<X: Tx>(
    tx: &mut X,
    workflow_id: String,
) -> Result<Option<(RunRecord, bool)>, StoreError> {
    let row = tx.latest_run(&workflow_id).await?;
    Ok(row.map(|row| {
        let paused = pause_of(&row).is_some();
        (row.record, paused)
    }))
}

/// The pause of a running run, if it is paused.
fn pause_of(row: &RunRow) -> Option<PauseMark> {
    if row.record.status != RunStatus::Running {
        return None;
    }
    PauseMark::from_owner(row.lease_owner.as_deref()?)
}

/// The latest run of `workflow_id`, if it is running: `NotFound` or `RunFinished` otherwise.
async fn latest_running<X: Tx>(tx: &mut X, workflow_id: String) -> Result<RunRow, StoreError> {
    let Some(row) = tx.latest_run(&workflow_id).await? else {
        return Err(StoreError::NotFound {
            workflow_id,
            run_id: None,
        });
    };
    if row.record.status != RunStatus::Running {
        return Err(StoreError::RunFinished {
            workflow_id,
            run_id: row.record.run_id,
            status: row.record.status,
        });
    }
    Ok(row)
}
