//! The engine's liveness lease: every engine registers in the store and renews its
//! registration while it lives, so that a crashed process's leases (workflow tasks and
//! activity attempts, whatever their own timeouts) are free within seconds, and so that its
//! peers know where to poke it (`peers.rs`). In an engine with workers the time keeper renews
//! it, before anything else on each of its passes, so that an engine never sees its own leases
//! as lost; a client-only engine (which holds no lease) renews it from [`keep_alive`].

use super::core::Core;
use crate::data::activity::duration_ms;
use crate::error::WfError;
use crate::store::EngineRecord;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

/// When this engine last renewed its liveness lease (engine-clock ms), and whether other
/// engines were live then.
#[derive(Default)]
pub(crate) struct Liveness {
    renewed_ms: AtomicI64,
    /// Other engines share the store: a message for a run cached here may reach its inbox
    /// from them, so a cached query looks there first (see `in_process/query.rs`).
    others: AtomicBool,
    /// The last renewal failed: the store cannot be reached (or refuses writes).
    out_of_touch: AtomicBool,
    /// When a renewal succeeded again after failing (engine-clock ms; 0 until then).
    back_ms: AtomicI64,
}

impl Liveness {
    /// The lease's length, in milliseconds.
    fn lease_ms(core: &Core) -> i64 {
        duration_ms(core.config.liveness_lease).max(3)
    }

    /// When the next renewal is due (a third of the lease after the last: two may be missed).
    pub fn next_renewal_ms(core: &Core) -> i64 {
        let renewed = core.liveness.renewed_ms.load(Ordering::Relaxed);
        renewed.saturating_add(Self::lease_ms(core) / 3)
    }

    /// Whether this engine may judge other engines dead at `now_ms` (their liveness leases
    /// ran out): not while its own renewals fail, nor for a lease's length after one succeeds
    /// again or ends a gap longer than a lease. An outage of the store stops every engine's renewals alike: an engine that is
    /// back must give the others a lease's length to renew before it retries their activity
    /// attempts (which would run them twice).
    pub fn may_judge_others(core: &Core, now_ms: i64) -> bool {
        let liveness = &core.liveness;
        if liveness.out_of_touch.load(Ordering::Relaxed) {
            return false;
        }
        let back = liveness.back_ms.load(Ordering::Relaxed);
        back == 0 || now_ms >= back.saturating_add(Self::lease_ms(core))
    }

    /// Whether other live engines were registered at the last registration or renewal.
    pub fn others_live(&self) -> bool {
        self.others.load(Ordering::Relaxed)
    }
}

/// Counts the live engines other than this one (any, if the store cannot tell).
async fn count_others(core: &Core, now_ms: i64) {
    let others = match core.store.admin().live_engines(now_ms).await {
        Ok(engines) => engines.iter().any(|e| e.engine_id != core.worker_id),
        Err(_) => true,
    };
    core.liveness.others.store(others, Ordering::Relaxed);
}

fn record(core: &Core, now_ms: i64) -> EngineRecord {
    EngineRecord {
        engine_id: core.worker_id.clone(),
        wake_address: core.wake_address.clone(),
        task_queue: core.config.task_queue.clone(),
        started_ms: now_ms,
        lease_until_ms: now_ms.saturating_add(Liveness::lease_ms(core)),
    }
}

/// Registers the engine in the store (when it starts its workers).
pub(crate) async fn register(core: &Arc<Core>) -> Result<(), WfError> {
    let now = core.now_ms();
    core.store
        .admin()
        .register_engine(record(core, now))
        .await?;
    core.liveness.renewed_ms.store(now, Ordering::Relaxed);
    count_others(core, now).await;
    Ok(())
}

/// Renews the engine's liveness lease if a renewal is due at `now_ms` (registering again if
/// the store lost the row).
pub(crate) async fn renew_if_due(core: &Arc<Core>, now_ms: i64) {
    if now_ms < Liveness::next_renewal_ms(core) {
        return;
    }
    let until = now_ms.saturating_add(Liveness::lease_ms(core));
    let renewed = match core
        .store
        .admin()
        .renew_engine(&core.worker_id, until)
        .await
    {
        Ok(true) => Ok(()),
        Ok(false) => {
            core.store
                .admin()
                .register_engine(record(core, now_ms))
                .await
        }
        Err(e) => Err(e),
    };
    let liveness = &core.liveness;
    match renewed {
        Ok(()) => {
            // Out of touch: the last renewal failed, or this one (or the wait for it) took
            // longer than a lease (a store that blocks calls while it is away).
            let done = core.now_ms();
            let previous = liveness.renewed_ms.swap(now_ms, Ordering::Relaxed);
            let failed_before = liveness.out_of_touch.swap(false, Ordering::Relaxed);
            if failed_before || done.saturating_sub(previous) > Liveness::lease_ms(core) {
                liveness.back_ms.store(done.max(1), Ordering::Relaxed);
            }
        }
        Err(e) => {
            liveness.out_of_touch.store(true, Ordering::Relaxed);
            tracing::warn!(error = %e, "renewing the engine's liveness lease failed");
        }
    }
    count_others(core, now_ms).await;
    super::flow::refresh(core).await;
}

/// Renews the liveness lease of an engine without a time keeper (a client-only one) until
/// shutdown.
pub(crate) async fn keep_alive(core: Arc<Core>) {
    let mut shutdown = core.wake.shutdown.subscribe();
    loop {
        if core.is_shutdown() {
            break;
        }
        renew_if_due(&core, core.now_ms()).await;
        // After a failed renewal the next one is already due: try again shortly, not at once.
        let next = Liveness::next_renewal_ms(&core).max(core.now_ms().saturating_add(100));
        let clock = core.clock.clone();
        tokio::select! {
            () = clock.sleep_until(next) => {}
            _ = shutdown.changed() => {}
        }
    }
}

/// Removes the engine from the store (a clean shutdown: its leases were released).
pub(crate) async fn remove(core: &Arc<Core>) {
    if let Err(e) = core.store.admin().remove_engine(&core.worker_id).await {
        tracing::warn!(error = %e, "removing the engine from the store failed");
    }
}
