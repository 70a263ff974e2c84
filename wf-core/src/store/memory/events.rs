//! The `events` table of the memory store: encoded rows, as a SQL store keeps them.

use super::tables::{taken, MemoryTx, Result};
use crate::store::rules::tx::EventTable;

impl EventTable for MemoryTx {
    async fn insert_events(&mut self, run_id: &str, first_id: u64, data: &[u8]) -> Result<()> {
        let key = (run_id.to_string(), first_id);
        if self.events.contains_key(&key) {
            return Err(taken(format!("run {run_id}: event {first_id} exists")));
        }
        self.events.insert(key, data.to_vec());
        Ok(())
    }

    async fn event_rows(&mut self, run_id: &str, from_id: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let run = || run_id.to_string();
        // From the row holding `from_id` (a row may hold several events) on.
        let start = self
            .events
            .range((run(), 0)..=(run(), from_id))
            .next_back()
            .map_or(from_id, |((_, first), _)| *first);
        let rows = self.events.range((run(), start)..=(run(), u64::MAX));
        Ok(rows
            .map(|((_, first), data)| (*first, data.clone()))
            .collect())
    }

    async fn event_row(&mut self, run_id: &str, event_id: u64) -> Result<Option<Vec<u8>>> {
        Ok(self.events.get(&(run_id.to_string(), event_id)).cloned())
    }
}
