//! The `stream_entries` and `workflow_events` tables of the SQLite store.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::data::payload::Payload;
use crate::data::stream::StreamEntry;
use crate::store::rules::tx::StreamTable;
use rusqlite::{params, OptionalExtension};

/// An offset as SQLite stores it (offsets stay far below `i64::MAX`: a stream holds at most
/// `MAX_STREAM_ENTRIES`).
fn stored(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

impl StreamTable for SqliteTx {
    async fn stream_tail(&mut self, run_id: &str, stream: &str) -> Result<Option<(u64, bool)>> {
        let row: Option<(i64, bool)> = self
            .conn
            .prepare_cached(
                "SELECT offset, data IS NULL FROM stream_entries \
                 WHERE run_id = ?1 AND stream = ?2 ORDER BY offset DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![run_id, stream], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(db("read a stream's last entry"))?;
        Ok(row.map(|(offset, closed)| (offset.max(0) as u64, closed)))
    }

    async fn insert_stream_entry(
        &mut self,
        run_id: &str,
        stream: &str,
        offset: u64,
        value: Option<&Payload>,
        entry_id: Option<&str>,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO stream_entries (run_id, stream, offset, data, entry_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id,
                    stream,
                    stored(offset),
                    value.map(Payload::as_bytes),
                    entry_id
                ])
            })
            .map_err(db("record a stream entry"))?;
        Ok(())
    }

    async fn stream_entry_by_id(
        &mut self,
        run_id: &str,
        stream: &str,
        entry_id: &str,
    ) -> Result<Option<u64>> {
        let offset: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT offset FROM stream_entries \
                 WHERE run_id = ?1 AND stream = ?2 AND entry_id = ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![run_id, stream, entry_id], |r| r.get(0))
                    .optional()
            })
            .map_err(db("find a stream entry by its id"))?;
        Ok(offset.map(|o| o.max(0) as u64))
    }

    async fn stream_entries(
        &mut self,
        run_id: &str,
        stream: &str,
        from: u64,
        max: usize,
    ) -> Result<Vec<StreamEntry>> {
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows: Vec<(i64, Option<Vec<u8>>)> = self
            .conn
            .prepare_cached(
                "SELECT offset, data FROM stream_entries \
                 WHERE run_id = ?1 AND stream = ?2 AND offset >= ?3 ORDER BY offset LIMIT ?4",
            )
            .and_then(|mut s| {
                s.query_map(params![run_id, stream, stored(from), limit], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
                .collect()
            })
            .map_err(db("read stream entries"))?;
        Ok(rows
            .into_iter()
            .map(|(offset, data)| StreamEntry {
                offset: offset.max(0) as u64,
                value: data.map(Payload::unchecked),
            })
            .collect())
    }

    async fn put_event_value(
        &mut self,
        workflow_id: &str,
        key: &str,
        run_id: &str,
        value: &Payload,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO workflow_events (workflow_id, key, run_id, data) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| s.execute(params![workflow_id, key, run_id, value.as_bytes()]))
            .map_err(db("record a published event"))?;
        Ok(())
    }

    async fn event_value(&mut self, workflow_id: &str, key: &str) -> Result<Option<Payload>> {
        let data: Option<Vec<u8>> = self
            .conn
            .prepare_cached("SELECT data FROM workflow_events WHERE workflow_id = ?1 AND key = ?2")
            .and_then(|mut s| {
                s.query_row(params![workflow_id, key], |r| r.get(0))
                    .optional()
            })
            .map_err(db("read a published event"))?;
        Ok(data.map(Payload::unchecked))
    }

    async fn run_streams(&mut self, run_id: &str) -> Result<Vec<(String, u64, bool)>> {
        // The close is the last offset of its stream, so the row at MAX(offset) tells it.
        self.conn
            .prepare_cached(
                "SELECT e.stream, e.offset, e.data IS NULL FROM stream_entries e \
                 WHERE e.run_id = ?1 AND e.offset = (SELECT MAX(offset) FROM stream_entries \
                 WHERE run_id = e.run_id AND stream = e.stream) ORDER BY e.stream",
            )
            .and_then(|mut s| {
                s.query_map(params![run_id], |r| {
                    let offset: i64 = r.get(1)?;
                    Ok((r.get(0)?, offset.max(0) as u64, r.get(2)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(db("list a run's streams"))
    }

    async fn delete_runs_streams(&mut self, run_ids: &[String]) -> Result<()> {
        let what = "delete purged runs' stream entries and events";
        self.for_each_id(
            "DELETE FROM stream_entries WHERE run_id = ?1",
            run_ids,
            what,
        )?;
        self.for_each_id(
            "DELETE FROM workflow_events WHERE run_id = ?1",
            run_ids,
            what,
        )
    }
}
