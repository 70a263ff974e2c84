//! The `engines` table of the SQLite store.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::store::records::EngineRecord;
use crate::store::rules::tx::EngineTable;
use rusqlite::params;

impl EngineTable for SqliteTx {
    async fn put_engine(&mut self, engine: &EngineRecord) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO engines \
                 (engine_id, wake_address, task_queue, started_ms, lease_until) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    engine.engine_id,
                    engine.wake_address,
                    engine.task_queue,
                    engine.started_ms,
                    engine.lease_until_ms
                ])
            })
            .map_err(db("register an engine"))?;
        Ok(())
    }

    async fn renew_engine(&mut self, engine_id: &str, lease_until_ms: i64) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached("UPDATE engines SET lease_until = ?2 WHERE engine_id = ?1")
            .and_then(|mut s| s.execute(params![engine_id, lease_until_ms]))
            .map_err(db("renew an engine's liveness lease"))?;
        Ok(n > 0)
    }

    async fn delete_engine(&mut self, engine_id: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM engines WHERE engine_id = ?1")
            .and_then(|mut s| s.execute([engine_id]))
            .map_err(db("remove an engine"))?;
        Ok(())
    }

    async fn engines(&mut self) -> Result<Vec<EngineRecord>> {
        self.conn
            .prepare_cached(
                "SELECT engine_id, wake_address, task_queue, started_ms, lease_until \
                 FROM engines ORDER BY engine_id",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(EngineRecord {
                        engine_id: r.get(0)?,
                        wake_address: r.get(1)?,
                        task_queue: r.get(2)?,
                        started_ms: r.get(3)?,
                        lease_until_ms: r.get(4)?,
                    })
                })?
                .collect()
            })
            .map_err(db("list engines"))
    }
}
