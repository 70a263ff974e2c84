//! The `timers` table of the memory store, kept twice: by (run, seq) and in firing order.

use super::tables::{taken, MemoryTx, Result};
use crate::store::rules::tx::TimerTable;

impl TimerTable for MemoryTx {
    async fn insert_timer(&mut self, run_id: &str, seq: u32, fire_at_ms: i64) -> Result<()> {
        let key = (run_id.to_string(), seq);
        if self.timers.contains_key(&key) {
            return Err(taken(format!(
                "run {run_id}: timer seq {seq} is already pending"
            )));
        }
        self.timers.insert(key, fire_at_ms);
        self.due_timers
            .insert((fire_at_ms, run_id.to_string(), seq), ());
        Ok(())
    }

    async fn delete_timer(&mut self, run_id: &str, seq: u32) -> Result<()> {
        let key = (run_id.to_string(), seq);
        if let Some(fire_at) = self.timers.get(&key).copied() {
            self.timers.remove(&key);
            self.due_timers.remove(&(fire_at, key.0, seq));
        }
        Ok(())
    }

    async fn delete_timers(&mut self, run_id: &str) -> Result<()> {
        let keys = (run_id.to_string(), 0)..=(run_id.to_string(), u32::MAX);
        let seqs: Vec<u32> = self.timers.range(keys).map(|((_, seq), _)| *seq).collect();
        for seq in seqs {
            self.delete_timer(run_id, seq).await?;
        }
        Ok(())
    }

    async fn due_timers(&mut self, now_ms: i64, max: usize) -> Result<Vec<(String, u32)>> {
        let due = self
            .due_timers
            .range(..)
            .take_while(|((at, _, _), _)| *at <= now_ms);
        Ok(due
            .take(max)
            .map(|((_, run_id, seq), _)| (run_id.clone(), *seq))
            .collect())
    }
}
