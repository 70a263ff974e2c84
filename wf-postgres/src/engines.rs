//! The `engines` table of the PostgreSQL store.

use crate::rows::get;
use crate::tx::{PostgresTx, Result};
use wf_core::store::{EngineRecord, EngineTable};

impl EngineTable for PostgresTx {
    async fn put_engine(&mut self, engine: &EngineRecord) -> Result<()> {
        self.execute(
            "INSERT INTO engines (engine_id, wake_address, task_queue, started_ms, lease_until) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (engine_id) DO UPDATE SET \
             wake_address = excluded.wake_address, task_queue = excluded.task_queue, \
             started_ms = excluded.started_ms, lease_until = excluded.lease_until",
            &[
                &engine.engine_id,
                &engine.wake_address,
                &engine.task_queue,
                &engine.started_ms,
                &engine.lease_until_ms,
            ],
            "register an engine",
        )
        .await?;
        Ok(())
    }

    async fn renew_engine(&mut self, engine_id: &str, lease_until_ms: i64) -> Result<bool> {
        let n = self
            .execute(
                "UPDATE engines SET lease_until = $2 WHERE engine_id = $1",
                &[&engine_id, &lease_until_ms],
                "renew an engine's liveness lease",
            )
            .await?;
        Ok(n > 0)
    }

    async fn delete_engine(&mut self, engine_id: &str) -> Result<()> {
        self.execute(
            "DELETE FROM engines WHERE engine_id = $1",
            &[&engine_id],
            "remove an engine",
        )
        .await?;
        Ok(())
    }

    async fn engines(&mut self) -> Result<Vec<EngineRecord>> {
        let rows = self
            .query(
                "SELECT engine_id, wake_address, task_queue, started_ms, lease_until \
                 FROM engines ORDER BY engine_id",
                &[],
                "list engines",
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(EngineRecord {
                    engine_id: get(r, 0)?,
                    wake_address: get(r, 1)?,
                    task_queue: get(r, 2)?,
                    started_ms: get(r, 3)?,
                    lease_until_ms: get(r, 4)?,
                })
            })
            .collect()
    }
}
