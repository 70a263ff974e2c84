//! Asynchronous completion: an attempt whose activity said it will complete later is held for
//! its outside completer. Its lease passes from the engine that ran it to
//! [`ASYNC_COMPLETION_OWNER`], which no engine is, so that engine stopping (or crashing) does
//! not end the attempt; its deadlines stay (start-to-close, heartbeat, schedule-to-close), and
//! heartbeats by token extend it like any other. Completion and failure by token go through the
//! ordinary resolve and retry rules, which drop a stale attempt.

use super::tx::Tx;
use crate::error::StoreError;
use crate::store::records::ActivityAttempt;

/// The lease owner of attempts held for an outside completer: not an engine id (those are
/// UUIDs), so no engine's liveness decides their fate, only their own lease.
pub const ASYNC_COMPLETION_OWNER: &str = "wf:async-completion";

/// [`Store::hold_activity_for_completion`](crate::store::Store::hold_activity_for_completion):
/// only the current, leased attempt whose lease has not run out.
pub(crate) async fn hold_activity_for_completion<X: Tx>(
    tx: &mut X,
    at: ActivityAttempt,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let Some(lease) = tx.lease_state(&at.key()).await? else {
        return Ok(false);
    };
    if lease.lease_owner.is_none() || lease.lease_until_ms.is_none_or(|l| l <= now_ms) {
        return Ok(false);
    }
    let activities = tx.run_activities(&at.run_id).await?;
    let Some(task) = activities
        .iter()
        .find(|t| t.seq == at.seq && t.attempt == at.attempt)
    else {
        return Ok(false);
    };
    tx.lease_activity(task, ASYNC_COMPLETION_OWNER).await?;
    Ok(true)
}
