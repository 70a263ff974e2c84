//! The queue dispatcher: each engine that runs workers runs admission passes of the queues of
//! workflow starts (`store/rules/queues.rs` decides what each pass admits, in one
//! transaction): at least every `queue_recheck` (50 ms by default) while the store holds
//! runs on a queue, at once when this engine changes a queue's settings or when a run closes
//! on any engine of the store while runs are held (its slot is free: the close's engine wakes
//! its own dispatcher and pokes the peers'), and every [`IDLE`] otherwise (a start put on
//! a queue by an engine that stopped before admitting it). A start put on a queue runs a pass
//! of its own at once ([`admit_now`]), on any engine, one that runs no workers included.

use super::core::Core;
use crate::data::queue::QueueAdmission;
use std::sync::Arc;
use std::time::Duration;

/// How often an engine looks at the queues while it saw none held: a safety net only, since a
/// queued start makes its own pass. Long enough that an engine whose store has no queues
/// spends next to nothing on them.
const IDLE: Duration = Duration::from_secs(1);

/// One admission pass now; the workflow workers (here and on the peers) are told of the runs
/// it admitted. How many runs are still held, `None` if the pass failed (it is logged: the
/// dispatchers try again).
pub(crate) async fn admit_now(core: &Core) -> Option<u64> {
    admission(core).await.map(|pass| pass.held)
}

/// [`admit_now`] after a start on `queue` that created run `started` (`None`: an existing run
/// was kept): when the pass leaves that run held (its queue had no room), the start counts in
/// `wf_queue_throttled_total`, once, here.
pub(crate) async fn admit_start(core: &Core, queue: &str, started: Option<&str>) -> Option<u64> {
    let pass = admission(core).await?;
    let Some(run_id) = started else {
        return Some(pass.held);
    };
    let waits = pass.queues.iter().any(|q| q.queue == queue && q.held > 0);
    // Only a queue that left runs held can have left this one: then ask where it is (another
    // engine's pass may have admitted it since).
    if waits {
        match core.store.admin().queue_spot(run_id).await {
            Ok(Some(spot)) if spot.position.is_some() => core.metrics.flow.queue(queue, 0, 1),
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "reading a queued run's place failed"),
        }
    }
    Some(pass.held)
}

/// One admission pass now, counted per queue in `wf_queue_admitted_total`.
async fn admission(core: &Core) -> Option<QueueAdmission> {
    match core.store.admin().admit_queued(core.now_ms()).await {
        Ok(pass) => {
            core.wake
                .queues_held
                .store(pass.held > 0, std::sync::atomic::Ordering::SeqCst);
            if pass.admitted > 0 {
                core.wake.workflow.notify_one();
            }
            for q in pass.queues.iter().filter(|q| q.admitted > 0) {
                core.metrics.flow.queue(&q.queue, q.admitted, 0);
            }
            Some(pass)
        }
        Err(e) => {
            tracing::warn!(error = %e, "admitting the runs waiting on their queues failed");
            None
        }
    }
}

/// Runs until shutdown.
pub(crate) async fn run(core: Arc<Core>) {
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        if core.is_shutdown() {
            break;
        }
        let recheck = core.config.queue_recheck;
        let wait = match admit_now(&core).await {
            Some(0) => IDLE.max(recheck),
            Some(_) => recheck,
            None => recheck.max(core.config.poll_interval),
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = core.wake.queues.notified() => {}
            _ = shutdown.changed() => {}
        }
    }
}
