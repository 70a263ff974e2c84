//! The `workflow_feed` table of the SQLite store. One writer at a time commits, so a row's
//! `seq` (`AUTOINCREMENT`) orders it after every row committed before it: a reader that read
//! up to `seq` N misses nothing by reading on from N.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::data::feed::{FeedCursor, FeedEvent};
use crate::store::rules::tx::{feed_event, FeedRow, FeedTable};
use rusqlite::{params, OptionalExtension};

/// A row as read, before its kind and detail are decoded.
struct Stored {
    seq: i64,
    kind: String,
    /// Workflow type, workflow id, run id.
    run: [String; 3],
    event_id: Option<i64>,
    at_ms: i64,
    detail: String,
}

/// Reads the columns `seq, kind, workflow_type, workflow_id, run_id, event_id, at_ms, detail`.
fn stored(r: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    Ok(Stored {
        seq: r.get(0)?,
        kind: r.get(1)?,
        run: [r.get(2)?, r.get(3)?, r.get(4)?],
        event_id: r.get(5)?,
        at_ms: r.get(6)?,
        detail: r.get(7)?,
    })
}

impl FeedTable for SqliteTx {
    async fn insert_feed(&mut self, rows: &[FeedRow<'_>]) -> Result<()> {
        let mut statement = self
            .conn
            .prepare_cached(
                "INSERT INTO workflow_feed \
                 (workflow_type, workflow_id, run_id, kind, event_id, at_ms, detail) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(db("record a feed row"))?;
        for row in rows {
            let event_id = row.event_id.and_then(|id| i64::try_from(id).ok());
            statement
                .execute(params![
                    row.workflow_type,
                    row.workflow_id,
                    row.run_id,
                    row.kind.as_str(),
                    event_id,
                    row.at_ms,
                    row.detail
                ])
                .map_err(db("record a feed row"))?;
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
        let from = after
            .position()
            .map_or(i64::MAX, |(_, seq)| i64::try_from(seq).unwrap_or(i64::MAX));
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        // One statement per filter, so that each one's index serves it.
        let sql = match (workflow_type.is_some(), workflow_id.is_some()) {
            (_, true) => {
                "SELECT seq, kind, workflow_type, workflow_id, run_id, event_id, at_ms, detail \
                 FROM workflow_feed WHERE workflow_id = ?3 AND seq > ?1 \
                 AND (?2 IS NULL OR workflow_type = ?2) ORDER BY seq LIMIT ?4"
            }
            (true, false) => {
                "SELECT seq, kind, workflow_type, workflow_id, run_id, event_id, at_ms, detail \
                 FROM workflow_feed WHERE workflow_type = ?2 AND seq > ?1 AND ?3 IS NULL \
                 ORDER BY seq LIMIT ?4"
            }
            (false, false) => {
                "SELECT seq, kind, workflow_type, workflow_id, run_id, event_id, at_ms, detail \
                 FROM workflow_feed WHERE seq > ?1 AND ?2 IS NULL AND ?3 IS NULL \
                 ORDER BY seq LIMIT ?4"
            }
        };
        let rows = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                s.query_map(params![from, workflow_type, workflow_id, limit], stored)?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(db("read the feed"))?;
        rows.into_iter()
            .map(|row| {
                let cursor = FeedCursor::at(0, row.seq.max(0) as u64);
                let [t, w, r] = row.run;
                feed_event(
                    cursor,
                    &row.kind,
                    t,
                    w,
                    r,
                    row.event_id,
                    row.at_ms,
                    &row.detail,
                )
            })
            .collect()
    }

    async fn feed_tail(&mut self) -> Result<FeedCursor> {
        let seq: Option<i64> = self
            .conn
            .prepare_cached("SELECT MAX(seq) FROM workflow_feed")
            .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
            .map_err(db("read the feed's end"))?
            .flatten();
        // Rows purged from the end leave their numbers taken: the counter is the end.
        let counter: Option<i64> = self
            .conn
            .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'workflow_feed'")
            .and_then(|mut s| s.query_row([], |r| r.get(0)).optional())
            .map_err(db("read the feed's end"))?;
        let end = seq.max(counter).unwrap_or(0).max(0) as u64;
        Ok(FeedCursor::at(0, end))
    }

    async fn delete_runs_feed(&mut self, run_ids: &[String]) -> Result<()> {
        self.for_each_id(
            "DELETE FROM workflow_feed WHERE run_id = ?1",
            run_ids,
            "delete purged runs' feed rows",
        )
    }
}
