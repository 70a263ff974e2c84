//! Activity attempts: leasing visible ones (under the store's flow limits, `flow.rs`; with
//! their deadlines per
//! [`activity_lease`](crate::data::activity::activity_lease)), heartbeats (per [`heartbeat_lease`]), retries, resolutions into the
//! run's inbox, releases; a stale attempt changes nothing.

use super::feed::FeedRun;
use super::tx::{Heartbeat, Retry, TaskQuery, Tx};
use crate::data::activity::{heartbeat_lease, ActivityFailure, ActivityResolution};
use crate::data::feed::{FeedDetail, FeedKind};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::error::StoreError;
use crate::store::records::{ActivityAttempt, ActivityLeases};

/// [`Store::poll_activity_leases`](crate::store::Store::poll_activity_leases).
pub(crate) async fn poll_activity_tasks<X: Tx>(
    tx: &mut X,
    worker_id: String,
    now_ms: i64,
    max: usize,
    names: Option<Vec<String>>,
    task_queues: Option<Vec<String>>,
) -> Result<ActivityLeases, StoreError> {
    let query = TaskQuery {
        now_ms,
        max,
        names: names.as_deref(),
        queues: task_queues.as_deref(),
        poller: &worker_id,
        build_id: None,
        blocked: None,
    };
    super::flow::lease_under_limits(tx, query).await
}

/// [`Store::heartbeat_activity`](crate::store::Store::heartbeat_activity): only a leased
/// current attempt whose lease has not expired.
pub(crate) async fn heartbeat_activity<X: Tx>(
    tx: &mut X,
    at: ActivityAttempt,
    details: Option<Payload>,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let attempt = at.key();
    let Some(current) = tx.lease_state(&attempt).await? else {
        return Ok(false);
    };
    let (Some(deadline), Some(lease), Some(_owner)) = (
        current.attempt_deadline_ms,
        current.lease_until_ms,
        current.lease_owner,
    ) else {
        return Ok(false);
    };
    if lease <= now_ms {
        return Ok(false);
    }
    let beat = Heartbeat {
        attempt,
        details: details.as_ref(),
        lease_until_ms: heartbeat_lease(&current.options, deadline, now_ms),
    };
    tx.heartbeat_activity(&beat).await?;
    Ok(true)
}

/// [`Store::current_attempts`](crate::store::Store::current_attempts): an attempt is current
/// while its row holds it, leased.
pub(crate) async fn current_attempts<X: Tx>(
    tx: &mut X,
    attempts: Vec<ActivityAttempt>,
) -> Result<Vec<bool>, StoreError> {
    let mut current = Vec::with_capacity(attempts.len());
    for a in &attempts {
        let state = tx.lease_state(&a.key()).await?;
        current.push(state.is_some_and(|s| s.lease_owner.is_some()));
    }
    Ok(current)
}

/// [`Store::resolve_activity`](crate::store::Store::resolve_activity).
pub(crate) async fn resolve_activity<X: Tx>(
    tx: &mut X,
    at: ActivityAttempt,
    resolution: ActivityResolution,
    now_ms: i64,
) -> Result<bool, StoreError> {
    if !tx.delete_attempt(&at.key()).await? {
        return Ok(false);
    }
    let message = Message::ActivityResolved {
        seq: at.seq,
        resolution,
    };
    tx.push_inbox(&at.run_id, message).await?;
    tx.set_ready(&at.run_id, now_ms).await?;
    Ok(true)
}

/// [`Store::retry_activity`](crate::store::Store::retry_activity).
pub(crate) async fn retry_activity<X: Tx>(
    tx: &mut X,
    at: ActivityAttempt,
    visible_at_ms: i64,
    failure: ActivityFailure,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let retry = Retry {
        attempt: at.key(),
        visible_at_ms,
        failure: &failure,
    };
    if !tx.retry_activity(&retry).await? {
        return Ok(false);
    }
    // History records only an activity's last failure: the feed tells of each one retried.
    if let Some(run) = tx.load_run(&at.run_id).await? {
        let name = tx
            .run_activities(&at.run_id)
            .await?
            .into_iter()
            .find(|a| a.seq == at.seq)
            .map(|a| a.name);
        let detail = FeedDetail {
            name,
            seq: Some(at.seq),
            attempt: Some(at.attempt),
            error: Some(failure.message.clone()),
            retry_at_ms: Some(visible_at_ms),
            ..FeedDetail::default()
        };
        let feed = FeedRun::of(&run.record);
        let kind = FeedKind::ActivityFailed;
        super::feed::record_fact(tx, feed, kind, now_ms, &detail).await?;
    }
    Ok(true)
}

/// [`Store::release_activity`](crate::store::Store::release_activity): visible again at once
/// (its visible time was due when it was leased).
pub(crate) async fn release_activity<X: Tx>(
    tx: &mut X,
    at: ActivityAttempt,
) -> Result<(), StoreError> {
    tx.release_activity(&at.key()).await
}
