//! The `timers` table of the SQLite store.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::store::rules::tx::TimerTable;
use rusqlite::params;

impl TimerTable for SqliteTx {
    async fn insert_timer(&mut self, run_id: &str, seq: u32, fire_at_ms: i64) -> Result<()> {
        self.conn
            .prepare_cached("INSERT INTO timers (run_id, seq, fire_at) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![run_id, seq, fire_at_ms]))
            .map_err(db("start a timer"))?;
        Ok(())
    }

    async fn delete_timer(&mut self, run_id: &str, seq: u32) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM timers WHERE run_id = ?1 AND seq = ?2")
            .and_then(|mut s| s.execute(params![run_id, seq]))
            .map_err(db("delete a timer"))?;
        Ok(())
    }

    async fn delete_timers(&mut self, run_id: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM timers WHERE run_id = ?1")
            .and_then(|mut s| s.execute([run_id]))
            .map_err(db("clear a closed run's timers"))?;
        Ok(())
    }

    async fn due_timers(&mut self, now_ms: i64, max: usize) -> Result<Vec<(String, u32)>> {
        self.conn
            .prepare_cached(
                "SELECT run_id, seq FROM timers WHERE fire_at <= ?1 \
                 ORDER BY fire_at, run_id, seq LIMIT ?2",
            )
            .and_then(|mut s| {
                s.query_map(params![now_ms, max as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(db("find due timers"))
    }
}
