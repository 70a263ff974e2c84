//! The in-memory hand-offs: a client or an activity of this process hands a message (or a
//! start) straight to the workflow worker, so that one commit records it instead of an inbox
//! write followed by a task. What cannot run here goes back to the store path.

use super::marks::InboxMarks;
use super::task;
use super::{Mode, Worker};
use crate::data::activity::ActivityResolution;
use crate::data::codec::encode_event;
use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::update::{UpdateChange, UpdateState};
use crate::error::WfError;
use crate::replay::replay;
use crate::runtime::persist::until_durable;
use crate::store::{
    ActivityAttempt, Delivery, LeaseRequest, RunRecord, RunStart, StartOutcome, WorkflowTask,
};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::{mpsc, oneshot};

/// A message handed to the worker in memory by a client or an activity of this process, so
/// that one commit records it (instead of an inbox write, then a task).
pub(crate) enum Direct {
    /// A signal or an update (without dedupe ids) for a run.
    Message {
        run_id: String,
        workflow_id: String,
        /// The run's row as the sender read it, if it did.
        known: Option<Box<RunRecord>>,
        message: Message,
        reply: oneshot::Sender<DirectReply>,
    },
    /// A start of a run of a type this engine runs: the worker runs its first task in memory
    /// and the store records the start and that task in one transaction.
    Start {
        /// Boxed: a start (with its limits) is much larger than the other variants.
        request: Box<RunStart>,
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
    pub(super) fn run_id(&self) -> &str {
        match self {
            Direct::Message { run_id, .. } | Direct::Activity { run_id, .. } => run_id,
            Direct::Start { request, .. } => &request.run.run_id,
        }
    }
}

/// Where the worker answers a start handed over in memory.
pub(crate) type StartReply = oneshot::Sender<Result<StartOutcome, WfError>>;

/// A query for a run, answered from the cache when the run is there.
pub(crate) struct QueryRequest {
    pub run_id: String,
    pub name: String,
    pub args: Payload,
    /// Answer only from a copy at this history position (`None`: any): a copy at another is
    /// stale or ahead of what the caller read.
    pub at: Option<u64>,
    /// The number of the last entry into the cache when the caller checked the marks: a run
    /// that entered after (see `marks.rs`) may lack signals the caller must see.
    pub entries: u64,
    /// `None` when the run is not cached (or not at `at`): the caller replays it.
    pub reply: oneshot::Sender<Option<Result<Payload, WfError>>>,
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

/// How others reach the workflow worker in memory: its two channels, and the map of running
/// runs it holds in its cache (workflow id -> run id, workflow type), which lets a message or
/// a query go straight to a cached run without reading the store.
pub(crate) struct WorkerHandle {
    queries: mpsc::UnboundedSender<QueryRequest>,
    direct: mpsc::UnboundedSender<Direct>,
    hot: Mutex<HashMap<String, (String, String)>>,
    /// Signals this engine put in inboxes (see `marks.rs`).
    pub marks: InboxMarks,
}

/// The receiving ends of a [`WorkerHandle`], for the worker thread.
pub(crate) struct WorkerInbox {
    pub queries: mpsc::UnboundedReceiver<QueryRequest>,
    pub direct: mpsc::UnboundedReceiver<Direct>,
}

impl WorkerHandle {
    /// A handle and the worker's ends of its channels.
    pub fn new() -> (WorkerHandle, WorkerInbox) {
        let (queries, query_rx) = mpsc::unbounded_channel();
        let (direct, direct_rx) = mpsc::unbounded_channel();
        let handle = WorkerHandle {
            queries,
            direct,
            hot: Mutex::new(HashMap::new()),
            marks: InboxMarks::default(),
        };
        let inbox = WorkerInbox {
            queries: query_rx,
            direct: direct_rx,
        };
        (handle, inbox)
    }

    /// Hands `direct` to the worker; gives it back if the worker is gone.
    pub fn hand_over(&self, direct: Direct) -> Result<(), Box<Direct>> {
        self.direct.send(direct).map_err(|e| Box::new(e.0))
    }

    /// Asks the worker to answer a query from its cache; false if the worker is gone.
    pub fn query(&self, request: QueryRequest) -> bool {
        self.queries.send(request).is_ok()
    }

    /// The running run of `workflow_id` the worker holds in memory: (run id, workflow type).
    pub fn hot(&self, workflow_id: &str) -> Option<(String, String)> {
        self.hot.lock().ok()?.get(workflow_id).cloned()
    }

    /// Drops `workflow_id` from the map: its latest run is another (or unknown here).
    pub fn forget(&self, workflow_id: &str) {
        if let Ok(mut hot) = self.hot.lock() {
            hot.remove(workflow_id);
        }
    }

    /// Drops `workflow_id` from the map if it still points at `run_id` (which closed).
    pub fn forget_run(&self, workflow_id: &str, run_id: &str) {
        if let Ok(mut hot) = self.hot.lock() {
            if hot.get(workflow_id).is_some_and(|(r, _)| r == run_id) {
                hot.remove(workflow_id);
            }
        }
    }

    /// Drops the workflow ids whose run in the map is one of `run_ids` (runs purged from the
    /// store: queries must find them gone, not answer from memory).
    pub fn forget_runs(&self, run_ids: &[String]) {
        if run_ids.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<&str> = run_ids.iter().map(String::as_str).collect();
        if let Ok(mut hot) = self.hot.lock() {
            hot.retain(|_, (run_id, _)| !gone.contains(run_id.as_str()));
        }
    }

    /// Updates the map after a commit of `run_id`: it is the workflow id's latest run while
    /// running; runs evicted from the cache leave it (unless their workflow id now points at
    /// the run just committed: an evicted older run of a continue-as-new chain).
    pub(super) fn committed(
        &self,
        workflow_id: &str,
        run_id: &str,
        workflow_type: &str,
        running: bool,
        evicted: &[&str],
    ) {
        let Ok(mut hot) = self.hot.lock() else {
            return;
        };
        if running {
            hot.insert(
                workflow_id.to_string(),
                (run_id.to_string(), workflow_type.to_string()),
            );
        } else {
            hot.remove(workflow_id);
        }
        for id in evicted {
            if hot.get(*id).is_some_and(|(r, _)| r != run_id) {
                hot.remove(*id);
            }
        }
    }
}

/// Runs tasks for the messages handed over for `run_id` until none is left.
pub(super) async fn drain_direct(w: &Worker, run_id: &str) {
    loop {
        let Some(mut items) = w.pending.borrow_mut().remove(run_id) else {
            break;
        };
        w.core.metrics.inbox_depth.add(-(items.len() as i64));
        if let Some(i) = items.iter().position(|d| matches!(d, Direct::Start { .. })) {
            if let Direct::Start { request, reply } = items.remove(i) {
                start_eagerly(w, *request, reply).await;
            }
            if items.is_empty() {
                continue;
            }
        }
        // A run held in memory here runs at once, without a lease: its commit checks that
        // nobody leased the run or wrote to it meanwhile. So does a run whose row the
        // sender just read (rebuilt from its history first), unless its last task failed:
        // the lease path runs that one, to record a new failure, and so does a run whose
        // start was delayed and which has run no task yet (the lease waits for its start).
        let cached = w.cache.borrow().get(run_id).map(|live| live.record.clone());
        let known = || {
            items.iter().find_map(|d| match d {
                Direct::Message {
                    known: Some(run), ..
                } if run.task_failure.is_none()
                    && (run.start_at_ms.is_none() || !run.summary.is_empty()) =>
                {
                    Some(run.as_ref().clone())
                }
                _ => None,
            })
        };
        if let Some(run) = cached.or_else(known) {
            let task = WorkflowTask {
                run,
                messages: Vec::new(),
            };
            task::process(w, task, items, Mode::LeaseFree).await;
            continue;
        }
        let core = &w.core;
        let lease = core.config.lease_ms();
        match core
            .store
            .lease_run(LeaseRequest {
                run_id: run_id.to_owned(),
                worker_id: core.worker_id.clone(),
                now_ms: core.now_ms(),
                lease_ms: lease,
                build_id: core.config.build_id.clone(),
            })
            .await
        {
            Ok(Some(task)) => task::process(w, task, items, Mode::Leased).await,
            // Leased by a polled task (or another process), closed, or unknown: go through
            // the store like any other client.
            _ => fallback(w, items).await,
        }
    }
}

/// Starts a run and runs its first task at once, both recorded in one store transaction;
/// the plain start (the task then runs from the ready queue) if the task cannot run here.
pub(super) async fn start_eagerly(w: &Worker, request: RunStart, reply: StartReply) {
    let new = &request.run;
    let started = HistoryEvent {
        event_id: 1,
        time_ms: request.now_ms,
        kind: new.started_event(),
    };
    let instance = w
        .core
        .catalog
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
        return start_plainly(w, request, reply).await;
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
    task::process(w, task, Vec::new(), mode).await;
}

/// Starts a run through the store only; its first task runs from the ready queue.
pub(super) async fn start_plainly(w: &Worker, request: RunStart, reply: StartReply) {
    let workflow_id = request.run.workflow_id.clone();
    let outcome = w.core.store.start_run(request).await;
    if outcome.as_ref().is_ok_and(|o| o.started) {
        w.core.worker.forget(&workflow_id);
    }
    let _ = reply.send(outcome.map_err(WfError::from));
    w.core.wake.workflow.notify_one();
}

/// Gives work back to the store path when a task cannot run here: a start is made plainly,
/// messages go through the inbox.
pub(super) async fn give_up(
    w: &Worker,
    direct: Vec<Direct>,
    start: Option<(RunStart, StartReply)>,
) {
    if let Some((request, reply)) = start {
        start_plainly(w, request, reply).await;
    }
    fallback(w, direct).await;
}

/// Delivers messages handed over in memory through the store instead.
pub(super) async fn fallback(w: &Worker, items: Vec<Direct>) {
    let core = &w.core;
    let now = core.now_ms();
    for item in items {
        match item {
            Direct::Message {
                workflow_id,
                run_id,
                message,
                reply,
                ..
            } => {
                // A signal acknowledged from the inbox: queries here must look there.
                let delivery = matches!(message, Message::Signal { .. })
                    .then(|| core.worker.marks.deliver(&workflow_id));
                let answer = match core
                    .store
                    .deliver(Delivery::new(&workflow_id, message, now).to_run(&run_id))
                    .await
                {
                    Ok(_) => DirectReply::Fallback,
                    Err(e) => DirectReply::Failed(e.into()),
                };
                drop(delivery);
                let _ = reply.send(answer);
            }
            Direct::Start { request, reply } => start_plainly(w, *request, reply).await,
            Direct::Activity {
                run_id,
                seq,
                attempt,
                resolution,
            } => {
                let resolved = until_durable(core, "recording an activity result", || {
                    core.store.resolve_activity(
                        ActivityAttempt {
                            run_id: run_id.clone(),
                            seq,
                            attempt,
                        },
                        resolution.clone(),
                        now,
                    )
                })
                .await;
                if let Err(e) = resolved {
                    tracing::error!(run_id = %run_id, error = %e, "recording an activity result failed");
                }
            }
        }
    }
    core.wake.workflow.notify_one();
}

/// Answers in-memory update callers whose updates reached a final state.
pub(super) fn answer_updates(w: &Worker, run_id: &str, states: &[UpdateChange], closed: bool) {
    let mut waiters = w.update_waiters.borrow_mut();
    for change in states {
        if change.state.is_final() {
            if let Some((_, reply)) = waiters.remove(&change.update_id) {
                let _ = reply.send(DirectReply::Update(change.state.clone()));
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
