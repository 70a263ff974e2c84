//! The `inbox` table of the memory store.

use super::tables::{MemoryTx, Result};
use crate::data::message::{InboxMessage, Message};
use crate::store::rules::tx::InboxTable;

impl InboxTable for MemoryTx {
    async fn push_inbox(&mut self, run_id: &str, message: Message) -> Result<()> {
        let seq = self.next_seq();
        self.inbox.insert((run_id.to_string(), seq), message);
        Ok(())
    }

    async fn inbox(&mut self, run_id: &str) -> Result<Vec<InboxMessage>> {
        let keys = (run_id.to_string(), 0)..=(run_id.to_string(), u64::MAX);
        let messages = self
            .inbox
            .range(keys)
            .map(|((_, seq), message)| InboxMessage {
                seq: *seq,
                message: message.clone(),
            });
        Ok(messages.collect())
    }

    async fn inbox_has_after(&mut self, run_id: &str, after: Option<u64>) -> Result<bool> {
        let first = after.map_or(0, |seq| seq.saturating_add(1));
        let keys = (run_id.to_string(), first)..=(run_id.to_string(), u64::MAX);
        Ok(self.inbox.range(keys).next().is_some())
    }

    async fn consume_inbox(&mut self, run_id: &str, through: u64) -> Result<()> {
        self.inbox
            .remove_range((run_id.to_string(), 0)..=(run_id.to_string(), through));
        Ok(())
    }

    async fn delete_inbox(&mut self, run_id: &str) -> Result<()> {
        self.inbox
            .remove_range((run_id.to_string(), 0)..=(run_id.to_string(), u64::MAX));
        Ok(())
    }
}
