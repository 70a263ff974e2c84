//! This engine's copy of the store's flow limits (`store/rules/flow.rs` enforces them; this
//! copy only steers the engine): the workflow worker leases a task's new activities at once
//! only when no limit covers them (a commit that tries anyway is refused by the store, and the
//! copy is then marked stale until it is read again), and the activity worker looks for work
//! more often while limits hold some back. Read when the engine starts, at each renewal of its
//! liveness lease, and when this engine's client changes a limit.
//!
//! It also keeps whether the store last said its limits may be holding attempts back
//! ([`FlowView::held_back`]): only then does an attempt that ends make the activity worker
//! look for work at once, to hand the slot it freed to one that waits. While no limit is full,
//! that look would find nothing, and would cost every attempt under a limit a store
//! transaction.

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
    /// The store's last answer (a poll's, or a commit's under the limits) said limits may be
    /// holding attempts back; also set at each read of the limits, which may be new.
    held_back: AtomicBool,
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

    /// Whether an attempt that ends here should make the activity worker look for work at
    /// once: limits are held and the store last said they may hold attempts back.
    ///
    /// A poll's answer and a commit's may arrive out of the order their transactions ran in,
    /// so a `true` can be overwritten by an older `false`: the attempt held back is then
    /// leased by the worker's next regular look ([`recheck`](Self::recheck)), not lost.
    pub fn should_look_after_end(&self) -> bool {
        self.any() && self.held_back.load(Ordering::Relaxed)
    }

    /// Records what a poll answered: whether the limits may hold attempts back.
    pub fn poll_answered(&self, held_back: bool) {
        self.held_back.store(held_back, Ordering::Relaxed);
    }

    /// Records that a commit left attempts waiting or filled a limit (a commit's answer only
    /// ever sets the flag: it saw only the limits of its own activities).
    pub fn note_held_back(&self) {
        self.held_back.store(true, Ordering::Relaxed);
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
            // New limits may hold back what this engine never asked about.
            core.flow.held_back.store(true, Ordering::Relaxed);
        }
        Err(e) => tracing::warn!(error = %e, "reading the flow limits failed"),
    }
}
