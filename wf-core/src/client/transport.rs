//! [`Transport`]: how a [`Client`](crate::Client) reaches runs. The engine in this process
//! implements it (with its in-memory fast paths); a remote transport (wf-http) carries the
//! same calls to a server, so the typed handles work the same either way.

use super::activities::{ActivityResponse, ActivityTaskLease, ActivityTaskPoll};
use super::purge::{PurgeReport, PurgeRequest};
use super::stream::StreamRead;
use super::types::{Description, RunInfo, SignalStatus, StartOptions, UpdateStage};
use crate::batch::{BatchDescription, BatchRequest};
use crate::data::feed::{FeedPage, FeedRead};
use crate::data::flow::{FlowKind, FlowLimit, FlowScope, FlowUsage};
use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::queue::{QueueUsage, WorkflowQueue};
use crate::data::run::ListFilter;
use crate::data::stream::{StreamList, StreamPage};
use crate::data::versioning::BuildIdStatus;
use crate::error::WfError;
use crate::metrics::MetricsSnapshot;
use crate::schedule::{ScheduleAction, ScheduleDescription, SchedulePolicies, ScheduleSpec};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The future of every [`Transport`] call.
pub type CallFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, WfError>> + Send + 'a>>;

/// Polls a paging reader's call in flight (a stream's or the feed's next page), made by
/// `request` if none is: its answer once it came (the slot is then free for the next one).
pub(super) fn poll_call<T>(
    pending: &mut Option<CallFuture<'static, T>>,
    request: impl FnOnce() -> CallFuture<'static, T>,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<Result<T, WfError>> {
    let call = pending.get_or_insert_with(request);
    let answer = std::task::ready!(call.as_mut().poll(cx));
    *pending = None;
    std::task::Poll::Ready(answer)
}

/// A start: a new run of `workflow_type` under `workflow_id`, with messages (signals,
/// updates) delivered atomically with it.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The workflow id.
    pub workflow_id: String,
    /// The workflow type's wire name.
    pub workflow_type: String,
    /// The encoded input.
    pub input: Payload,
    /// Id-conflict policy and task queue.
    pub options: StartOptions,
    /// Messages for the run, in order (signal-with-start, update-with-start).
    pub messages: Vec<Message>,
}

/// What a start did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// The workflow id of that run: the start's own, or the waiting run's that a debounced
    /// start joined ([`Debounce`](crate::Debounce)).
    pub workflow_id: String,
    /// The run now addressed by the workflow id.
    pub run_id: String,
    /// False when a running run was kept (`IdConflictPolicy::UseExisting`).
    pub started: bool,
}

/// A signal for the latest run of a workflow id.
#[derive(Debug, Clone)]
pub struct SignalRequest<'a> {
    /// The workflow id.
    pub workflow_id: &'a str,
    /// The signal's wire name.
    pub name: &'a str,
    /// Encoded arguments (a tuple).
    pub args: Payload,
    /// Dedupe id: a signal sent again with it applies once.
    pub signal_id: Option<String>,
    /// Whether the sender knows that the workflow type has a `#[signal]` handler of this name
    /// (`None`: it does not know the type). A transport that knows the type better (the engine
    /// it is registered with) decides itself.
    pub handled: Option<bool>,
}

/// An update for the latest run of a workflow id.
#[derive(Debug, Clone)]
pub struct UpdateRequest<'a> {
    /// The workflow id.
    pub workflow_id: &'a str,
    /// The update's wire name.
    pub name: &'a str,
    /// Encoded arguments (a tuple).
    pub args: Payload,
    /// Dedupe id: a retry with it returns the first call's outcome. `None`: a fresh one.
    pub update_id: Option<String>,
    /// What to wait for.
    pub stage: UpdateStage,
    /// How long to wait for `stage` before giving up with [`WfError::Timeout`] (the update
    /// stays queued and a retry with the same update id returns its outcome). `None`: the
    /// transport's default ([`Transport::update_timeout`]).
    pub timeout: Option<Duration>,
}

/// A schedule to create.
#[derive(Debug, Clone)]
pub struct NewSchedule {
    /// When it fires.
    pub spec: ScheduleSpec,
    /// What it starts.
    pub action: ScheduleAction,
    /// Overlap and catch-up.
    pub policies: SchedulePolicies,
}

/// A change to a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleChange {
    /// Stop firing (with a note for operators).
    Pause(String),
    /// Fire again, from now (with a note).
    Unpause(String),
    /// Take an action now (the overlap policy applies).
    Trigger,
}

/// How a [`Client`](crate::Client) reaches runs: every client call, on encoded payloads.
///
/// The engine's client uses the engine in this process; another implementation may carry the
/// calls elsewhere (an HTTP server). Each method's contract is the one of the client method
/// of the same name.
pub trait Transport: Send + Sync + 'static {
    /// Starts a run (see [`Client::start_raw`](crate::Client::start_raw)).
    fn start(&self, request: StartRequest) -> CallFuture<'_, Started>;
    /// Sends a signal (see [`Client::signal_raw`](crate::Client::signal_raw)).
    fn signal<'a>(&'a self, request: SignalRequest<'a>) -> CallFuture<'a, SignalStatus>;
    /// Runs a query (see [`Client::query_raw`](crate::Client::query_raw)).
    fn query<'a>(
        &'a self,
        workflow_id: &'a str,
        name: &'a str,
        args: Payload,
    ) -> CallFuture<'a, Payload>;
    /// Runs a query as of history event `at_event` of the latest run, answered by replay of
    /// its history up to that event (see [`Client::query_at`](crate::Client::query_at)).
    ///
    /// The default fails with [`WfError::InvalidArgument`]: a transport that cannot carry
    /// it says so rather than answer from the current state.
    fn query_at<'a>(
        &'a self,
        workflow_id: &'a str,
        name: &'a str,
        args: Payload,
        at_event: u64,
    ) -> CallFuture<'a, Payload> {
        let _ = (name, args);
        Box::pin(async move {
            Err(WfError::InvalidArgument(format!(
                "this client's transport cannot run a query on {workflow_id} as of event {at_event}; use an engine's client or wf-http's"
            )))
        })
    }
    /// Sends an update and waits for its stage; returns its id and value (see
    /// [`Client::update_raw`](crate::Client::update_raw)).
    ///
    /// When `stage` is not reached within the request's timeout (or
    /// [`update_timeout`](Self::update_timeout)), it fails with [`WfError::Timeout`] naming the
    /// update id, and the update stays queued.
    fn update<'a>(&'a self, request: UpdateRequest<'a>) -> CallFuture<'a, (String, Payload)>;
    /// How long an update call waits when it sets no timeout of its own
    /// ([`DEFAULT_UPDATE_TIMEOUT`](crate::client::DEFAULT_UPDATE_TIMEOUT) unless the transport
    /// was configured otherwise, e.g. with `EngineBuilder::update_timeout`).
    fn update_timeout(&self) -> Duration {
        super::types::DEFAULT_UPDATE_TIMEOUT
    }
    /// Waits until an update sent earlier reaches `stage`.
    fn wait_update<'a>(
        &'a self,
        workflow_id: &'a str,
        update_id: &'a str,
        stage: UpdateStage,
    ) -> CallFuture<'a, Payload>;
    /// Waits for the workflow id's result, following continue-as-new.
    fn result<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Payload>;
    /// The history of a run (`run_id`), or of the workflow id's latest run.
    fn history<'a>(
        &'a self,
        workflow_id: &'a str,
        run_id: Option<&'a str>,
    ) -> CallFuture<'a, Vec<HistoryEvent>>;
    /// Status and pending work of the latest run.
    fn describe<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, Description>;
    /// Runs matching `filter`, newest first.
    fn list(&self, filter: ListFilter) -> CallFuture<'_, Vec<RunInfo>>;
    /// How many runs match `filter` (see [`Client::count`](crate::Client::count)).
    fn count(&self, filter: ListFilter) -> CallFuture<'_, u64>;
    /// Pauses the latest run (see [`Client::pause`](crate::Client::pause)); `by` names the
    /// caller for the record (a server puts the caller's token role; a remote transport's
    /// server decides it, not the client).
    fn pause<'a>(
        &'a self,
        workflow_id: &'a str,
        reason: &'a str,
        by: &'a str,
    ) -> CallFuture<'a, ()>;
    /// Unpauses the latest run (see [`Client::unpause`](crate::Client::unpause)).
    fn unpause<'a>(&'a self, workflow_id: &'a str) -> CallFuture<'a, ()>;
    /// Requests cancellation of the latest run.
    fn cancel<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()>;
    /// Terminates the latest run.
    fn terminate<'a>(&'a self, workflow_id: &'a str, reason: &'a str) -> CallFuture<'a, ()>;
    /// Creates a schedule.
    fn create_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        schedule: NewSchedule,
    ) -> CallFuture<'a, ()>;
    /// Describes a schedule.
    fn describe_schedule<'a>(&'a self, schedule_id: &'a str)
        -> CallFuture<'a, ScheduleDescription>;
    /// Every schedule, described, by id.
    fn list_schedules(&self) -> CallFuture<'_, Vec<ScheduleDescription>>;
    /// Pauses, unpauses or triggers a schedule.
    fn change_schedule<'a>(
        &'a self,
        schedule_id: &'a str,
        change: ScheduleChange,
    ) -> CallFuture<'a, ()>;
    /// Deletes a schedule (its running actions go on).
    fn delete_schedule<'a>(&'a self, schedule_id: &'a str) -> CallFuture<'a, ()>;
    /// Starts a batch (see [`Batches::start`](crate::client::Batches::start)).
    fn start_batch(&self, request: BatchRequest) -> CallFuture<'_, BatchDescription>;
    /// Every batch, newest first.
    fn list_batches(&self) -> CallFuture<'_, Vec<BatchDescription>>;
    /// Describes a batch.
    fn describe_batch<'a>(&'a self, batch_id: &'a str) -> CallFuture<'a, BatchDescription>;
    /// Cancels a running batch.
    fn cancel_batch<'a>(&'a self, batch_id: &'a str) -> CallFuture<'a, BatchDescription>;
    /// Purges one batch of closed runs, or counts them (see
    /// [`Client::purge`](crate::Client::purge)).
    fn purge(&self, request: PurgeRequest) -> CallFuture<'_, PurgeReport>;
    /// Resets, forks, resumes or deletes one run (see
    /// [`Client::repair`](crate::Client::repair)).
    fn repair(
        &self,
        request: super::repair::RepairRequest,
    ) -> CallFuture<'_, super::repair::RepairReport>;
    /// Completes, fails or heartbeats the activity attempt a task token names (see
    /// [`Client::respond_activity`](crate::Client::respond_activity)).
    fn respond_activity<'a>(
        &'a self,
        token: &'a str,
        response: ActivityResponse,
    ) -> CallFuture<'a, ()>;
    /// Leases one activity task for a worker outside the engine (see
    /// [`Client::poll_activity_task`](crate::Client::poll_activity_task)); the default fails
    /// with [`WfError::InvalidArgument`]: only an engine's transport leases tasks.
    fn poll_activity_task(
        &self,
        poll: ActivityTaskPoll,
    ) -> CallFuture<'_, Option<ActivityTaskLease>> {
        let _ = poll;
        Box::pin(async move { Err(flow_unsupported("lease activity tasks")) })
    }
    /// Makes a build current for a task queue (see
    /// [`Client::set_current_build`](crate::Client::set_current_build)).
    fn set_current_build<'a>(
        &'a self,
        task_queue: &'a str,
        build_id: &'a str,
    ) -> CallFuture<'a, ()>;
    /// Running runs counted by build (see [`Client::build_ids`](crate::Client::build_ids)).
    fn build_ids<'a>(&'a self, task_queue: Option<&'a str>) -> CallFuture<'a, Vec<BuildIdStatus>>;
    /// Moves a run to another build (see
    /// [`Client::move_to_build`](crate::Client::move_to_build)).
    fn move_to_build<'a>(&'a self, workflow_id: &'a str, build_id: &'a str) -> CallFuture<'a, ()>;
    /// Whether the runs can be reached now: one cheap read of the store (see
    /// [`Client::ready`](crate::Client::ready)). No deadline of its own: the caller puts one
    /// around it.
    fn ready(&self) -> CallFuture<'_, ()>;
    /// Sets a flow limit (see [`FlowLimits::set`](crate::client::FlowLimits::set)).
    ///
    /// The default fails with [`WfError::InvalidArgument`]: a transport that cannot carry it
    /// says so.
    fn set_flow_limit(&self, limit: FlowLimit) -> CallFuture<'_, ()> {
        Box::pin(async move {
            Err(flow_unsupported(&format!(
                "set the flow limit of {}",
                limit.scope
            )))
        })
    }
    /// Every flow limit (see [`FlowLimits::list`](crate::client::FlowLimits::list)); the
    /// default fails as [`set_flow_limit`](Self::set_flow_limit)'s does.
    fn flow_limits(&self) -> CallFuture<'_, Vec<FlowLimit>> {
        Box::pin(async move { Err(flow_unsupported("list the flow limits")) })
    }
    /// Every flow limit with what it binds now (see
    /// [`FlowLimits::usage`](crate::client::FlowLimits::usage)); the default fails as
    /// [`set_flow_limit`](Self::set_flow_limit)'s does.
    fn flow_usage(&self) -> CallFuture<'_, Vec<FlowUsage>> {
        Box::pin(async move { Err(flow_unsupported("read the flow limits' usage")) })
    }
    /// Removes a flow limit (see [`FlowLimits::remove`](crate::client::FlowLimits::remove));
    /// the default fails as [`set_flow_limit`](Self::set_flow_limit)'s does.
    fn remove_flow_limit(&self, scope: FlowScope, kind: FlowKind) -> CallFuture<'_, bool> {
        let what = format!("remove the {} limit of {scope}", kind.as_str());
        Box::pin(async move { Err(flow_unsupported(&what)) })
    }
    /// Sets a queue's settings (see [`WorkflowQueues::set`](crate::client::WorkflowQueues::set));
    /// the default fails as [`set_flow_limit`](Self::set_flow_limit)'s does.
    fn set_workflow_queue(&self, queue: WorkflowQueue) -> CallFuture<'_, ()> {
        let what = format!("set the settings of workflow queue {:?}", queue.name);
        Box::pin(async move { Err(flow_unsupported(&what)) })
    }
    /// Every queue's settings (see [`WorkflowQueues::list`](crate::client::WorkflowQueues::list));
    /// the default fails as [`set_flow_limit`](Self::set_flow_limit)'s does.
    fn workflow_queues(&self) -> CallFuture<'_, Vec<WorkflowQueue>> {
        Box::pin(async move { Err(flow_unsupported("list the workflow queues")) })
    }
    /// Every queue with what it holds now (see
    /// [`WorkflowQueues::usage`](crate::client::WorkflowQueues::usage)); the default fails as
    /// [`set_flow_limit`](Self::set_flow_limit)'s does.
    fn workflow_queue_usage(&self) -> CallFuture<'_, Vec<QueueUsage>> {
        Box::pin(async move { Err(flow_unsupported("read the workflow queues' usage")) })
    }
    /// Removes a queue's settings (see
    /// [`WorkflowQueues::remove`](crate::client::WorkflowQueues::remove)); the default fails as
    /// [`set_flow_limit`](Self::set_flow_limit)'s does.
    fn remove_workflow_queue<'a>(&'a self, name: &'a str) -> CallFuture<'a, bool> {
        let what = format!("remove the settings of workflow queue {name:?}");
        Box::pin(async move { Err(flow_unsupported(&what)) })
    }
    /// A page of a run's stream (see [`WorkflowHandle::stream`](crate::WorkflowHandle::stream)):
    /// the entries from `read.from`, and whether the run is closed. With `read.wait`, an
    /// empty answer comes only after a wait for a change (a new entry, the run's close) ran
    /// out. `NotFound` for an unknown workflow id or run.
    ///
    /// The default fails with [`WfError::InvalidArgument`]: a transport that cannot carry it
    /// says so.
    fn read_stream(&self, read: StreamRead) -> CallFuture<'_, StreamPage> {
        Box::pin(async move {
            Err(WfError::InvalidArgument(format!(
                "this client's transport cannot read stream {:?} of workflow {:?}; use an \
                 engine's client (on the same store)",
                read.stream, read.workflow_id
            )))
        })
    }
    /// The streams of run `run_id` of `workflow_id` (its latest run if `None`) that hold an
    /// entry, in name order. `NotFound` for an unknown workflow id or run. The default fails
    /// as [`read_stream`](Self::read_stream)'s does.
    fn list_streams<'a>(
        &'a self,
        workflow_id: &'a str,
        run_id: Option<&'a str>,
    ) -> CallFuture<'a, StreamList> {
        let _ = run_id;
        Box::pin(async move {
            Err(WfError::InvalidArgument(format!(
                "this client's transport cannot list the streams of workflow {workflow_id:?}; \
                 use an engine's client (on the same store)"
            )))
        })
    }

    /// A page of the feed of what runs do (see [`Client::events`](crate::Client::events)):
    /// the events after `read.after` that `read.filter` takes, at most `read.max` (and at most
    /// [`MAX_FEED_PAGE`](crate::MAX_FEED_PAGE)), and the cursor to read on from. With
    /// `read.wait`, an empty answer comes only after a wait for a change ran out.
    ///
    /// The default fails with [`WfError::InvalidArgument`]: a transport that cannot carry it
    /// says so (the engine's and the HTTP client's transports implement it).
    fn read_feed(&self, read: FeedRead) -> CallFuture<'_, FeedPage> {
        let _ = read;
        Box::pin(async move {
            Err(WfError::InvalidArgument(
                "this client's transport cannot read the feed of what runs do; use an engine's \
                 client on the same store, or the HTTP client"
                    .to_string(),
            ))
        })
    }
    /// The value published under event `key` by a run of `workflow_id`, waiting up to
    /// `timeout` for one to be set (see [`Client::get_event`](crate::Client::get_event));
    /// `None` when none was set in time. The default fails as
    /// [`read_stream`](Self::read_stream)'s does.
    fn get_event<'a>(
        &'a self,
        workflow_id: &'a str,
        key: &'a str,
        timeout: Duration,
    ) -> CallFuture<'a, Option<Payload>> {
        let _ = timeout;
        Box::pin(async move {
            Err(WfError::InvalidArgument(format!(
                "this client's transport cannot read event {key:?} of workflow {workflow_id:?}; \
                 use an engine's client (on the same store)"
            )))
        })
    }
    /// The metrics of the engine behind this transport, if it is in this process (see
    /// [`Engine::metrics`](crate::Engine::metrics)); the default is `None`.
    fn metrics(&self) -> Option<MetricsSnapshot> {
        None
    }
}

/// The error of a flow-limit call a transport cannot carry.
fn flow_unsupported(what: &str) -> WfError {
    WfError::InvalidArgument(format!(
        "this client's transport cannot {what}; use an engine's client (on the same store)"
    ))
}
