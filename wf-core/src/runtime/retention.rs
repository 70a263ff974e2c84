//! Retention: the engine's background task that purges runs closed longer ago than the
//! retention period (`EngineBuilder::retention`), and the purge the client asks for on demand.
//!
//! A purge goes in batches, each one store transaction of at most `DEFAULT_PURGE_BATCH` runs,
//! and yields between them: a SQLite store has one writer, and commits of live runs queued
//! behind a batch wait for that batch only, never for the whole purge. What a purge deletes
//! and keeps is the store's rule (`store/rules/purge.rs`).

use super::core::Core;
use crate::client::{PurgeReport, PurgeRequest, DEFAULT_PURGE_BATCH};
use crate::data::activity::duration_ms;
use crate::error::WfError;
use std::sync::Arc;
use std::time::Duration;

/// The longest the task waits between two passes: a run is purged at most this late after
/// its retention runs out.
const MAX_CHECK_EVERY: Duration = Duration::from_secs(3600);

/// The shortest wait between two passes.
const MIN_CHECK_EVERY: Duration = Duration::from_secs(1);

/// One purge call: one batch (or, for a dry run, a count).
pub(crate) async fn purge(core: &Core, request: PurgeRequest) -> Result<PurgeReport, WfError> {
    let closed_before = request.closed_before_ms();
    if request.dry_run {
        let runs = core.store.admin().count_closed_runs(closed_before).await?;
        return Ok(PurgeReport { runs, more: false });
    }
    let batch = request.batch_size();
    let purged = purge_batch(core, closed_before, batch).await?;
    Ok(PurgeReport {
        runs: purged.len() as u64,
        more: purged.len() >= batch,
    })
}

/// Purges one batch from the store and forgets the purged runs this engine still held as
/// hot (a terminated run stays there until evicted): a query must find them gone.
async fn purge_batch(core: &Core, closed_before: i64, max: usize) -> Result<Vec<String>, WfError> {
    let purged = core
        .store
        .admin()
        .purge_closed_runs(closed_before, max)
        .await?;
    core.worker.forget_runs(&purged);
    Ok(purged)
}

/// How long the task waits between passes for a retention period: a tenth of it, within
/// [`MIN_CHECK_EVERY`] and [`MAX_CHECK_EVERY`].
fn check_every(retention: Duration) -> Duration {
    (retention / 10).clamp(MIN_CHECK_EVERY, MAX_CHECK_EVERY)
}

/// One pass: purges every run closed before `now - retention`, batch after batch, until none
/// is left or the engine shuts down. Returns how many went.
async fn pass(core: &Core, retention: Duration) -> Result<u64, WfError> {
    let cutoff = core.now_ms().saturating_sub(duration_ms(retention));
    let mut total = 0;
    loop {
        if core.is_shutdown() {
            return Ok(total);
        }
        let purged = purge_batch(core, cutoff, DEFAULT_PURGE_BATCH).await?;
        total += purged.len() as u64;
        if purged.len() < DEFAULT_PURGE_BATCH {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

/// Purges runs closed longer than `retention` ago, now and then every [`check_every`] of the
/// engine clock, until shutdown. A failed pass is logged and tried again at the next one.
pub(crate) async fn run(core: Arc<Core>, retention: Duration) {
    let mut shutdown = core.wake.shutdown.subscribe();
    let every = duration_ms(check_every(retention));
    loop {
        if core.is_shutdown() {
            break;
        }
        // From the pass's start: if the clock moved on during the pass, the next one is due.
        let next = core.now_ms().saturating_add(every);
        match pass(&core, retention).await {
            Ok(0) => {}
            Ok(runs) => tracing::info!(runs, "retention: purged closed runs"),
            Err(e) => tracing::warn!(error = %e, "retention: purging closed runs failed"),
        }
        let clock = core.clock.clone();
        tokio::select! {
            () = clock.sleep_until(next) => {}
            _ = shutdown.changed() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_come_every_tenth_of_the_period_within_bounds() {
        let day = Duration::from_secs(86_400);
        assert_eq!(check_every(30 * day), MAX_CHECK_EVERY);
        assert_eq!(
            check_every(Duration::from_secs(600)),
            Duration::from_secs(60)
        );
        assert_eq!(check_every(Duration::from_millis(10)), MIN_CHECK_EVERY);
    }
}
