//! The `flow_limits` table of the memory store, and the count of the attempts a limit binds.

use super::tables::{MemoryTx, Result};
use crate::data::flow::{FlowKind, FlowRow, FlowScope};
use crate::store::rules::tx::FlowTable;

/// A limit's key: (scope kind, scope name, rule kind).
fn key(scope: &FlowScope, kind: FlowKind) -> (String, String, String) {
    (
        scope.kind().to_string(),
        scope.name().to_string(),
        kind.as_str().to_string(),
    )
}

impl FlowTable for MemoryTx {
    async fn flow_limits(&mut self, _lock: bool) -> Result<Vec<FlowRow>> {
        // The store's lock already makes each transaction the only one.
        Ok(self.flow_limits.values().cloned().collect())
    }

    async fn put_flow_limit(&mut self, row: &FlowRow) -> Result<()> {
        let k = key(&row.limit.scope, row.limit.rule.kind());
        self.flow_limits.insert(k, row.clone());
        Ok(())
    }

    async fn delete_flow_limit(&mut self, scope: &FlowScope, kind: FlowKind) -> Result<bool> {
        Ok(self.flow_limits.remove(&key(scope, kind)))
    }

    async fn set_flow_tokens(
        &mut self,
        scope: &FlowScope,
        tokens: f64,
        refilled_ms: i64,
    ) -> Result<()> {
        self.flow_limits.update(&key(scope, FlowKind::Rate), |row| {
            row.tokens = tokens;
            row.refilled_ms = refilled_ms;
            true
        });
        Ok(())
    }

    async fn waiting_attempts(&mut self, scope: &FlowScope, now_ms: i64) -> Result<u64> {
        let waiting = self.activities.values().filter(|row| {
            let task = &row.task;
            row.lease_owner.is_none()
                && row.visible_at <= now_ms
                && task.schedule_deadline_ms().is_none_or(|d| d > now_ms)
                && scope.covers(
                    &task.name,
                    &task.task_queue,
                    task.options.flow_key.as_deref(),
                )
        });
        Ok(waiting.count() as u64)
    }

    async fn running_attempts(
        &mut self,
        scope: &FlowScope,
        now_ms: i64,
        poller: &str,
    ) -> Result<u64> {
        let live = self.activities.values().filter(|row| {
            let task = &row.task;
            row.lease_owner.is_some()
                && scope.covers(
                    &task.name,
                    &task.task_queue,
                    task.options.flow_key.as_deref(),
                )
                && !self.lease_free(
                    row.lease_owner.as_deref(),
                    task.lease_until_ms,
                    now_ms,
                    Some(poller),
                )
        });
        Ok(live.count() as u64)
    }
}
