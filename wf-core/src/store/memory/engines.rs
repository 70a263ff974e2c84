//! The `engines` table of the memory store.

use super::tables::{MemoryTx, Result};
use crate::store::records::EngineRecord;
use crate::store::rules::tx::EngineTable;

impl EngineTable for MemoryTx {
    async fn put_engine(&mut self, engine: &EngineRecord) -> Result<()> {
        self.engines
            .insert(engine.engine_id.clone(), engine.clone());
        Ok(())
    }

    async fn renew_engine(&mut self, engine_id: &str, lease_until_ms: i64) -> Result<bool> {
        Ok(self.engines.update(&engine_id.to_string(), |e| {
            e.lease_until_ms = lease_until_ms;
            true
        }))
    }

    async fn delete_engine(&mut self, engine_id: &str) -> Result<()> {
        self.engines.remove(&engine_id.to_string());
        Ok(())
    }

    async fn engines(&mut self) -> Result<Vec<EngineRecord>> {
        Ok(self.engines.values().cloned().collect())
    }
}
