//! The deletes of a purge in the memory store: each primitive one pass over the maps it names.

use super::tables::{MemoryTx, Result};
use super::undo::UndoMap;
use crate::store::records::RunRecord;
use crate::store::rules::tx::{ActivityTable, ClosedRun, InboxTable, PurgeTable, TimerTable};
use std::collections::HashSet;

impl PurgeTable for MemoryTx {
    async fn closed_runs(&mut self, closed_before_ms: i64, max: usize) -> Result<Vec<ClosedRun>> {
        let mut closed: Vec<(i64, u64, &RunRecord)> = self
            .runs
            .values()
            .filter_map(|e| {
                let r = &e.row.record;
                let closed_ms = r.closed_ms.filter(|_| r.status.is_closed())?;
                (closed_ms < closed_before_ms).then_some((closed_ms, e.seq, r))
            })
            .collect();
        closed.sort_unstable_by_key(|(at, seq, _)| (*at, *seq));
        Ok(closed
            .into_iter()
            .take(max)
            .map(|(_, _, r)| ClosedRun {
                run_id: r.run_id.clone(),
                workflow_id: r.workflow_id.clone(),
                chain_id: r.chain_id.clone(),
            })
            .collect())
    }

    async fn count_closed_runs(&mut self, closed_before_ms: i64) -> Result<u64> {
        let closed = self.runs.values().filter(|e| {
            let r = &e.row.record;
            r.status.is_closed() && r.closed_ms.is_some_and(|at| at < closed_before_ms)
        });
        Ok(closed.count() as u64)
    }

    async fn delete_runs(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            let Some(entry) = self.runs.get(run_id) else {
                continue;
            };
            let key = (entry.row.record.workflow_id.clone(), entry.seq);
            self.by_workflow.remove(&key);
            self.runs.remove(run_id);
        }
        Ok(())
    }

    async fn delete_runs_events(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            self.events
                .remove_range((run_id.clone(), 0)..=(run_id.clone(), u64::MAX));
        }
        Ok(())
    }

    async fn delete_runs_inbox(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            self.delete_inbox(run_id).await?;
        }
        Ok(())
    }

    async fn delete_runs_activities(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            self.delete_activities(run_id).await?;
        }
        Ok(())
    }

    async fn delete_runs_timers(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            self.delete_timers(run_id).await?;
        }
        Ok(())
    }

    async fn chains_in_use(&mut self, chains: &[(String, String)]) -> Result<Vec<String>> {
        let asked: HashSet<&String> = chains.iter().map(|(_, chain)| chain).collect();
        let used: HashSet<&String> = self
            .runs
            .values()
            .map(|e| &e.row.record.chain_id)
            .filter(|c| asked.contains(c))
            .collect();
        Ok(used.into_iter().cloned().collect())
    }

    async fn delete_chains_updates(&mut self, chain_ids: &[String]) -> Result<()> {
        for chain in chain_ids {
            remove_chain(&mut self.updates, chain);
        }
        Ok(())
    }

    async fn delete_chains_signal_ids(&mut self, chain_ids: &[String]) -> Result<()> {
        for chain in chain_ids {
            remove_chain(&mut self.signal_ids, chain);
        }
        Ok(())
    }

    async fn delete_chains_start_requests(&mut self, chain_ids: &[String]) -> Result<()> {
        // Keyed by workflow id, not chain: a scan, as rare as purges are.
        let gone: HashSet<&String> = chain_ids.iter().collect();
        self.start_requests
            .remove_where(|_, (_, chain)| gone.contains(chain));
        Ok(())
    }
}

/// Removes every entry of a map keyed by (chain id, id) for one chain.
fn remove_chain<V: Clone>(map: &mut UndoMap<(String, String), V>, chain: &str) {
    let from = (chain.to_string(), String::new());
    let doomed: Vec<(String, String)> = map
        .range(from..)
        .take_while(|((c, _), _)| c == chain)
        .map(|(k, _)| k.clone())
        .collect();
    for key in doomed {
        map.remove(&key);
    }
}
