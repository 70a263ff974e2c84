//! The `events` table of the PostgreSQL store.

use crate::rows::{get, get_u64};
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::EventTable;

impl EventTable for PostgresTx {
    async fn insert_events(&mut self, run_id: &str, first_id: u64, data: &[u8]) -> Result<()> {
        self.later(
            "INSERT INTO events (run_id, event_id, data) VALUES ($1, $2, $3)",
            owned![run_id.to_string(), first_id as i64, data.to_vec()],
            "append history events",
        )
        .await?;
        Ok(())
    }

    async fn event_rows(&mut self, run_id: &str, from_id: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        // From the row holding `from_id` (a row may hold several events) on.
        let from = from_id.min(i64::MAX as u64) as i64;
        let rows = self
            .query(
                "SELECT event_id, data FROM events WHERE run_id = $1 AND event_id >= COALESCE( \
                 (SELECT MAX(event_id) FROM events WHERE run_id = $1 AND event_id <= $2), $2) \
                 ORDER BY event_id",
                &[&run_id, &from],
                "read a history",
            )
            .await?;
        rows.iter()
            .map(|r| Ok((get_u64(r, 0)?, get(r, 1)?)))
            .collect()
    }

    async fn event_row(&mut self, run_id: &str, event_id: u64) -> Result<Option<Vec<u8>>> {
        let row = self
            .query_opt(
                "SELECT data FROM events WHERE run_id = $1 AND event_id = $2",
                &[&run_id, &(event_id.min(i64::MAX as u64) as i64)],
                "read a history event",
            )
            .await?;
        row.map(|r| get(&r, 0)).transpose()
    }
}
