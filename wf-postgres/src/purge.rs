//! The deletes of a purge in the PostgreSQL store: each primitive one statement over the
//! batch's ids (`= ANY($1)`), and the schema migration that indexes closed runs by close time.
//!
//! Locks: a purge takes the rows of the runs it deletes with `FOR UPDATE SKIP LOCKED` and
//! their workflow ids' advisory locks with `pg_try_advisory_xact_lock`, as a poll does (see
//! `runs.rs`), so it never waits for a transaction in flight, nor makes one wait in a cycle: a
//! run another transaction holds is left for the next batch.

use crate::rows::get;
use crate::tx::{PostgresTx, Result};
use wf_core::store::{ClosedRun, PurgeTable};

/// v2: closed runs by close time, for retention's purge.
pub(crate) const SCHEMA_V2: &str = "
CREATE INDEX runs_by_closed ON runs (closed_ms, seq) WHERE closed_ms IS NOT NULL;
";

impl PurgeTable for PostgresTx {
    async fn closed_runs(&mut self, closed_before_ms: i64, max: usize) -> Result<Vec<ClosedRun>> {
        let max = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = if self.writer {
            self.query(
                "SELECT run_id, workflow_id, chain_id FROM (SELECT run_id, workflow_id, \
                 chain_id, closed_ms, seq FROM runs \
                 WHERE closed_ms < $1 AND status <> 'running' \
                 ORDER BY closed_ms, seq LIMIT $2 FOR UPDATE SKIP LOCKED) c \
                 WHERE pg_try_advisory_xact_lock(hashtextextended(current_schema() || '/' || c.workflow_id, 0)) \
                 ORDER BY closed_ms, seq",
                &[&closed_before_ms, &max],
                "find closed runs to purge",
            )
            .await?
        } else {
            self.query(
                "SELECT run_id, workflow_id, chain_id FROM runs \
                 WHERE closed_ms < $1 AND status <> 'running' ORDER BY closed_ms, seq LIMIT $2",
                &[&closed_before_ms, &max],
                "find closed runs to purge",
            )
            .await?
        };
        rows.iter()
            .map(|r| {
                Ok(ClosedRun {
                    run_id: get(r, 0)?,
                    workflow_id: get(r, 1)?,
                    chain_id: get(r, 2)?,
                })
            })
            .collect()
    }

    async fn count_closed_runs(&mut self, closed_before_ms: i64) -> Result<u64> {
        let row = self
            .query_one(
                "SELECT COUNT(*) FROM runs WHERE closed_ms < $1 AND status <> 'running'",
                &[&closed_before_ms],
                "count closed runs",
            )
            .await?;
        Ok(get::<i64>(&row, 0)?.max(0) as u64)
    }

    async fn delete_runs(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM runs WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs",
        )
        .await?;
        Ok(())
    }

    async fn delete_runs_events(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM events WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' histories",
        )
        .await?;
        Ok(())
    }

    async fn delete_runs_inbox(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM inbox WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' inbox messages",
        )
        .await?;
        Ok(())
    }

    async fn delete_runs_activities(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM activities WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' activities",
        )
        .await?;
        Ok(())
    }

    async fn delete_runs_timers(&mut self, run_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM timers WHERE run_id = ANY($1)",
            &[&run_ids],
            "delete purged runs' timers",
        )
        .await?;
        Ok(())
    }

    async fn chains_in_use(&mut self, chains: &[(String, String)]) -> Result<Vec<String>> {
        let (workflow_ids, chain_ids): (Vec<&str>, Vec<&str>) =
            chains.iter().map(|(w, c)| (w.as_str(), c.as_str())).unzip();
        // The runs of a chain share its workflow id: the lookup uses `runs_by_workflow`.
        let rows = self
            .query(
                "SELECT DISTINCT r.chain_id FROM runs r \
                 JOIN unnest($1::text[], $2::text[]) AS c(workflow_id, chain_id) \
                 ON r.workflow_id = c.workflow_id AND r.chain_id = c.chain_id",
                &[&workflow_ids, &chain_ids],
                "find the continue-as-new chains purged runs leave behind",
            )
            .await?;
        rows.iter().map(|r| get(r, 0)).collect()
    }

    async fn delete_chains_updates(&mut self, chain_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM updates WHERE chain_id = ANY($1)",
            &[&chain_ids],
            "delete purged chains' updates",
        )
        .await?;
        Ok(())
    }

    async fn delete_chains_signal_ids(&mut self, chain_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM signal_ids WHERE chain_id = ANY($1)",
            &[&chain_ids],
            "delete purged chains' signal ids",
        )
        .await?;
        Ok(())
    }

    async fn delete_chains_start_requests(&mut self, chain_ids: &[String]) -> Result<()> {
        self.execute(
            "DELETE FROM start_requests WHERE chain_id = ANY($1)",
            &[&chain_ids],
            "delete purged chains' start request ids",
        )
        .await?;
        Ok(())
    }
}
