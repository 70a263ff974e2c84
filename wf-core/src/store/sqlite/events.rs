//! The `events` table of the SQLite store.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::store::rules::tx::EventTable;
use rusqlite::{params, OptionalExtension};

impl EventTable for SqliteTx {
    async fn insert_events(&mut self, run_id: &str, first_id: u64, data: &[u8]) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO events (run_id, event_id, data) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![run_id, first_id as i64, data]))
            .map_err(db("append history events"))?;
        Ok(())
    }

    async fn event_rows(&mut self, run_id: &str, from_id: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        // From the row holding `from_id` (a row may hold several events) on.
        let rows: Vec<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached(
                "SELECT event_id, data FROM events WHERE run_id = ?1 AND event_id >= coalesce( \
                 (SELECT max(event_id) FROM events WHERE run_id = ?1 AND event_id <= ?2), ?2) \
                 ORDER BY event_id",
            )
            .and_then(|mut s| {
                let from = from_id.min(i64::MAX as u64) as i64;
                s.query_map(params![run_id, from], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(db("read a history"))?;
        Ok(rows
            .into_iter()
            .map(|(id, data)| (id as u64, data))
            .collect())
    }

    async fn event_row(&mut self, run_id: &str, event_id: u64) -> Result<Option<Vec<u8>>> {
        self.conn
            .prepare_cached("SELECT data FROM events WHERE run_id = ?1 AND event_id = ?2")
            .and_then(|mut s| {
                s.query_row(params![run_id, event_id as i64], |r| r.get(0))
                    .optional()
            })
            .map_err(db("read a history event"))
    }
}
