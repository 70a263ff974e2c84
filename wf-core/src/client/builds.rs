//! Worker versioning for operators: make a build current for a task queue, see which builds
//! still run what ("pin, then drain"), and move a pinned run whose build is gone.

use super::Client;
use crate::data::versioning::BuildIdStatus;
use crate::error::WfError;

impl Client {
    /// Makes `build_id` the current build of `task_queue`: new runs on the queue start on it
    /// (only engines with that [`build_id`](crate::EngineBuilder::build_id) take their
    /// workflow tasks), and the queue's running auto-upgrade runs move to it from their next
    /// workflow task on. Pinned runs stay on their build until they close: watch
    /// [`build_ids`](Self::build_ids) to see when an old build has drained.
    ///
    /// ```no_run
    /// # async fn demo(client: wf_core::Client) -> Result<(), wf_core::WfError> {
    /// client.set_current_build("default", "2026-12-01.2").await?;
    /// let old = client.build_ids(Some("default")).await?;
    /// let drained = old.iter().all(|b| b.build_id != "2026-12-01.1" || b.drained());
    /// # let _ = drained; Ok(()) }
    /// ```
    pub async fn set_current_build(&self, task_queue: &str, build_id: &str) -> Result<(), WfError> {
        self.transport.set_current_build(task_queue, build_id).await
    }

    /// Per build id (sorted), how many running runs are on it, by behaviour (pinned,
    /// auto-upgrade, not started yet), and which task queues it is current for; of
    /// `task_queue` alone if given. A build appears while a running run is on it or a queue
    /// has it as current. Unversioned runs (of engines without a build id) are not counted.
    pub async fn build_ids(&self, task_queue: Option<&str>) -> Result<Vec<BuildIdStatus>, WfError> {
        self.transport.build_ids(task_queue).await
    }

    /// Moves the running latest run of `workflow_id` to build `build_id`: from then on only
    /// engines of that build take its workflow tasks. The escape hatch for a pinned run whose
    /// build is gone (its new build must replay its history). `NotFound` for an unknown
    /// workflow id, `RunFinished` for a closed run.
    pub async fn move_to_build(&self, workflow_id: &str, build_id: &str) -> Result<(), WfError> {
        self.transport.move_to_build(workflow_id, build_id).await
    }
}
