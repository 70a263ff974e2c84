//! The `workflow_feed` table of the PostgreSQL store, and the migration that adds it.
//!
//! # Why rows carry their transaction's id
//!
//! Transactions on several connections commit in any order, whatever sequence numbers their
//! rows took: a reader that read up to `seq` 10 while the transaction holding `seq` 9 was still
//! open would never see 9. Each row therefore records the id of the transaction that wrote it
//! (`xid`, `pg_current_xact_id()`), and a read answers only rows whose transaction is older
//! than every transaction still open (`xid < pg_snapshot_xmin(pg_current_snapshot())`): no
//! row can commit later before them. Rows are read in `(xid, seq)` order, which the cursor
//! holds. The cost: a row is read once every transaction that began before its own ended, so
//! a transaction held open for long (an idle `BEGIN` of another program on the database)
//! holds the feed back until it ends.
//!
//! An insert wakes the other processes (`later_waking`), whose feed readers look again at
//! once; a read that finds rows held back says so (`feed_held_back`), and its reader looks
//! again soon instead of waiting for the next commit's wake-up (the transaction that held
//! them back may be another program's, which wakes nobody when it ends).

use crate::rows::{get, owned};
use crate::tx::{PostgresTx, Result};
use wf_core::store::{feed_event, FeedCursor, FeedEvent, FeedRow, FeedTable};

/// v17: the feed of what runs do (see `wf_core`'s `rules/feed.rs`): one row per lifecycle
/// fact of a run, with the id of the transaction that wrote it (see this module's opening
/// comment), its number in that transaction's order, the history event it reports, if any,
/// and its details as JSON. Purged with its run.
pub(crate) const SCHEMA_V17: &str = r#"
CREATE TABLE workflow_feed (
    xid            xid8 NOT NULL DEFAULT pg_current_xact_id(),
    seq            BIGSERIAL NOT NULL,
    workflow_type  TEXT COLLATE "C" NOT NULL,
    workflow_id    TEXT COLLATE "C" NOT NULL,
    run_id         TEXT COLLATE "C" NOT NULL,
    kind           TEXT COLLATE "C" NOT NULL,
    event_id       BIGINT,
    at_ms          BIGINT NOT NULL,
    detail         TEXT NOT NULL,
    PRIMARY KEY (xid, seq)
);
CREATE INDEX workflow_feed_by_run ON workflow_feed (run_id);
CREATE INDEX workflow_feed_by_workflow ON workflow_feed (workflow_id, xid, seq);
CREATE INDEX workflow_feed_by_type ON workflow_feed (workflow_type, xid, seq);
"#;

/// The place of a stored row.
fn cursor(xid: &str, seq: i64) -> Result<FeedCursor> {
    let xid: u64 = xid.parse().map_err(|_| {
        wf_core::store::StoreError::backend(
            wf_core::store::BackendErrorKind::Invalid,
            format!("a feed row holds a bad transaction id {xid:?}"),
        )
    })?;
    Ok(FeedCursor::at(xid, seq.max(0) as u64))
}

impl FeedTable for PostgresTx {
    async fn insert_feed(&mut self, rows: &[FeedRow<'_>]) -> Result<()> {
        let column = |f: &dyn Fn(&FeedRow<'_>) -> String| rows.iter().map(f).collect::<Vec<_>>();
        let types = column(&|r| r.workflow_type.to_string());
        let ids = column(&|r| r.workflow_id.to_string());
        let runs = column(&|r| r.run_id.to_string());
        let kinds = column(&|r| r.kind.as_str().to_string());
        let details = column(&|r| r.detail.clone());
        let events: Vec<Option<i64>> = rows
            .iter()
            .map(|r| r.event_id.and_then(|id| i64::try_from(id).ok()))
            .collect();
        let times: Vec<i64> = rows.iter().map(|r| r.at_ms).collect();
        // In the rows' order: each takes its number as it is inserted.
        self.later_waking(
            "INSERT INTO workflow_feed \
             (workflow_type, workflow_id, run_id, kind, event_id, at_ms, detail) \
             SELECT t, w, r, k, e, a, d FROM UNNEST($1::text[], $2::text[], $3::text[], \
             $4::text[], $5::bigint[], $6::bigint[], $7::text[]) WITH ORDINALITY \
             AS f(t, w, r, k, e, a, d, n) ORDER BY n",
            owned![types, ids, runs, kinds, events, times, details],
            "record feed rows",
        )
        .await
    }

    async fn feed_rows(
        &mut self,
        after: FeedCursor,
        workflow_type: Option<&str>,
        workflow_id: Option<&str>,
        max: usize,
    ) -> Result<Vec<FeedEvent>> {
        let (xid, seq) = after.position().unwrap_or((u64::MAX, u64::MAX));
        let xid = xid.to_string();
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = self
            .query(
                "SELECT xid::text, seq, kind, workflow_type, workflow_id, run_id, event_id, \
                 at_ms, detail FROM workflow_feed \
                 WHERE (xid, seq) > ($1::text::xid8, $2) \
                 AND xid < pg_snapshot_xmin(pg_current_snapshot()) \
                 AND ($3::text IS NULL OR workflow_type = $3) \
                 AND ($4::text IS NULL OR workflow_id = $4) \
                 ORDER BY xid, seq LIMIT $5",
                &[&xid, &seq, &workflow_type, &workflow_id, &limit],
                "read the feed",
            )
            .await?;
        rows.iter()
            .map(|row| {
                let xid: String = get(row, 0)?;
                let seq: i64 = get(row, 1)?;
                let kind: String = get(row, 2)?;
                let detail: String = get(row, 8)?;
                feed_event(
                    cursor(&xid, seq)?,
                    &kind,
                    get(row, 3)?,
                    get(row, 4)?,
                    get(row, 5)?,
                    get(row, 6)?,
                    get(row, 7)?,
                    &detail,
                )
            })
            .collect()
    }

    async fn feed_held_back(&mut self) -> Result<bool> {
        let row = self
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM workflow_feed \
                 WHERE xid >= pg_snapshot_xmin(pg_current_snapshot()))",
                &[],
                "look for feed rows held back",
            )
            .await?;
        get(&row, 0)
    }

    async fn feed_tail(&mut self) -> Result<FeedCursor> {
        let row = self
            .query_opt(
                "SELECT xid::text, seq FROM workflow_feed \
                 WHERE xid < pg_snapshot_xmin(pg_current_snapshot()) \
                 ORDER BY xid DESC, seq DESC LIMIT 1",
                &[],
                "read the feed's end",
            )
            .await?;
        match row {
            Some(row) => cursor(&get::<String>(&row, 0)?, get(&row, 1)?),
            None => Ok(FeedCursor::start()),
        }
    }

    async fn delete_runs_feed(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM workflow_feed WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' feed rows",
        )
        .await?;
        Ok(())
    }
}
