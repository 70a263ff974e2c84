//! How the parts of one engine wake each other: a `Notify` per worker, per-workflow-id
//! wake-ups for clients waiting on a result or an update, and the shutdown signal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, Notify};

/// The wake-ups of one engine.
pub(crate) struct Wakeups {
    /// Work for the workflow worker may be in the store.
    pub workflow: Notify,
    /// Activity tasks may be visible.
    pub activity: Notify,
    /// The time keeper's next deadline may have moved earlier.
    pub timer: Notify,
    /// Clients waiting on a workflow id.
    pub waiters: Waiters,
    /// Set once the engine stops.
    pub shutdown: watch::Sender<bool>,
    /// Set when the engine is dropped rather than shut down: workers stop without releasing
    /// anything, as a crashed process would (leases expire instead).
    crashed: AtomicBool,
}

impl Wakeups {
    pub fn new() -> Self {
        Wakeups {
            workflow: Notify::new(),
            activity: Notify::new(),
            timer: Notify::new(),
            waiters: Waiters::default(),
            shutdown: watch::channel(false).0,
            crashed: AtomicBool::new(false),
        }
    }

    pub fn is_shutdown(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Stops every loop of the engine.
    pub fn stop(&self) {
        self.shutdown.send_replace(true);
        self.workflow.notify_one();
        self.activity.notify_one();
        self.timer.notify_one();
    }

    /// Marks the stop as a crash (see `crashed`).
    pub fn mark_crashed(&self) {
        self.crashed.store(true, Ordering::SeqCst);
    }

    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }
}

/// Per-workflow-id wake-ups for clients waiting on a result or an update.
#[derive(Default)]
pub(crate) struct Waiters {
    map: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Waiters {
    pub fn subscribe(&self, workflow_id: &str) -> Arc<Notify> {
        let mut map = self
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        map.entry(workflow_id.to_string()).or_default().clone()
    }

    pub fn publish(&self, workflow_id: &str) {
        let mut map = self
            .map
            .lock()
            .expect("waiters lock is never poisoned: no code panics under it");
        if let Some(n) = map.get(workflow_id) {
            n.notify_waiters();
            if Arc::strong_count(n) == 1 {
                map.remove(workflow_id);
            }
        }
    }
}
