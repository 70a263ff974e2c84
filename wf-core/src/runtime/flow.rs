//! This engine's copy of the store's flow limits (`store/rules/flow.rs` enforces them; this
//! copy only steers the engine): the workflow worker leases a task's new activities at once
//! only when no limit covers them (a commit that tries anyway is refused by the store, and the
//! copy is then marked stale until it is read again), and the activity worker looks for work
//! more often while limits hold some back. Read when the engine starts, at each renewal of its
//! liveness lease, and when this engine's client changes a limit.

use super::core::Core;
use crate::data::flow::{FlowCount, FlowLimit, FlowRule};
use crate::store::NewActivityTask;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How often an engine whose store holds flow limits looks for activity work at least: a slot
/// freed by another engine is seen this late at most (sooner when that engine pokes it).
const RECHECK: Duration = Duration::from_millis(50);

/// The store's flow limits as this engine last read them.
#[derive(Default)]
pub(crate) struct FlowView {
    limits: RwLock<Arc<Vec<FlowLimit>>>,
    /// A commit was refused for leasing covered activities at once: until the next read, lease
    /// none at once.
    stale: AtomicBool,
}

impl FlowView {
    /// Whether a limit may cover one of `activities`, scheduled by a run on `task_queue`.
    pub fn may_cover(&self, task_queue: &str, activities: &[NewActivityTask]) -> bool {
        if self.stale.load(Ordering::Relaxed) {
            return true;
        }
        let limits = self.current();
        activities.iter().any(|a| {
            let key = a.options.flow_key.as_deref();
            limits
                .iter()
                .any(|l| l.scope.covers(&a.name, a.options.queue_or(task_queue), key))
        })
    }

    /// Whether the store held any limit at the last read (or the copy is stale).
    pub fn any(&self) -> bool {
        self.stale.load(Ordering::Relaxed) || !self.current().is_empty()
    }

    /// How long the activity worker may wait before it looks for work again: its poll
    /// interval, shortened while limits hold: to [`RECHECK`], or to a rate limit's time
    /// between two starts if shorter (at least 1 ms).
    pub fn recheck(&self, poll_interval: Duration) -> Duration {
        if !self.any() {
            return poll_interval;
        }
        let step = self
            .current()
            .iter()
            .filter_map(|l| match &l.rule {
                FlowRule::Rate { limit, period, .. } if *limit > 0 => Some(*period / *limit),
                _ => None,
            })
            .min()
            .unwrap_or(RECHECK);
        poll_interval
            .min(RECHECK)
            .min(step)
            .max(Duration::from_millis(1))
    }

    /// Marks the copy stale (a commit was refused by a limit it did not hold).
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::Relaxed);
    }

    fn current(&self) -> Arc<Vec<FlowLimit>> {
        self.limits
            .read()
            .map(|l| l.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }
}

/// Adds what the store said its flow limits started and refused (in a poll, or a commit's
/// leases at once) to this engine's counters.
pub(crate) fn count(core: &Core, counts: &[FlowCount]) {
    for c in counts {
        let (scope_kind, scope) = (c.scope.kind(), c.scope.name());
        let kind = c.kind.as_str();
        core.metrics
            .flow
            .limit(scope_kind, scope, kind, c.started, c.throttled);
    }
}

/// Reads the store's limits into the engine's copy (a failed read keeps the old copy).
pub(crate) async fn refresh(core: &Arc<Core>) {
    match core.store.admin().flow_limits().await {
        Ok(limits) => {
            let limits = Arc::new(limits);
            match core.flow.limits.write() {
                Ok(mut l) => *l = limits,
                Err(poisoned) => *poisoned.into_inner() = limits,
            }
            core.flow.stale.store(false, Ordering::Relaxed);
        }
        Err(e) => tracing::warn!(error = %e, "reading the flow limits failed"),
    }
}
