//! The `timers` table of the PostgreSQL store.

use crate::rows::{get, get_u32};
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::TimerTable;

impl TimerTable for PostgresTx {
    async fn insert_timer(&mut self, run_id: &str, seq: u32, fire_at_ms: i64) -> Result<()> {
        self.later(
            "INSERT INTO timers (run_id, seq, fire_at) VALUES ($1, $2, $3)",
            owned![run_id.to_string(), i64::from(seq), fire_at_ms],
            "start a timer",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn delete_timer(&mut self, run_id: &str, seq: u32) -> Result<()> {
        self.later(
            "DELETE FROM timers WHERE run_id = $1 AND seq = $2",
            owned![run_id.to_string(), i64::from(seq)],
            "delete a timer",
        )
        .await?;
        Ok(())
    }

    async fn delete_timers(&mut self, run_id: &str) -> Result<()> {
        self.later(
            "DELETE FROM timers WHERE run_id = $1",
            owned![run_id.to_string()],
            "clear a closed run's timers",
        )
        .await?;
        Ok(())
    }

    async fn due_timers(&mut self, now_ms: i64, max: usize) -> Result<Vec<(String, u32)>> {
        let max = max.min(i64::MAX as usize) as i64;
        // A writer fires them: skip those another process is firing (it deletes them).
        let rows = if self.writer {
            self.query(
                "SELECT run_id, seq FROM timers WHERE fire_at <= $1 \
                 ORDER BY fire_at, run_id, seq LIMIT $2 FOR UPDATE SKIP LOCKED",
                &[&now_ms, &max],
                "find due timers",
            )
            .await?
        } else {
            self.query(
                "SELECT run_id, seq FROM timers WHERE fire_at <= $1 \
                 ORDER BY fire_at, run_id, seq LIMIT $2",
                &[&now_ms, &max],
                "find due timers",
            )
            .await?
        };
        rows.iter()
            .map(|r| Ok((get(r, 0)?, get_u32(r, 1)?)))
            .collect()
    }
}
