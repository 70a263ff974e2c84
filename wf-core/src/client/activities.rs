//! Asynchronous activity completion, the caller's side: complete, fail or heartbeat the
//! activity attempt a task token names (the token an activity got from
//! [`ActivityContext::task_token`](crate::ActivityContext::task_token) before it returned
//! [`ActivityError::will_complete_async`]).

use super::Client;
use crate::data::payload::Payload;
use crate::error::{ActivityError, WfError};
use serde::Serialize;

/// What an outside caller reports for an activity attempt, by its task token.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ActivityResponse {
    /// The activity returned this encoded value.
    Complete(Payload),
    /// The activity failed: retried per its retry policy unless non-retryable.
    Fail(ActivityError),
    /// The activity is alive: these details are recorded and its heartbeat timeout restarts.
    Heartbeat(Payload),
}

impl Client {
    /// Completes the activity attempt that `token` names with `result`, as if the activity
    /// had returned `Ok(result)`: the workflow awaiting it gets the value. `result` must be of
    /// the activity's output type (the workflow decodes it as that). Returns once the result is
    /// durable.
    ///
    /// Fails with [`WfError::InvalidArgument`] for a string that is not a token, and with
    /// [`WfError::ActivityNotPending`] when the attempt is not open any more (it completed,
    /// failed or timed out, a retry replaced it, its run closed); its message says which.
    ///
    /// ```no_run
    /// # async fn demo(client: wf_core::Client, token: String) -> Result<(), wf_core::WfError> {
    /// client.complete_activity(&token, &true).await?;   // e.g. "approved"
    /// # Ok(()) }
    /// ```
    pub async fn complete_activity<T: Serialize + ?Sized>(
        &self,
        token: &str,
        result: &T,
    ) -> Result<(), WfError> {
        let result = Payload::encode(result)?;
        self.complete_activity_raw(token, result).await
    }

    /// [`complete_activity`](Self::complete_activity) with an encoded result.
    pub async fn complete_activity_raw(&self, token: &str, result: Payload) -> Result<(), WfError> {
        self.respond_activity(token, ActivityResponse::Complete(result))
            .await
    }

    /// Fails the activity attempt that `token` names with `error`, as if the activity had
    /// returned `Err(error)`: a retryable error is retried per the activity's retry policy
    /// (the next attempt runs on a worker, and calls `will_complete_async` again if it wants
    /// to), a non-retryable one fails the activity. Errors as
    /// [`complete_activity`](Self::complete_activity).
    pub async fn fail_activity(&self, token: &str, error: ActivityError) -> Result<(), WfError> {
        self.respond_activity(token, ActivityResponse::Fail(error))
            .await
    }

    /// Records a heartbeat of the activity attempt that `token` names: its heartbeat timeout
    /// starts again and `details` are what the next attempt reads with
    /// [`ActivityContext::last_heartbeat`](crate::ActivityContext::last_heartbeat). Errors as
    /// [`complete_activity`](Self::complete_activity).
    pub async fn heartbeat_activity<T: Serialize + ?Sized>(
        &self,
        token: &str,
        details: &T,
    ) -> Result<(), WfError> {
        let details = Payload::encode(details)?;
        self.respond_activity(token, ActivityResponse::Heartbeat(details))
            .await
    }

    /// Reports `response` for the activity attempt that `token` names (the three methods
    /// above, for tools that hold encoded payloads).
    pub async fn respond_activity(
        &self,
        token: &str,
        response: ActivityResponse,
    ) -> Result<(), WfError> {
        self.transport().respond_activity(token, response).await
    }
}
