//! The `workflow_queues` and `queued_runs` tables of the SQLite store.

use super::rows::{db, name_filter};
use super::tx::{Result, SqliteTx};
use crate::data::queue::{queue_columns, queue_of_columns, QueueCount, QueueRow, QueuedStart};
use crate::store::rules::tx::{QueueTable, QueuedRun};
use rusqlite::{params, OptionalExtension};

/// The columns [`queue_row`] reads.
macro_rules! queue_row_columns {
    () => {
        "name, concurrency, rate_limit, rate_period_ms, tokens, refilled_ms"
    };
}

/// A queue's row, from the columns of [`queue_row_columns`].
fn queue_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<QueueRow> {
    Ok(QueueRow {
        queue: queue_of_columns(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?),
        tokens: r.get(4)?,
        refilled_ms: r.get(5)?,
    })
}

impl QueueTable for SqliteTx {
    async fn workflow_queues(&mut self) -> Result<Vec<QueueRow>> {
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                queue_row_columns!(),
                " FROM workflow_queues ORDER BY name"
            ))
            .and_then(|mut s| s.query_map([], queue_row)?.collect())
            .map_err(db("read the workflow queues"))
    }

    async fn workflow_queue(&mut self, name: &str, _lock: bool) -> Result<Option<QueueRow>> {
        // One writer at a time (the write transaction is IMMEDIATE): nothing to lock.
        self.conn
            .prepare_cached(concat!(
                "SELECT ",
                queue_row_columns!(),
                " FROM workflow_queues WHERE name = ?1"
            ))
            .and_then(|mut s| s.query_row(params![name], queue_row).optional())
            .map_err(db("read a workflow queue"))
    }

    async fn put_workflow_queue(&mut self, row: &QueueRow) -> Result<()> {
        let (concurrency, rate_limit, rate_period_ms) = queue_columns(&row.queue);
        self.conn
            .prepare_cached(
                "INSERT INTO workflow_queues (name, concurrency, rate_limit, rate_period_ms, \
                 tokens, refilled_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency, \
                 rate_limit = excluded.rate_limit, rate_period_ms = excluded.rate_period_ms, \
                 tokens = excluded.tokens, refilled_ms = excluded.refilled_ms",
            )
            .and_then(|mut s| {
                s.execute(params![
                    row.queue.name,
                    concurrency,
                    rate_limit,
                    rate_period_ms,
                    row.tokens,
                    row.refilled_ms
                ])
            })
            .map_err(db("set a workflow queue"))?;
        Ok(())
    }

    async fn set_queue_tokens(&mut self, name: &str, tokens: f64, refilled_ms: i64) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE workflow_queues SET tokens = ?2, refilled_ms = ?3 WHERE name = ?1",
            )
            .and_then(|mut s| s.execute(params![name, tokens, refilled_ms]))
            .map_err(db("spend a workflow queue's tokens"))?;
        Ok(())
    }

    async fn delete_workflow_queue(&mut self, name: &str) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM workflow_queues WHERE name = ?1")
            .and_then(|mut s| s.execute(params![name]))
            .map_err(db("remove a workflow queue"))?;
        Ok(n > 0)
    }

    async fn queue_fair_turn(&mut self, queue: &str, key: &str, cost: f64) -> Result<f64> {
        self.conn
            .prepare_cached(
                "INSERT INTO queue_fair_passes (queue_name, fair_key, pass) \
                 VALUES (?1, ?2, COALESCE((SELECT vclock FROM queue_fair_clocks \
                 WHERE queue_name = ?1), 0) + ?3) \
                 ON CONFLICT (queue_name, fair_key) DO UPDATE \
                 SET pass = max(pass, COALESCE((SELECT vclock FROM queue_fair_clocks \
                 WHERE queue_name = ?1), 0)) + ?3 \
                 RETURNING pass - ?3",
            )
            .and_then(|mut s| s.query_row(params![queue, key, cost], |r| r.get(0)))
            .map_err(db("take a fair turn on a queue"))
    }

    async fn advance_queue_clock(&mut self, queue: &str, vstart: f64) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO queue_fair_clocks (queue_name, vclock) VALUES (?1, ?2) \
                 ON CONFLICT (queue_name) DO UPDATE SET vclock = max(vclock, excluded.vclock)",
            )
            .and_then(|mut s| s.execute(params![queue, vstart]))
            .map_err(db("move a queue's fair clock"))?;
        Ok(())
    }

    async fn insert_queued_run(
        &mut self,
        run_id: &str,
        start: &QueuedStart,
        vstart: f64,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO queued_runs (run_id, queue_name, priority, dedupe_id, fair_key, \
                 vstart) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    run_id,
                    start.queue,
                    start.priority,
                    start.dedupe_id,
                    start.fairness_key(),
                    vstart
                ])
            })
            .map_err(db("put a run on its queue"))?;
        Ok(())
    }

    async fn queue_dedupe_holder(
        &mut self,
        queue: &str,
        dedupe_id: &str,
    ) -> Result<Option<(String, String)>> {
        self.conn
            .prepare_cached(
                "SELECT runs.workflow_id, runs.run_id FROM queued_runs q \
                 JOIN runs ON runs.run_id = q.run_id \
                 WHERE q.queue_name = ?1 AND q.dedupe_id = ?2 AND q.admitted < 2 \
                 AND runs.status = 'running' LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![queue, dedupe_id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(db("read a queue's deduplication id"))
    }

    async fn held_runs(&mut self) -> Result<Vec<QueuedRun>> {
        self.conn
            .prepare_cached(
                "SELECT q.run_id, q.queue_name, q.vstart FROM queued_runs q \
                 JOIN runs ON runs.run_id = q.run_id \
                 WHERE q.admitted = 0 AND runs.status = 'running' \
                 ORDER BY q.queue_name, q.priority, q.vstart, q.seq",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(QueuedRun {
                        run_id: r.get(0)?,
                        queue: r.get(1)?,
                        admitted: false,
                        vstart: r.get(2)?,
                    })
                })?
                .collect()
            })
            .map_err(db("read the held runs of the queues"))
    }

    async fn admitted_running(&mut self, queue: &str) -> Result<u64> {
        // Runs that closed stop counting for good: the index of admitted runs stays small.
        self.conn
            .prepare_cached(
                "UPDATE queued_runs SET admitted = 2 WHERE queue_name = ?1 AND admitted = 1 \
                 AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.run_id = queued_runs.run_id \
                 AND runs.status = 'running')",
            )
            .and_then(|mut s| s.execute(params![queue]))
            .map_err(db("retire a queue's closed runs"))?;
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM queued_runs WHERE queue_name = ?1 AND admitted = 1",
            )
            .and_then(|mut s| s.query_row(params![queue], |r| r.get(0)))
            .map_err(db("count a queue's running runs"))?;
        Ok(n as u64)
    }

    async fn mark_admitted(&mut self, run_id: &str) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE queued_runs SET admitted = 1 WHERE run_id = ?1 AND admitted = 0",
            )
            .and_then(|mut s| s.execute(params![run_id]))
            .map_err(db("admit a queued run"))?;
        Ok(n > 0)
    }

    async fn delete_queued_runs(&mut self, run_ids: &[String]) -> Result<()> {
        self.for_each_id(
            "DELETE FROM queued_runs WHERE run_id = ?1",
            run_ids,
            "delete purged runs' queue rows",
        )
    }

    async fn queued_runs(&mut self, run_ids: &[String]) -> Result<Vec<QueuedRun>> {
        let ids = name_filter(Some(run_ids));
        self.conn
            .prepare_cached(
                "SELECT run_id, queue_name, admitted, vstart FROM queued_runs \
                 WHERE run_id IN (SELECT value FROM json_each(?1))",
            )
            .and_then(|mut s| {
                s.query_map(params![ids], |r| {
                    Ok(QueuedRun {
                        run_id: r.get(0)?,
                        queue: r.get(1)?,
                        admitted: r.get::<_, i64>(2)? != 0,
                        vstart: r.get(3)?,
                    })
                })?
                .collect()
            })
            .map_err(db("read the queues of runs"))
    }

    async fn queue_counts(&mut self) -> Result<Vec<QueueCount>> {
        self.conn
            .prepare_cached(
                "SELECT q.queue_name, SUM(q.admitted = 0), SUM(q.admitted = 1) \
                 FROM queued_runs q JOIN runs ON runs.run_id = q.run_id \
                 WHERE q.admitted < 2 AND runs.status = 'running' \
                 GROUP BY q.queue_name ORDER BY q.queue_name",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(QueueCount {
                        queue: r.get(0)?,
                        held: r.get::<_, i64>(1)?.max(0) as u64,
                        running: r.get::<_, i64>(2)?.max(0) as u64,
                    })
                })?
                .collect()
            })
            .map_err(db("count the runs of the queues"))
    }
}
