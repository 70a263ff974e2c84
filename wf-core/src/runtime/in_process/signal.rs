//! Signals. A signal without a signal id, for a run this engine runs, is handed to its workflow
//! worker: one commit records it in history (no inbox write, no poll) and the answer comes once
//! that commit is durable. With one, or for a run elsewhere, it goes through the store's inbox
//! and dedupe, and the answer comes once it is there (`route.rs` picks which). Either way a
//! query sent after the answer sees the signal: one on a run cached here looks in the inbox
//! when this engine put a signal there (the delivery marks the run) or another engine may have,
//! and one answered by replay applies the inbox's signals (see `query.rs`).

use super::route::{pick, send, Outgoing, Sent};
use super::{check_signal, Core};
use crate::client::{SignalRequest, SignalStatus};
use crate::data::message::Message;
use crate::error::WfError;
use crate::workflow::Role;

/// Sends a signal; the status comes from the run's workflow type when this engine knows it
/// (else from what the caller knows, `handled`).
pub(super) async fn send_signal(
    core: &Core,
    request: SignalRequest<'_>,
) -> Result<SignalStatus, WfError> {
    let SignalRequest {
        workflow_id,
        name,
        args,
        signal_id,
        handled,
    } = request;
    check_signal(name, signal_id.as_deref())?;
    let outgoing = Outgoing {
        handler: Some((Role::Signal, name, &args)),
        // Only the store dedupes signal ids.
        hand_over: signal_id.is_none(),
        cached: true,
    };
    let mut route = pick(core, workflow_id, &outgoing).await?;
    loop {
        let status = SignalStatus::from_handled(match route.def() {
            Some(def) => Some(def.has_handler(Role::Signal, name)),
            None => handled,
        });
        let message = Message::signal(name, args.clone(), signal_id.clone()).sent_at(core.now_ms());
        match send(core, workflow_id, &route, message, false).await? {
            // Through the inbox: one group commit made it durable; the sender does not wait
            // for the workflow task.
            Sent::Recorded | Sent::Inbox => return Ok(status),
            Sent::Closed => route = route.after_closed(core, workflow_id, &outgoing).await?,
            Sent::Update(_) | Sent::Unknown => {
                return Err(WfError::Interrupted(
                    "the engine stopped before confirming the signal; it may or may not have \
                     been recorded (send it with a signal id to retry it safely)"
                        .into(),
                ))
            }
        }
    }
}
