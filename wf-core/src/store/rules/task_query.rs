//! What a poll for work asks the store's primitives for: due runs or activities, filtered by
//! name, task queue and build, and, for activities, leaving out those a full flow limit covers.

/// What a poll for work asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskQuery<'a> {
    /// Due at this time.
    pub now_ms: i64,
    /// At most this many.
    pub max: usize,
    /// Only these workflow types (runs) or activity names (activities); `None`: any.
    pub names: Option<&'a [String]>,
    /// Runs: only those on these task queues. Activities: those sent to a task queue
    /// (`ActivityOptions::task_queue`) only if it is one of these, the others whatever their
    /// queue. `None`: any.
    pub queues: Option<&'a [String]>,
    /// The engine polling: its own leases never count as lost to an expired liveness lease
    /// (it is alive: it is polling).
    pub poller: &'a str,
    /// The poller's build id (runs): only runs without a build, or of this build, are ready
    /// for it. Activities ignore it.
    pub build_id: Option<&'a str>,
    /// Activities only: leave out those a flow limit without room covers.
    pub blocked: Option<&'a FlowBlocked>,
}

/// The activities a poll leaves out because a flow limit that covers them has no room left:
/// those of these names, of runs on these task queues, or with these flow keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowBlocked {
    /// Activity names.
    pub names: Vec<String>,
    /// Task queues.
    pub queues: Vec<String>,
    /// Flow keys.
    pub keys: Vec<String>,
}

impl FlowBlocked {
    /// Whether it leaves nothing out.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.queues.is_empty() && self.keys.is_empty()
    }

    /// Whether it leaves out an activity named `name` on `task_queue` with flow key `key`.
    pub fn blocks(&self, name: &str, task_queue: &str, key: Option<&str>) -> bool {
        self.names.iter().any(|n| n == name)
            || self.queues.iter().any(|q| q == task_queue)
            || key.is_some_and(|k| self.keys.iter().any(|b| b == k))
    }
}
