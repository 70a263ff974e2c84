//! The `workflow_feed` table of the memory store: rows by sequence number, from the store's
//! one growing counter (transactions run one at a time under the store's lock, so that
//! number order is commit order; a rolled back transaction only leaves a gap).

use super::tables::{MemoryTx, Result};
use crate::data::feed::{FeedCursor, FeedEvent};
use crate::store::rules::tx::{FeedRow, FeedTable};

/// A stored feed row: everything but its place.
#[derive(Clone)]
pub(super) struct StoredFeedRow {
    pub(super) event: FeedEvent,
}

impl FeedTable for MemoryTx {
    async fn insert_feed(&mut self, rows: &[FeedRow<'_>]) -> Result<()> {
        for row in rows {
            let seq = self.next_seq();
            let event = crate::store::rules::tx::feed_event(
                FeedCursor::at(0, seq),
                row.kind.as_str(),
                row.workflow_type.to_string(),
                row.workflow_id.to_string(),
                row.run_id.to_string(),
                row.event_id.and_then(|id| i64::try_from(id).ok()),
                row.at_ms,
                &row.detail,
            )?;
            self.feed.insert(seq, StoredFeedRow { event });
        }
        Ok(())
    }

    async fn feed_rows(
        &mut self,
        after: FeedCursor,
        workflow_type: Option<&str>,
        workflow_id: Option<&str>,
        max: usize,
    ) -> Result<Vec<FeedEvent>> {
        let from = after.position().map_or(u64::MAX, |(_, seq)| seq);
        Ok(self
            .feed
            .range((std::ops::Bound::Excluded(from), std::ops::Bound::Unbounded))
            .map(|(_, row)| &row.event)
            .filter(|e| workflow_type.is_none_or(|t| t == e.workflow_type))
            .filter(|e| workflow_id.is_none_or(|id| id == e.workflow_id))
            .take(max)
            .cloned()
            .collect())
    }

    async fn feed_tail(&mut self) -> Result<FeedCursor> {
        Ok(self
            .feed
            .range(..)
            .next_back()
            .map_or(FeedCursor::start(), |(seq, _)| FeedCursor::at(0, *seq)))
    }

    async fn delete_runs_feed(&mut self, run_ids: &[String]) -> Result<()> {
        self.feed
            .remove_where(|_, row| run_ids.contains(&row.event.run_id));
        Ok(())
    }
}
