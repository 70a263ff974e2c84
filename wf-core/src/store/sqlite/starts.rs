//! The `start_requests` table of the SQLite store.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::store::rules::tx::StartRequestTable;
use rusqlite::OptionalExtension;

impl StartRequestTable for SqliteTx {
    async fn start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
    ) -> Result<Option<String>> {
        self.conn
            .prepare_cached(
                "SELECT run_id FROM start_requests WHERE workflow_id = ?1 AND request_id = ?2",
            )
            .and_then(|mut s| {
                s.query_row([workflow_id, request_id], |r| r.get(0))
                    .optional()
            })
            .map_err(db("read a start request id"))
    }

    async fn insert_start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
        run_id: &str,
        chain_id: &str,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO start_requests (workflow_id, request_id, run_id, chain_id) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| s.execute([workflow_id, request_id, run_id, chain_id]))
            .map_err(db("record a start request id"))?;
        Ok(())
    }
}
