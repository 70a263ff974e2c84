//! The `flow_limits` table of the SQLite store, and the count of the attempts a limit binds.

use super::rows::db;
use super::tx::{Result, SqliteTx};
use crate::data::flow::{FlowColumns, FlowKind, FlowRow, FlowScope};
use crate::error::{BackendErrorKind, StoreError};
use crate::store::rules::tx::FlowTable;
use rusqlite::params;

impl FlowTable for SqliteTx {
    async fn flow_limits(&mut self, _lock: bool) -> Result<Vec<FlowRow>> {
        // One writer at a time (the write transaction is IMMEDIATE): nothing to lock.
        let columns: Vec<FlowColumns> = self
            .conn
            .prepare_cached(
                "SELECT scope_kind, scope_name, kind, number, period_ms, burst, tokens, \
                 refilled_ms FROM flow_limits ORDER BY scope_kind, scope_name, kind",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok(FlowColumns {
                        scope_kind: r.get(0)?,
                        scope_name: r.get(1)?,
                        kind: r.get(2)?,
                        number: r.get(3)?,
                        period_ms: r.get(4)?,
                        burst: r.get(5)?,
                        tokens: r.get(6)?,
                        refilled_ms: r.get(7)?,
                    })
                })?
                .collect()
            })
            .map_err(db("read the flow limits"))?;
        columns
            .into_iter()
            .map(|c| {
                c.into_row()
                    .map_err(|e| StoreError::backend(BackendErrorKind::Corrupt, e))
            })
            .collect()
    }

    async fn put_flow_limit(&mut self, row: &FlowRow) -> Result<()> {
        let c = FlowColumns::of(row);
        self.conn
            .prepare_cached(
                "INSERT INTO flow_limits (scope_kind, scope_name, kind, number, period_ms, \
                 burst, tokens, refilled_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                 ON CONFLICT (scope_kind, scope_name, kind) DO UPDATE SET \
                 number = excluded.number, period_ms = excluded.period_ms, \
                 burst = excluded.burst, tokens = excluded.tokens, \
                 refilled_ms = excluded.refilled_ms",
            )
            .and_then(|mut s| {
                s.execute(params![
                    c.scope_kind,
                    c.scope_name,
                    c.kind,
                    c.number,
                    c.period_ms,
                    c.burst,
                    c.tokens,
                    c.refilled_ms
                ])
            })
            .map_err(db("set a flow limit"))?;
        Ok(())
    }

    async fn delete_flow_limit(&mut self, scope: &FlowScope, kind: FlowKind) -> Result<bool> {
        let n = self
            .conn
            .prepare_cached(
                "DELETE FROM flow_limits WHERE scope_kind = ?1 AND scope_name = ?2 AND kind = ?3",
            )
            .and_then(|mut s| s.execute(params![scope.kind(), scope.name(), kind.as_str()]))
            .map_err(db("remove a flow limit"))?;
        Ok(n > 0)
    }

    async fn set_flow_tokens(
        &mut self,
        scope: &FlowScope,
        tokens: f64,
        refilled_ms: i64,
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE flow_limits SET tokens = ?3, refilled_ms = ?4 \
                 WHERE scope_kind = ?1 AND scope_name = ?2 AND kind = 'rate'",
            )
            .and_then(|mut s| s.execute(params![scope.kind(), scope.name(), tokens, refilled_ms]))
            .map_err(db("spend a rate limit's tokens"))?;
        Ok(())
    }

    async fn waiting_attempts(&mut self, scope: &FlowScope, now_ms: i64) -> Result<u64> {
        let sql = crate::flow_scope_sql!(
            scope,
            "SELECT COUNT(*) FROM activities WHERE lease_owner IS NULL AND ",
            " = ?1 AND visible_at <= ?2 \
                     AND (schedule_deadline IS NULL OR schedule_deadline > ?2)"
        );
        let n: i64 = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row(params![scope.name(), now_ms], |r| r.get(0)))
            .map_err(db("count the attempts waiting under a flow limit"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn running_attempts(
        &mut self,
        scope: &FlowScope,
        now_ms: i64,
        poller: &str,
    ) -> Result<u64> {
        let sql = crate::flow_scope_sql!(
            scope,
            "SELECT COUNT(*) FROM activities WHERE lease_owner IS NOT NULL AND ",
            " = ?1 AND (lease_until IS NULL OR lease_until > ?2) \
                     AND (lease_owner = ?3 OR lease_owner NOT IN \
                     (SELECT engine_id FROM engines WHERE lease_until <= ?2))"
        );
        let n: i64 = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| s.query_row(params![scope.name(), now_ms, poller], |r| r.get(0)))
            .map_err(db("count the attempts under a flow limit"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
