//! The workflow worker: one thread that owns every live run of this engine (workflow code is
//! `!Send`), leases workflow tasks from the store, runs them, and commits their results.
//!
//! Many tasks are in flight at once on this thread: while one awaits its commit, others run,
//! so the store can fold their commits into one transaction (group commit).

use crate::cache::Lru;
use crate::data::activity::ActivityResolution;
use crate::data::codec::encode_event;
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::{ChildOutcome, ParentClosePolicy, ParentInfo, RunStatus, TaskFailure};
use crate::data::update::UpdateState;
use crate::engine::Shared;
use crate::error::WfError;
use crate::replay::{replay, Instance, TaskError, TaskMeta};
use crate::store::{
    ActivityTask, NewActivityTask, NewRun, RunClose, RunRecord, StartOutcome, StartRequest,
    StoreError, TaskCommit, WorkflowTask,
};
use crate::workflow::commands::Close;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

/// A query for a run, answered from the cache when the run is there.
pub(crate) struct QueryRequest {
    pub run_id: String,
    pub name: String,
    pub args: Payload,
    /// `None` when the run is not cached: the caller replays it.
    pub reply: oneshot::Sender<Option<Result<Payload, WfError>>>,
}

/// A message handed to the worker in memory by a client or an activity of this process, so
/// that one commit records it (instead of an inbox write, then a task).
pub(crate) enum Direct {
    /// A signal or an update (without dedupe ids) for a run.
    Message {
        run_id: String,
        workflow_id: String,
        /// The run's row as the sender read it, if it did.
        known: Option<Box<RunRecord>>,
        input: Message,
        reply: oneshot::Sender<DirectReply>,
    },
    /// A start of a run of a type this engine runs: the worker runs its first task in memory
    /// and the store records the start and that task in one transaction.
    Start {
        request: StartRequest,
        reply: StartReply,
    },
    /// An activity's final result.
    Activity {
        run_id: String,
        seq: u32,
        attempt: u32,
        resolution: ActivityResolution,
    },
}

impl Direct {
    fn run_id(&self) -> &str {
        match self {
            Direct::Message { run_id, .. } | Direct::Activity { run_id, .. } => run_id,
            Direct::Start { request, .. } => &request.run.run_id,
        }
    }
}

/// Where the worker answers a start handed over in memory.
pub(crate) type StartReply = oneshot::Sender<Result<StartOutcome, WfError>>;

/// How a workflow task came to run, which decides how it commits.
enum Mode {
    /// Leased from the store.
    Leased,
    /// On a run held in memory, without a lease (see [`TaskCommit::without_lease`]).
    LeaseFree,
    /// A new run's first task, committed with its start; `instance` is the run before it.
    Start {
        request: Box<StartRequest>,
        reply: StartReply,
        instance: Box<dyn Instance>,
    },
}

/// What a client learns about a message it handed over in memory.
#[derive(Debug)]
pub(crate) enum DirectReply {
    /// The signal is recorded in history (or the inbox).
    Recorded,
    /// The update reached a final state.
    Update(UpdateState),
    /// It went through the store instead (the run was busy or elsewhere): wait there.
    Fallback,
    /// It could not be delivered.
    Failed(WfError),
}

/// How long the query loop stays awake for the next query after answering one.
const QUERY_AWAKE: Duration = Duration::from_micros(200);

/// The next item of `rx`, or `None` once it is closed. While `awake_until` is in the future the
/// thread polls instead of parking, yielding to its other tasks and to the core (the caller's
/// thread may share the core, and would otherwise wait for this loop to give up). A window
/// opened by another task while this one waits is announced on `opened`.
async fn next_awake<T>(
    rx: &mut mpsc::UnboundedReceiver<T>,
    awake_until: impl Fn() -> Option<std::time::Instant>,
    opened: Option<&tokio::sync::Notify>,
) -> Option<T> {
    loop {
        match rx.try_recv() {
            Ok(item) => return Some(item),
            Err(mpsc::error::TryRecvError::Disconnected) => return None,
            Err(mpsc::error::TryRecvError::Empty) => {
                if awake_until().is_some_and(|t| std::time::Instant::now() < t) {
                    std::thread::yield_now();
                    tokio::task::yield_now().await;
                    continue;
                }
                let Some(opened) = opened else {
                    return rx.recv().await;
                };
                tokio::select! {
                    item = rx.recv() => return item,
                    () = opened.notified() => {}
                }
            }
        }
    }
}

/// How long the loop taking in-memory messages stays awake for the next one after a run's
/// messages were all handled: a caller sending one update or signal after another answers and
/// sends within tens of microseconds, about what waking the parked thread would cost.
const DIRECT_AWAKE: Duration = Duration::from_micros(200);

/// How long a task waits for its commit's answer without parking the thread, when it is the
/// only commit in flight (a quiet engine): an answer that arrives to a parked thread costs a
/// wake-up, tens of microseconds on a virtual machine, often more than the commit itself.
const SOLO_COMMIT_SPIN: Duration = Duration::from_millis(1);

/// Delay before retrying a failed workflow task: 1 s, doubling, at most 60 s.
fn task_retry_delay(attempts: u32) -> Duration {
    Duration::from_millis((1000u64 << attempts.saturating_sub(1).min(6)).min(60_000))
}

/// Starts the workflow worker thread.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    queries: mpsc::UnboundedReceiver<QueryRequest>,
    direct: mpsc::UnboundedReceiver<Direct>,
) -> Result<std::thread::JoinHandle<()>, WfError> {
    // Timers only, no I/O driver: this thread waits on channels and commits, never on
    // sockets, and without an I/O driver a wake-up sent to it while it runs is an atomic
    // store instead of a write to an eventfd (the store's writer answers every commit so).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| WfError::Startup(format!("the workflow worker runtime: {e}")))?;
    std::thread::Builder::new()
        .name("wf-workflow-worker".into())
        .spawn(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, Worker::new(shared).run(queries, direct));
        })
        .map_err(|e| WfError::Startup(format!("the workflow worker thread: {e}")))
}

/// A run held in memory: its instance and its row as last committed.
struct Live {
    instance: Box<dyn Instance>,
    record: RunRecord,
}

struct Worker {
    shared: Arc<Shared>,
    cache: RefCell<Lru<Live>>,
    in_flight: Cell<usize>,
    /// Commits sent to the store and not answered yet.
    committing: Cell<usize>,
    /// Messages handed over in memory, per run, waiting for that run's next task.
    pending: RefCell<HashMap<String, Vec<Direct>>>,
    /// Runs with a direct task under way.
    busy: RefCell<HashSet<String>>,
    /// Until when the loop taking in-memory messages polls instead of parking (see
    /// [`DIRECT_AWAKE`]), and the wake-up that tells the waiting loop a window opened.
    direct_awake_until: Cell<Option<std::time::Instant>>,
    direct_awake: tokio::sync::Notify,
    /// Callers of in-memory updates waiting for the final outcome, by update id.
    update_waiters: RefCell<HashMap<String, (String, oneshot::Sender<DirectReply>)>>,
}

impl Worker {
    fn new(shared: Arc<Shared>) -> Rc<Self> {
        let capacity = shared.config.cache_capacity;
        Rc::new(Worker {
            shared,
            cache: RefCell::new(Lru::new(capacity)),
            in_flight: Cell::new(0),
            committing: Cell::new(0),
            pending: RefCell::new(HashMap::new()),
            busy: RefCell::new(HashSet::new()),
            direct_awake_until: Cell::new(None),
            direct_awake: tokio::sync::Notify::new(),
            update_waiters: RefCell::new(HashMap::new()),
        })
    }

    async fn run(
        self: Rc<Self>,
        mut queries: mpsc::UnboundedReceiver<QueryRequest>,
        mut direct: mpsc::UnboundedReceiver<Direct>,
    ) {
        let me = self.clone();
        tokio::task::spawn_local(async move {
            let awake = || me.direct_awake_until.get();
            while let Some(d) = next_awake(&mut direct, awake, Some(&me.direct_awake)).await {
                let run_id = d.run_id().to_string();
                me.pending
                    .borrow_mut()
                    .entry(run_id.clone())
                    .or_default()
                    .push(d);
                if me.busy.borrow_mut().insert(run_id.clone()) {
                    let me = me.clone();
                    me.in_flight.set(me.in_flight.get() + 1);
                    tokio::task::spawn_local(async move {
                        me.drain_direct(&run_id).await;
                        me.busy.borrow_mut().remove(&run_id);
                        me.in_flight.set(me.in_flight.get() - 1);
                        // Only on a quiet engine: a busy thread is awake anyway.
                        if me.in_flight.get() == 0 && me.shared.config.poll_when_quiet {
                            me.direct_awake_until
                                .set(Some(std::time::Instant::now() + DIRECT_AWAKE));
                            // The loop is waiting on the channel (this thread is awake: the
                            // wake-up is a local one).
                            me.direct_awake.notify_one();
                        }
                    });
                }
            }
        });
        let me = self.clone();
        tokio::task::spawn_local(async move {
            // After an answer, the loop stays awake a little (yielding to every other task of
            // this thread) for the next query: queries tend to come in runs, and waking a
            // parked thread costs more than the answer itself.
            let mut awake_until: Option<std::time::Instant> = None;
            while let Some(q) = next_awake(&mut queries, || awake_until, None).await {
                let answer = me
                    .cache
                    .borrow()
                    .get(&q.run_id)
                    .map(|live| live.instance.query(&q.name, &q.args));
                let _ = q.reply.send(answer);
                if me.shared.config.poll_when_quiet {
                    awake_until = Some(std::time::Instant::now() + QUERY_AWAKE);
                }
            }
        });
        let mut shutdown = self.shared.shutdown.subscribe();
        let cfg = self.shared.config.clone();
        // Only runs of the types registered here: other processes may run other types.
        let types: Vec<String> = self
            .shared
            .definitions
            .keys()
            .map(|t| t.to_string())
            .collect();
        let queues = vec![cfg.task_queue.clone()];
        loop {
            if self.shared.is_shutdown() {
                break;
            }
            let free = cfg.max_workflow_tasks.saturating_sub(self.in_flight.get());
            let mut got = 0;
            if free > 0 {
                let now = self.shared.now_ms();
                let lease = cfg.workflow_task_lease.as_millis() as i64;
                match self
                    .shared
                    .store
                    .poll_workflow_tasks_of(
                        &self.shared.worker_id,
                        now,
                        lease,
                        free,
                        types.clone(),
                        queues.clone(),
                    )
                    .await
                {
                    Ok(tasks) => {
                        got = tasks.len();
                        for task in tasks {
                            self.in_flight.set(self.in_flight.get() + 1);
                            let me = self.clone();
                            let span = tracing::info_span!("workflow_task", run_id = %task.run.run_id, workflow_id = %task.run.workflow_id);
                            tokio::task::spawn_local(
                                async move {
                                    me.process(task, Vec::new(), Mode::Leased).await;
                                    me.in_flight.set(me.in_flight.get() - 1);
                                    me.shared.workflow_wake.notify_one();
                                }
                                .instrument(span),
                            );
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "polling workflow tasks failed"),
                }
            }
            if got > 0 && got == free {
                tokio::task::yield_now().await;
                continue;
            }
            tokio::select! {
                _ = self.shared.workflow_wake.notified() => {}
                _ = shutdown.changed() => {}
                _ = tokio::time::sleep(cfg.poll_interval) => {}
            }
        }
        // Let in-flight tasks finish their commits.
        while self.in_flight.get() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Awaits a commit. The only commit in flight is polled (yielding to this thread's other
    /// tasks and to the core between polls) for up to [`SOLO_COMMIT_SPIN`] before the thread
    /// may park; under load, commits overlap and are simply awaited.
    async fn await_commit<T>(
        &self,
        commit: crate::store::StoreFuture<'_, T>,
    ) -> Result<T, crate::store::StoreError> {
        /// Counts the commit in flight until it is answered (or its task dropped).
        struct InFlight<'a>(&'a Cell<usize>);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.set(self.0.get() - 1);
            }
        }
        let mut commit = commit;
        let solo = self.committing.get() == 0 && self.shared.config.poll_when_quiet;
        self.committing.set(self.committing.get() + 1);
        let _in_flight = InFlight(&self.committing);
        if solo {
            let until = std::time::Instant::now() + SOLO_COMMIT_SPIN;
            while std::time::Instant::now() < until && self.committing.get() == 1 {
                let poll =
                    std::future::poll_fn(|cx| std::task::Poll::Ready(commit.as_mut().poll(cx)));
                if let std::task::Poll::Ready(result) = poll.await {
                    return result;
                }
                std::thread::yield_now();
                tokio::task::yield_now().await;
            }
        }
        commit.await
    }

    /// Records a failed workflow task as [`fail`](Self::fail) does, if the task held the
    /// run's lease. A lease-free task's failure is not its to record: its work goes back to
    /// the store path, where a leased task replays the run and records the failure.
    async fn fail_if_leased(&self, run: &RunRecord, error: TaskError, without_lease: bool) {
        if !without_lease {
            self.fail(run, error).await;
        }
    }

    /// Releases the run's workflow task lease, if the task held one.
    async fn release_if_leased(&self, run_id: &str, without_lease: bool) {
        if !without_lease {
            let shared = &self.shared;
            let _ = shared
                .store
                .release_workflow_task(run_id, &shared.worker_id)
                .await;
        }
    }

    /// Records a failed workflow task; the run is retried after a backoff and keeps its history.
    async fn fail(&self, run: &RunRecord, error: TaskError) {
        let shared = &self.shared;
        let attempts = run.task_failure.as_ref().map(|f| f.attempts).unwrap_or(0) + 1;
        let failure = TaskFailure {
            message: error.message(),
            nondeterminism: matches!(error, TaskError::NonDeterminism(_)),
            attempts,
            retry_at_ms: shared.now_ms() + task_retry_delay(attempts).as_millis() as i64,
        };
        tracing::warn!(run_id = %run.run_id, attempts, error = %failure.message, "workflow task failed; will retry");
        if let Err(e) = shared
            .store
            .fail_workflow_task(&run.run_id, &shared.worker_id, failure)
            .await
        {
            tracing::error!(run_id = %run.run_id, error = %e, "recording a workflow task failure failed");
        }
        shared.timer_wake.notify_one();
        shared.waiters.publish(&run.workflow_id);
    }

    /// Runs tasks for the messages handed over for `run_id` until none is left.
    async fn drain_direct(&self, run_id: &str) {
        loop {
            let Some(mut items) = self.pending.borrow_mut().remove(run_id) else {
                break;
            };
            if let Some(i) = items.iter().position(|d| matches!(d, Direct::Start { .. })) {
                if let Direct::Start { request, reply } = items.remove(i) {
                    self.start_eagerly(request, reply).await;
                }
                if items.is_empty() {
                    continue;
                }
            }
            // A run held in memory here runs at once, without a lease: its commit checks that
            // nobody leased the run or wrote to it meanwhile. So does a run whose row the
            // sender just read (rebuilt from its history first), unless its last task failed:
            // the lease path runs that one, to record a new failure.
            let cached = self
                .cache
                .borrow()
                .get(run_id)
                .map(|live| live.record.clone());
            let known = || {
                items.iter().find_map(|d| match d {
                    Direct::Message {
                        known: Some(run), ..
                    } if run.task_failure.is_none() => Some(run.as_ref().clone()),
                    _ => None,
                })
            };
            if let Some(run) = cached.or_else(known) {
                let task = WorkflowTask {
                    run,
                    messages: Vec::new(),
                };
                self.process(task, items, Mode::LeaseFree).await;
                continue;
            }
            let shared = &self.shared;
            let lease = shared.config.workflow_task_lease.as_millis() as i64;
            match shared
                .store
                .lease_run(run_id, &shared.worker_id, shared.now_ms(), lease)
                .await
            {
                Ok(Some(task)) => self.process(task, items, Mode::Leased).await,
                // Leased by a polled task (or another process), closed, or unknown: go through
                // the store like any other client.
                _ => self.fallback(items).await,
            }
        }
    }

    /// Starts a run and runs its first task at once, both recorded in one store transaction;
    /// the plain start (the task then runs from the ready queue) if the task cannot run here.
    async fn start_eagerly(&self, request: StartRequest, reply: StartReply) {
        let new = &request.run;
        let started = HistoryEvent {
            event_id: 1,
            time_ms: request.now_ms,
            kind: new.started_event(),
        };
        let instance = self
            .shared
            .definition(&new.workflow_type)
            .ok()
            .and_then(|def| {
                replay(
                    def.as_ref(),
                    &new.workflow_id,
                    &new.run_id,
                    std::slice::from_ref(&started),
                )
                .ok()
            });
        let size = encode_event(started.time_ms, &started.kind).map(|b| b.len() as u64);
        let (Some(instance), Ok(history_bytes)) = (instance, size) else {
            return self.start_plainly(request, reply).await;
        };
        let task = WorkflowTask {
            run: new.created_record(&new.run_id, history_bytes, request.now_ms),
            messages: Vec::new(),
        };
        let mode = Mode::Start {
            request: Box::new(request),
            reply,
            instance,
        };
        self.process(task, Vec::new(), mode).await;
    }

    /// Starts a run through the store only; its first task runs from the ready queue.
    async fn start_plainly(&self, request: StartRequest, reply: StartReply) {
        let workflow_id = request.run.workflow_id.clone();
        let outcome = self.shared.store.start_run(request).await;
        if outcome.as_ref().is_ok_and(|o| o.started) {
            self.forget_hot(&workflow_id);
        }
        let _ = reply.send(outcome.map_err(WfError::from));
        self.shared.workflow_wake.notify_one();
    }

    /// Drops `workflow_id` from the map of runs held in memory: its latest run is another.
    fn forget_hot(&self, workflow_id: &str) {
        if let Ok(mut hot) = self.shared.hot.lock() {
            hot.remove(workflow_id);
        }
    }

    /// Gives work back to the store path when a task cannot run here: a start is made plainly,
    /// messages go through the inbox.
    async fn give_up(&self, direct: Vec<Direct>, start: Option<(StartRequest, StartReply)>) {
        if let Some((request, reply)) = start {
            self.start_plainly(request, reply).await;
        }
        self.fallback(direct).await;
    }

    /// Delivers messages handed over in memory through the store instead.
    async fn fallback(&self, items: Vec<Direct>) {
        let shared = &self.shared;
        let now = shared.now_ms();
        for item in items {
            match item {
                Direct::Message {
                    workflow_id,
                    run_id,
                    input,
                    reply,
                    ..
                } => {
                    let message = match input {
                        Message::Signal {
                            name,
                            args,
                            signal_id,
                        } => Message::Signal {
                            name,
                            args,
                            signal_id,
                        },
                        Message::Update {
                            update_id,
                            name,
                            args,
                        } => Message::Update {
                            update_id,
                            name,
                            args,
                        },
                        _ => continue,
                    };
                    let answer = match shared
                        .store
                        .deliver(&workflow_id, Some(&run_id), message, now)
                        .await
                    {
                        Ok(_) => DirectReply::Fallback,
                        Err(e) => DirectReply::Failed(e.into()),
                    };
                    let _ = reply.send(answer);
                }
                Direct::Start { request, reply } => self.start_plainly(request, reply).await,
                Direct::Activity {
                    run_id,
                    seq,
                    attempt,
                    resolution,
                } => {
                    if let Err(e) = shared
                        .store
                        .resolve_activity(&run_id, seq, attempt, resolution, now)
                        .await
                    {
                        tracing::error!(run_id = %run_id, error = %e, "recording an activity result failed");
                    }
                }
            }
        }
        shared.workflow_wake.notify_one();
    }

    /// Answers in-memory update callers whose updates reached a final state.
    fn answer_updates(&self, run_id: &str, states: &[(String, String, UpdateState)], closed: bool) {
        let mut waiters = self.update_waiters.borrow_mut();
        for (update_id, _, state) in states {
            if state.is_final() {
                if let Some((_, reply)) = waiters.remove(update_id) {
                    let _ = reply.send(DirectReply::Update(state.clone()));
                }
            }
        }
        if closed {
            let abandoned: Vec<String> = waiters
                .iter()
                .filter(|(_, (r, _))| r == run_id)
                .map(|(id, _)| id.clone())
                .collect();
            for id in abandoned {
                if let Some((_, reply)) = waiters.remove(&id) {
                    let _ = reply.send(DirectReply::Update(UpdateState::Abandoned));
                }
            }
        }
    }

    /// Runs one workflow task: the leased inbox `messages`, then the `direct` hand-overs. With
    /// `without_lease`, the run came from the cache and holds no lease (see
    /// [`TaskCommit::without_lease`]); a failure then hands everything back to the store path,
    /// where a leased task redoes it.
    async fn process(&self, task: WorkflowTask, direct: Vec<Direct>, mode: Mode) {
        let WorkflowTask { run, messages } = task;
        let without_lease = !matches!(mode, Mode::Leased);
        let (mut start, fresh) = match mode {
            Mode::Start {
                request,
                reply,
                instance,
            } => (Some((*request, reply)), Some(instance)),
            Mode::Leased | Mode::LeaseFree => (None, None),
        };
        let shared = &self.shared;
        let store = &shared.store;
        let def = match shared.definition(&run.workflow_type) {
            Ok(d) => d.clone(),
            Err(e) => {
                self.fail_if_leased(&run, TaskError::Other(e.to_string()), without_lease)
                    .await;
                return self.give_up(direct, start).await;
            }
        };
        let cached = match fresh {
            Some(instance) => Some(instance),
            None => self
                .cache
                .borrow_mut()
                .take(&run.run_id)
                .map(|l| l.instance),
        };
        let mut instance = match cached.filter(|i| i.next_event_id() == run.next_event_id) {
            Some(i) => i,
            None => {
                let history = match store.read_history(&run.run_id, 1).await {
                    Ok(h) => h,
                    Err(e) => {
                        tracing::error!(run_id = %run.run_id, error = %e, "reading history failed");
                        self.release_if_leased(&run.run_id, without_lease).await;
                        return self.give_up(direct, start).await;
                    }
                };
                match replay(def.as_ref(), &run.workflow_id, &run.run_id, &history) {
                    Ok(i) => i,
                    Err(e) => {
                        self.fail_if_leased(&run, e, without_lease).await;
                        return self.give_up(direct, start).await;
                    }
                }
            }
        };
        instance.set_next_event_id(run.next_event_id);
        let now = shared.now_ms();
        let consumed_through = messages.last().map(|m| m.seq);
        let mut inputs: Vec<Message> = messages.into_iter().map(|m| m.message).collect();
        // Messages handed over in memory come after the inbox (they arrived later).
        let mut resolve_activities = Vec::new();
        let mut direct_updates = HashSet::new();
        for d in &direct {
            match d {
                Direct::Message { input, .. } => {
                    if let Message::Update { update_id, .. } = input {
                        direct_updates.insert(update_id.clone());
                    }
                    inputs.push(input.clone());
                }
                // Taken out by `drain_direct` before any task runs.
                Direct::Start { .. } => {}
                Direct::Activity {
                    seq,
                    attempt,
                    resolution,
                    ..
                } => {
                    resolve_activities.push((*seq, *attempt));
                    inputs.push(Message::ActivityResolved {
                        seq: *seq,
                        resolution: resolution.clone(),
                    });
                }
            }
        }
        let meta = TaskMeta::live(
            now,
            run.next_event_id,
            run.history_bytes,
            shared.config.build_id.clone(),
        );
        let output = match instance.run_task(inputs, meta, None) {
            Ok(o) => o,
            Err(e) => {
                self.fail_if_leased(&run, e, without_lease).await;
                return self.give_up(direct, start).await;
            }
        };
        // A rejected in-memory update leaves no trace at all: its caller hears it directly.
        let mut update_states = output.update_states;
        let direct_rejections: Vec<(String, String, UpdateState)> = update_states
            .iter()
            .filter(|(id, _, st)| {
                direct_updates.contains(id) && matches!(st, UpdateState::Rejected(_))
            })
            .cloned()
            .collect();
        update_states.retain(|(id, _, st)| {
            !(direct_updates.contains(id) && matches!(st, UpdateState::Rejected(_)))
        });

        let mut events = output.events;
        let close = output.close.map(|c| match c {
            Close::Completed(p) => RunClose::Completed(p),
            Close::Failed(m) => RunClose::Failed(m),
            Close::Cancelled(reason) => RunClose::Cancelled(reason),
            Close::ContinuedAsNew(input) => {
                let new_run_id = crate::data::ids::new_id();
                for e in events.iter_mut() {
                    if let EventKind::ContinuedAsNew { new_run_id: id, .. } = e {
                        *id = new_run_id.clone();
                    }
                }
                RunClose::ContinuedAsNew(NewRun {
                    workflow_id: run.workflow_id.clone(),
                    run_id: new_run_id,
                    workflow_type: run.workflow_type.clone(),
                    input,
                    random_seed: crate::data::ids::rand_seed(),
                    continued_from: Some(run.run_id.clone()),
                    parent: instance.parent(),
                    task_queue: run.task_queue.clone(),
                })
            }
        });
        let mut commit = TaskCommit {
            run_id: run.run_id.clone(),
            worker_id: shared.worker_id.clone(),
            without_lease,
            expected_next_event_id: run.next_event_id,
            events: Vec::with_capacity(events.len()),
            consumed_through,
            new_activities: Vec::new(),
            cancel_activities: Vec::new(),
            new_timers: Vec::new(),
            cancel_timers: Vec::new(),
            updates: update_states.clone(),
            lease_activities_to: None,
            sync: true,
            resolve_activities,
            start_children: Vec::new(),
            deliver: Vec::new(),
            terminate: Vec::new(),
            notify: Vec::new(),
            close,
            summary: Payload::encode(&output.summary).unwrap_or_default(),
            now_ms: now,
        };
        for mut e in events {
            match &mut e {
                EventKind::ActivityScheduled {
                    seq,
                    name,
                    input,
                    options,
                } => commit.new_activities.push(NewActivityTask {
                    seq: *seq,
                    name: name.clone(),
                    input: input.clone(),
                    options: options.clone(),
                }),
                EventKind::TimerStarted { seq, fire_at_ms } => {
                    commit.new_timers.push((*seq, *fire_at_ms))
                }
                EventKind::TimerCancelled { seq } => commit.cancel_timers.push(*seq),
                EventKind::ActivityCancelled { seq } => commit.cancel_activities.push(*seq),
                EventKind::ChildWorkflowStarted {
                    seq,
                    workflow_id,
                    workflow_type,
                    run_id,
                    input,
                    task_queue,
                    ..
                } => {
                    let child_run_id = crate::data::ids::new_id();
                    *run_id = child_run_id.clone();
                    commit.start_children.push((
                        *seq,
                        NewRun {
                            workflow_id: workflow_id.clone(),
                            run_id: child_run_id,
                            workflow_type: workflow_type.clone(),
                            input: input.clone(),
                            random_seed: crate::data::ids::rand_seed(),
                            continued_from: None,
                            parent: Some(ParentInfo {
                                workflow_id: run.workflow_id.clone(),
                                run_id: run.run_id.clone(),
                                seq: *seq,
                            }),
                            task_queue: task_queue
                                .clone()
                                .unwrap_or_else(|| run.task_queue.clone()),
                        },
                    ));
                }
                EventKind::ChildCancelRequested { workflow_id, .. } => commit.deliver.push((
                    workflow_id.clone(),
                    Message::CancelRequested {
                        reason: format!("its parent run {} was cancelled", run.run_id),
                    },
                )),
                EventKind::ExternalSignalSent {
                    seq,
                    workflow_id,
                    name,
                    args,
                } => commit.deliver.push((
                    workflow_id.clone(),
                    Message::Signal {
                        name: name.clone(),
                        args: args.clone(),
                        // Idempotent if this commit is ever retried.
                        signal_id: Some(format!("{}/{seq}", run.run_id)),
                    },
                )),
                _ => {}
            }
            commit.events.push((now, e));
        }
        if let Some(outcome) = commit.close.as_ref().map(child_outcome) {
            apply_close_policies(&run.run_id, instance.open_children(), &mut commit);
            if let (Some(parent), Some(outcome)) = (instance.parent(), outcome) {
                let kind = Message::ChildClosed {
                    seq: parent.seq,
                    outcome,
                };
                commit.notify.push((parent.run_id, kind));
            }
        }
        commit.sync = commit.close.is_some()
            || !commit.updates.is_empty()
            || direct.iter().any(|d| matches!(d, Direct::Message { .. }))
            || !commit.start_children.is_empty()
            || !commit.deliver.is_empty()
            || !commit.terminate.is_empty()
            || !commit.notify.is_empty();
        // Activities this process runs are leased in the same commit and started right after
        // it, without a poll (when every one is registered here and has a free slot).
        let mut local_slots = Vec::new();
        let local = shared.config.run_workers
            && !commit.new_activities.is_empty()
            && commit
                .new_activities
                .iter()
                .all(|a| shared.activities.get(&a.name).is_some());
        if local {
            for _ in &commit.new_activities {
                match shared.activity_permits.clone().try_acquire_owned() {
                    Ok(p) => local_slots.push(p),
                    Err(_) => break,
                }
            }
            if local_slots.len() == commit.new_activities.len() {
                commit.lease_activities_to = Some(shared.worker_id.clone());
            } else {
                local_slots.clear();
            }
        }
        let local_tasks: Vec<ActivityTask> = if commit.lease_activities_to.is_some() {
            commit
                .new_activities
                .iter()
                .map(|a| {
                    let (deadline, lease) =
                        crate::data::activity::activity_lease(&a.options, now, now);
                    ActivityTask {
                        run_id: run.run_id.clone(),
                        workflow_id: run.workflow_id.clone(),
                        seq: a.seq,
                        name: a.name.clone(),
                        input: a.input.clone(),
                        options: a.options.clone(),
                        attempt: 1,
                        scheduled_ms: now,
                        started_ms: Some(now),
                        attempt_deadline_ms: Some(deadline),
                        lease_until_ms: Some(lease),
                        heartbeat: None,
                        last_failure: None,
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let (has_activities, has_timers, closes) = (
            !commit.new_activities.is_empty(),
            !commit.new_timers.is_empty(),
            commit.close.is_some(),
        );
        let mut start_reply = None;
        let committed = match start.take() {
            None => self.await_commit(store.commit_workflow_task(commit)).await,
            Some((request, reply)) => match self
                .await_commit(store.start_run_with_task(request, commit))
                .await
            {
                Ok((outcome, Some(first))) => {
                    start_reply = Some((reply, outcome));
                    first
                }
                // An existing run was kept (`UseExisting`): this task is moot.
                Ok((outcome, None)) => {
                    let _ = reply.send(Ok(outcome));
                    return;
                }
                Err(e) => {
                    let _ = reply.send(Err(e.into()));
                    return;
                }
            },
        };
        if committed.is_err() {
            if let Some((reply, outcome)) = start_reply.take() {
                // The start stands; its first task runs again from the ready queue.
                self.forget_hot(&run.workflow_id);
                let _ = reply.send(Ok(outcome));
                shared.workflow_wake.notify_one();
            }
        }
        match committed {
            Ok(record) => {
                instance.set_next_event_id(record.next_event_id);
                let live = Live {
                    instance,
                    record: record.clone(),
                };
                let evicted = self.cache.borrow_mut().put(run.run_id.clone(), live);
                if let Ok(mut hot) = shared.hot.lock() {
                    if record.status == RunStatus::Running {
                        hot.insert(
                            run.workflow_id.clone(),
                            (run.run_id.clone(), run.workflow_type.clone()),
                        );
                    } else {
                        hot.remove(&run.workflow_id);
                    }
                    // An evicted run leaves the map unless its workflow id now points at the run
                    // just committed (an evicted older run of a continue-as-new chain).
                    for gone in &evicted {
                        let id = &gone.record.workflow_id;
                        if hot.get(id).is_some_and(|(r, _)| *r != run.run_id) {
                            hot.remove(id);
                        }
                    }
                }
                drop(evicted);
                // Answer only now: a caller that acts on the answer finds the cache and the
                // map of runs in memory as this commit left them.
                for d in direct {
                    if let Direct::Message { input, reply, .. } = d {
                        match input {
                            Message::Update { update_id, .. } => {
                                self.update_waiters
                                    .borrow_mut()
                                    .insert(update_id, (run.run_id.clone(), reply));
                            }
                            _ => {
                                let _ = reply.send(DirectReply::Recorded);
                            }
                        }
                    }
                }
                self.answer_updates(&run.run_id, &direct_rejections, false);
                self.answer_updates(&run.run_id, &update_states, closes);
                if local_tasks.is_empty() {
                    if has_activities {
                        shared.activity_wake.notify_one();
                    }
                } else {
                    if local_tasks.iter().any(crate::activity_worker::has_timeouts) {
                        shared.timer_wake.notify_one();
                    }
                    for (task, slot) in local_tasks.into_iter().zip(local_slots) {
                        let shared2 = shared.clone();
                        shared.runtime.spawn(async move {
                            crate::activity_worker::run_attempt(&shared2, task).await;
                            drop(slot);
                        });
                    }
                }
                if has_timers {
                    shared.timer_wake.notify_one();
                }
                if closes {
                    shared.workflow_wake.notify_one();
                }
                shared.waiters.publish(&run.workflow_id);
                if let Some((reply, outcome)) = start_reply {
                    let _ = reply.send(Ok(outcome));
                }
            }
            Err(StoreError::NewMessages { .. }) => {
                // The run would have closed over messages it never saw: run the task again
                // from history with them.
                drop(instance);
                self.release_if_leased(&run.run_id, without_lease).await;
                self.fallback(direct).await;
                shared.workflow_wake.notify_one();
            }
            Err(StoreError::Conflict { reason, .. }) => {
                tracing::info!(run_id = %run.run_id, %reason, "workflow task result discarded: the run moved on");
                self.release_if_leased(&run.run_id, without_lease).await;
                self.fallback(direct).await;
            }
            Err(e) => {
                tracing::error!(run_id = %run.run_id, error = %e, "committing a workflow task failed");
                self.release_if_leased(&run.run_id, without_lease).await;
                self.fallback(direct).await;
            }
        }
    }
}

/// Applies the parent close policy of each child still running when the parent closes.
pub(crate) fn apply_close_policies(
    run_id: &str,
    children: Vec<(String, ParentClosePolicy)>,
    commit: &mut TaskCommit,
) {
    for (workflow_id, policy) in children {
        let reason = format!("its parent run {run_id} closed");
        match policy {
            ParentClosePolicy::Terminate => commit.terminate.push((workflow_id, reason)),
            ParentClosePolicy::RequestCancel => commit
                .deliver
                .push((workflow_id, Message::CancelRequested { reason })),
            ParentClosePolicy::Abandon => {}
        }
    }
}

/// What a child's close tells its parent (nothing for a continue-as-new: the chain goes on).
fn child_outcome(close: &RunClose) -> Option<ChildOutcome> {
    match close {
        RunClose::Completed(p) => Some(ChildOutcome::Completed(p.clone())),
        RunClose::Failed(m) => Some(ChildOutcome::Failed(m.clone())),
        RunClose::Cancelled(m) => Some(ChildOutcome::Cancelled(m.clone())),
        RunClose::ContinuedAsNew(_) => None,
    }
}
