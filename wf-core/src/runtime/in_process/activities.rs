//! Asynchronous activity completion, served here: the attempt a task token names is looked up
//! in the store (wherever it ran), checked to be open, and completed, failed (retried per its
//! policy) or heartbeated; the caller is answered once that is durable.

use super::{check_size, Core};
use crate::client::ActivityResponse;
use crate::data::activity::ActivityFailure;
use crate::data::task_token::ActivityToken;
use crate::error::WfError;
use crate::runtime::activity_worker::settle;
use crate::store::{ActivityAttempt, ActivityTask};
use std::sync::Arc;

/// Completes, fails or heartbeats the attempt `token` names.
pub(super) async fn respond(
    core: &Arc<Core>,
    token: &str,
    response: ActivityResponse,
) -> Result<(), WfError> {
    let token =
        ActivityToken::decode(token).map_err(|e| WfError::InvalidArgument(e.to_string()))?;
    match &response {
        ActivityResponse::Complete(p) => check_size("activity result", p)?,
        ActivityResponse::Heartbeat(p) => check_size("activity heartbeat", p)?,
        ActivityResponse::Fail(e) if e.is_will_complete_async() => {
            return Err(WfError::InvalidArgument(
                "an activity is failed with its own error, not `will_complete_async`".into(),
            ))
        }
        ActivityResponse::Fail(_) => {}
    }
    let task = open_attempt(core, &token).await?;
    let applied = match response {
        ActivityResponse::Heartbeat(details) => {
            let now = core.now_ms();
            let beat = core.store.heartbeat_activity(
                ActivityAttempt {
                    run_id: token.run_id.clone(),
                    seq: token.seq,
                    attempt: token.attempt,
                },
                Some(details),
                now,
            );
            let current = beat.await?;
            // Its lease moved: the time keeper's next deadline may be later.
            core.wake.timer.notify_local();
            current
        }
        ActivityResponse::Complete(result) => settle(core, &task, Ok(result)).await?,
        ActivityResponse::Fail(e) => {
            let failure = ActivityFailure {
                kind: e.kind,
                message: e.message,
                non_retryable: e.non_retryable,
            };
            settle(core, &task, Err((failure, None))).await?
        }
    };
    if !applied {
        return Err(not_pending(
            &token,
            &task.name,
            "it ended meanwhile (timed out, or settled by another call)",
        ));
    }
    Ok(())
}

/// The attempt `token` names, if it is open: current, and running (leased, its lease not
/// run out).
async fn open_attempt(core: &Core, token: &ActivityToken) -> Result<ActivityTask, WfError> {
    let pending = core.store.pending_activities(&token.run_id).await?;
    let Some(task) = pending.into_iter().find(|t| t.seq == token.seq) else {
        return Err(not_pending(
            token,
            "",
            "it completed, failed or timed out, or its run closed",
        ));
    };
    if task.attempt != token.attempt {
        let why = format!(
            "attempt {} replaced it (it failed or timed out and was retried); a token is good \
             for one attempt",
            task.attempt
        );
        return Err(not_pending(token, &task.name, &why));
    }
    match task.lease_until_ms {
        None => Err(not_pending(
            token,
            &task.name,
            "it is not running (it waits to be restarted)",
        )),
        Some(lease) if lease <= core.now_ms() => Err(not_pending(
            token,
            &task.name,
            "its start-to-close or heartbeat timeout passed",
        )),
        Some(_) => Ok(task),
    }
}

/// The error for a token whose attempt is not open, saying which attempt and why.
fn not_pending(token: &ActivityToken, name: &str, why: &str) -> WfError {
    let name = if name.is_empty() {
        String::new()
    } else {
        format!(" ({name})")
    };
    WfError::ActivityNotPending(format!(
        "attempt {} of activity {}{name} of workflow {:?} (run {}) is not open: {why}",
        token.attempt, token.seq, token.workflow_id, token.run_id
    ))
}
