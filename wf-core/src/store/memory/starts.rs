//! The `start_requests` table of the memory store.

use super::tables::{taken, MemoryTx, Result};
use crate::store::rules::tx::StartRequestTable;

impl StartRequestTable for MemoryTx {
    async fn start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
    ) -> Result<Option<String>> {
        let key = (workflow_id.to_string(), request_id.to_string());
        Ok(self
            .start_requests
            .get(&key)
            .map(|(run_id, _)| run_id.clone()))
    }

    async fn insert_start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
        run_id: &str,
        chain_id: &str,
    ) -> Result<()> {
        let key = (workflow_id.to_string(), request_id.to_string());
        if self.start_requests.contains_key(&key) {
            return Err(taken(format!(
                "start request id {request_id:?} of workflow {workflow_id:?} is recorded already"
            )));
        }
        self.start_requests
            .insert(key, (run_id.to_string(), chain_id.to_string()));
        Ok(())
    }
}
