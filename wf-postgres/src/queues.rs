//! The `workflow_queues` and `queued_runs` tables of the PostgreSQL store, and the migration
//! that adds queues of workflow starts.
//!
//! Several processes' dispatchers admit at once: an admission pass locks a queue's settings
//! row (`FOR UPDATE`) before it counts the queue's running runs, so that passes over one queue
//! take turns, each counting the admissions the one before committed; a run is admitted only
//! if it is still held (`admitted = 0`), so that two passes never admit it twice.

use crate::rows::get;
use crate::tx::{PostgresTx, Result};
use wf_core::store::{
    queue_columns, queue_of_columns, QueueCount, QueueRow, QueueTable, QueuedRun, QueuedStart,
};

/// v14: queues of workflow starts. The settings of each queue (with its rate's token bucket);
/// the runs started on a queue,
/// in the order they were recorded, with their priority and deduplication id and whether
/// their queue admitted them (0 held, 1 admitted, 2 closed: no longer counted).
pub(crate) const SCHEMA_V14: &str = r#"
CREATE TABLE workflow_queues (
    name            TEXT COLLATE "C" PRIMARY KEY,
    concurrency     BIGINT,
    rate_limit      BIGINT,
    rate_period_ms  BIGINT,
    tokens          DOUBLE PRECISION NOT NULL,
    refilled_ms     BIGINT NOT NULL
);
CREATE TABLE queued_runs (
    seq          BIGSERIAL PRIMARY KEY,
    run_id       TEXT COLLATE "C" NOT NULL UNIQUE,
    queue_name   TEXT COLLATE "C" NOT NULL,
    priority     INTEGER NOT NULL,
    dedupe_id    TEXT COLLATE "C",
    admitted     SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX queued_runs_held ON queued_runs (queue_name, priority, seq) WHERE admitted = 0;
CREATE INDEX queued_runs_admitted ON queued_runs (queue_name) WHERE admitted = 1;
CREATE INDEX queued_runs_dedupe ON queued_runs (queue_name, dedupe_id)
    WHERE dedupe_id IS NOT NULL AND admitted < 2;
"#;

/// v15: fairness keys of queued starts (see wf-core's `rules/queues.rs`). Each queued run's
/// fairness key and virtual start; the pass of each key on each queue and each queue's clock;
/// the held runs in the order an admission takes them. Runs already held are of key `""`,
/// start 0.
pub(crate) const SCHEMA_V15: &str = r#"
ALTER TABLE queued_runs ADD COLUMN fair_key TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE queued_runs ADD COLUMN vstart DOUBLE PRECISION NOT NULL DEFAULT 0;
DROP INDEX queued_runs_held;
CREATE INDEX queued_runs_held ON queued_runs (queue_name, priority, vstart, seq)
    WHERE admitted = 0;
CREATE TABLE queue_fair_passes (
    queue_name  TEXT COLLATE "C" NOT NULL,
    fair_key    TEXT COLLATE "C" NOT NULL,
    pass        DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (queue_name, fair_key)
);
CREATE TABLE queue_fair_clocks (
    queue_name  TEXT COLLATE "C" PRIMARY KEY,
    vclock      DOUBLE PRECISION NOT NULL
);
"#;

/// The columns [`queue_row`] reads.
macro_rules! queue_row_columns {
    () => {
        "name, concurrency, rate_limit, rate_period_ms, tokens, refilled_ms"
    };
}

/// A queue's row, from the columns of [`queue_row_columns`].
fn queue_row(r: &tokio_postgres::Row) -> Result<QueueRow> {
    Ok(QueueRow {
        queue: queue_of_columns(get(r, 0)?, get(r, 1)?, get(r, 2)?, get(r, 3)?),
        tokens: get(r, 4)?,
        refilled_ms: get(r, 5)?,
    })
}

impl QueueTable for PostgresTx {
    async fn workflow_queues(&mut self) -> Result<Vec<QueueRow>> {
        let rows = self
            .query(
                concat!(
                    "SELECT ",
                    queue_row_columns!(),
                    " FROM workflow_queues ORDER BY name"
                ),
                &[],
                "read the workflow queues",
            )
            .await?;
        rows.iter().map(queue_row).collect()
    }

    async fn workflow_queue(&mut self, name: &str, lock: bool) -> Result<Option<QueueRow>> {
        // Only a writer's transaction may lock rows (readers are read-only).
        let sql = if lock && self.writer {
            concat!(
                "SELECT ",
                queue_row_columns!(),
                " FROM workflow_queues WHERE name = $1 FOR UPDATE"
            )
        } else {
            concat!(
                "SELECT ",
                queue_row_columns!(),
                " FROM workflow_queues WHERE name = $1"
            )
        };
        let row = self
            .query_opt(sql, &[&name], "read a workflow queue")
            .await?;
        row.as_ref().map(queue_row).transpose()
    }

    async fn put_workflow_queue(&mut self, row: &QueueRow) -> Result<()> {
        let (concurrency, rate_limit, rate_period_ms) = queue_columns(&row.queue);
        self.execute(
            "INSERT INTO workflow_queues (name, concurrency, rate_limit, rate_period_ms, tokens, \
             refilled_ms) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (name) DO UPDATE SET concurrency = EXCLUDED.concurrency, \
             rate_limit = EXCLUDED.rate_limit, rate_period_ms = EXCLUDED.rate_period_ms, \
             tokens = EXCLUDED.tokens, refilled_ms = EXCLUDED.refilled_ms",
            &[
                &row.queue.name,
                &concurrency,
                &rate_limit,
                &rate_period_ms,
                &row.tokens,
                &row.refilled_ms,
            ],
            "set a workflow queue",
        )
        .await?;
        Ok(())
    }

    async fn set_queue_tokens(&mut self, name: &str, tokens: f64, refilled_ms: i64) -> Result<()> {
        self.execute(
            "UPDATE workflow_queues SET tokens = $2, refilled_ms = $3 WHERE name = $1",
            &[&name, &tokens, &refilled_ms],
            "spend a workflow queue's tokens",
        )
        .await?;
        Ok(())
    }

    async fn delete_workflow_queue(&mut self, name: &str) -> Result<bool> {
        let n = self
            .execute(
                "DELETE FROM workflow_queues WHERE name = $1",
                &[&name],
                "remove a workflow queue",
            )
            .await?;
        Ok(n > 0)
    }

    async fn queue_fair_turn(&mut self, queue: &str, key: &str, cost: f64) -> Result<f64> {
        // The key's row stays locked to the transaction: holds of one key take turns.
        let row = self
            .query_one(
                "INSERT INTO queue_fair_passes (queue_name, fair_key, pass) \
                 VALUES ($1, $2, COALESCE((SELECT vclock FROM queue_fair_clocks \
                 WHERE queue_name = $1), 0) + $3) \
                 ON CONFLICT (queue_name, fair_key) DO UPDATE \
                 SET pass = GREATEST(queue_fair_passes.pass, COALESCE((SELECT vclock \
                 FROM queue_fair_clocks WHERE queue_name = $1), 0)) + $3 \
                 RETURNING pass - $3",
                &[&queue, &key, &cost],
                "take a fair turn on a queue",
            )
            .await?;
        get(&row, 0)
    }

    async fn advance_queue_clock(&mut self, queue: &str, vstart: f64) -> Result<()> {
        self.execute(
            "INSERT INTO queue_fair_clocks (queue_name, vclock) VALUES ($1, $2) \
             ON CONFLICT (queue_name) DO UPDATE \
             SET vclock = GREATEST(queue_fair_clocks.vclock, EXCLUDED.vclock)",
            &[&queue, &vstart],
            "move a queue's fair clock",
        )
        .await?;
        Ok(())
    }

    async fn insert_queued_run(
        &mut self,
        run_id: &str,
        start: &QueuedStart,
        vstart: f64,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO queued_runs (run_id, queue_name, priority, dedupe_id, fair_key, vstart) \
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &run_id,
                &start.queue,
                &start.priority,
                &start.dedupe_id,
                &start.fairness_key(),
                &vstart,
            ],
            "put a run on its queue",
        )
        .await?;
        Ok(())
    }

    async fn queue_dedupe_holder(
        &mut self,
        queue: &str,
        dedupe_id: &str,
    ) -> Result<Option<(String, String)>> {
        let row = self
            .query_opt(
                "SELECT runs.workflow_id, runs.run_id FROM queued_runs q \
                 JOIN runs ON runs.run_id = q.run_id \
                 WHERE q.queue_name = $1 AND q.dedupe_id = $2 AND q.admitted < 2 \
                 AND runs.status = 'running' LIMIT 1",
                &[&queue, &dedupe_id],
                "read a queue's deduplication id",
            )
            .await?;
        row.map(|r| Ok((get(&r, 0)?, get(&r, 1)?))).transpose()
    }

    async fn held_runs(&mut self) -> Result<Vec<QueuedRun>> {
        let rows = self
            .query(
                "SELECT q.run_id, q.queue_name, q.vstart FROM queued_runs q \
                 JOIN runs ON runs.run_id = q.run_id \
                 WHERE q.admitted = 0 AND runs.status = 'running' \
                 ORDER BY q.queue_name, q.priority, q.vstart, q.seq",
                &[],
                "read the held runs of the queues",
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(QueuedRun {
                    run_id: get(r, 0)?,
                    queue: get(r, 1)?,
                    admitted: false,
                    vstart: get(r, 2)?,
                })
            })
            .collect()
    }

    async fn admitted_running(&mut self, queue: &str) -> Result<u64> {
        // Runs that closed stop counting for good: the index of admitted runs stays small.
        self.execute(
            "UPDATE queued_runs SET admitted = 2 WHERE queue_name = $1 AND admitted = 1 \
             AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.run_id = queued_runs.run_id \
             AND runs.status = 'running')",
            &[&queue],
            "retire a queue's closed runs",
        )
        .await?;
        let row = self
            .query_one(
                "SELECT COUNT(*) FROM queued_runs WHERE queue_name = $1 AND admitted = 1",
                &[&queue],
                "count a queue's running runs",
            )
            .await?;
        let n: i64 = get(&row, 0)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn mark_admitted(&mut self, run_id: &str) -> Result<bool> {
        let n = self
            .execute(
                "UPDATE queued_runs SET admitted = 1 WHERE run_id = $1 AND admitted = 0",
                &[&run_id],
                "admit a queued run",
            )
            .await?;
        Ok(n > 0)
    }

    async fn delete_queued_runs(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM queued_runs WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' queue rows",
        )
        .await?;
        Ok(())
    }

    async fn queued_runs(&mut self, run_ids: &[String]) -> Result<Vec<QueuedRun>> {
        let rows = self
            .query(
                "SELECT run_id, queue_name, admitted, vstart FROM queued_runs \
                 WHERE run_id = ANY($1)",
                &[&run_ids],
                "read the queues of runs",
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(QueuedRun {
                    run_id: get(r, 0)?,
                    queue: get(r, 1)?,
                    admitted: get::<i16>(r, 2)? != 0,
                    vstart: get(r, 3)?,
                })
            })
            .collect()
    }

    async fn queue_counts(&mut self) -> Result<Vec<QueueCount>> {
        let rows = self
            .query(
                "SELECT q.queue_name, COUNT(*) FILTER (WHERE q.admitted = 0), \
                 COUNT(*) FILTER (WHERE q.admitted = 1) \
                 FROM queued_runs q JOIN runs ON runs.run_id = q.run_id \
                 WHERE q.admitted < 2 AND runs.status = 'running' \
                 GROUP BY q.queue_name ORDER BY q.queue_name",
                &[],
                "count the runs of the queues",
            )
            .await?;
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        rows.iter()
            .map(|r| {
                Ok(QueueCount {
                    queue: get(r, 0)?,
                    held: n(get(r, 1)?),
                    running: n(get(r, 2)?),
                })
            })
            .collect()
    }
}
