//! Batches as a client sees them: start one, list them, describe and cancel one. The engines
//! on the store carry them out (see the runtime's batcher).

use super::Client;
use crate::batch::{BatchDescription, BatchRequest};
use crate::error::WfError;

/// Batches of one store: `client.batches()`.
///
/// ```no_run
/// # use wf_core::{Client, ListFilter, RunStatus, WfError};
/// # use wf_core::batch::{BatchAction, BatchRequest};
/// # async fn demo(client: Client) -> Result<(), WfError> {
/// let filter = ListFilter { workflow_type: Some("order".into()), status: Some(RunStatus::Running), ..Default::default() };
/// let batch = client.batches().start(BatchRequest::new(filter, BatchAction::Terminate)).await?;
/// println!("{} runs selected", batch.selected);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Batches {
    client: Client,
}

impl Batches {
    pub(super) fn new(client: Client) -> Self {
        Batches { client }
    }

    /// Starts a batch: counts the runs its filter selects (its `selected`) and stores it; the
    /// engines on the store carry it out in the background. `InvalidArgument` for an id that
    /// exists, a bad id, signal name, reason, or a rate of 0.
    pub async fn start(&self, request: BatchRequest) -> Result<BatchDescription, WfError> {
        self.client.transport().start_batch(request).await
    }

    /// Every batch, newest first.
    pub async fn list(&self) -> Result<Vec<BatchDescription>, WfError> {
        self.client.transport().list_batches().await
    }

    /// One batch's action, filter, progress and status; `Unknown` if no batch has this id.
    pub async fn describe(&self, batch_id: &str) -> Result<BatchDescription, WfError> {
        self.client.transport().describe_batch(batch_id).await
    }

    /// Cancels a running batch (the runs acted on so far stay acted on); a finished batch is
    /// left as it is. Returns the batch as it now stands.
    pub async fn cancel(&self, batch_id: &str) -> Result<BatchDescription, WfError> {
        self.client.transport().cancel_batch(batch_id).await
    }

    /// Waits until a batch is no longer running, checking every `poll`, and returns it.
    pub async fn wait(
        &self,
        batch_id: &str,
        poll: std::time::Duration,
    ) -> Result<BatchDescription, WfError> {
        loop {
            let b = self.describe(batch_id).await?;
            if b.status != crate::batch::BatchStatus::Running {
                return Ok(b);
            }
            tokio::time::sleep(poll).await;
        }
    }
}
