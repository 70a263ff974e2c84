//! Flow limits: an operator's changes to the limits the store holds, after which this engine
//! reads them again and looks for activity work (a raised limit may let attempts start).

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
