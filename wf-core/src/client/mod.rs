//! The client: start runs, send signals, queries and updates, wait for results, read
//! histories, follow the feed of what runs do, manage schedules, purge closed runs, set flow limits, manage builds (worker versioning), complete activities by task token. Typed methods per handler come from the `#[workflow]` macro
//! (an extension trait on [`WorkflowHandle`]); the `*_raw` methods take wire names and encoded
//! arguments. Every call goes through a [`Transport`]: the engine's own, or a remote one.
//!
//! May import: `data`, `error`, `workflow` (workflow types, for typed handles), `schedule`
//! (schedule specs), `batch` (batch requests). Knows neither the store nor the runtime: the runtime implements
//! [`Transport`].

mod activities;
mod batches;
mod builds;
mod calls;
mod feed;
mod flow;
mod handle;
mod purge;
mod repair;
mod schedules;
mod stream;
mod transport;
mod types;

pub use activities::{
    ActivityResponse, ActivityTaskLease, ActivityTaskPoll, MAX_ACTIVITY_POLL_WAIT,
};
pub use batches::Batches;
pub use calls::{CallOutcome, QueryCall, SignalCall, UpdateCall, UpdateHandle};
pub use feed::{FeedReader, FEED_PAGE};
pub use flow::{FlowLimits, WorkflowQueues};
pub(crate) use handle::update_timed_out;
pub use handle::WorkflowHandle;
#[doc(hidden)]
pub use handle::{query_call, signal_call, update_call};
pub use purge::{PurgeReport, PurgeRequest, DEFAULT_PURGE_BATCH};
pub use repair::{RepairAction, RepairReport, RepairRequest, DEFAULT_REPAIR_REASON};
pub use schedules::{ScheduleHandle, Schedules};
pub use stream::{StreamRead, StreamReader, STREAM_PAGE};
pub use transport::{
    CallFuture, NewSchedule, ScheduleChange, SignalRequest, StartRequest, Started, Transport,
    UpdateRequest,
};
pub use types::{
    Debounce, Description, Paused, PendingActivity, PendingUpdate, RunInfo, SignalStatus,
    StartOptions, UpdateStage, DEFAULT_UPDATE_TIMEOUT,
};

use crate::data::export::History;
use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::ListFilter;
use crate::error::WfError;
use crate::workflow::WorkflowDefinition;
use std::sync::Arc;

/// Talks to the runs of one store (through the engine that owns it, or a server). Cheap to
/// clone.
#[derive(Clone)]
pub struct Client {
    transport: Arc<dyn Transport>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// A client whose calls go through `transport` (an engine's, or a remote one).
    pub fn from_transport(transport: Arc<dyn Transport>) -> Self {
        Client { transport }
    }

    /// The transport this client's calls go through.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    /// The metrics of this client's engine, as [`Engine::metrics`](crate::Engine::metrics)
    /// gives them; `None` for a client of an engine in another process (over HTTP, scrape
    /// that process's `GET /metrics`).
    pub fn metrics(&self) -> Option<crate::metrics::MetricsSnapshot> {
        self.transport.metrics()
    }

    /// Starts a run of `W` with workflow id `workflow_id`; fails with `AlreadyStarted` if one is
    /// running. On an engine that runs `W` (on the run's task queue), the run's first workflow
    /// task runs before this returns and is recorded in the start's own transaction.
    pub async fn start<W: WorkflowDefinition>(
        &self,
        workflow_id: impl Into<String>,
        input: W::Input,
    ) -> Result<WorkflowHandle<W>, WfError> {
        self.start_with::<W>(workflow_id, input, StartOptions::default())
            .await
    }

    /// Starts a run of `W` with options: id-conflict policy (a running run), id-reuse policy
    /// (a closed run), task queue, and a request id that makes a retried start return the run
    /// its first attempt started ([`WorkflowHandle::start_outcome`] says which run, and that
    /// this call did not start it) instead of a second run or `AlreadyStarted`.
    pub async fn start_with<W: WorkflowDefinition>(
        &self,
        workflow_id: impl Into<String>,
        input: W::Input,
        options: StartOptions,
    ) -> Result<WorkflowHandle<W>, WfError> {
        if W::DYNAMIC {
            return Err(WfError::InvalidArgument(format!(
                "{} is a dynamic workflow type: it runs the types no other registration names \
                 and has no type name of its own; start a run of such a type with \
                 client.start_untyped(\"TypeName\", id, &input)",
                W::NAME
            )));
        }
        let workflow_id = workflow_id.into();
        let input = Payload::encode(&input)?;
        let started = self
            .start_with_messages(&workflow_id, W::NAME, input, options, Vec::new())
            .await?;
        // A debounced start may have joined a run of another workflow id.
        let workflow_id = if started.workflow_id.is_empty() {
            workflow_id
        } else {
            started.workflow_id.clone()
        };
        Ok(WorkflowHandle::started(self.clone(), workflow_id, started))
    }

    /// Starts a run of the workflow type named `workflow_type`, with `input` encoded as any
    /// typed start encodes it; returns the run id. This is how a run of a type only a dynamic
    /// workflow type (`#[workflow(dynamic)]`) runs is started, and how tools start a type
    /// whose Rust definition they lack:
    ///
    /// ```ignore
    /// let run_id = client.start_untyped("invoice", "inv-7", &Invoice { total: 12 }).await?;
    /// let total: u32 = client.result_raw("inv-7").await?.decode()?;
    /// ```
    pub async fn start_untyped<I: serde::Serialize + ?Sized>(
        &self,
        workflow_type: &str,
        workflow_id: &str,
        input: &I,
    ) -> Result<String, WfError> {
        let input = Payload::encode(input)?;
        self.start_raw(workflow_id, workflow_type, input, StartOptions::default())
            .await
    }

    /// Starts a run by workflow type name with an encoded input; returns the run id.
    pub async fn start_raw(
        &self,
        workflow_id: &str,
        workflow_type: &str,
        input: Payload,
        options: StartOptions,
    ) -> Result<String, WfError> {
        let started = self
            .start_with_messages(workflow_id, workflow_type, input, options, Vec::new())
            .await?;
        Ok(started.run_id)
    }

    /// Starts a run and delivers `messages` to it in one store transaction (or, with
    /// `UseExisting`, to the running run).
    pub(crate) async fn start_with_messages(
        &self,
        workflow_id: &str,
        workflow_type: &str,
        input: Payload,
        options: StartOptions,
        messages: Vec<Message>,
    ) -> Result<Started, WfError> {
        self.transport
            .start(StartRequest {
                workflow_id: workflow_id.to_string(),
                workflow_type: workflow_type.to_string(),
                input,
                options,
                messages,
            })
            .await
    }

    /// Schedules in this client's store: create, list, and handles to pause, unpause,
    /// trigger, delete and describe them.
    pub fn schedules(&self) -> Schedules {
        Schedules::new(self.clone())
    }

    /// Batches in this client's store: start one (an action on every run a filter selects),
    /// list, describe and cancel them.
    pub fn batches(&self) -> Batches {
        Batches::new(self.clone())
    }

    /// The flow limits of this client's store: caps on activity attempts (at most N running
    /// at once, at most M started per period) that bind every engine sharing the store; set,
    /// list and remove them while the engines run.
    pub fn flow_limits(&self) -> FlowLimits {
        FlowLimits::new(self.clone())
    }

    /// The settings of the queues of workflow starts of this client's store (how many of a
    /// queue's runs may run at once, over every engine sharing the store); set, list and
    /// remove them while the engines run, and read what each queue holds now (`usage`,
    /// `describe`).
    pub fn workflow_queues(&self) -> WorkflowQueues {
        WorkflowQueues::new(self.clone())
    }

    /// Starts a run of `W` on queue `queue` (see [`StartOptions::queue`]): the run is created
    /// at once and held until the queue admits it. `start_with` with
    /// `StartOptions::new().queue(queue)`.
    pub async fn enqueue<W: WorkflowDefinition>(
        &self,
        queue: impl Into<String>,
        workflow_id: impl Into<String>,
        input: W::Input,
    ) -> Result<WorkflowHandle<W>, WfError> {
        let options = StartOptions::new().queue(queue);
        self.start_with::<W>(workflow_id, input, options).await
    }

    /// A handle on workflow id `workflow_id` (its latest run), whether or not it exists.
    pub fn handle<W: WorkflowDefinition>(
        &self,
        workflow_id: impl Into<String>,
    ) -> WorkflowHandle<W> {
        WorkflowHandle::new(self.clone(), workflow_id.into())
    }

    /// Sends a signal by wire name with encoded arguments (a tuple). With a `signal_id`, a
    /// retry of the same signal is applied once. Returns once the signal is durable: on an
    /// engine that runs the workflow's type, once a workflow task recorded it in history
    /// (handled, or buffered when no handler has its name); otherwise once it is in the run's
    /// inbox. A run that is closed, or whose cancellation was requested, refuses it with
    /// `RunFinished`. [`send_signal`](Self::send_signal) also says whether a handler took it.
    pub async fn signal_raw(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
        signal_id: Option<String>,
    ) -> Result<(), WfError> {
        self.send_signal(SignalRequest {
            workflow_id,
            name,
            args,
            signal_id,
            handled: None,
        })
        .await?;
        Ok(())
    }

    /// Sends a signal described in full, as [`signal_raw`](Self::signal_raw) does, and answers
    /// whether a `#[signal]` handler of the run's workflow type takes it
    /// ([`SignalStatus::Delivered`]) or the run buffers it for `ctx.wait_for_signal`
    /// ([`SignalStatus::Buffered`]); `Recorded` when neither this engine nor the request
    /// (`handled`) knows the workflow type's handlers.
    pub async fn send_signal(&self, request: SignalRequest<'_>) -> Result<SignalStatus, WfError> {
        self.transport.signal(request).await
    }

    /// Runs a query by wire name with encoded arguments (a tuple); never writes history.
    pub async fn query_raw(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
    ) -> Result<Payload, WfError> {
        self.transport.query(workflow_id, name, args).await
    }

    /// Runs a query by wire name as of history event `at_event` of the latest run of
    /// `workflow_id`, running or closed: the run is rebuilt by replay from its history up to
    /// that event and the query runs on the copy (time travel through a run's steps). Every
    /// workflow task that ends at or before `at_event` is replayed; when `at_event` falls
    /// inside a task, that task runs with its inputs (signals, updates, activity results) up to
    /// `at_event`. Never writes. An `at_event` of 0 or past the last event fails with
    /// [`WfError::InvalidArgument`] naming the history's range. The typed form is
    /// [`QueryCall::at_event`].
    pub async fn query_at(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
        at_event: u64,
    ) -> Result<Payload, WfError> {
        self.transport
            .query_at(workflow_id, name, args, at_event)
            .await
    }

    /// Sends an update by wire name with encoded arguments (a tuple) and waits for `stage`.
    /// Returns the update id and the handler's encoded value (for `Completed`) or an empty
    /// payload (for `Accepted`). With an `update_id`, a retry returns the first call's outcome.
    /// Waits at most the transport's default update timeout (see
    /// [`send_update`](Self::send_update) to set one).
    pub async fn update_raw(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
        update_id: Option<String>,
        stage: UpdateStage,
    ) -> Result<(String, Payload), WfError> {
        self.transport
            .update(UpdateRequest {
                workflow_id,
                name,
                args,
                update_id,
                stage,
                timeout: None,
            })
            .await
    }

    /// Sends an update described in full (wire name, encoded arguments, update id, stage and
    /// timeout). When the stage is not reached in time it fails with [`WfError::Timeout`],
    /// whose message names the update id: the update stays queued, is applied when a worker
    /// takes it, and a call with the same update id then returns its outcome.
    ///
    /// ```ignore
    /// let (id, value) = client.send_update(UpdateRequest {
    ///     workflow_id: "agent-42", name: "change_goal", args: Payload::encode(&("x",))?,
    ///     update_id: Some("u-1".into()), stage: UpdateStage::Completed,
    ///     timeout: Some(Duration::from_secs(5)),
    /// }).await?;
    /// ```
    pub async fn send_update(
        &self,
        request: UpdateRequest<'_>,
    ) -> Result<(String, Payload), WfError> {
        self.transport.update(request).await
    }

    /// Waits until update `update_id` of `workflow_id` reaches `stage`.
    pub async fn wait_update(
        &self,
        workflow_id: &str,
        update_id: &str,
        stage: UpdateStage,
    ) -> Result<Payload, WfError> {
        self.transport
            .wait_update(workflow_id, update_id, stage)
            .await
    }

    /// Waits for the workflow id's final result, following continue-as-new.
    pub async fn result_raw(&self, workflow_id: &str) -> Result<Payload, WfError> {
        self.transport.result(workflow_id).await
    }

    /// The value a run of `workflow_id` published under `key` (`ctx.set_event(key, &v)`),
    /// waiting up to `timeout` for one to be set: `None` if none was by then. The latest value
    /// set wins. No worker is needed: the value is in the store, and its commit wakes the wait
    /// (in this process and, through pokes or PostgreSQL's `NOTIFY`, in others).
    ///
    /// ```ignore
    /// let url: Option<String> = client.get_event("order-7", "payment_url", Duration::from_secs(30)).await?;
    /// ```
    pub async fn get_event<T: serde::de::DeserializeOwned>(
        &self,
        workflow_id: &str,
        key: &str,
        timeout: std::time::Duration,
    ) -> Result<Option<T>, WfError> {
        match self.transport.get_event(workflow_id, key, timeout).await? {
            Some(value) => Ok(Some(value.decode()?)),
            None => Ok(None),
        }
    }

    /// The latest run's history, in order.
    pub async fn history(&self, workflow_id: &str) -> Result<Vec<HistoryEvent>, WfError> {
        self.transport.history(workflow_id, None).await
    }

    /// The history of run `run_id` of `workflow_id`.
    pub async fn run_history(
        &self,
        run_id: &str,
        workflow_id: &str,
    ) -> Result<Vec<HistoryEvent>, WfError> {
        self.transport.history(workflow_id, Some(run_id)).await
    }

    /// The latest run's history as an exportable document ([`History::to_json`] writes the
    /// file `wf export` writes; the `Replayer` reads it back). Works over any transport.
    pub async fn export(&self, workflow_id: &str) -> Result<History, WfError> {
        let d = self.transport.describe(workflow_id).await?;
        self.export_run(workflow_id, &d.run_id, &d.workflow_type)
            .await
    }

    /// The history of run `run_id` (of workflow type `workflow_type`) as an exportable
    /// document.
    pub async fn export_run(
        &self,
        workflow_id: &str,
        run_id: &str,
        workflow_type: &str,
    ) -> Result<History, WfError> {
        let events = self.transport.history(workflow_id, Some(run_id)).await?;
        Ok(History {
            workflow_type: workflow_type.to_string(),
            workflow_id: workflow_id.to_string(),
            run_id: run_id.to_string(),
            events,
        })
    }

    /// `Ok` when the runs can be reached now: the store behind this client answered one
    /// cheap read (a lookup by primary key), through the engine in this process or the
    /// server a remote client talks to (its `GET /readyz`). An error says why not: the store
    /// is down or closed, the engine is shutting down, the server is unreachable. It waits as
    /// long as the read takes: put a deadline around it (`tokio::time::timeout`) to tell a
    /// slow store from a ready one, as `GET /readyz` does.
    ///
    /// ```no_run
    /// # async fn demo(client: wf_core::Client) {
    /// let ready = tokio::time::timeout(std::time::Duration::from_secs(2), client.ready()).await;
    /// match ready {
    ///     Ok(Ok(())) => println!("ready"),
    ///     Ok(Err(e)) => println!("not ready: {e}"),
    ///     Err(_) => println!("not ready: the store took longer than 2 s"),
    /// }
    /// # }
    /// ```
    pub async fn ready(&self) -> Result<(), WfError> {
        self.transport.ready().await
    }

    /// Status, pending work and the last task failure of the latest run.
    pub async fn describe(&self, workflow_id: &str) -> Result<Description, WfError> {
        self.transport.describe(workflow_id).await
    }

    /// Runs in the store, newest first.
    pub async fn list(&self, filter: ListFilter) -> Result<Vec<RunInfo>, WfError> {
        self.transport.list(filter).await
    }

    /// How many runs match `filter`, counted by the store without listing them (`limit`
    /// and `after_run_id` apply as in [`list`](Self::list)).
    pub async fn count(&self, filter: ListFilter) -> Result<u64, WfError> {
        self.transport.count(filter).await
    }

    /// Pauses the latest run, as an operator (not the workflow's own pause signal): it gets
    /// no workflow task and starts no activity until [`unpause`](Self::unpause); signals and
    /// updates sent meanwhile wait in order, timers fire into the same queue, queries still
    /// answer, and describe and list show it paused (its status stays running). The pause is
    /// in the store, so it outlives a restart of the engine; `reason` is kept with it and
    /// shown by describe. Pausing a paused run keeps the first pause. `NotFound` for an
    /// unknown workflow id, `RunFinished` for a closed run.
    pub async fn pause(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        self.transport.pause(workflow_id, reason, "client").await
    }

    /// Unpauses the latest run: what arrived while it was paused applies in arrival order,
    /// and its activities start. A run that is not paused is left as it is.
    pub async fn unpause(&self, workflow_id: &str) -> Result<(), WfError> {
        self.transport.unpause(workflow_id).await
    }

    /// Requests cancellation of the latest run: its pending activities and timers are
    /// cancelled, its code sees `ctx.cancel_requested()` and may clean up, then ends as
    /// cancelled.
    pub async fn cancel(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        self.transport.cancel(workflow_id, reason).await
    }

    /// Ends the latest run at once, without running workflow code. Its parent (if it is a
    /// child) learns it was terminated; its own children get their parent close policies.
    pub async fn terminate(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        self.transport.terminate(workflow_id, reason).await
    }
}
