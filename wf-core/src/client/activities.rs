//! Asynchronous activity completion, the caller's side: complete, fail or heartbeat the
//! activity attempt a task token names (the token an activity got from
//! [`ActivityContext::task_token`](crate::ActivityContext::task_token) before it returned
//! [`ActivityError::will_complete_async`]), and taking activity tasks from outside the engine
//! ([`Client::poll_activity_task`]: what a worker in another language does over HTTP).

use super::Client;
use crate::data::payload::Payload;
use crate::error::{ActivityError, WfError};
use serde::Serialize;
use std::time::Duration;

/// Longest a [`Client::poll_activity_task`] waits for a task (longer waits are cut to it): the
/// HTTP service's long polls all stop by then, below its request timeout.
pub const MAX_ACTIVITY_POLL_WAIT: Duration = Duration::from_secs(50);

/// A poll for one activity task by a worker outside the engine (see
/// [`Client::poll_activity_task`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityTaskPoll {
    /// The task queue the worker serves: it takes the activities sent to that queue
    /// (`.task_queue(..)` where the workflow schedules them), and those sent to none.
    pub task_queue: String,
    /// The activity names it runs (at least one): a task of another name is left for the
    /// workers that register it.
    pub names: Vec<String>,
    /// How long to wait for a task (cut to [`MAX_ACTIVITY_POLL_WAIT`]); zero: look once.
    pub wait: Duration,
    /// Who polls (a host and process id, say), for the logs; empty is fine.
    pub identity: String,
}

/// An activity attempt leased to a worker outside the engine: what it runs, and by when it
/// must heartbeat or finish. Report its outcome with the task token
/// ([`Client::complete_activity_raw`], [`Client::fail_activity`],
/// [`Client::heartbeat_activity`]). Deadlines are in engine-clock milliseconds (since the Unix
/// epoch for the system clock).
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityTaskLease {
    /// The attempt's task token: good for this attempt only.
    pub token: String,
    /// The activity's wire name.
    pub name: String,
    /// Its encoded input (the workflow's argument; a tuple for several).
    pub input: Payload,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The workflow id of the run that scheduled it.
    pub workflow_id: String,
    /// That run.
    pub run_id: String,
    /// When the workflow scheduled the activity.
    pub scheduled_ms: i64,
    /// When this attempt started (now).
    pub started_ms: i64,
    /// When this attempt times out (start-to-close, or the schedule-to-close deadline if
    /// earlier; 5 minutes when the workflow set neither).
    pub start_to_close_deadline_ms: i64,
    /// When the activity as a whole times out, if the workflow set a schedule-to-close.
    pub schedule_to_close_deadline_ms: Option<i64>,
    /// The heartbeat timeout, if set: an attempt silent for longer times out and is retried.
    pub heartbeat_timeout: Option<Duration>,
    /// The details of the last heartbeat, of this activity's earlier attempts.
    pub last_heartbeat: Option<Payload>,
    /// The previous attempt's failure message, if this is a retry.
    pub last_failure: Option<String>,
}

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

    /// Leases one activity task for a worker outside the engine, waiting up to `poll.wait`
    /// for one: a task of one of `poll.names`, sent to `poll.task_queue` or to no queue, that
    /// no engine's worker has taken. The attempt is then the caller's, exactly as if a worker
    /// of an engine ran it: its start-to-close and heartbeat timeouts run, an attempt that
    /// misses them is retried per the activity's retry policy, and the workflow learns nothing
    /// of where it ran. `None` when the wait ran out.
    ///
    /// Give it names no engine on the store registers (or a task queue none serves): an
    /// engine's worker takes the tasks of the names it registers as soon as they are visible.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # async fn demo(client: wf_core::Client) -> Result<(), wf_core::WfError> {
    /// use wf_core::client::ActivityTaskPoll;
    /// let poll = ActivityTaskPoll {
    ///     task_queue: "python".into(),
    ///     names: vec!["summarize".into()],
    ///     wait: Duration::from_secs(20),
    ///     identity: "worker-1".into(),
    /// };
    /// if let Some(task) = client.poll_activity_task(poll).await? {
    ///     client.complete_activity(&task.token, "a summary").await?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// Fails with [`WfError::InvalidArgument`] for no names or a bad name or queue, and on a
    /// transport that cannot lease tasks (only an engine's client can).
    pub async fn poll_activity_task(
        &self,
        poll: ActivityTaskPoll,
    ) -> Result<Option<ActivityTaskLease>, WfError> {
        self.transport().poll_activity_task(poll).await
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
