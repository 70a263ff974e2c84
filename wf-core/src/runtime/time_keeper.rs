//! The time keeper: sleeps until the next moment something is due (a timer, an expired
//! activity lease or deadline, a retry backoff, a schedule), then has each duty done and
//! wakes the workers.

use super::activity_worker::expire_due;
use super::core::Core;
use super::liveness::{self, Liveness};
use super::scheduler;
use crate::store::{FiredTimer, LIMIT_TIMER_SEQ};
use std::sync::Arc;

/// Runs until shutdown.
pub(crate) async fn run(core: Arc<Core>) {
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        if core.is_shutdown() {
            break;
        }
        let now = core.now_ms();
        // First, so that this engine never sees its own leases as lost.
        liveness::renew_if_due(&core, now).await;
        match core.store.fire_due_timers(now, 1024).await {
            Ok(fired) if !fired.is_empty() => {
                core.metrics.timers_fired.add(fired.len() as u64);
                timed_out(&core, &fired);
                core.wake.workflow.notify_one()
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "firing timers failed"),
        }
        expire_due(&core, now).await;
        scheduler::process_due(&core, now).await;
        // Runs and activities that were waiting for this moment (retry backoffs) are due.
        // (This engine's loops only: each peer has its own time keeper.)
        core.wake.workflow.notify_local();
        core.wake.activity.notify_local();
        let next = match core.store.next_wakeup(now).await {
            Ok(next) => next,
            Err(e) => {
                tracing::error!(error = %e, "computing the next wake-up failed");
                None
            }
        };
        let renewal = Liveness::next_renewal_ms(&core);
        let next = Some(next.map_or(renewal, |t| t.min(renewal)));
        let clock = core.clock.clone();
        let sleep = async move {
            match next {
                Some(t) => clock.sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => {}
            _ = core.wake.timer.notified() => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep(core.config.poll_interval * 2) => {}
        }
    }
}

/// Runs that a limit timer among `fired` closed as timed out (the store did, in the firing
/// transaction): this worker must not answer queries from their cached instances, and their
/// running activities are told.
fn timed_out(core: &Core, fired: &[FiredTimer]) {
    let runs: Vec<String> = fired
        .iter()
        .filter(|t| t.seq == LIMIT_TIMER_SEQ)
        .map(|t| t.run_id.clone())
        .collect();
    if runs.is_empty() {
        return;
    }
    core.worker.forget_runs(&runs);
    core.wake.cancelled.notify_one();
    core.wake.feed_changed();
}
