//! The `flow_limits` table of the PostgreSQL store, the count of the attempts a limit binds,
//! and the migration that adds flow limits.
//!
//! Several processes' writers poll at once: a poll locks every limit's row (`FOR UPDATE`)
//! before it counts and leases, so that polls under one limit take turns, each counting the
//! leases the one before committed (READ COMMITTED reads them once the lock is granted).

use crate::rows::get;
use crate::tx::{owned, PostgresTx, Result};
use wf_core::store::{
    BackendErrorKind, FlowColumns, FlowRow, FlowTable, NewActivityTask, StoreError,
    EAGER_LEASE_REFUSED,
};
use wf_core::{FlowKind, FlowScope};

/// v9: flow limits. The limits on activity attempts (one row per scope and rule kind, with a
/// rate limit's token bucket); each activity's task queue (its run's; filled in for the
/// activities already pending) and flow key, which limits count attempts by; the leased
/// attempts by name, task queue and flow key, for those counts.
pub(crate) const SCHEMA_V9: &str = r#"
CREATE TABLE flow_limits (
    scope_kind   TEXT NOT NULL,
    scope_name   TEXT COLLATE "C" NOT NULL,
    kind         TEXT NOT NULL,
    number       BIGINT NOT NULL,
    period_ms    BIGINT,
    burst        BIGINT,
    tokens       DOUBLE PRECISION NOT NULL,
    refilled_ms  BIGINT NOT NULL,
    PRIMARY KEY (scope_kind, scope_name, kind)
);
ALTER TABLE activities ADD COLUMN task_queue TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE activities ADD COLUMN flow_key TEXT COLLATE "C";
UPDATE activities SET task_queue = runs.task_queue FROM runs WHERE runs.run_id = activities.run_id;
CREATE INDEX activities_leased_by_name ON activities (name) WHERE lease_owner IS NOT NULL;
CREATE INDEX activities_leased_by_queue ON activities (task_queue) WHERE lease_owner IS NOT NULL;
CREATE INDEX activities_leased_by_key ON activities (flow_key)
    WHERE lease_owner IS NOT NULL AND flow_key IS NOT NULL;
"#;

/// Raises `wf_conflict` on run `$1` with reason `$5` when a flow limit covers an activity named
/// in `$2`, a task queue in `$3`, or a flow key in `$4`.
const REFUSE_COVERED: &str = "SELECT CASE WHEN EXISTS (SELECT 1 FROM flow_limits \
     WHERE (scope_kind = 'activity' AND scope_name = ANY($2)) \
     OR (scope_kind = 'task_queue' AND scope_name = ANY($3)) \
     OR (scope_kind = 'key' AND scope_name = ANY($4))) \
     THEN wf_conflict($1, $5) ELSE 0 END";

impl FlowTable for PostgresTx {
    async fn flow_limits(&mut self, lock: bool) -> Result<Vec<FlowRow>> {
        macro_rules! select {
            ($tail:literal) => {
                concat!(
                    "SELECT scope_kind, scope_name, kind, number, period_ms, burst, tokens, \
                     refilled_ms FROM flow_limits ORDER BY scope_kind, scope_name, kind",
                    $tail
                )
            };
        }
        // Only a writer's transaction may lock rows (readers are read-only).
        let sql = if lock && self.writer {
            select!(" FOR UPDATE")
        } else {
            select!("")
        };
        let rows = self.query(sql, &[], "read the flow limits").await?;
        rows.iter()
            .map(|r| {
                let columns = FlowColumns {
                    scope_kind: get(r, 0)?,
                    scope_name: get(r, 1)?,
                    kind: get(r, 2)?,
                    number: get(r, 3)?,
                    period_ms: get(r, 4)?,
                    burst: get(r, 5)?,
                    tokens: get(r, 6)?,
                    refilled_ms: get(r, 7)?,
                };
                columns
                    .into_row()
                    .map_err(|e| StoreError::backend(BackendErrorKind::Corrupt, e))
            })
            .collect()
    }

    async fn put_flow_limit(&mut self, row: &FlowRow) -> Result<()> {
        let c = FlowColumns::of(row);
        self.later(
            "INSERT INTO flow_limits (scope_kind, scope_name, kind, number, period_ms, burst, \
             tokens, refilled_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (scope_kind, scope_name, kind) DO UPDATE SET \
             number = EXCLUDED.number, period_ms = EXCLUDED.period_ms, \
             burst = EXCLUDED.burst, tokens = EXCLUDED.tokens, \
             refilled_ms = EXCLUDED.refilled_ms",
            owned![
                c.scope_kind,
                c.scope_name,
                c.kind,
                c.number,
                c.period_ms,
                c.burst,
                c.tokens,
                c.refilled_ms
            ],
            "set a flow limit",
        )
        .await?;
        // Engines waiting under the old value look again.
        self.notes.work = true;
        Ok(())
    }

    async fn delete_flow_limit(&mut self, scope: &FlowScope, kind: FlowKind) -> Result<bool> {
        let n = self
            .execute(
                "DELETE FROM flow_limits WHERE scope_kind = $1 AND scope_name = $2 AND kind = $3",
                &[&scope.kind(), &scope.name(), &kind.as_str()],
                "remove a flow limit",
            )
            .await?;
        self.notes.work |= n > 0;
        Ok(n > 0)
    }

    async fn refuse_covered_lease(
        &mut self,
        run_id: &str,
        task_queue: &str,
        activities: &[NewActivityTask],
    ) -> Result<()> {
        // Queued with the commit's other statements: no round trip of its own. A limit that
        // covers one of the activities raises `wf_conflict`, which undoes the transaction.
        let mut names: Vec<String> = activities.iter().map(|a| a.name.clone()).collect();
        names.sort();
        names.dedup();
        let mut keys: Vec<String> = activities
            .iter()
            .filter_map(|a| a.options.flow_key.clone())
            .collect();
        keys.sort();
        keys.dedup();
        let mut queues: Vec<String> = activities
            .iter()
            .map(|a| a.options.queue_or(task_queue).to_string())
            .collect();
        queues.sort();
        queues.dedup();
        let params = owned![
            run_id.to_string(),
            names,
            queues,
            keys,
            EAGER_LEASE_REFUSED.to_string()
        ];
        let what = "check that no flow limit covers activities leased at once";
        if !self.nested {
            return self.later(REFUSE_COVERED, params, what).await;
        }
        // Inside a nested savepoint (a new run's first task): at once, so that a refusal is
        // the nested part's and leaves the start standing.
        let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p.as_ref() as _).collect();
        self.query(REFUSE_COVERED, &refs, what).await.map(drop)
    }

    async fn set_flow_tokens(
        &mut self,
        scope: &FlowScope,
        tokens: f64,
        refilled_ms: i64,
    ) -> Result<()> {
        self.later(
            "UPDATE flow_limits SET tokens = $3, refilled_ms = $4 \
             WHERE scope_kind = $1 AND scope_name = $2 AND kind = 'rate'",
            owned![
                scope.kind().to_string(),
                scope.name().to_string(),
                tokens,
                refilled_ms
            ],
            "spend a rate limit's tokens",
        )
        .await
    }

    async fn waiting_attempts(&mut self, scope: &FlowScope, now_ms: i64) -> Result<u64> {
        let sql = wf_core::flow_scope_sql!(
            scope,
            "SELECT COUNT(*) FROM activities WHERE lease_owner IS NULL AND ",
            " = $1 AND visible_at <= $2 \
                     AND (schedule_deadline IS NULL OR schedule_deadline > $2)"
        );
        let row = self
            .query_one(
                sql,
                &[&scope.name(), &now_ms],
                "count the attempts waiting under a flow limit",
            )
            .await?;
        let n: i64 = get(&row, 0)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn running_attempts(
        &mut self,
        scope: &FlowScope,
        now_ms: i64,
        poller: &str,
    ) -> Result<u64> {
        let sql = wf_core::flow_scope_sql!(
            scope,
            "SELECT COUNT(*) FROM activities WHERE lease_owner IS NOT NULL AND ",
            " = $1 AND (lease_until IS NULL OR lease_until > $2) \
                     AND (lease_owner = $3 OR lease_owner NOT IN \
                     (SELECT engine_id FROM engines WHERE lease_until <= $2))"
        );
        let row = self
            .query_one(
                sql,
                &[&scope.name(), &now_ms, &poller],
                "count the attempts under a flow limit",
            )
            .await?;
        let n: i64 = get(&row, 0)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
