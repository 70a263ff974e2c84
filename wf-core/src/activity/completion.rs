//! Asynchronous completion, the activity's side: the task token that names this attempt, for
//! whoever completes it later (see [`ActivityError::will_complete_async`]).
//!
//! [`ActivityError::will_complete_async`]: crate::ActivityError::will_complete_async

use super::context::ActivityContext;
use crate::data::task_token::ActivityToken;

impl ActivityContext {
    /// The opaque token of this attempt: hand it to the system that will finish the work, which
    /// completes, fails or heartbeats the activity with it
    /// ([`Client::complete_activity`](crate::Client::complete_activity),
    /// [`Client::fail_activity`](crate::Client::fail_activity),
    /// [`Client::heartbeat_activity`](crate::Client::heartbeat_activity), or over HTTP
    /// `POST /_activities/complete`). Return
    /// [`ActivityError::will_complete_async`](crate::ActivityError::will_complete_async) to
    /// leave the attempt open for it. The token survives restarts of every process; it is good
    /// for this attempt only (a retry gets a new one).
    pub fn task_token(&self) -> String {
        let info = self.info();
        ActivityToken {
            workflow_id: info.workflow_id.clone(),
            run_id: info.run_id.clone(),
            seq: info.seq,
            attempt: info.attempt,
        }
        .encode()
    }
}
