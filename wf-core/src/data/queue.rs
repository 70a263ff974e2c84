//! Queues of workflow starts (DBOS's queues): a start put on a named queue creates its run at
//! once but holds it until the queue admits it, at most `concurrency` of the queue's runs
//! running at once over every engine that shares the store.

use serde::{Deserialize, Serialize};

/// The start time of a run held by its queue: later than any clock, so that no engine leases
/// it (a start delay that never runs out) until its queue admits it and sets the start time
/// to the time of its admission. Half of `i64::MAX`, so that sums with it cannot overflow.
pub const QUEUE_HELD_MS: i64 = i64::MAX / 2;

/// The settings of a queue of workflow starts, held by the store: how many of its runs may
/// run at once, over every engine that shares the store. A queue without settings admits
/// every start at once.
///
/// ```
/// use wf_core::WorkflowQueue;
/// let q = WorkflowQueue::new("emails").concurrency(2);
/// assert_eq!(q.concurrency, Some(2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowQueue {
    /// The queue's name, as starts name it ([`StartOptions::queue`](crate::StartOptions::queue)).
    pub name: String,
    /// At most this many of the queue's admitted runs running at once; `None`: no cap.
    #[serde(default)]
    pub concurrency: Option<u32>,
}

impl WorkflowQueue {
    /// A queue named `name` without limits (it admits every start at once).
    pub fn new(name: impl Into<String>) -> Self {
        WorkflowQueue {
            name: name.into(),
            concurrency: None,
        }
    }

    /// Sets [`concurrency`](Self::concurrency): at most `n` of the queue's runs at once.
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// Why the store would refuse the settings: an empty name, or a concurrency of 0 (that
    /// would hold every start for ever).
    pub fn check(&self) -> Result<(), String> {
        super::limits::Ident::TaskQueue
            .check(&self.name)
            .map_err(|e| format!("a workflow queue: {e}"))?;
        if self.concurrency == Some(0) {
            return Err(format!(
                "workflow queue {:?}: a concurrency of 0 would admit nothing; remove the \
                 queue's settings or set at least 1",
                self.name
            ));
        }
        Ok(())
    }
}

/// The queue a start goes on, as the store takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedStart {
    /// The queue's name.
    pub queue: String,
    /// Lower first; 0 unless the start says otherwise.
    pub priority: i32,
    /// A deduplication id: refused while a held or running run of the queue has it.
    pub dedupe_id: Option<String>,
}

/// A run's place on its queue, for describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSpot {
    /// The queue's name.
    pub queue: String,
    /// 1-based among the queue's held runs in admission order; `None` once admitted.
    pub position: Option<u64>,
}

/// What one admission pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueAdmission {
    /// Runs admitted (made ready) by this pass.
    pub admitted: u64,
    /// Runs still held on their queues after it.
    pub held: u64,
}
