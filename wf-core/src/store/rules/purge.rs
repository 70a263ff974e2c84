//! Purging closed runs (retention): a batch of runs closed before a time goes with everything
//! keyed by them — the run's row, its history, its stream entries and feed rows, whatever its inbox,
//! activities and timers still hold — and, once no run of their continue-as-new chain is left, the chain's update
//! records, signal dedupe ids and start request ids.
//!
//! What a purge never touches, and why:
//! - A running run: only closed runs are candidates.
//! - What a running parent needs of a closed child: nothing. A child's result reaches its
//!   parent as a `ChildClosed` message put in the *parent's* inbox in the very transaction
//!   that closes the child (`commit.rs`, `terminate.rs`), so the child's rows hold nothing the
//!   parent still reads; a child that later outlives its purged parent finds no parent to tell,
//!   which `notify_run` already allows.
//! - The dedupe ids of a chain that goes on: signal ids and update records are kept per chain,
//!   and a chain keeps them while any of its runs remains (the running run after a
//!   continue-as-new still deduplicates against its predecessors' ids).
//! - Schedules: they are not keyed by runs; one whose action's run was purged sees it as not
//!   running.

use super::tx::{ClosedRun, Tx};
use crate::error::StoreError;

/// [`StoreAdmin::purge_closed_runs`](crate::store::StoreAdmin::purge_closed_runs): at most `max` runs
/// closed before `closed_before_ms`, oldest close first. Returns their run ids.
pub(crate) async fn purge_closed_runs<X: Tx>(
    tx: &mut X,
    closed_before_ms: i64,
    max: usize,
) -> Result<Vec<String>, StoreError> {
    if max == 0 {
        return Ok(Vec::new());
    }
    let batch = tx.closed_runs(closed_before_ms, max).await?;
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    delete_runs(tx, batch).await
}

/// Deletes these closed runs with everything keyed by them, and the update records, signal
/// ids and start request ids of each chain no run is left in. Returns their run ids. (Also
/// [`StoreAdmin::delete_run`](crate::store::StoreAdmin::delete_run)'s deletion of one run.)
pub(crate) async fn delete_runs<X: Tx>(
    tx: &mut X,
    batch: Vec<ClosedRun>,
) -> Result<Vec<String>, StoreError> {
    let run_ids: Vec<String> = batch.iter().map(|r| r.run_id.clone()).collect();
    tx.delete_runs_events(&run_ids).await?;
    tx.delete_runs_inbox(&run_ids).await?;
    tx.delete_runs_activities(&run_ids).await?;
    tx.delete_runs_timers(&run_ids).await?;
    tx.delete_runs_search(&run_ids).await?;
    tx.delete_queued_runs(&run_ids).await?;
    tx.delete_runs_streams(&run_ids).await?;
    tx.delete_runs_feed(&run_ids).await?;
    tx.delete_runs(&run_ids).await?;
    let mut chains: Vec<(String, String)> = batch
        .into_iter()
        .map(|r| (r.workflow_id, r.chain_id))
        .collect();
    chains.sort_unstable();
    chains.dedup();
    let in_use = tx.chains_in_use(&chains).await?;
    let gone: Vec<String> = chains
        .into_iter()
        .map(|(_, chain)| chain)
        .filter(|c| !in_use.contains(c))
        .collect();
    if !gone.is_empty() {
        tx.delete_chains_updates(&gone).await?;
        tx.delete_chains_signal_ids(&gone).await?;
        tx.delete_chains_start_requests(&gone).await?;
    }
    Ok(run_ids)
}
