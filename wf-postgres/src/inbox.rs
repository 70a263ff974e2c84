//! The `inbox` table of the PostgreSQL store.
//!
//! A message's sequence number comes from a sequence, drawn when it is inserted, and a task
//! consumes its run's inbox up to the last number it read: so a run's numbers must follow the
//! order in which their transactions commit, or a task could consume a message that committed
//! after it read the inbox. Every insert therefore holds the run's row lock first (a poll
//! reads the inbox under that lock too), which orders a run's inserts by commit.

use crate::rows::{from_blob, get, get_u64, to_blob};
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::{InboxMessage, InboxTable, Message};

impl InboxTable for PostgresTx {
    async fn push_inbox(&mut self, run_id: &str, message: Message) -> Result<()> {
        let data = to_blob("inbox message", &message)?;
        self.lock_run(run_id).await?;
        // The row lock first (the joined subquery), then the insert that draws the number.
        // Queued: a missing run inserts a NULL run id, which the column refuses.
        self.later(
            "INSERT INTO inbox (run_id, data) \
             SELECT r.run_id, $2 FROM (SELECT 1) one LEFT JOIN \
             (SELECT run_id FROM runs WHERE run_id = $1 FOR UPDATE) r ON TRUE",
            owned![run_id.to_string(), data],
            "insert an inbox message (into the inbox of an existing run)",
        )
        .await?;
        self.notes.work = true;
        Ok(())
    }

    async fn inbox(&mut self, run_id: &str) -> Result<Vec<InboxMessage>> {
        let rows = self
            .query(
                "SELECT seq, data FROM inbox WHERE run_id = $1 ORDER BY seq",
                &[&run_id],
                "read a run's inbox",
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(InboxMessage {
                    seq: get_u64(r, 0)?,
                    message: from_blob("inbox message", get::<&[u8]>(r, 1)?)?,
                })
            })
            .collect()
    }

    async fn inbox_has_after(&mut self, run_id: &str, after: Option<u64>) -> Result<bool> {
        let after = after.map_or(-1, |s| s.min(i64::MAX as u64) as i64);
        let row = self
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM inbox WHERE run_id = $1 AND seq > $2)",
                &[&run_id, &after],
                "look at a run's inbox",
            )
            .await?;
        get(&row, 0)
    }

    async fn consume_inbox(&mut self, run_id: &str, through: u64) -> Result<()> {
        self.later(
            "DELETE FROM inbox WHERE run_id = $1 AND seq <= $2",
            owned![run_id.to_string(), through.min(i64::MAX as u64) as i64],
            "consume inbox messages",
        )
        .await?;
        Ok(())
    }

    async fn delete_inbox(&mut self, run_id: &str) -> Result<()> {
        self.later(
            "DELETE FROM inbox WHERE run_id = $1",
            owned![run_id.to_string()],
            "clear a closed run's inbox",
        )
        .await?;
        Ok(())
    }
}
