//! Updates as they are tracked: how a handler ended, where an update stands, and its record
//! per continue-as-new chain (what dedupes a retried update id).

use super::payload::Payload;
use serde::{Deserialize, Serialize};

/// How an update handler ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UpdateOutcome {
    /// The handler returned a value.
    Completed(Payload),
    /// The handler returned an `UpdateError` with this message.
    Failed(String),
}

/// Where an update stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UpdateState {
    /// In the inbox, not yet validated.
    Requested,
    /// Validated, handler running.
    Accepted,
    /// The validator refused it (no event was written).
    Rejected(String),
    /// The handler finished.
    Completed(UpdateOutcome),
    /// The run closed before the handler finished (or before validation).
    Abandoned,
}

impl UpdateState {
    /// Whether the caller waiting for completion can stop waiting.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            UpdateState::Rejected(_) | UpdateState::Completed(_) | UpdateState::Abandoned
        )
    }
}

/// An update as stored, per continue-as-new chain.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRecord {
    /// Update id.
    pub update_id: String,
    /// The run it was delivered to.
    pub run_id: String,
    /// Wire name.
    pub name: String,
    /// Where it stands.
    pub state: UpdateState,
}

/// A change of an update's state that a workflow task produced (its record is written, or
/// moved to `state`, by the task's commit).
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateChange {
    /// Update id.
    pub update_id: String,
    /// Wire name.
    pub name: String,
    /// Where it stands after the task.
    pub state: UpdateState,
}
