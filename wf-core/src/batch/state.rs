//! A batch's stored state: its request, its progress, and the chunk of runs it is acting on.
//! It lives in the store's schedule table under an id no schedule can have (schedule ids
//! have no control character), so that it shares that table's version-checked saves and due
//! times: a batch's due time is when its lease runs out.

use super::{BatchAction, BatchDescription, BatchStatus, StoredFilter};
use crate::data::payload::{Payload, PayloadError};
use serde::{Deserialize, Serialize};

/// The prefix of a batch's row id in the schedule table.
pub(crate) const ROW_PREFIX: &str = "\u{1f}batch\u{1f}";

/// The row id of batch `batch_id`.
pub(crate) fn row_id(batch_id: &str) -> String {
    format!("{ROW_PREFIX}{batch_id}")
}

/// The batch id of a row id, if the row is a batch's.
pub(crate) fn batch_id_of(row_id: &str) -> Option<&str> {
    row_id.strip_prefix(ROW_PREFIX)
}

/// One run of the chunk in hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChunkRun {
    pub run_id: String,
    pub workflow_id: String,
}

/// What a batch's row holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BatchState {
    pub action: BatchAction,
    pub filter: StoredFilter,
    pub reason: String,
    pub rate_per_s: Option<u32>,
    pub status: BatchStatus,
    pub selected: u64,
    pub done: u64,
    pub failed: u64,
    pub last_error: Option<String>,
    pub created_ms: i64,
    pub closed_ms: Option<i64>,
    /// The run id of the last run listed so far (the next page starts after it).
    pub cursor: Option<String>,
    /// The runs listed and recorded but not yet counted: an engine may have acted on some of
    /// them before it stopped.
    pub chunk: Vec<ChunkRun>,
    /// Whether `chunk` was recorded by an engine that stopped before counting it (set when a
    /// batch is taken over).
    pub chunk_taken_over: bool,
    /// The engine that holds the lease.
    pub owner: Option<String>,
}

impl BatchState {
    pub fn encode(&self) -> Result<Payload, PayloadError> {
        Payload::encode(self)
    }

    pub fn decode(data: &Payload) -> Result<Self, PayloadError> {
        data.decode()
    }

    pub fn describe(&self, batch_id: &str) -> BatchDescription {
        BatchDescription {
            batch_id: batch_id.to_string(),
            action: self.action.clone(),
            filter: self.filter.to_filter(None, 0),
            reason: self.reason.clone(),
            rate_per_s: self.rate_per_s,
            status: self.status,
            selected: self.selected,
            done: self.done,
            failed: self.failed,
            last_error: self.last_error.clone(),
            created_ms: self.created_ms,
            closed_ms: self.closed_ms,
        }
    }
}
