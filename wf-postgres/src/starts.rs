//! The `start_requests` table of the PostgreSQL store, and the migration that adds it.

use crate::tx::{PostgresTx, Result};
use wf_core::store::StartRequestTable;

/// v3: start request ids per workflow id, with the run each start addressed and its chain
/// (retention's purge deletes a chain's ids with its last run).
pub(crate) const SCHEMA_V3: &str = r#"
CREATE TABLE start_requests (
    workflow_id  TEXT COLLATE "C" NOT NULL,
    request_id   TEXT COLLATE "C" NOT NULL,
    run_id       TEXT COLLATE "C" NOT NULL,
    chain_id     TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (workflow_id, request_id)
);
CREATE INDEX start_requests_by_chain ON start_requests (chain_id);
"#;

impl StartRequestTable for PostgresTx {
    async fn start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
    ) -> Result<Option<String>> {
        // Under the workflow id's lock, as the start that follows: two starts with one request
        // id cannot both miss it.
        self.lock_workflow(workflow_id).await?;
        let row = self
            .query_opt(
                "SELECT run_id FROM start_requests WHERE workflow_id = $1 AND request_id = $2",
                &[&workflow_id, &request_id],
                "read a start request id",
            )
            .await?;
        row.map(|r| crate::rows::get::<String>(&r, 0)).transpose()
    }

    async fn insert_start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
        run_id: &str,
        chain_id: &str,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO start_requests (workflow_id, request_id, run_id, chain_id) \
             VALUES ($1, $2, $3, $4)",
            &[&workflow_id, &request_id, &run_id, &chain_id],
            "record a start request id",
        )
        .await?;
        Ok(())
    }
}
