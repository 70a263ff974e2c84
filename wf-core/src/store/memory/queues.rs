//! The `workflow_queues` and `queued_runs` tables of the memory store.

use super::tables::{MemoryTx, QueuedRow, Result};
use crate::data::queue::{QueueCount, QueueRow, QueuedStart};
use crate::data::run::RunStatus;
use crate::store::rules::fairness::virtual_start;
use crate::store::rules::tx::{QueueTable, QueuedRun};

impl MemoryTx {
    /// Whether run `run_id` exists and is running.
    fn run_running(&self, run_id: &str) -> bool {
        self.runs
            .get(&run_id.to_string())
            .is_some_and(|e| e.row.record.status == RunStatus::Running)
    }

    /// The queue rows in the order they were recorded.
    fn queued_rows(&self) -> impl Iterator<Item = (&String, &QueuedRow)> {
        let mut rows: Vec<_> = self.queued_runs.range(..).collect();
        rows.sort_by_key(|(_, r)| r.seq);
        rows.into_iter()
    }
}

impl QueueTable for MemoryTx {
    async fn workflow_queues(&mut self) -> Result<Vec<QueueRow>> {
        Ok(self.workflow_queues.values().cloned().collect())
    }

    async fn workflow_queue(&mut self, name: &str, _lock: bool) -> Result<Option<QueueRow>> {
        // The store's lock already makes each transaction the only one.
        Ok(self.workflow_queues.get(&name.to_string()).cloned())
    }

    async fn put_workflow_queue(&mut self, row: &QueueRow) -> Result<()> {
        self.workflow_queues
            .insert(row.queue.name.clone(), row.clone());
        Ok(())
    }

    async fn set_queue_tokens(&mut self, name: &str, tokens: f64, refilled_ms: i64) -> Result<()> {
        self.workflow_queues.update(&name.to_string(), |row| {
            row.tokens = tokens;
            row.refilled_ms = refilled_ms;
            true
        });
        Ok(())
    }

    async fn delete_workflow_queue(&mut self, name: &str) -> Result<bool> {
        Ok(self.workflow_queues.remove(&name.to_string()))
    }

    async fn queue_fair_turn(&mut self, queue: &str, key: &str, cost: f64) -> Result<f64> {
        let clock = self
            .queue_fair_clocks
            .get(&queue.to_string())
            .copied()
            .unwrap_or(0.0);
        let at = (queue.to_string(), key.to_string());
        let vstart = virtual_start(clock, self.queue_fair_passes.get(&at).copied());
        self.queue_fair_passes.insert(at, vstart + cost);
        Ok(vstart)
    }

    async fn advance_queue_clock(&mut self, queue: &str, vstart: f64) -> Result<()> {
        let name = queue.to_string();
        if self
            .queue_fair_clocks
            .get(&name)
            .is_none_or(|c| *c < vstart)
        {
            self.queue_fair_clocks.insert(name, vstart);
        }
        Ok(())
    }

    async fn insert_queued_run(
        &mut self,
        run_id: &str,
        start: &QueuedStart,
        vstart: f64,
    ) -> Result<()> {
        let seq = self.next_seq();
        let row = QueuedRow {
            seq,
            queue: start.queue.clone(),
            priority: start.priority,
            dedupe_id: start.dedupe_id.clone(),
            admitted: false,
            vstart,
        };
        self.queued_runs.insert(run_id.to_string(), row);
        Ok(())
    }

    async fn queue_dedupe_holder(
        &mut self,
        queue: &str,
        dedupe_id: &str,
    ) -> Result<Option<(String, String)>> {
        let holder = self.queued_rows().find(|(run_id, r)| {
            r.queue == queue
                && r.dedupe_id.as_deref() == Some(dedupe_id)
                && self.run_running(run_id)
        });
        Ok(holder.and_then(|(run_id, _)| {
            let entry = self.runs.get(run_id)?;
            Some((entry.row.record.workflow_id.clone(), run_id.clone()))
        }))
    }

    async fn held_runs(&mut self) -> Result<Vec<QueuedRun>> {
        let mut held: Vec<(&String, &QueuedRow)> = self
            .queued_rows()
            .filter(|(run_id, r)| !r.admitted && self.run_running(run_id))
            .collect();
        held.sort_by(|(_, a), (_, b)| {
            (&a.queue, a.priority)
                .cmp(&(&b.queue, b.priority))
                .then(a.vstart.total_cmp(&b.vstart))
                .then(a.seq.cmp(&b.seq))
        });
        Ok(held
            .into_iter()
            .map(|(run_id, r)| QueuedRun {
                run_id: run_id.clone(),
                queue: r.queue.clone(),
                admitted: false,
                vstart: r.vstart,
            })
            .collect())
    }

    async fn admitted_running(&mut self, queue: &str) -> Result<u64> {
        let n = self
            .queued_runs
            .range(..)
            .filter(|(run_id, r)| r.queue == queue && r.admitted && self.run_running(run_id))
            .count();
        Ok(n as u64)
    }

    async fn mark_admitted(&mut self, run_id: &str) -> Result<bool> {
        Ok(self.queued_runs.update(&run_id.to_string(), |r| {
            let held = !r.admitted;
            r.admitted = true;
            held
        }))
    }

    async fn delete_queued_runs(&mut self, run_ids: &[String]) -> Result<()> {
        for run_id in run_ids {
            self.queued_runs.remove(run_id);
        }
        Ok(())
    }

    async fn queued_runs(&mut self, run_ids: &[String]) -> Result<Vec<QueuedRun>> {
        Ok(run_ids
            .iter()
            .filter_map(|run_id| {
                self.queued_runs.get(run_id).map(|r| QueuedRun {
                    run_id: run_id.clone(),
                    queue: r.queue.clone(),
                    admitted: r.admitted,
                    vstart: r.vstart,
                })
            })
            .collect())
    }

    async fn queue_counts(&mut self) -> Result<Vec<QueueCount>> {
        let mut counts: std::collections::BTreeMap<&str, QueueCount> = Default::default();
        for (run_id, r) in self.queued_runs.range(..) {
            if !self.run_running(run_id) {
                continue;
            }
            let c = counts
                .entry(r.queue.as_str())
                .or_insert_with(|| QueueCount {
                    queue: r.queue.clone(),
                    ..QueueCount::default()
                });
            match r.admitted {
                true => c.running += 1,
                false => c.held += 1,
            }
        }
        Ok(counts.into_values().collect())
    }
}
