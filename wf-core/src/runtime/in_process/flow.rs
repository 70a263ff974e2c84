//! Flow limits: an operator's changes to the limits the store holds, after which this engine
//! reads them again and looks for activity work (a raised limit may let attempts start); and
//! the settings of queues of workflow starts, after which its queue dispatcher looks again.

use super::Core;
use crate::data::flow::{FlowKind, FlowLimit, FlowScope, FlowUsage};
use crate::error::WfError;
use crate::runtime::flow;
use std::sync::Arc;

/// Sets a limit.
pub(super) async fn set(core: &Arc<Core>, limit: FlowLimit) -> Result<(), WfError> {
    limit.check().map_err(WfError::InvalidArgument)?;
    core.store
        .admin()
        .set_flow_limit(limit, core.now_ms())
        .await?;
    changed(core).await;
    Ok(())
}

/// Every limit.
pub(super) async fn list(core: &Arc<Core>) -> Result<Vec<FlowLimit>, WfError> {
    Ok(core.store.admin().flow_limits().await?)
}

/// Every limit, with what it binds now.
pub(super) async fn usage(core: &Arc<Core>) -> Result<Vec<FlowUsage>, WfError> {
    Ok(core.store.admin().flow_usage(core.now_ms()).await?)
}

/// Removes a limit; whether there was one.
pub(super) async fn remove(
    core: &Arc<Core>,
    scope: FlowScope,
    kind: FlowKind,
) -> Result<bool, WfError> {
    let removed = core.store.admin().remove_flow_limit(scope, kind).await?;
    changed(core).await;
    Ok(removed)
}

/// After a change: this engine's copy read again, its activity worker woken.
async fn changed(core: &Arc<Core>) {
    flow::refresh(core).await;
    core.wake.activity.notify_one();
}

/// Sets a queue's settings; the queue dispatcher then looks at once (a raised concurrency may
/// admit runs).
pub(super) async fn set_queue(
    core: &Arc<Core>,
    queue: crate::data::queue::WorkflowQueue,
) -> Result<(), WfError> {
    queue.check().map_err(WfError::InvalidArgument)?;
    let now = core.now_ms();
    core.store.admin().set_workflow_queue(queue, now).await?;
    core.wake.queues.notify_one();
    Ok(())
}

/// Every queue with what it holds now.
pub(super) async fn queue_usage(
    core: &Arc<Core>,
) -> Result<Vec<crate::data::queue::QueueUsage>, WfError> {
    Ok(core
        .store
        .admin()
        .workflow_queue_usage(core.now_ms())
        .await?)
}

/// Removes a queue's settings; whether it had any.
pub(super) async fn remove_queue(core: &Arc<Core>, name: &str) -> Result<bool, WfError> {
    let removed = core.store.admin().remove_workflow_queue(name).await?;
    core.wake.queues.notify_one();
    Ok(removed)
}
