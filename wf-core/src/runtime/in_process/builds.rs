//! Worker versioning: which build of a task queue is current, and moving a run to a build.

use super::Core;
use crate::data::limits::Ident;
use crate::data::versioning::BuildIdStatus;
use crate::error::WfError;

/// Makes a build current for a task queue; wakes the engines that may now have work.
pub(super) async fn make_current(
    core: &Core,
    task_queue: &str,
    build_id: &str,
) -> Result<(), WfError> {
    Ident::TaskQueue.check(task_queue)?;
    Ident::BuildId.check(build_id)?;
    core.store
        .admin()
        .set_current_build(task_queue, build_id)
        .await?;
    core.wake.workflow.notify_one();
    Ok(())
}

/// The builds known for `task_queue` (every queue's if `None`).
pub(super) async fn list(
    core: &Core,
    task_queue: Option<&str>,
) -> Result<Vec<BuildIdStatus>, WfError> {
    Ok(core.store.admin().build_ids(task_queue).await?)
}

/// Moves a run to another build; this engine forgets its copy (it may no longer run it).
pub(super) async fn move_run(
    core: &Core,
    workflow_id: &str,
    build_id: &str,
) -> Result<(), WfError> {
    Ident::WorkflowId.check(workflow_id)?;
    Ident::BuildId.check(build_id)?;
    let run = core
        .store
        .admin()
        .move_to_build(workflow_id, build_id)
        .await?;
    core.worker.forget_runs(&[run.run_id]);
    core.wake.workflow.notify_one();
    Ok(())
}
