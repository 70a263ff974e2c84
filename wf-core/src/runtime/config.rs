//! The tunables of one engine, set on its builder.

use crate::data::versioning::VersioningBehavior;
use crate::store::TaskBuild;
use std::collections::HashMap;
use std::time::Duration;

/// Tunables of an engine.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub cache_capacity: usize,
    pub workflow_task_lease: Duration,
    pub max_workflow_tasks: usize,
    pub max_activities: usize,
    /// How often idle workers look at the store for work from other processes.
    pub poll_interval: Duration,
    pub run_workers: bool,
    pub build_id: Option<String>,
    /// The versioning behaviour of each workflow type that sets one (by wire name) ...
    pub versioning: HashMap<&'static str, VersioningBehavior>,
    /// ... and of the others.
    pub default_versioning: VersioningBehavior,
    /// The task queue this engine's workflow worker serves (and its client starts runs on).
    pub task_queue: String,
    /// The other task queues whose activities this engine's activity worker runs (see
    /// `EngineBuilder::activity_task_queue`).
    pub activity_queues: Vec<String>,
    /// Whether a quiet worker polls a little before parking its thread (see
    /// `EngineBuilder::poll_when_quiet` and `spin.rs`).
    pub poll_when_quiet: bool,
    /// How long the store keeps this engine's leases after its last sign of life (see
    /// `EngineBuilder::liveness_lease`).
    pub liveness_lease: Duration,
    /// How long an update call waits for its stage when the call sets no timeout.
    pub update_timeout: Duration,
    /// How long closed runs are kept before the retention task purges them (`None`: forever).
    pub retention: Option<Duration>,
    /// How often the queue dispatcher looks at the queues while runs are held on one (see
    /// `EngineBuilder::queue_recheck`).
    pub queue_recheck: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cache_capacity: 10_000,
            workflow_task_lease: Duration::from_secs(10),
            max_workflow_tasks: 256,
            max_activities: 64,
            poll_interval: Duration::from_millis(500),
            run_workers: true,
            build_id: None,
            versioning: HashMap::new(),
            default_versioning: VersioningBehavior::default(),
            task_queue: crate::data::run::DEFAULT_TASK_QUEUE.to_string(),
            activity_queues: Vec::new(),
            poll_when_quiet: true,
            liveness_lease: Duration::from_secs(3),
            update_timeout: crate::client::DEFAULT_UPDATE_TIMEOUT,
            retention: None,
            queue_recheck: Duration::from_millis(50),
        }
    }
}

impl Config {
    /// What a workflow task of `workflow_type` records of this engine's build (`None`: the
    /// engine has no build id).
    pub fn task_build(&self, workflow_type: &str) -> Option<TaskBuild> {
        let build_id = self.build_id.clone()?;
        let behavior = self
            .versioning
            .get(workflow_type)
            .copied()
            .unwrap_or(self.default_versioning);
        Some(TaskBuild { build_id, behavior })
    }

    /// The task queues whose activities this engine runs: its own, then the others it serves.
    pub fn served_queues(&self) -> Vec<String> {
        let mut queues = vec![self.task_queue.clone()];
        for q in &self.activity_queues {
            if !queues.contains(q) {
                queues.push(q.clone());
            }
        }
        queues
    }

    /// Whether this engine runs the activities sent to task queue `queue`.
    pub fn serves_activities_of(&self, queue: &str) -> bool {
        self.task_queue == queue || self.activity_queues.iter().any(|q| q == queue)
    }

    /// The workflow task lease, in milliseconds.
    pub fn lease_ms(&self) -> i64 {
        crate::data::activity::duration_ms(self.workflow_task_lease)
    }
}
