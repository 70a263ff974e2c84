//! Attempts leased to workers outside the engine (a service in another language, polling over
//! HTTP): the same store lease an engine's worker takes, owned by no engine, so that only the
//! attempt's own deadlines decide its fate. Its outcome comes back by task token through the
//! asynchronous-completion path (`in_process/activities.rs`), its expiry through the time
//! keeper ([`expire_due`](super::expire_due)), and its retries through the same policy: the
//! workflow cannot tell where it ran.

use super::has_timeouts;
use crate::client::{ActivityTaskLease, ActivityTaskPoll, MAX_ACTIVITY_POLL_WAIT};
use crate::data::limits::Ident;
use crate::data::task_token::ActivityToken;
use crate::error::WfError;
use crate::runtime::core::Core;
use crate::store::{ActivityLeases, ActivityPoll, ActivityTask};
use std::sync::Arc;
use tokio::time::Instant;

/// What the lease owner of an attempt leased to an outside worker starts with: not an engine
/// id (those are UUIDs), so no engine's liveness decides it; the worker's identity follows.
const REMOTE_WORKER_OWNER: &str = "wf:remote-worker:";

/// Longest identity kept in the lease owner, in bytes (a longer one is cut).
const MAX_IDENTITY_BYTES: usize = 200;

/// Leases one task for an outside worker, waiting up to `poll.wait` for one.
pub(crate) async fn poll(
    core: &Arc<Core>,
    poll: ActivityTaskPoll,
) -> Result<Option<ActivityTaskLease>, WfError> {
    Ident::TaskQueue.check(&poll.task_queue)?;
    if poll.names.is_empty() {
        return Err(WfError::InvalidArgument(
            "an activity poll names the activities it runs (at least one)".into(),
        ));
    }
    for name in &poll.names {
        Ident::ActivityName.check(name)?;
    }
    if poll.identity.chars().any(char::is_control) {
        return Err(WfError::InvalidArgument(
            "a poller's identity has no control characters".into(),
        ));
    }
    let identity = cut(&poll.identity);
    let request = ActivityPoll {
        worker_id: format!("{REMOTE_WORKER_OWNER}{identity}"),
        now_ms: 0,
        max: 1,
        names: Some(poll.names),
        task_queues: Some(vec![poll.task_queue]),
    };
    let deadline = Instant::now() + poll.wait.min(MAX_ACTIVITY_POLL_WAIT);
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        if core.is_shutdown() {
            return Err(WfError::Shutdown);
        }
        // Registered before the store is asked: a task committed meanwhile wakes this poll.
        let polling = core.wake.activity.poller();
        let notified = polling.notified();
        let ActivityLeases {
            tasks,
            held_back,
            flow,
        } = core
            .store
            .poll_activity_leases(ActivityPoll {
                now_ms: core.now_ms(),
                ..request.clone()
            })
            .await?;
        // (`held_back` is the engine's worker's hint; a poll from outside leaves it alone.)
        let _ = held_back;
        crate::runtime::flow::count(core, &flow);
        if let Some(task) = tasks.into_iter().next() {
            tracing::info!(
                workflow_id = %task.workflow_id,
                run_id = %task.run_id,
                activity = %task.name,
                seq = task.seq,
                attempt = task.attempt,
                identity,
                "activity attempt leased to an outside worker"
            );
            core.metrics.of_activity(&task.name).attempts.inc();
            if has_timeouts(&task) {
                // Its deadline may be the time keeper's next.
                core.wake.timer.notify_local();
            }
            return Ok(Some(lease_of(task)));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::select! {
            _ = notified => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep_until(deadline) => {}
            // A safety net, as for the engine's own worker: a wake-up from another process
            // may be lost.
            _ = tokio::time::sleep(core.flow.recheck(core.config.poll_interval)) => {}
        }
    }
}

/// `identity`, cut to [`MAX_IDENTITY_BYTES`] on a character boundary.
fn cut(identity: &str) -> &str {
    let mut end = identity.len().min(MAX_IDENTITY_BYTES);
    while !identity.is_char_boundary(end) {
        end -= 1;
    }
    &identity[..end]
}

/// What the worker gets of a leased attempt.
fn lease_of(task: ActivityTask) -> ActivityTaskLease {
    let token = ActivityToken {
        workflow_id: task.workflow_id.clone(),
        run_id: task.run_id.clone(),
        seq: task.seq,
        attempt: task.attempt,
    }
    .encode();
    let started_ms = task.started_ms.unwrap_or(task.scheduled_ms);
    let schedule_to_close_deadline_ms = task.schedule_deadline_ms();
    // A leased attempt always has its deadline (the store sets it with the lease).
    let start_to_close_deadline_ms = task
        .attempt_deadline_ms
        .or(task.lease_until_ms)
        .unwrap_or(started_ms);
    ActivityTaskLease {
        token,
        name: task.name,
        input: task.input,
        attempt: task.attempt,
        workflow_id: task.workflow_id,
        run_id: task.run_id,
        scheduled_ms: task.scheduled_ms,
        started_ms,
        start_to_close_deadline_ms,
        schedule_to_close_deadline_ms,
        heartbeat_timeout: task.options.heartbeat_timeout,
        last_heartbeat: task.heartbeat,
        last_failure: task.last_failure.map(|f| f.message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_identity_is_cut_on_a_character_boundary() {
        assert_eq!(cut("host-1:42"), "host-1:42");
        let long = "é".repeat(150); // 300 bytes
        let kept = cut(&long);
        assert_eq!(kept.len(), MAX_IDENTITY_BYTES);
        assert!(long.starts_with(kept));
        let odd = format!("x{long}");
        assert_eq!(cut(&odd).len(), MAX_IDENTITY_BYTES - 1);
    }
}
