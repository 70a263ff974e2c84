//! The `task_queue_builds` table of the memory store, and the counts of running runs by build.

use super::tables::{MemoryTx, Result};
use crate::data::run::RunStatus;
use crate::store::rules::tx::BuildTable;
use std::collections::BTreeMap;

impl BuildTable for MemoryTx {
    async fn put_current_build(&mut self, task_queue: &str, build_id: &str) -> Result<()> {
        self.current_builds
            .insert(task_queue.to_string(), build_id.to_string());
        Ok(())
    }

    async fn route_to_build(&mut self, task_queue: &str, build_id: &str) -> Result<()> {
        let follow: Vec<String> = self
            .runs
            .values()
            .filter(|e| {
                let r = &e.row.record;
                r.status == RunStatus::Running
                    && r.task_queue == task_queue
                    && matches!(e.versioning, None | Some("auto_upgrade"))
            })
            .map(|e| e.row.record.run_id.clone())
            .collect();
        for run_id in follow {
            self.runs.update(&run_id, |e| {
                e.row.record.build_id = Some(build_id.to_string());
                true
            });
        }
        Ok(())
    }

    async fn current_builds(&mut self, task_queue: Option<&str>) -> Result<Vec<(String, String)>> {
        Ok(self
            .current_builds
            .range(..)
            .filter(|(queue, _)| task_queue.is_none_or(|q| q == queue.as_str()))
            .map(|(queue, build)| (queue.clone(), build.clone()))
            .collect())
    }

    async fn count_by_build(
        &mut self,
        task_queue: Option<&str>,
    ) -> Result<Vec<(String, Option<String>, u64)>> {
        let mut counts: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
        for e in self.runs.values() {
            let r = &e.row.record;
            let Some(build) = &r.build_id else { continue };
            if r.status != RunStatus::Running || task_queue.is_some_and(|q| q != r.task_queue) {
                continue;
            }
            let key = (build.clone(), e.versioning.map(str::to_string));
            *counts.entry(key).or_default() += 1;
        }
        Ok(counts.into_iter().map(|((b, v), n)| (b, v, n)).collect())
    }
}
