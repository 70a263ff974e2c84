//! The `inbox` table of the SQLite store.

use super::rows::{db, from_blob, to_blob};
use super::tx::{Result, SqliteTx};
use crate::data::message::{InboxMessage, Message};
use crate::store::rules::tx::InboxTable;
use rusqlite::params;

impl InboxTable for SqliteTx {
    async fn push_inbox(&mut self, run_id: &str, message: Message) -> Result<()> {
        let data = to_blob("inbox message", &message)?;
        self.conn
            .prepare_cached("INSERT INTO inbox (run_id, data) VALUES (?1, ?2)")
            .and_then(|mut s| s.execute(params![run_id, data]))
            .map_err(db("insert an inbox message"))?;
        Ok(())
    }

    async fn inbox(&mut self, run_id: &str) -> Result<Vec<InboxMessage>> {
        let rows: Vec<(i64, Vec<u8>)> = self
            .conn
            .prepare_cached("SELECT seq, data FROM inbox WHERE run_id = ?1 ORDER BY seq")
            .and_then(|mut s| {
                s.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(db("read a run's inbox"))?;
        let decode = |(seq, data): (i64, Vec<u8>)| {
            let message = from_blob("inbox message", &data)?;
            Ok(InboxMessage {
                seq: seq as u64,
                message,
            })
        };
        rows.into_iter().map(decode).collect()
    }

    async fn inbox_has_after(&mut self, run_id: &str, after: Option<u64>) -> Result<bool> {
        let after = after.map_or(-1, |s| s as i64);
        self.conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM inbox WHERE run_id = ?1 AND seq > ?2)")
            .and_then(|mut s| s.query_row(params![run_id, after], |r| r.get(0)))
            .map_err(db("look at a run's inbox"))
    }

    async fn consume_inbox(&mut self, run_id: &str, through: u64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM inbox WHERE run_id = ?1 AND seq <= ?2")
            .and_then(|mut s| s.execute(params![run_id, through as i64]))
            .map_err(db("consume inbox messages"))?;
        Ok(())
    }

    async fn delete_inbox(&mut self, run_id: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM inbox WHERE run_id = ?1")
            .and_then(|mut s| s.execute([run_id]))
            .map_err(db("clear a closed run's inbox"))?;
        Ok(())
    }
}
