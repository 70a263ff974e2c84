//! Flow limits as an operator sees them: set, list and remove the limits the store holds on
//! activity attempts, while the engines run. New attempts obey a changed limit from the next
//! poll on; attempts running go on. And the settings of the queues of workflow starts.

use super::Client;
use crate::data::flow::{FlowKind, FlowLimit, FlowScope, FlowUsage};
use crate::data::queue::{QueueUsage, WorkflowQueue};
use crate::error::WfError;

/// The flow limits of one store: `client.flow_limits()`.
///
/// ```no_run
/// # use wf_core::{Client, FlowKind, FlowLimit, FlowScope, WfError};
/// # async fn demo(client: Client) -> Result<(), WfError> {
/// let limits = client.flow_limits();
/// limits.set(FlowLimit::concurrency(FlowScope::key("openai"), 8)).await?;
/// for limit in limits.list().await? {
///     println!("{}: {:?}", limit.scope, limit.rule);
/// }
/// limits.remove(FlowScope::key("openai"), FlowKind::Concurrency).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct FlowLimits {
    client: Client,
}

impl FlowLimits {
    pub(super) fn new(client: Client) -> Self {
        FlowLimits { client }
    }

    /// Sets a limit, replacing its scope's limit of the same kind; every engine on the store
    /// leases new attempts under it from its next poll. A rate limit set again keeps the tokens
    /// its bucket holds (capped at the new burst): changing it grants no fresh burst.
    /// `InvalidArgument` for a limit [`FlowLimit::check`] refuses.
    pub async fn set(&self, limit: FlowLimit) -> Result<(), WfError> {
        limit.check().map_err(WfError::InvalidArgument)?;
        self.client.transport().set_flow_limit(limit).await
    }

    /// Every limit, by scope kind, scope name and rule kind.
    pub async fn list(&self) -> Result<Vec<FlowLimit>, WfError> {
        self.client.transport().flow_limits().await
    }

    /// Every limit with what it binds now: the attempts it covers running (holding a live
    /// lease, over every engine) and waiting (due, not leased), and a rate limit's whole
    /// tokens. One read of the store; what `wf queues describe` and `GET /_flow_limits/usage`
    /// show.
    pub async fn usage(&self) -> Result<Vec<FlowUsage>, WfError> {
        self.client.transport().flow_usage().await
    }

    /// Removes the limit of kind `kind` of `scope`; whether there was one. Attempts it held
    /// back may start at once.
    pub async fn remove(&self, scope: FlowScope, kind: FlowKind) -> Result<bool, WfError> {
        self.client.transport().remove_flow_limit(scope, kind).await
    }
}

/// The settings of the queues of workflow starts of one store: `client.workflow_queues()`.
///
/// ```no_run
/// # use wf_core::{Client, WfError, WorkflowQueue};
/// # async fn demo(client: Client) -> Result<(), WfError> {
/// let queues = client.workflow_queues();
/// queues.set(WorkflowQueue::new("emails").concurrency(2)).await?;
/// assert_eq!(queues.list().await?.len(), 1);
/// let emails = queues.describe("emails").await?;
/// println!("{} waiting, {} running", emails.waiting, emails.running);
/// queues.remove("emails").await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct WorkflowQueues {
    client: Client,
}

impl WorkflowQueues {
    pub(super) fn new(client: Client) -> Self {
        WorkflowQueues { client }
    }

    /// Sets a queue's settings, replacing those of the same name; every engine on the store
    /// admits the queue's runs under them from its next pass (runs admitted go on).
    /// `InvalidArgument` for settings [`WorkflowQueue::check`] refuses.
    pub async fn set(&self, queue: WorkflowQueue) -> Result<(), WfError> {
        queue.check().map_err(WfError::InvalidArgument)?;
        self.client.transport().set_workflow_queue(queue).await
    }

    /// Every queue's settings, by name (queues without settings are not listed).
    pub async fn list(&self) -> Result<Vec<WorkflowQueue>, WfError> {
        self.client.transport().workflow_queues().await
    }

    /// Every queue with settings or with runs on it, by name, with what it holds now: its runs
    /// held (waiting for room) and its admitted runs still running, over every engine, and
    /// its rate's whole tokens. One read of the store; what `wf queues list` and
    /// `GET /_workflow_queues/usage` show.
    pub async fn usage(&self) -> Result<Vec<QueueUsage>, WfError> {
        self.client.transport().workflow_queue_usage().await
    }

    /// Queue `name`'s settings and what it holds now (see [`usage`](Self::usage)). Any name is
    /// a queue: one without settings or runs answers with none of either
    /// ([`QueueUsage::configured`] false, nothing waiting or running).
    pub async fn describe(&self, name: &str) -> Result<QueueUsage, WfError> {
        let found = self
            .usage()
            .await?
            .into_iter()
            .find(|u| u.queue.name == name);
        Ok(found.unwrap_or_else(|| QueueUsage {
            queue: WorkflowQueue::new(name),
            configured: false,
            waiting: 0,
            running: 0,
            tokens: None,
        }))
    }

    /// Removes the settings of queue `name`: its held runs are then admitted at once. Whether
    /// it had any.
    pub async fn remove(&self, name: &str) -> Result<bool, WfError> {
        self.client.transport().remove_workflow_queue(name).await
    }
}
