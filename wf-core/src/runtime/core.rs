//! What the parts of one engine share: its store and clock, what it runs, its tunables, how
//! its parts wake each other, and the handles on its workflow worker and activity slots.

use super::activity_worker::ActivitySlots;
use super::catalog::Catalog;
use super::clock::Clock;
use super::config::Config;
use super::liveness::Liveness;
use super::wakeups::Wakeups;
use super::worker::WorkerHandle;
use crate::metrics::{EngineMetrics, MetricsSnapshot};
use crate::store::Store;
use std::sync::Arc;

/// The shared state of one engine.
pub(crate) struct Core {
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    pub catalog: Catalog,
    pub config: Config,
    /// This engine's identity as a lease owner.
    pub worker_id: String,
    /// (Shared with the thread that receives peers' pokes, which must not keep the store open.)
    pub wake: Arc<Wakeups>,
    /// How the client and the activity worker reach the workflow worker in memory.
    pub worker: WorkerHandle,
    pub activities: ActivitySlots,
    /// This engine's liveness lease in the store.
    pub liveness: Liveness,
    /// Where other engines poke this one (see `peers.rs`), if it listens.
    pub wake_address: Option<String>,
    /// What this engine counts and times (see `crate::metrics`).
    pub metrics: EngineMetrics,
    /// The store's flow limits as this engine last read them.
    pub flow: super::flow::FlowView,
}

impl Core {
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn is_shutdown(&self) -> bool {
        self.wake.is_shutdown()
    }

    /// This engine's metrics and its store's.
    pub fn metrics_snapshot(&self) -> MetricsSnapshot {
        let store = self.store.metrics();
        self.metrics.snapshot(store.as_deref())
    }
}
