//! The `updates` and `signal_ids` tables of the memory store.

use super::tables::{MemoryTx, Result};
use crate::data::update::{UpdateRecord, UpdateState};
use crate::store::rules::tx::{UpdateRow, UpdateTable};

impl UpdateTable for MemoryTx {
    async fn insert_signal_id(&mut self, chain_id: &str, signal_id: &str) -> Result<bool> {
        let key = (chain_id.to_string(), signal_id.to_string());
        if self.signal_ids.contains_key(&key) {
            return Ok(false);
        }
        self.signal_ids.insert(key, ());
        Ok(true)
    }

    async fn has_signal_id(&mut self, chain_id: &str, signal_id: &str) -> Result<bool> {
        let key = (chain_id.to_string(), signal_id.to_string());
        Ok(self.signal_ids.contains_key(&key))
    }

    async fn get_update(&mut self, chain_id: &str, id: &str) -> Result<Option<UpdateRecord>> {
        let key = (chain_id.to_string(), id.to_string());
        Ok(self.updates.get(&key).map(|(_, record)| record.clone()))
    }

    async fn put_update(&mut self, row: &UpdateRow<'_>) -> Result<()> {
        let key = (row.chain_id.to_string(), row.update_id.to_string());
        let changed = self.updates.update(&key, |(_, record)| {
            record.name = row.name.to_string();
            record.state = row.state.clone();
            true
        });
        if !changed {
            let record = UpdateRecord {
                update_id: row.update_id.to_string(),
                run_id: row.run_id.to_string(),
                name: row.name.to_string(),
                state: row.state.clone(),
            };
            let order = self.next_seq();
            self.updates.insert(key, (order, record));
        }
        Ok(())
    }

    async fn abandon_updates(&mut self, run_id: &str) -> Result<()> {
        let open: Vec<(String, String)> = self
            .updates
            .range(..)
            .filter(|(_, (_, r))| r.run_id == run_id && !r.state.is_final())
            .map(|(key, _)| key.clone())
            .collect();
        for key in open {
            self.updates.update(&key, |(_, record)| {
                record.state = UpdateState::Abandoned;
                true
            });
        }
        Ok(())
    }

    async fn pending_updates(&mut self, run_id: &str) -> Result<Vec<UpdateRecord>> {
        let mut pending: Vec<&(u64, UpdateRecord)> = self
            .updates
            .values()
            .filter(|(_, r)| r.run_id == run_id && !r.state.is_final())
            .collect();
        pending.sort_by_key(|(order, _)| *order);
        Ok(pending.into_iter().map(|(_, r)| r.clone()).collect())
    }
}
