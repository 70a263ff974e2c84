//! The deletes of a purge in the SQLite store. A primitive over a batch of runs or chains runs
//! its one prepared statement once per id, each an index lookup.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::store::rules::tx::{ClosedRun, PurgeTable};
use rusqlite::params;

impl SqliteTx {
    /// Runs `sql` (one parameter) once for each id.
    pub(super) fn for_each_id(
        &mut self,
        sql: &str,
        ids: &[String],
        what: &'static str,
    ) -> Result<()> {
        let mut statement = self.conn.prepare_cached(sql).map_err(db(what))?;
        for id in ids {
            statement.execute([id]).map_err(db(what))?;
        }
        Ok(())
    }
}

impl PurgeTable for SqliteTx {
    async fn closed_runs(&mut self, closed_before_ms: i64, max: usize) -> Result<Vec<ClosedRun>> {
        self.conn
            .prepare_cached(
                "SELECT run_id, workflow_id, chain_id FROM runs \
                 WHERE closed_ms < ?1 AND status <> 'running' \
                 ORDER BY closed_ms, seq LIMIT ?2",
            )
            .and_then(|mut s| {
                let max = i64::try_from(max).unwrap_or(i64::MAX);
                s.query_map(params![closed_before_ms, max], |r| {
                    Ok(ClosedRun {
                        run_id: r.get(0)?,
                        workflow_id: r.get(1)?,
                        chain_id: r.get(2)?,
                    })
                })?
                .collect()
            })
            .map_err(db("find closed runs to purge"))
    }

    async fn count_closed_runs(&mut self, closed_before_ms: i64) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM runs WHERE closed_ms < ?1 AND status <> 'running'",
            )
            .and_then(|mut s| s.query_row([closed_before_ms], |r| r.get(0)))
            .map_err(db("count closed runs"))?;
        Ok(n.max(0) as u64)
    }

    async fn delete_runs(&mut self, run_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM runs WHERE run_id = ?1";
        self.for_each_id(sql, run_ids, "delete purged runs")
    }

    async fn delete_runs_events(&mut self, run_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM events WHERE run_id = ?1";
        self.for_each_id(sql, run_ids, "delete purged runs' histories")
    }

    async fn delete_runs_inbox(&mut self, run_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM inbox WHERE run_id = ?1";
        self.for_each_id(sql, run_ids, "delete purged runs' inbox messages")
    }

    async fn delete_runs_activities(&mut self, run_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM activities WHERE run_id = ?1";
        self.for_each_id(sql, run_ids, "delete purged runs' activities")
    }

    async fn delete_runs_timers(&mut self, run_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM timers WHERE run_id = ?1";
        self.for_each_id(sql, run_ids, "delete purged runs' timers")
    }

    async fn chains_in_use(&mut self, chains: &[(String, String)]) -> Result<Vec<String>> {
        let what = "find the continue-as-new chains purged runs leave behind";
        // The runs of a chain share its workflow id: the lookup uses `runs_by_workflow`.
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM runs WHERE workflow_id = ?1 AND chain_id = ?2)",
            )
            .map_err(db(what))?;
        let mut used = Vec::new();
        for (workflow_id, chain_id) in chains {
            let exists: bool = statement
                .query_row([workflow_id, chain_id], |r| r.get(0))
                .map_err(db(what))?;
            if exists {
                used.push(chain_id.clone());
            }
        }
        Ok(used)
    }

    async fn delete_chains_updates(&mut self, chain_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM updates WHERE chain_id = ?1";
        self.for_each_id(sql, chain_ids, "delete purged chains' updates")
    }

    async fn delete_chains_signal_ids(&mut self, chain_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM signal_ids WHERE chain_id = ?1";
        self.for_each_id(sql, chain_ids, "delete purged chains' signal ids")
    }

    async fn delete_chains_start_requests(&mut self, chain_ids: &[String]) -> Result<()> {
        let sql = "DELETE FROM start_requests WHERE chain_id = ?1";
        self.for_each_id(sql, chain_ids, "delete purged chains' start request ids")
    }
}
