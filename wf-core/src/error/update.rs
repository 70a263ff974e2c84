//! The errors of update handlers and validators: a handler's failure (the caller sees
//! `UpdateFailed`, the run goes on) and a validator's refusal (the caller sees `Rejected`,
//! nothing is recorded).

use super::activity::ActivityCallError;
use super::workflow::Cancelled;
use crate::data::payload::PayloadError;

/// The error an update handler returns; the caller sees [`WfError::UpdateFailed`] with its
/// message, and the run goes on.
///
/// [`WfError::UpdateFailed`]: crate::WfError::UpdateFailed
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UpdateError {
    /// What went wrong.
    pub message: String,
}

impl UpdateError {
    /// An update failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        UpdateError {
            message: message.into(),
        }
    }
}

impl From<ActivityCallError> for UpdateError {
    fn from(e: ActivityCallError) -> Self {
        UpdateError::new(e.to_string())
    }
}

impl From<Cancelled> for UpdateError {
    fn from(e: Cancelled) -> Self {
        UpdateError::new(e.to_string())
    }
}

impl From<PayloadError> for UpdateError {
    fn from(e: PayloadError) -> Self {
        UpdateError::new(e.to_string())
    }
}

/// A validator's refusal; the caller sees [`WfError::Rejected`] with its message and nothing is
/// recorded.
///
/// [`WfError::Rejected`]: crate::WfError::Rejected
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Rejection {
    /// Why the update was refused.
    pub message: String,
}

impl Rejection {
    /// A rejection with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Rejection {
            message: message.into(),
        }
    }
}
