//! The `runs` table of the memory store, with its index of runs by workflow id.

use super::tables::{taken, MemoryTx, Result, RunEntry};
use crate::data::run::{ListFilter, RunStatus, TaskFailure};
use crate::data::versioning::VersioningBehavior;
use crate::store::records::RunRecord;
use crate::store::rules::tx::{RunChange, RunLease, RunRow, RunTable, TaskQuery};

impl MemoryTx {
    fn latest_run_id(&self, workflow_id: &str) -> Option<&String> {
        let keys = (workflow_id.to_string(), 0)..=(workflow_id.to_string(), u64::MAX);
        self.by_workflow.range(keys).next_back().map(|(_, id)| id)
    }

    /// Whether nobody holds the run's lease at `now_ms`.
    fn run_lease_free(&self, entry: &RunEntry, now_ms: i64, me: &str) -> bool {
        let owner = entry.row.lease_owner.as_deref();
        self.lease_free(owner, entry.row.lease_until, now_ms, Some(me))
    }
}

/// Whether an engine of `build` may run the run's tasks: it has no build, or this one.
fn build_matches(run: &RunRecord, build: Option<&str>) -> bool {
    run.build_id.as_deref().is_none_or(|b| Some(b) == build)
}

impl RunTable for MemoryTx {
    async fn load_run(&mut self, run_id: &str) -> Result<Option<RunRow>> {
        Ok(self.runs.get(&run_id.to_string()).map(|e| e.row.clone()))
    }

    async fn latest_run(&mut self, workflow_id: &str) -> Result<Option<RunRow>> {
        let Some(id) = self.latest_run_id(workflow_id) else {
            return Ok(None);
        };
        Ok(self.runs.get(id).map(|e| e.row.clone()))
    }

    async fn insert_run(&mut self, run: &RunRecord) -> Result<()> {
        if self.runs.contains_key(&run.run_id) {
            let why = format!(
                "run id {} already exists; run ids must be fresh",
                run.run_id
            );
            return Err(taken(why));
        }
        let seq = self.next_seq();
        let mut record = run.clone();
        record.build_id = self.current_builds.get(&run.task_queue).cloned();
        let row = RunRow {
            record,
            lease_owner: None,
            lease_until: None,
        };
        let ready_at = Some(run.created_ms);
        let entry = RunEntry {
            row,
            seq,
            ready_at,
            versioning: None,
            debounce_key: None,
        };
        self.runs.insert(run.run_id.clone(), entry);
        let key = (run.workflow_id.clone(), seq);
        self.by_workflow.insert(key, run.run_id.clone());
        Ok(())
    }

    async fn update_run(&mut self, change: &RunChange<'_>) -> Result<()> {
        self.runs.update(&change.run_id.to_string(), |e| {
            let record = &mut e.row.record;
            record.next_event_id = change.next_event_id;
            record.history_bytes += change.added_bytes;
            if let Some(summary) = change.summary {
                record.summary = summary.clone();
                record.task_failure = None;
            }
            if let Some(close) = &change.close {
                record.status = close.status;
                record.closed_ms = Some(close.closed_ms);
                if let Some(result) = close.result {
                    record.result = Some(result.clone());
                }
                if let Some(failure) = close.failure {
                    record.failure = Some(failure.to_string());
                }
            }
            if let Some(v) = &change.versioning {
                if e.versioning.is_none() {
                    e.versioning = Some(v.behavior);
                    record.versioning = VersioningBehavior::parse(v.behavior);
                }
                if record.build_id.is_none() {
                    record.build_id = v.build_id.map(str::to_string);
                }
            }
            e.row.lease_owner = None;
            e.row.lease_until = None;
            e.ready_at = change.ready_at;
            true
        });
        Ok(())
    }

    async fn set_ready(&mut self, run_id: &str, at_ms: i64) -> Result<()> {
        self.runs.update(&run_id.to_string(), |e| {
            e.ready_at = Some(e.ready_at.map_or(at_ms, |t| t.min(at_ms)));
            true
        });
        Ok(())
    }

    async fn delay_start(&mut self, run_id: &str, start_at_ms: i64) -> Result<()> {
        self.runs.update(&run_id.to_string(), |e| {
            e.row.record.start_at_ms = Some(start_at_ms);
            e.ready_at = Some(start_at_ms);
            true
        });
        Ok(())
    }

    async fn debounced_run(&mut self, workflow_type: &str, key: &str) -> Result<Option<String>> {
        Ok(self
            .runs
            .values()
            .filter(|e| {
                e.row.record.status == RunStatus::Running
                    && e.row.record.workflow_type == workflow_type
                    && e.debounce_key.as_deref() == Some(key)
            })
            .max_by_key(|e| e.seq)
            .map(|e| e.row.record.run_id.clone()))
    }

    async fn set_debounce_key(&mut self, run_id: &str, key: &str) -> Result<()> {
        self.runs.update(&run_id.to_string(), |e| {
            e.debounce_key = Some(key.to_string());
            true
        });
        Ok(())
    }

    async fn replace_started(
        &mut self,
        run_id: &str,
        data: &[u8],
        history_bytes: u64,
    ) -> Result<()> {
        self.events.insert((run_id.to_string(), 1), data.to_vec());
        self.runs.update(&run_id.to_string(), |e| {
            e.row.record.history_bytes = history_bytes;
            true
        });
        Ok(())
    }

    async fn set_lease(&mut self, lease: &RunLease<'_>) -> Result<()> {
        self.runs.update(&lease.run_id.to_string(), |e| {
            e.row.lease_owner = Some(lease.owner.to_string());
            e.row.lease_until = Some(lease.until_ms);
            true
        });
        Ok(())
    }

    async fn lease_if_free(&mut self, lease: &RunLease<'_>, now_ms: i64) -> Result<bool> {
        let free = self
            .runs
            .get(&lease.run_id.to_string())
            .is_some_and(|e| self.run_lease_free(e, now_ms, lease.owner));
        Ok(self.runs.update(&lease.run_id.to_string(), |e| {
            if e.row.record.status != RunStatus::Running
                || !free
                || !build_matches(&e.row.record, lease.build_id)
                || e.row.record.start_at_ms.is_some_and(|t| t > now_ms)
            {
                return false;
            }
            e.row.lease_owner = Some(lease.owner.to_string());
            e.row.lease_until = Some(lease.until_ms);
            true
        }))
    }

    async fn release_lease(&mut self, run_id: &str, owner: &str) -> Result<()> {
        self.runs.update(&run_id.to_string(), |e| {
            if e.row.lease_owner.as_deref() != Some(owner) {
                return false;
            }
            e.row.lease_owner = None;
            e.row.lease_until = None;
            e.ready_at = Some(e.ready_at.unwrap_or(0));
            true
        });
        Ok(())
    }

    async fn record_task_failure(&mut self, run_id: &str, failure: &TaskFailure) -> Result<()> {
        self.runs.update(&run_id.to_string(), |e| {
            e.row.record.task_failure = Some(failure.clone());
            e.row.lease_owner = None;
            e.row.lease_until = None;
            e.ready_at = Some(failure.retry_at_ms);
            true
        });
        Ok(())
    }

    async fn ready_runs(&mut self, query: &TaskQuery<'_>) -> Result<Vec<String>> {
        let now = query.now_ms;
        let mut ready: Vec<(i64, u64, &String)> = self
            .runs
            .values()
            .filter(|e| {
                e.row.record.status == RunStatus::Running
                    && build_matches(&e.row.record, query.build_id)
                    && self.run_lease_free(e, now, query.poller)
            })
            .filter(|e| {
                query
                    .names
                    .is_none_or(|t| t.contains(&e.row.record.workflow_type))
            })
            .filter(|e| {
                query
                    .queues
                    .is_none_or(|q| q.contains(&e.row.record.task_queue))
            })
            .filter_map(|e| match e.ready_at {
                Some(at) if at <= now => Some((at, e.seq, &e.row.record.run_id)),
                _ => None,
            })
            .collect();
        ready.sort();
        Ok(ready
            .into_iter()
            .take(query.max)
            .map(|(_, _, id)| id.clone())
            .collect())
    }

    async fn set_run_build(&mut self, run_id: &str, build_id: &str) -> Result<()> {
        self.runs.update(&run_id.to_string(), |e| {
            e.row.record.build_id = Some(build_id.to_string());
            true
        });
        Ok(())
    }

    async fn list_runs(&mut self, filter: &ListFilter) -> Result<Vec<RunRecord>> {
        Ok(self
            .listed(filter)
            .into_iter()
            .map(|e| e.row.record.clone())
            .collect())
    }

    async fn count_runs(&mut self, filter: &ListFilter) -> Result<u64> {
        Ok(self.listed(filter).len() as u64)
    }
}

impl MemoryTx {
    /// The runs `filter` lists, newest first (the one filter of the list and its count).
    fn listed(&self, filter: &ListFilter) -> Vec<&RunEntry> {
        let latest = |r: &RunRecord| self.latest_run_id(&r.workflow_id) == Some(&r.run_id);
        let after = match &filter.after_run_id {
            None => None,
            Some(run_id) => match self.runs.get(run_id) {
                Some(e) => Some(e.seq),
                None => return Vec::new(),
            },
        };
        let mut runs: Vec<&RunEntry> = self
            .runs
            .values()
            .filter(|e| !filter.latest_only || latest(&e.row.record))
            .filter(|e| {
                filter
                    .workflow_type
                    .as_ref()
                    .is_none_or(|t| *t == e.row.record.workflow_type)
            })
            .filter(|e| filter.status.is_none_or(|s| s == e.row.record.status))
            .filter(|e| {
                filter
                    .build_id
                    .as_ref()
                    .is_none_or(|b| e.row.record.build_id.as_ref() == Some(b))
            })
            .filter(|e| {
                let r = &e.row.record;
                filter.times_match(r.created_ms, r.closed_ms)
                    && filter
                        .search
                        .iter()
                        .all(|(key, value)| self.has_attribute(&r.run_id, key, value))
            })
            .filter(|e| after.is_none_or(|seq| e.seq < seq))
            .collect();
        runs.sort_by_key(|e| std::cmp::Reverse(e.seq));
        let limit = if filter.limit == 0 {
            usize::MAX
        } else {
            filter.limit
        };
        runs.into_iter().take(limit).collect()
    }
}
