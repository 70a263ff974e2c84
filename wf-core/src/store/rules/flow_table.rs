//! The `flow_limits` table's primitives (see [`Tx`](super::tx::Tx)), and the refusal of
//! activities leased at once under a limit.

use crate::data::flow::{FlowKind, FlowRow, FlowScope};
use crate::error::StoreError;
use crate::store::records::NewActivityTask;
use std::future::Future;

/// The refusal of a workflow task commit that would lease, at once, activities that a flow
/// limit covers: the committing worker learns of the limits (it refreshes its copy) and the
/// task runs again, its activities then leased by polls. Its text is how the worker tells it
/// from other conflicts.
pub const EAGER_LEASE_REFUSED: &str =
    "a flow limit covers an activity of this task: it must be leased by a poll, not at once";

/// The `flow_limits` table: the flow limits on activity attempts, one row per (scope, rule
/// kind), with a rate limit's token bucket; and the count of the attempts a limit binds.
pub trait FlowTable {
    /// Every flow limit, by scope kind, scope name and rule kind. With `lock`, a store whose
    /// writers run at once (PostgreSQL) locks the rows read until the transaction ends, so
    /// that two polls counting under one limit take turns.
    fn flow_limits(
        &mut self,
        lock: bool,
    ) -> impl Future<Output = Result<Vec<FlowRow>, StoreError>> + Send;

    /// Inserts the limit, or replaces the row of its scope and rule kind.
    fn put_flow_limit(
        &mut self,
        row: &FlowRow,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the limit of `scope` and rule kind `kind`; whether there was one.
    fn delete_flow_limit(
        &mut self,
        scope: &FlowScope,
        kind: FlowKind,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// How many attempts `scope` covers that are due at `now_ms` and not leased (waiting).
    fn waiting_attempts(
        &mut self,
        scope: &FlowScope,
        now_ms: i64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Refuses a commit that leases `activities` of `run_id` (a run on `task_queue`) at once
    /// when a flow limit covers one of them: a `Conflict` on the run whose reason is
    /// [`EAGER_LEASE_REFUSED`]. By default it reads the limits; a store that queues statements
    /// (PostgreSQL) may send the check with the commit's other statements instead, the refusal
    /// then coming when they are sent.
    fn refuse_covered_lease(
        &mut self,
        run_id: &str,
        task_queue: &str,
        activities: &[NewActivityTask],
    ) -> impl Future<Output = Result<(), StoreError>> + Send
    where
        Self: Send,
    {
        async move {
            let limits = self.flow_limits(false).await?;
            let covered = activities.iter().any(|a| {
                let key = a.options.flow_key.as_deref();
                limits.iter().any(|row| {
                    row.limit
                        .scope
                        .covers(&a.name, a.options.queue_or(task_queue), key)
                })
            });
            match covered {
                true => Err(StoreError::conflict(run_id, EAGER_LEASE_REFUSED)),
                false => Ok(()),
            }
        }
    }

    /// Sets the token bucket of the rate limit of `scope`.
    fn set_flow_tokens(
        &mut self,
        scope: &FlowScope,
        tokens: f64,
        refilled_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// How many leased attempts `scope` covers whose lease is live at `now_ms`: not expired,
    /// and held by `poller` or by an engine whose liveness lease has not expired (a lease
    /// without an expiry lives while its engine does).
    fn running_attempts(
        &mut self,
        scope: &FlowScope,
        now_ms: i64,
        poller: &str,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}
