//! The queue dispatcher: each engine that runs workers runs admission passes of the queues of
//! workflow starts (`store/rules/queues.rs` decides what each pass admits, in one
//! transaction): at least every `queue_recheck` (50 ms by default) while the store holds
//! runs on a queue, at once when this engine changes a queue's settings or when a run closes
//! on any engine of the store while runs are held (its slot is free: the close's engine wakes
//! its own dispatcher and pokes the peers'), and every [`IDLE`] otherwise (a start put on
//! a queue by an engine that stopped before admitting it). A start put on a queue runs a pass
//! of its own at once ([`admit_now`]), on any engine, one that runs no workers included.

use super::core::Core;
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
    match core.store.admin().admit_queued(core.now_ms()).await {
        Ok(pass) => {
            core.wake
                .queues_held
                .store(pass.held > 0, std::sync::atomic::Ordering::SeqCst);
            if pass.admitted > 0 {
                core.wake.workflow.notify_one();
            }
            Some(pass.held)
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
