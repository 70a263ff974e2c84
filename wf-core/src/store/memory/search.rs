//! The `search_attributes` and `memos` tables of the memory store.

use super::tables::{MemoryTx, Result};
use crate::data::payload::Payload;
use crate::data::search::{SearchAttributes, SearchValue};
use crate::store::rules::tx::SearchTable;

impl MemoryTx {
    /// Whether the run's attribute `key` holds `value` (same kind, same canonical text, as
    /// the SQL stores compare).
    pub(super) fn has_attribute(&self, run_id: &str, key: &str, value: &SearchValue) -> bool {
        self.search
            .get(&(run_id.to_string(), key.to_string()))
            .is_some_and(|v| v.kind() == value.kind() && v.canonical() == value.canonical())
    }
}

impl SearchTable for MemoryTx {
    async fn put_search_attributes(
        &mut self,
        run_id: &str,
        attributes: &SearchAttributes,
    ) -> Result<()> {
        for (key, value) in attributes {
            self.search
                .insert((run_id.to_string(), key.clone()), value.clone());
        }
        Ok(())
    }

    async fn search_attributes(&mut self, run_id: &str) -> Result<SearchAttributes> {
        let keys = (run_id.to_string(), String::new())..;
        Ok(self
            .search
            .range(keys)
            .take_while(|((run, _), _)| run == run_id)
            .map(|((_, key), value)| (key.clone(), value.clone()))
            .collect())
    }

    async fn put_memo(&mut self, run_id: &str, memo: &Payload) -> Result<()> {
        self.memos.insert(run_id.to_string(), memo.clone());
        Ok(())
    }

    async fn memo(&mut self, run_id: &str) -> Result<Option<Payload>> {
        Ok(self.memos.get(&run_id.to_string()).cloned())
    }

    async fn delete_runs_search(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            let keys: Vec<String> = self.search_attributes(run_id).await?.into_keys().collect();
            for key in keys {
                self.search.remove(&(run_id.clone(), key));
            }
            self.memos.remove(run_id);
        }
        Ok(())
    }
}
