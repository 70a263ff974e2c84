//! The errors of activities: what an attempt fails with, and how an activity ended for the
//! workflow that awaited it.

use crate::data::activity::TimeoutKind;
use crate::data::payload::{Payload, PayloadError};
use serde::de::DeserializeOwned;

/// An activity attempt's error: retryable (the default) or not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct ActivityError {
    /// A kind that retry policies can name in `non_retryable_error_types`.
    pub kind: String,
    /// What went wrong.
    pub message: String,
    /// Never retry this error.
    pub non_retryable: bool,
}

impl ActivityError {
    /// An error retried per the retry policy (kind `"retryable"`).
    pub fn retryable(message: impl Into<String>) -> Self {
        ActivityError {
            kind: "retryable".into(),
            message: message.into(),
            non_retryable: false,
        }
    }

    /// An error never retried, with a kind the workflow can match on.
    pub fn non_retryable(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ActivityError {
            kind: kind.into(),
            message: message.into(),
            non_retryable: true,
        }
    }

    /// A retryable error with a kind (which a retry policy may still list as non-retryable).
    pub fn with_kind(kind: impl Into<String>, message: impl Into<String>) -> Self {
        ActivityError {
            kind: kind.into(),
            message: message.into(),
            non_retryable: false,
        }
    }
}

/// The kind of [`ActivityError::will_complete_async`]: reserved, never a real failure.
pub(crate) const WILL_COMPLETE_ASYNC_KIND: &str = "wf.will_complete_async";

impl ActivityError {
    /// Not an error: the activity hands its result to someone else, who completes or fails it
    /// later with the attempt's task token ([`ActivityContext::task_token`]) through
    /// [`Client::complete_activity`] or [`Client::fail_activity`] (Temporal's async
    /// completion, Restate's awakeables). The attempt stays open, held by no worker (a worker
    /// that stops does not end it), until the token is used or one of its timeouts
    /// (start-to-close, heartbeat, schedule-to-close) passes.
    ///
    /// ```ignore
    /// #[activity]
    /// async fn request_approval(&self, ctx: ActivityContext, doc: String) -> Result<bool, ActivityError> {
    ///     self.mailer.send(&doc, ctx.task_token()).await?;   // the approver completes it
    ///     Err(ActivityError::will_complete_async())
    /// }
    /// ```
    ///
    /// [`ActivityContext::task_token`]: crate::ActivityContext::task_token
    /// [`Client::complete_activity`]: crate::Client::complete_activity
    /// [`Client::fail_activity`]: crate::Client::fail_activity
    pub fn will_complete_async() -> Self {
        ActivityError {
            kind: WILL_COMPLETE_ASYNC_KIND.into(),
            message: "the activity will be completed with its task token".into(),
            non_retryable: true,
        }
    }

    /// Whether this is [`will_complete_async`](Self::will_complete_async).
    pub fn is_will_complete_async(&self) -> bool {
        self.kind == WILL_COMPLETE_ASYNC_KIND
    }
}

impl From<PayloadError> for ActivityError {
    fn from(e: PayloadError) -> Self {
        ActivityError::non_retryable("payload", e.to_string())
    }
}

/// How an activity ended for the workflow that awaited it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ActivityCallError {
    /// It failed for good (non-retryable, or retries exhausted).
    #[error("activity {activity} failed after {attempts} attempt(s): {kind}: {message}")]
    Failed {
        /// Activity wire name.
        activity: String,
        /// The last error's kind.
        kind: String,
        /// The last error's message.
        message: String,
        /// Attempts made.
        attempts: u32,
        /// The details its attempts last reported with `ctx.heartbeat(..)` (read them with
        /// [`last_heartbeat`](ActivityCallError::last_heartbeat)).
        last_heartbeat: Option<Payload>,
    },
    /// It timed out for good.
    #[error("activity {activity} timed out ({timeout:?}) after {attempts} attempt(s)")]
    TimedOut {
        /// Activity wire name.
        activity: String,
        /// Which timeout.
        timeout: TimeoutKind,
        /// Attempts made.
        attempts: u32,
        /// The details its attempts last reported with `ctx.heartbeat(..)` (read them with
        /// [`last_heartbeat`](ActivityCallError::last_heartbeat)).
        last_heartbeat: Option<Payload>,
    },
    /// The input could not be encoded or the result decoded.
    #[error(transparent)]
    Payload(#[from] PayloadError),
    /// The activity was cancelled while pending (the run's cancellation was requested, or a
    /// [`CancellationScope`](crate::CancellationScope) it belongs to was cancelled); its task
    /// was dropped.
    #[error("activity {activity} cancelled")]
    Cancelled {
        /// Activity wire name.
        activity: String,
    },
    /// Its options cannot be scheduled (a priority that is not a level, a fairness weight not
    /// above 0): it was never scheduled, and nothing was recorded.
    #[error("activity {activity} not scheduled: {message}")]
    InvalidOptions {
        /// Activity wire name.
        activity: String,
        /// What is wrong, and what to use instead.
        message: String,
    },
}

impl ActivityCallError {
    /// The details the activity last reported with
    /// [`ActivityContext::heartbeat`](crate::ActivityContext::heartbeat) before it failed or
    /// timed out for good (recorded with the failure in history, so replay sees them too), to
    /// resume or compensate from where it stopped. `None` when it never heartbeated, when the
    /// details do not decode as `T`, and for a cancelled activity (cancellation does not wait
    /// for the attempt to report).
    ///
    /// ```ignore
    /// match ctx.activity(Tools::import, file).await {
    ///     Err(e) => {
    ///         let done: u64 = e.last_heartbeat().unwrap_or(0);
    ///         ctx.activity(Tools::import_from, (file, done)).await?
    ///     }
    ///     Ok(n) => n,
    /// }
    /// ```
    pub fn last_heartbeat<T: DeserializeOwned>(&self) -> Option<T> {
        match self {
            ActivityCallError::Failed { last_heartbeat, .. }
            | ActivityCallError::TimedOut { last_heartbeat, .. } => {
                last_heartbeat.as_ref().and_then(|p| p.decode().ok())
            }
            ActivityCallError::Payload(_)
            | ActivityCallError::Cancelled { .. }
            | ActivityCallError::InvalidOptions { .. } => None,
        }
    }
}
