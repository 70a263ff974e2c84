//! The `stream_entries` and `workflow_events` tables of the PostgreSQL store, and the
//! migration that adds them.
//!
//! An entry's insert (and an event's) wakes the other processes (`later_waking`): their stream readers look
//! again at once, instead of at their next poll.

use crate::rows::{get, owned};
use crate::tx::{PostgresTx, Result};
use wf_core::store::{Payload, StreamEntry, StreamTable};

/// v16: durable streams and published events. One row per entry of a run's stream, by offset
/// (`data` is NULL for the close; `entry_id` is an activity's idempotent write id); the latest
/// value of each event key of a workflow id, and the run that set it.
pub(crate) const SCHEMA_V16: &str = r#"
CREATE TABLE stream_entries (
    run_id    TEXT COLLATE "C" NOT NULL,
    stream    TEXT COLLATE "C" NOT NULL,
    "offset"  BIGINT NOT NULL,
    data      BYTEA,
    entry_id  TEXT COLLATE "C",
    PRIMARY KEY (run_id, stream, "offset")
);
CREATE UNIQUE INDEX stream_entries_by_id ON stream_entries (run_id, stream, entry_id)
    WHERE entry_id IS NOT NULL;
CREATE TABLE workflow_events (
    workflow_id  TEXT COLLATE "C" NOT NULL,
    key          TEXT COLLATE "C" NOT NULL,
    run_id       TEXT COLLATE "C" NOT NULL,
    data         BYTEA NOT NULL,
    PRIMARY KEY (workflow_id, key)
);
CREATE INDEX workflow_events_by_run ON workflow_events (run_id);
"#;

/// An offset as PostgreSQL stores it (offsets stay far below `i64::MAX`).
fn stored(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

impl StreamTable for PostgresTx {
    async fn stream_tail(&mut self, run_id: &str, stream: &str) -> Result<Option<(u64, bool)>> {
        let row = self
            .query_opt(
                r#"SELECT "offset", data IS NULL FROM stream_entries
                   WHERE run_id = $1 AND stream = $2 ORDER BY "offset" DESC LIMIT 1"#,
                &[&run_id, &stream],
                "read a stream's last entry",
            )
            .await?;
        match row {
            Some(row) => {
                let offset: i64 = get(&row, 0)?;
                let closed: bool = get(&row, 1)?;
                Ok(Some((offset.max(0) as u64, closed)))
            }
            None => Ok(None),
        }
    }

    async fn insert_stream_entry(
        &mut self,
        run_id: &str,
        stream: &str,
        offset: u64,
        value: Option<&Payload>,
        entry_id: Option<&str>,
    ) -> Result<()> {
        self.later_waking(
            r#"INSERT INTO stream_entries (run_id, stream, "offset", data, entry_id)
               VALUES ($1, $2, $3, $4, $5)"#,
            owned![
                run_id.to_string(),
                stream.to_string(),
                stored(offset),
                value.map(|v| v.as_bytes().to_vec()),
                entry_id.map(str::to_string)
            ],
            "record a stream entry",
        )
        .await
    }

    async fn stream_entry_by_id(
        &mut self,
        run_id: &str,
        stream: &str,
        entry_id: &str,
    ) -> Result<Option<u64>> {
        let row = self
            .query_opt(
                r#"SELECT "offset" FROM stream_entries
                   WHERE run_id = $1 AND stream = $2 AND entry_id = $3"#,
                &[&run_id, &stream, &entry_id],
                "find a stream entry by its id",
            )
            .await?;
        row.map(|r| get::<i64>(&r, 0).map(|o| o.max(0) as u64))
            .transpose()
    }

    async fn stream_entries(
        &mut self,
        run_id: &str,
        stream: &str,
        from: u64,
        max: usize,
    ) -> Result<Vec<StreamEntry>> {
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = self
            .query(
                r#"SELECT "offset", data FROM stream_entries
                   WHERE run_id = $1 AND stream = $2 AND "offset" >= $3
                   ORDER BY "offset" LIMIT $4"#,
                &[&run_id, &stream, &stored(from), &limit],
                "read stream entries",
            )
            .await?;
        rows.iter()
            .map(|row| {
                let offset: i64 = get(row, 0)?;
                let data: Option<Vec<u8>> = get(row, 1)?;
                Ok(StreamEntry {
                    offset: offset.max(0) as u64,
                    value: data.map(Payload::unchecked),
                })
            })
            .collect()
    }

    async fn run_streams(&mut self, run_id: &str) -> Result<Vec<(String, u64, bool)>> {
        // The close is the last offset of its stream, so the row at the top offset tells it.
        let rows = self
            .query(
                r#"SELECT DISTINCT ON (stream) stream, "offset", data IS NULL FROM stream_entries
                   WHERE run_id = $1 ORDER BY stream, "offset" DESC"#,
                &[&run_id],
                "list a run's streams",
            )
            .await?;
        rows.iter()
            .map(|row| {
                let offset: i64 = get(row, 1)?;
                Ok((get(row, 0)?, offset.max(0) as u64, get(row, 2)?))
            })
            .collect()
    }

    async fn put_event_value(
        &mut self,
        workflow_id: &str,
        key: &str,
        run_id: &str,
        value: &Payload,
    ) -> Result<()> {
        self.later_waking(
            "INSERT INTO workflow_events (workflow_id, key, run_id, data) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (workflow_id, key) DO UPDATE SET run_id = EXCLUDED.run_id, \
             data = EXCLUDED.data",
            owned![
                workflow_id.to_string(),
                key.to_string(),
                run_id.to_string(),
                value.as_bytes().to_vec()
            ],
            "record a published event",
        )
        .await
    }

    async fn event_value(&mut self, workflow_id: &str, key: &str) -> Result<Option<Payload>> {
        let row = self
            .query_opt(
                "SELECT data FROM workflow_events WHERE workflow_id = $1 AND key = $2",
                &[&workflow_id, &key],
                "read a published event",
            )
            .await?;
        row.map(|r| get::<Vec<u8>>(&r, 0).map(Payload::unchecked))
            .transpose()
    }

    async fn delete_runs_streams(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM stream_entries WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' stream entries",
        )
        .await?;
        self.execute(
            "DELETE FROM workflow_events WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' events",
        )
        .await?;
        Ok(())
    }
}
