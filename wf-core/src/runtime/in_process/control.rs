//! Cancelling and terminating runs.

use super::route::{pick, send, Outgoing, Sent};
use super::Core;
use crate::data::limits::check_reason;
use crate::data::message::Message;
use crate::data::pause::PauseMark;
use crate::error::WfError;

/// Requests cancellation. A run this engine runs gets the request in memory: one commit
/// records it in history before this returns, so that a signal sent after it is refused (a
/// run whose cancellation was requested takes no more signals; see `worker/task.rs`).
/// Otherwise it goes to the run's inbox, and signals are refused once a worker recorded it.
pub(super) async fn request_cancel(
    core: &Core,
    workflow_id: &str,
    reason: &str,
) -> Result<(), WfError> {
    check_reason("cancellation reason", reason)?;
    let message = Message::CancelRequested {
        reason: reason.to_string(),
    };
    let outgoing = Outgoing {
        handler: None,
        hand_over: true,
        cached: false,
    };
    let mut route = pick(core, workflow_id, &outgoing).await?;
    loop {
        match send(core, workflow_id, &route, message.clone(), false).await? {
            // Recorded by the worker, or delivered through the store (by it or here).
            Sent::Recorded | Sent::Inbox => return Ok(()),
            Sent::Closed => route = route.after_closed(core, workflow_id, &outgoing).await?,
            // The worker went away without answering: through the inbox (requesting
            // cancellation twice is harmless: the run applies it once).
            Sent::Update(_) | Sent::Unknown => route = route.into_inbox(),
        }
    }
}

/// Terminates the workflow id's latest run. The store tells the parent and applies the
/// children's close policies in the same transaction.
pub(super) async fn terminate_run(
    core: &Core,
    workflow_id: &str,
    reason: &str,
) -> Result<(), WfError> {
    check_reason("termination reason", reason)?;
    core.store
        .terminate(workflow_id, reason, core.now_ms())
        .await?;
    core.wake.waiters.publish(workflow_id);
    core.wake.feed_changed();
    core.wake.workflow.notify_one();
    core.wake.slot_freed();
    crate::runtime::activity_worker::after_terminate(core, workflow_id);
    Ok(())
}

/// Pauses the workflow id's latest run (an operator's pause; `by` names the caller, `reason`
/// says why): from the store's commit on, it gets no workflow task and starts no activity,
/// and what arrives waits in its inbox. This engine stops handing messages over to it.
pub(super) async fn pause_run(
    core: &Core,
    workflow_id: &str,
    reason: &str,
    by: &str,
) -> Result<(), WfError> {
    check_reason("pause reason", reason)?;
    let mark = PauseMark {
        by: by.to_string(),
        reason: reason.to_string(),
        at_ms: core.now_ms(),
    };
    core.store.admin().pause_run(workflow_id, mark).await?;
    core.wake.feed_changed();
    core.worker.forget(workflow_id);
    Ok(())
}

/// Unpauses the workflow id's latest run: its next workflow task applies what waited, in
/// arrival order, and its activities start again.
pub(super) async fn unpause_run(core: &Core, workflow_id: &str) -> Result<(), WfError> {
    core.store
        .admin()
        .unpause_run(workflow_id, core.now_ms())
        .await?;
    core.wake.feed_changed();
    core.wake.workflow.notify_one();
    core.wake.activity.notify_one();
    Ok(())
}
