//! The client: start runs, send signals, queries and updates, wait for results, read history.
//! Typed methods per handler come from the `#[workflow]` macro (an extension trait on
//! [`WorkflowHandle`]); the `*_raw` methods take wire names and encoded arguments.

use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::payload::{Payload, PayloadError};
use crate::data::run::{IdConflictPolicy, ListFilter, RunStatus, RunSummary, TaskFailure};
use crate::data::update::{UpdateOutcome, UpdateState};
use crate::engine::Shared;
use crate::error::WfError;
use crate::replay::{replay, ErasedDefinition};
use crate::store::{DeliverOutcome, NewRun, RunRecord, StartOutcome, StartRequest};
use crate::worker::{Direct, DirectReply};
use crate::workflow::{Role, WorkflowDefinition};
use serde::de::DeserializeOwned;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type CallFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, WfError>> + Send + 'a>>;

/// Talks to the runs of one store. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

/// Options of [`Client::start_with`].
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// What to do if the workflow id is already running (default: fail with `AlreadyStarted`).
    pub id_conflict: IdConflictPolicy,
    /// The task queue to run it on (default: this engine's, see `EngineBuilder::task_queue`).
    pub task_queue: Option<String>,
}

/// Which stage an update call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateStage {
    /// Until the validator accepted it (or rejected it).
    Accepted,
    /// Until the handler finished.
    Completed,
}

/// What [`WorkflowHandle::describe`] reports about the latest run of a workflow id.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    /// The workflow id.
    pub workflow_id: String,
    /// The latest run.
    pub run_id: String,
    /// Its workflow type.
    pub workflow_type: String,
    /// Its task queue.
    pub task_queue: String,
    /// Its lifecycle state.
    pub status: RunStatus,
    /// Events in its history.
    pub history_length: u64,
    /// Encoded size of its history.
    pub history_bytes: u64,
    /// When it started.
    pub started_at: SystemTime,
    /// When it closed.
    pub closed_at: Option<SystemTime>,
    /// Activities scheduled and not yet resolved.
    pub pending_activities: Vec<PendingActivity>,
    /// Updates requested or running.
    pub pending_updates: Vec<PendingUpdate>,
    /// Signals received for which the code has no handler (oldest first).
    pub buffered_signals: Vec<String>,
    /// Async handlers still running.
    pub running_handlers: Vec<String>,
    /// The last failed workflow task, until a task succeeds.
    pub task_failure: Option<TaskFailure>,
}

/// An activity in [`Description::pending_activities`].
#[derive(Debug, Clone, PartialEq)]
pub struct PendingActivity {
    /// Command sequence number.
    pub seq: u32,
    /// Activity wire name.
    pub name: String,
    /// Current attempt.
    pub attempt: u32,
    /// The previous attempt's failure message.
    pub last_failure: Option<String>,
}

/// An update in [`Description::pending_updates`].
#[derive(Debug, Clone, PartialEq)]
pub struct PendingUpdate {
    /// Update id.
    pub update_id: String,
    /// Wire name.
    pub name: String,
    /// `true` once accepted (handler running), `false` while waiting for validation.
    pub accepted: bool,
}

/// A run in [`Client::list`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// The workflow id.
    pub workflow_id: String,
    /// The run id.
    pub run_id: String,
    /// Workflow type.
    pub workflow_type: String,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Events in its history.
    pub history_length: u64,
}

/// The caller's result for an update in a final state.
fn update_result(workflow_id: &str, run_id: &str, state: UpdateState) -> Result<Payload, WfError> {
    match state {
        UpdateState::Completed(UpdateOutcome::Completed(p)) => Ok(p),
        UpdateState::Completed(UpdateOutcome::Failed(msg)) => Err(WfError::UpdateFailed(msg)),
        UpdateState::Rejected(msg) => Err(WfError::Rejected(msg)),
        UpdateState::Abandoned | UpdateState::Requested | UpdateState::Accepted => {
            Err(WfError::RunFinished {
                workflow_id: workflow_id.to_string(),
                run_id: run_id.to_string(),
                status: RunStatus::Completed,
            })
        }
    }
}

/// Refuses payloads over the limit (a `Payload` built by hand may skip `Payload::encode`).
fn check_size(what: &str, payload: &Payload) -> Result<(), WfError> {
    if payload.len() > crate::data::payload::MAX_PAYLOAD_BYTES {
        return Err(WfError::PayloadError(PayloadError::TooLarge {
            what: format!("{what} arguments"),
            size: payload.len(),
            limit: crate::data::payload::MAX_PAYLOAD_BYTES,
        }));
    }
    Ok(())
}

fn ms_to_time(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

impl Client {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Client { shared }
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

    /// Starts a run of `W` with options.
    pub async fn start_with<W: WorkflowDefinition>(
        &self,
        workflow_id: impl Into<String>,
        input: W::Input,
        options: StartOptions,
    ) -> Result<WorkflowHandle<W>, WfError> {
        let workflow_id = workflow_id.into();
        let input = Payload::encode(&input)?;
        self.start_raw(&workflow_id, W::NAME, input, options)
            .await?;
        Ok(self.handle::<W>(workflow_id))
    }

    /// Starts a run by workflow type name with an encoded input; returns the run id.
    pub async fn start_raw(
        &self,
        workflow_id: &str,
        workflow_type: &str,
        input: Payload,
        options: StartOptions,
    ) -> Result<String, WfError> {
        Ok(self
            .start_with_messages(workflow_id, workflow_type, input, options, Vec::new())
            .await?
            .run_id)
    }

    /// Starts a run and delivers `messages` to it in one store transaction (or, with
    /// `UseExisting`, to the running run).
    async fn start_with_messages(
        &self,
        workflow_id: &str,
        workflow_type: &str,
        input: Payload,
        options: StartOptions,
        messages: Vec<Message>,
    ) -> Result<StartOutcome, WfError> {
        if workflow_id.is_empty() {
            return Err(WfError::InvalidArgument(
                "the workflow id must not be empty".into(),
            ));
        }
        let def = self.shared.definition(workflow_type)?;
        check_size("the start input", &input)?;
        def.check_input(&input)?;
        for m in &messages {
            match m {
                Message::Signal { name, args, .. } => {
                    check_size("signal", args)?;
                    def.check_message(Role::Signal, name, args)?;
                }
                Message::Update { name, args, .. } => {
                    check_size("update", args)?;
                    def.check_message(Role::Update, name, args)?;
                }
                other => {
                    return Err(WfError::InvalidArgument(format!(
                        "a start carries signals and updates, not {other:?}"
                    )))
                }
            }
        }
        let request = StartRequest {
            run: NewRun {
                workflow_id: workflow_id.to_string(),
                run_id: crate::data::ids::new_id(),
                workflow_type: def.name().to_string(),
                input,
                random_seed: crate::data::ids::rand_seed(),
                continued_from: None,
                parent: None,
                task_queue: options
                    .task_queue
                    .clone()
                    .unwrap_or_else(|| self.shared.config.task_queue.clone()),
            },
            policy: options.id_conflict,
            messages,
            now_ms: self.shared.now_ms(),
        };
        // A plain start of a type this engine runs is handed to its worker, which runs the
        // first task at once: the start and that task share one transaction, and the run is
        // held in memory from the start.
        let eager = request.messages.is_empty()
            && self.shared.config.run_workers
            && request.run.task_queue == self.shared.config.task_queue;
        let request = if eager {
            let (reply, answer) = tokio::sync::oneshot::channel();
            match self.shared.direct.send(Direct::Start { request, reply }) {
                Ok(()) => {
                    let outcome = answer.await.map_err(|_| {
                        WfError::Interrupted(
                            "the engine stopped before confirming the start; look the workflow \
                             id up to know whether it started"
                                .into(),
                        )
                    })??;
                    self.shared.waiters.publish(workflow_id);
                    return Ok(outcome);
                }
                // The worker is gone (the engine is shutting down): the store alone starts it.
                Err(tokio::sync::mpsc::error::SendError(Direct::Start { request, .. })) => request,
                Err(_) => return Err(WfError::Shutdown),
            }
        } else {
            request
        };
        let outcome = self.shared.store.start_run(request).await?;
        if outcome.started {
            if let Ok(mut hot) = self.shared.hot.lock() {
                hot.remove(workflow_id);
            }
        }
        self.shared.workflow_wake.notify_one();
        self.shared.waiters.publish(workflow_id);
        Ok(outcome)
    }

    /// Schedules in this client's store: create, list, and handles to pause, unpause,
    /// trigger, delete and describe them.
    pub fn schedules(&self) -> crate::schedule::Schedules {
        crate::schedule::Schedules::new(self.clone())
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A handle on workflow id `workflow_id` (its latest run), whether or not it exists.
    pub fn handle<W: WorkflowDefinition>(
        &self,
        workflow_id: impl Into<String>,
    ) -> WorkflowHandle<W> {
        WorkflowHandle {
            client: self.clone(),
            workflow_id: workflow_id.into(),
            _w: PhantomData,
        }
    }

    /// The registered definition for the latest run of `workflow_id`, and that run.
    async fn latest(&self, workflow_id: &str) -> Result<RunRecord, WfError> {
        self.shared
            .store
            .get_run(workflow_id, None)
            .await?
            .ok_or_else(|| WfError::NotFound {
                workflow_id: workflow_id.to_string(),
            })
    }

    fn check(
        &self,
        run: &RunRecord,
        role: Role,
        name: &str,
        args: &Payload,
    ) -> Result<(), WfError> {
        // Clients of other processes may not know the type; then the worker checks.
        match self.shared.definitions.get(run.workflow_type.as_str()) {
            Some(def) => def.check_message(role, name, args),
            None => Ok(()),
        }
    }

    /// Sends a signal by wire name with encoded arguments (a tuple). With a `signal_id`, a
    /// retry of the same signal is applied once. Returns once the signal is durable: on an
    /// engine that runs the workflow's type, once a workflow task recorded it in history
    /// (handled, or buffered when no handler has its name); otherwise once it is in the run's
    /// inbox.
    pub async fn signal_raw(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
        signal_id: Option<String>,
    ) -> Result<(), WfError> {
        // A run held in this engine's cache needs no store read to check the message.
        if let Some((run_id, def)) = self.hot_run(workflow_id) {
            check_size("signal", &args)?;
            def.check_message(Role::Signal, name, &args)?;
            match self
                .signal_here(workflow_id, &run_id, None, name, &args, &signal_id)
                .await
            {
                // That run closed meanwhile (a continue-as-new, say): the signal was not
                // recorded; it is for the workflow id's latest run.
                Err(WfError::RunFinished { .. }) => self.forget_hot(workflow_id, &run_id),
                other => return other,
            }
        }
        let run = self.latest(workflow_id).await?;
        self.check(&run, Role::Signal, name, &args)?;
        // A running run this engine's worker can run takes the signal in memory too: the
        // worker rebuilds the run from its history and records the signal in a task at once
        // (one write less than the inbox, and no poll).
        if self.runs_here(&run) {
            match self
                .signal_here(
                    workflow_id,
                    &run.run_id,
                    Some(&run),
                    name,
                    &args,
                    &signal_id,
                )
                .await
            {
                Err(WfError::RunFinished { .. }) => {}
                other => return other,
            }
        }
        // Through the inbox: one group commit makes it durable; the sender does not wait for
        // the workflow task.
        let message = Message::Signal {
            name: name.to_string(),
            args,
            signal_id,
        };
        self.shared
            .store
            .deliver(workflow_id, None, message, self.shared.now_ms())
            .await?;
        self.shared.workflow_wake.notify_one();
        Ok(())
    }

    /// The running run of `workflow_id` held in this engine's cache, with its definition: a
    /// message for it needs no store read to be checked and handed to the worker.
    fn hot_run(&self, workflow_id: &str) -> Option<(String, Arc<dyn ErasedDefinition>)> {
        let (run_id, workflow_type) = self.shared.hot.lock().ok()?.get(workflow_id).cloned()?;
        let def = self.shared.definitions.get(workflow_type.as_str())?;
        Some((run_id, def.clone()))
    }

    /// Drops `workflow_id` from the map of runs held in memory if it still points at `run_id`
    /// (which closed).
    fn forget_hot(&self, workflow_id: &str, run_id: &str) {
        if let Ok(mut hot) = self.shared.hot.lock() {
            if hot.get(workflow_id).is_some_and(|(r, _)| r == run_id) {
                hot.remove(workflow_id);
            }
        }
    }

    /// Sends a signal to run `run_id`, which this engine's worker runs (`known`: its row as
    /// just read, when it is not held in memory). Without a signal id it is handed to the
    /// worker: one commit records it in history (no inbox write, no poll), and the answer comes
    /// once that commit is durable. With one, it goes through the store's inbox and dedupe.
    async fn signal_here(
        &self,
        workflow_id: &str,
        run_id: &str,
        known: Option<&RunRecord>,
        name: &str,
        args: &Payload,
        signal_id: &Option<String>,
    ) -> Result<(), WfError> {
        if signal_id.is_none() && self.shared.config.run_workers {
            let input = Message::Signal {
                name: name.to_string(),
                args: args.clone(),
                signal_id: None,
            };
            return match self.hand_over_to(run_id, workflow_id, known, input).await {
                Some(DirectReply::Recorded | DirectReply::Fallback) => Ok(()),
                Some(DirectReply::Failed(e)) => Err(e),
                Some(DirectReply::Update(_)) | None => Err(WfError::Interrupted(
                    "the engine stopped before confirming the signal; it may or may not have \
                     been recorded (send it with a signal id to retry it safely)"
                        .into(),
                )),
            };
        }
        let message = Message::Signal {
            name: name.to_string(),
            args: args.clone(),
            signal_id: signal_id.clone(),
        };
        self.shared
            .store
            .deliver(workflow_id, Some(run_id), message, self.shared.now_ms())
            .await?;
        self.shared.workflow_wake.notify_one();
        Ok(())
    }

    /// Runs a query by wire name with encoded arguments (a tuple); never writes history.
    pub async fn query_raw(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
    ) -> Result<Payload, WfError> {
        if let Some(answer) = self.query_hot(workflow_id, name, &args).await {
            return answer;
        }
        let run = self.latest(workflow_id).await?;
        let def = self.shared.definition(&run.workflow_type)?.clone();
        check_size("query", &args)?;
        def.check_message(Role::Query, name, &args)?;
        if self.shared.config.run_workers {
            let (reply, rx) = tokio::sync::oneshot::channel();
            let request = crate::worker::QueryRequest {
                run_id: run.run_id.clone(),
                name: name.to_string(),
                args: args.clone(),
                reply,
            };
            if self.shared.queries.send(request).is_ok() {
                if let Ok(Some(answer)) = rx.await {
                    return answer;
                }
            }
        }
        // Not in memory here: rebuild the run from its history (never written to).
        let history = self.shared.store.read_history(&run.run_id, 1).await?;
        let name = name.to_string();
        tokio::task::spawn_blocking(move || {
            let instance = replay(def.as_ref(), &run.workflow_id, &run.run_id, &history).map_err(
                |e| match e {
                    e => e.into_query_error(),
                },
            )?;
            instance.query(&name, &args)
        })
        .await
        .map_err(|e| WfError::QueryError(format!("query replay panicked: {e}")))?
    }

    /// Sends an update by wire name with encoded arguments (a tuple) and waits for `stage`.
    /// Returns the handler's encoded value (for `Completed`) or an empty payload (for
    /// `Accepted`). With an `update_id`, a retry returns the first call's outcome.
    pub async fn update_raw(
        &self,
        workflow_id: &str,
        name: &str,
        args: Payload,
        update_id: Option<String>,
        stage: UpdateStage,
    ) -> Result<(String, Payload), WfError> {
        let direct = update_id.is_none() && stage == UpdateStage::Completed;
        let update_id = update_id.unwrap_or_else(crate::data::ids::new_id);
        // A run held in this engine's cache takes the update at once, without a store read.
        let mut via_store = false;
        if let Some((run_id, def)) = self.hot_run(workflow_id).filter(|_| direct) {
            check_size("update", &args)?;
            def.check_message(Role::Update, name, &args)?;
            let input = Message::Update {
                update_id: update_id.clone(),
                name: name.to_string(),
                args: args.clone(),
            };
            match self.hand_over_to(&run_id, workflow_id, None, input).await {
                Some(DirectReply::Update(state)) => {
                    return Ok((update_id, update_result(workflow_id, &run_id, state)?))
                }
                Some(DirectReply::Fallback) => {
                    let value = self.wait_update(workflow_id, &update_id, stage).await?;
                    return Ok((update_id, value));
                }
                // That run closed meanwhile: nothing was recorded; the update is for the
                // workflow id's latest run.
                Some(DirectReply::Failed(WfError::RunFinished { .. })) => {
                    self.forget_hot(workflow_id, &run_id)
                }
                Some(DirectReply::Failed(e)) => return Err(e),
                // The worker went away without answering: see below.
                Some(DirectReply::Recorded) | None => via_store = true,
            }
        }
        let run = self.latest(workflow_id).await?;
        if run.status == RunStatus::Running {
            self.check(&run, Role::Update, name, &args)?;
        }
        if direct && !via_store && run.status == RunStatus::Running {
            let input = Message::Update {
                update_id: update_id.clone(),
                name: name.to_string(),
                args: args.clone(),
            };
            match self.hand_over(&run, input).await {
                Some(DirectReply::Update(state)) => {
                    return Ok((update_id, update_result(workflow_id, &run.run_id, state)?))
                }
                Some(DirectReply::Fallback) => {
                    let value = self.wait_update(workflow_id, &update_id, stage).await?;
                    return Ok((update_id, value));
                }
                Some(DirectReply::Failed(e)) => return Err(e),
                // The worker went away without answering: it may or may not have recorded the
                // update, so deliver it through the store under the same id; the store's dedupe
                // makes sure it applies once either way.
                Some(DirectReply::Recorded) | None => {}
            }
        }
        let message = Message::Update {
            update_id: update_id.clone(),
            name: name.to_string(),
            args,
        };
        let outcome = self
            .shared
            .store
            .deliver(workflow_id, None, message, self.shared.now_ms())
            .await?;
        if matches!(outcome, DeliverOutcome::Enqueued { .. }) {
            self.shared.workflow_wake.notify_one();
        }
        let value = self.wait_update(workflow_id, &update_id, stage).await?;
        Ok((update_id, value))
    }

    /// A query answered by this engine's cache without reading the store, if the run is a
    /// running run held in memory here.
    async fn query_hot(
        &self,
        workflow_id: &str,
        name: &str,
        args: &Payload,
    ) -> Option<Result<Payload, WfError>> {
        let (run_id, def) = self.hot_run(workflow_id)?;
        if let Err(e) =
            check_size("query", args).and_then(|()| def.check_message(Role::Query, name, args))
        {
            return Some(Err(e));
        }
        let (reply, rx) = tokio::sync::oneshot::channel();
        let request = crate::worker::QueryRequest {
            run_id,
            name: name.to_string(),
            args: args.clone(),
            reply,
        };
        self.shared.queries.send(request).ok()?;
        // The answer takes a few microseconds when the worker thread is awake: wait for it
        // here briefly rather than park this thread and pay for its wake-up.
        let mut rx = rx;
        let spin_until = std::time::Instant::now() + std::time::Duration::from_micros(50);
        while std::time::Instant::now() < spin_until {
            match rx.try_recv() {
                Ok(answer) => return answer,
                Err(tokio::sync::oneshot::error::TryRecvError::Closed) => return None,
                // Yield the CPU: the worker thread may be waiting for this very core.
                Err(tokio::sync::oneshot::error::TryRecvError::Empty) => std::thread::yield_now(),
            }
        }
        rx.await.ok()?
    }

    /// Whether this engine's workflow worker runs `run` (running, of a registered type, on this
    /// engine's task queue).
    fn runs_here(&self, run: &RunRecord) -> bool {
        self.shared.config.run_workers
            && run.status == RunStatus::Running
            && run.task_queue == self.shared.config.task_queue
            && self
                .shared
                .definitions
                .contains_key(run.workflow_type.as_str())
    }

    /// Hands a message to this engine's own workflow worker in memory (one commit records it),
    /// when this engine runs workers for the run's type. `None`: use the store.
    async fn hand_over(&self, run: &RunRecord, input: Message) -> Option<DirectReply> {
        if !self.runs_here(run) {
            return None;
        }
        self.hand_over_to(&run.run_id, &run.workflow_id, Some(run), input)
            .await
    }

    /// Hands a message for run `run_id` to this engine's workflow worker (`known`: the run's
    /// row as just read, which lets the worker run it without a lease if it is not in memory);
    /// `None` if the worker is gone (or went away without answering).
    async fn hand_over_to(
        &self,
        run_id: &str,
        workflow_id: &str,
        known: Option<&RunRecord>,
        input: Message,
    ) -> Option<DirectReply> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let direct = Direct::Message {
            run_id: run_id.to_string(),
            workflow_id: workflow_id.to_string(),
            known: known.cloned().map(Box::new),
            input,
            reply,
        };
        self.shared.direct.send(direct).ok()?;
        answer.await.ok()
    }

    /// Waits until update `update_id` reaches `stage`.
    pub(crate) async fn wait_update(
        &self,
        workflow_id: &str,
        update_id: &str,
        stage: UpdateStage,
    ) -> Result<Payload, WfError> {
        loop {
            let notify = self.shared.waiters.subscribe(workflow_id);
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let record = self
                .shared
                .store
                .get_update(workflow_id, update_id)
                .await?
                .ok_or_else(|| WfError::NotFound {
                    workflow_id: workflow_id.to_string(),
                })?;
            match record.state {
                UpdateState::Rejected(msg) => return Err(WfError::Rejected(msg)),
                UpdateState::Completed(UpdateOutcome::Completed(p)) => return Ok(p),
                UpdateState::Completed(UpdateOutcome::Failed(msg)) => {
                    return Err(WfError::UpdateFailed(msg))
                }
                UpdateState::Abandoned => {
                    let run = self.latest(workflow_id).await?;
                    let status = if run.run_id == record.run_id {
                        run.status
                    } else {
                        RunStatus::ContinuedAsNew
                    };
                    return Err(WfError::RunFinished {
                        workflow_id: workflow_id.to_string(),
                        run_id: record.run_id,
                        status,
                    });
                }
                UpdateState::Accepted if stage == UpdateStage::Accepted => {
                    return Ok(Payload::default())
                }
                UpdateState::Accepted | UpdateState::Requested => {}
            }
            self.wait(notified).await?;
        }
    }

    async fn wait(
        &self,
        notified: Pin<&mut tokio::sync::futures::Notified<'_>>,
    ) -> Result<(), WfError> {
        let mut shutdown = self.shared.shutdown.subscribe();
        if *shutdown.borrow() && self.shared.config.run_workers {
            return Err(WfError::Shutdown);
        }
        tokio::select! {
            _ = notified => {}
            _ = shutdown.changed() => {}
            _ = tokio::time::sleep(self.shared.config.poll_interval) => {}
        }
        Ok(())
    }

    /// Waits for the workflow id's final result, following continue-as-new.
    pub async fn result_raw(&self, workflow_id: &str) -> Result<Payload, WfError> {
        loop {
            let notify = self.shared.waiters.subscribe(workflow_id);
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let run = self.latest(workflow_id).await?;
            match run.status {
                RunStatus::Completed => return Ok(run.result.unwrap_or_default()),
                RunStatus::Failed => {
                    return Err(WfError::WorkflowFailed(run.failure.unwrap_or_default()))
                }
                RunStatus::Terminated => {
                    return Err(WfError::Terminated(run.failure.unwrap_or_default()))
                }
                RunStatus::Cancelled => {
                    return Err(WfError::Cancelled(run.failure.unwrap_or_default()))
                }
                RunStatus::Running | RunStatus::ContinuedAsNew => {}
            }
            self.wait(notified).await?;
        }
    }

    /// The latest run's history, in order.
    pub async fn history(&self, workflow_id: &str) -> Result<Vec<HistoryEvent>, WfError> {
        let run = self.latest(workflow_id).await?;
        Ok(self.shared.store.read_history(&run.run_id, 1).await?)
    }

    /// The history of a specific run.
    pub async fn run_history(
        &self,
        run_id_of: &str,
        workflow_id: &str,
    ) -> Result<Vec<HistoryEvent>, WfError> {
        let run = self
            .shared
            .store
            .get_run(workflow_id, Some(run_id_of))
            .await?
            .ok_or_else(|| WfError::NotFound {
                workflow_id: workflow_id.to_string(),
            })?;
        Ok(self.shared.store.read_history(&run.run_id, 1).await?)
    }

    /// Status, pending work and the last task failure of the latest run.
    pub async fn describe(&self, workflow_id: &str) -> Result<Description, WfError> {
        let run = self.latest(workflow_id).await?;
        let store = &self.shared.store;
        let activities = store.pending_activities(&run.run_id).await?;
        let updates = store.pending_updates(&run.run_id).await?;
        let summary = RunSummary::of(&run.summary);
        Ok(Description {
            workflow_id: run.workflow_id,
            run_id: run.run_id,
            workflow_type: run.workflow_type,
            task_queue: run.task_queue,
            status: run.status,
            history_length: run.next_event_id - 1,
            history_bytes: run.history_bytes,
            started_at: ms_to_time(run.created_ms),
            closed_at: run.closed_ms.map(ms_to_time),
            pending_activities: activities
                .into_iter()
                .map(|a| PendingActivity {
                    seq: a.seq,
                    name: a.name,
                    attempt: a.attempt,
                    last_failure: a.last_failure.map(|f| f.message),
                })
                .collect(),
            pending_updates: updates
                .into_iter()
                .map(|u| PendingUpdate {
                    update_id: u.update_id,
                    name: u.name,
                    accepted: matches!(u.state, UpdateState::Accepted),
                })
                .collect(),
            buffered_signals: summary.buffered_signals,
            running_handlers: summary.running_handlers,
            task_failure: run.task_failure,
        })
    }

    /// Runs in the store, newest first.
    pub async fn list(&self, filter: ListFilter) -> Result<Vec<RunInfo>, WfError> {
        Ok(self
            .shared
            .store
            .list_runs(filter)
            .await?
            .into_iter()
            .map(|r| RunInfo {
                workflow_id: r.workflow_id,
                run_id: r.run_id,
                workflow_type: r.workflow_type,
                status: r.status,
                history_length: r.next_event_id - 1,
            })
            .collect())
    }

    /// Requests cancellation of the latest run: its pending activities and timers are
    /// cancelled, its code sees `ctx.cancel_requested()` and may clean up, then ends as
    /// cancelled.
    pub async fn cancel(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        let message = Message::CancelRequested {
            reason: reason.to_string(),
        };
        self.shared
            .store
            .deliver(workflow_id, None, message, self.shared.now_ms())
            .await?;
        self.shared.workflow_wake.notify_one();
        Ok(())
    }

    /// Ends the latest run at once, without running workflow code. Its parent (if it is a
    /// child) learns it was terminated; its own children get their parent close policies.
    pub async fn terminate(&self, workflow_id: &str, reason: &str) -> Result<(), WfError> {
        let store = &self.shared.store;
        let now = self.shared.now_ms();
        // The store tells the parent and applies the children's close policies in the same
        // transaction.
        store.terminate(workflow_id, reason, now).await?;
        self.shared.waiters.publish(workflow_id);
        self.shared.workflow_wake.notify_one();
        Ok(())
    }
}

/// A typed handle on a workflow id. Handler methods come from the `#[workflow]` macro's
/// `<Workflow>Client` extension trait (`h.pause().await?`).
pub struct WorkflowHandle<W> {
    client: Client,
    workflow_id: String,
    _w: PhantomData<fn() -> W>,
}

impl<W> Clone for WorkflowHandle<W> {
    fn clone(&self) -> Self {
        WorkflowHandle {
            client: self.client.clone(),
            workflow_id: self.workflow_id.clone(),
            _w: PhantomData,
        }
    }
}

impl<W: WorkflowDefinition> WorkflowHandle<W> {
    /// The workflow id.
    pub fn workflow_id(&self) -> &str {
        &self.workflow_id
    }

    /// The client this handle uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Waits for the run's result (following continue-as-new).
    pub async fn result(&self) -> Result<W::Output, WfError> {
        Ok(self.client.result_raw(&self.workflow_id).await?.decode()?)
    }

    /// The latest run's history.
    pub async fn history(&self) -> Result<Vec<HistoryEvent>, WfError> {
        self.client.history(&self.workflow_id).await
    }

    /// Status, pending work and the last task failure.
    pub async fn describe(&self) -> Result<Description, WfError> {
        self.client.describe(&self.workflow_id).await
    }

    /// Requests cancellation (see [`Client::cancel`]); `result()` then returns
    /// `WfError::Cancelled` once the run's cleanup finished.
    pub async fn cancel(&self) -> Result<(), WfError> {
        self.client
            .cancel(&self.workflow_id, "cancelled by a client")
            .await
    }

    /// Ends the run at once.
    pub async fn terminate(&self, reason: &str) -> Result<(), WfError> {
        self.client.terminate(&self.workflow_id, reason).await
    }

    /// Signal-with-start: starts the run if the workflow id is not running and delivers the
    /// signal, in one store transaction. With `IdConflictPolicy::UseExisting` (the usual
    /// choice) a running run just gets the signal; `Fail` refuses; `TerminateExisting`
    /// replaces it.
    ///
    /// ```ignore
    /// h.signal_with_start(input, h.pause().signal_id("cmd-1"), IdConflictPolicy::UseExisting).await?;
    /// ```
    pub async fn signal_with_start(
        &self,
        input: W::Input,
        signal: SignalCall<'_>,
        policy: IdConflictPolicy,
    ) -> Result<(), WfError> {
        let input = Payload::encode(&input)?;
        let message = Message::Signal {
            name: signal.name.to_string(),
            args: signal.args?,
            signal_id: signal.signal_id,
        };
        let options = StartOptions {
            id_conflict: policy,
            ..Default::default()
        };
        self.client
            .start_with_messages(&self.workflow_id, W::NAME, input, options, vec![message])
            .await?;
        Ok(())
    }

    /// Update-with-start: starts the run if needed and delivers the update atomically, then
    /// waits for the update's outcome (policies as in
    /// [`signal_with_start`](Self::signal_with_start)).
    pub async fn update_with_start<R: DeserializeOwned>(
        &self,
        input: W::Input,
        update: UpdateCall<'_, R>,
        policy: IdConflictPolicy,
    ) -> Result<R, WfError> {
        let input = Payload::encode(&input)?;
        let update_id = update.update_id.unwrap_or_else(crate::data::ids::new_id);
        let message = Message::Update {
            update_id: update_id.clone(),
            name: update.name.to_string(),
            args: update.args?,
        };
        let options = StartOptions {
            id_conflict: policy,
            ..Default::default()
        };
        self.client
            .start_with_messages(&self.workflow_id, W::NAME, input, options, vec![message])
            .await?;
        let value = self
            .client
            .wait_update(&self.workflow_id, &update_id, UpdateStage::Completed)
            .await?;
        Ok(value.decode()?)
    }

    /// A signal by name with one argument, for signals the workflow takes with
    /// `ctx.wait_for_signal::<A>(name)` rather than a handler method.
    pub fn signal<A: serde::Serialize>(&self, name: &'static str, arg: &A) -> SignalCall<'_> {
        self.__signal(name, Payload::encode(&(arg,)))
    }

    /// A signal by wire name (used by generated methods).
    #[doc(hidden)]
    pub fn __signal(
        &self,
        name: &'static str,
        args: Result<Payload, PayloadError>,
    ) -> SignalCall<'_> {
        SignalCall {
            client: &self.client,
            workflow_id: &self.workflow_id,
            name,
            args,
            signal_id: None,
        }
    }

    /// A query by wire name (used by generated methods).
    #[doc(hidden)]
    pub fn __query<R: DeserializeOwned>(
        &self,
        name: &'static str,
        args: Result<Payload, PayloadError>,
    ) -> QueryCall<'_, R> {
        QueryCall {
            client: &self.client,
            workflow_id: &self.workflow_id,
            name,
            args,
            _r: PhantomData,
        }
    }

    /// An update by wire name (used by generated methods).
    #[doc(hidden)]
    pub fn __update<R: DeserializeOwned>(
        &self,
        name: &'static str,
        args: Result<Payload, PayloadError>,
    ) -> UpdateCall<'_, R> {
        UpdateCall {
            client: &self.client,
            workflow_id: &self.workflow_id,
            name,
            args,
            update_id: None,
            _r: PhantomData,
        }
    }
}

/// A pending signal: `.await` sends it; [`signal_id`](Self::signal_id) makes retries apply once.
#[must_use = "a signal is sent only when awaited"]
pub struct SignalCall<'a> {
    client: &'a Client,
    workflow_id: &'a str,
    name: &'static str,
    args: Result<Payload, PayloadError>,
    signal_id: Option<String>,
}

impl SignalCall<'_> {
    /// A dedupe id: the signal applies once however often it is sent with this id.
    pub fn signal_id(mut self, id: impl Into<String>) -> Self {
        self.signal_id = Some(id.into());
        self
    }
}

impl<'a> IntoFuture for SignalCall<'a> {
    type Output = Result<(), WfError>;
    type IntoFuture = CallFuture<'a, ()>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.client
                .signal_raw(self.workflow_id, self.name, self.args?, self.signal_id)
                .await
        })
    }
}

/// A pending query: `.await` runs it.
#[must_use = "a query runs only when awaited"]
pub struct QueryCall<'a, R> {
    client: &'a Client,
    workflow_id: &'a str,
    name: &'static str,
    args: Result<Payload, PayloadError>,
    _r: PhantomData<fn() -> R>,
}

impl<'a, R: DeserializeOwned + 'a> IntoFuture for QueryCall<'a, R> {
    type Output = Result<R, WfError>;
    type IntoFuture = CallFuture<'a, R>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            Ok(self
                .client
                .query_raw(self.workflow_id, self.name, self.args?)
                .await?
                .decode()?)
        })
    }
}

/// A pending update: `.await` sends it and waits for its result; [`update_id`](Self::update_id)
/// makes retries return the first outcome; [`start`](Self::start) returns once accepted.
#[must_use = "an update is sent only when awaited"]
pub struct UpdateCall<'a, R> {
    client: &'a Client,
    workflow_id: &'a str,
    name: &'static str,
    args: Result<Payload, PayloadError>,
    update_id: Option<String>,
    _r: PhantomData<fn() -> R>,
}

impl<'a, R: DeserializeOwned + 'a> UpdateCall<'a, R> {
    /// A dedupe id: a retry with this id returns the first call's outcome.
    pub fn update_id(mut self, id: impl Into<String>) -> Self {
        self.update_id = Some(id.into());
        self
    }

    /// Sends the update and returns once the validator accepted it (or with `Rejected`).
    pub async fn start(self) -> Result<UpdateHandle<R>, WfError> {
        let (update_id, _) = self
            .client
            .update_raw(
                self.workflow_id,
                self.name,
                self.args?,
                self.update_id,
                UpdateStage::Accepted,
            )
            .await?;
        Ok(UpdateHandle {
            client: self.client.clone(),
            workflow_id: self.workflow_id.to_string(),
            update_id,
            _r: PhantomData,
        })
    }
}

impl<'a, R: DeserializeOwned + 'a> IntoFuture for UpdateCall<'a, R> {
    type Output = Result<R, WfError>;
    type IntoFuture = CallFuture<'a, R>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (_, value) = self
                .client
                .update_raw(
                    self.workflow_id,
                    self.name,
                    self.args?,
                    self.update_id,
                    UpdateStage::Completed,
                )
                .await?;
            Ok(value.decode()?)
        })
    }
}

/// An accepted update; [`result`](Self::result) waits for its handler.
pub struct UpdateHandle<R> {
    client: Client,
    workflow_id: String,
    update_id: String,
    _r: PhantomData<fn() -> R>,
}

impl<R: DeserializeOwned> UpdateHandle<R> {
    /// The update's id.
    pub fn update_id(&self) -> &str {
        &self.update_id
    }

    /// Waits for the handler's value (or `UpdateFailed`, or `RunFinished` if the run closed
    /// first).
    pub async fn result(&self) -> Result<R, WfError> {
        Ok(self
            .client
            .wait_update(&self.workflow_id, &self.update_id, UpdateStage::Completed)
            .await?
            .decode()?)
    }
}
