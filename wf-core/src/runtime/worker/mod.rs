//! The workflow worker: one thread that owns every live run of this engine (workflow code is
//! `!Send`), leases workflow tasks from the store, runs them, and commits their results.
//!
//! Many tasks are in flight at once on this thread: while one awaits its commit, others run,
//! so the store can fold their commits into one transaction (group commit). This file holds
//! the thread's state ([`Worker`], its one `impl`) and its three loops (leasing tasks, taking
//! messages handed over in memory, answering queries on cached runs). Each other file is one
//! piece of the work, as free functions over `&Worker`: `handoff.rs` the in-memory hand-offs
//! (`drain_direct`, `fallback`, `answer_updates`), `task.rs` one workflow task (`process`),
//! `commit.rs` what a task commits and what happens once it is committed (`commit_task`),
//! `local_activities.rs` the local activities a task runs before its commit (`settle`),
//! `lanes.rs` the long-lived local tasks the workflow tasks run on (`run_job`), and
//! `marks.rs` the signals this engine put in inboxes, which cached queries must not miss.

mod commit;
mod handoff;
mod lanes;
mod local_activities;
mod marks;
mod task;

pub(crate) use handoff::{
    Direct, DirectReply, QueryRequest, StartReply, WorkerHandle, WorkerInbox,
};

use super::cache::Lru;
use super::core::Core;
use super::spin::{next_awake, QUERY_AWAKE};
use crate::error::WfError;
use crate::metrics::Lookup;
use crate::replay::Instance;
use crate::store::{RunRecord, RunStart, TaskFilter, TaskPoll};
use lanes::{Job, Lanes};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// Starts the workflow worker thread.
pub(crate) fn spawn(
    core: Arc<Core>,
    inbox: WorkerInbox,
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
            local.block_on(&rt, Worker::new(core).run(inbox));
        })
        .map_err(|e| WfError::Startup(format!("the workflow worker thread: {e}")))
}

/// A run held in memory: its instance and its row as last committed.
pub(super) struct Live {
    pub instance: Box<dyn Instance>,
    pub record: RunRecord,
    /// The number of its entry into the cache (`0`: it stayed there), see `marks.rs`.
    pub entered: u64,
}

/// The workflow worker: the state of its thread, shared by the tasks running on it.
pub(super) struct Worker {
    core: Arc<Core>,
    cache: RefCell<Lru<Live>>,
    in_flight: Cell<usize>,
    /// Commits sent to the store and not answered yet.
    committing: Cell<usize>,
    /// Messages handed over in memory, per run, waiting for that run's next task.
    pending: RefCell<HashMap<String, Vec<Direct>>>,
    /// Runs with a direct task under way.
    busy: RefCell<HashSet<String>>,
    /// Until when the loop taking in-memory messages polls instead of parking (see
    /// `spin::DIRECT_AWAKE`), and the wake-up that tells the waiting loop a window opened.
    direct_awake_until: Cell<Option<std::time::Instant>>,
    direct_awake: tokio::sync::Notify,
    /// Callers of in-memory updates waiting for the final outcome, by update id.
    update_waiters: RefCell<HashMap<String, (String, oneshot::Sender<DirectReply>)>>,
    /// The long-lived tasks that run workflow tasks (see `lanes.rs`).
    lanes: Lanes,
}

/// How a workflow task came to run, which decides how it commits.
pub(super) enum Mode {
    /// Leased from the store.
    Leased,
    /// On a run held in memory, without a lease (see [`TaskCommit::without_lease`]).
    LeaseFree,
    /// A new run's first task, committed with its start; `instance` is the run before it.
    Start {
        request: Box<RunStart>,
        reply: StartReply,
        instance: Box<dyn Instance>,
    },
}

impl Mode {
    /// The mode as the `workflow_task` span shows it.
    fn name(&self) -> &'static str {
        match self {
            Mode::Leased => "leased",
            Mode::LeaseFree => "lease_free",
            Mode::Start { .. } => "start",
        }
    }
}

impl Worker {
    fn new(core: Arc<Core>) -> Rc<Self> {
        let capacity = core.config.cache_capacity;
        Rc::new(Worker {
            core,
            cache: RefCell::new(Lru::new(capacity)),
            in_flight: Cell::new(0),
            committing: Cell::new(0),
            pending: RefCell::new(HashMap::new()),
            busy: RefCell::new(HashSet::new()),
            direct_awake_until: Cell::new(None),
            direct_awake: tokio::sync::Notify::new(),
            update_waiters: RefCell::new(HashMap::new()),
            lanes: Lanes::default(),
        })
    }

    async fn run(self: Rc<Self>, inbox: WorkerInbox) {
        let WorkerInbox {
            mut queries,
            mut direct,
        } = inbox;
        let me = self.clone();
        let receiving = tokio::task::spawn_local(async move {
            let awake = || me.direct_awake_until.get();
            let mut stopping = me.core.wake.shutdown.subscribe();
            loop {
                let d = tokio::select! {
                    biased;
                    () = until_stopped(&me.core, &mut stopping) => None,
                    d = next_awake(&mut direct, awake, Some(&me.direct_awake)) => d,
                };
                let Some(d) = d else { break };
                let run_id = d.run_id().to_string();
                me.core.metrics.inbox_depth.add(1);
                me.pending
                    .borrow_mut()
                    .entry(run_id.clone())
                    .or_default()
                    .push(d);
                if me.busy.borrow_mut().insert(run_id.clone()) {
                    me.in_flight.set(me.in_flight.get() + 1);
                    lanes::run_job(&me, Job::Direct(run_id));
                }
            }
            // Stopping: what is handed over from now on goes through the store (the senders
            // see the channel closed), and so does what is still in it, which no task of this
            // thread will run: an activity's result dropped here would wait for its attempt's
            // start-to-close timeout to be run again.
            direct.close();
            let mut left = Vec::new();
            while let Ok(d) = direct.try_recv() {
                left.push(d);
            }
            if !left.is_empty() {
                handoff::fallback(&me, left).await;
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
                    .filter(|live| q.at.is_none_or(|at| live.record.next_event_id == at))
                    .filter(|live| live.entered <= q.entries)
                    .map(|live| live.instance.query(&q.name, &q.args));
                me.core
                    .metrics
                    .cache_lookup(Lookup::Query, answer.is_some());
                let _ = q.reply.send(answer);
                if me.core.config.poll_when_quiet {
                    awake_until = Some(std::time::Instant::now() + QUERY_AWAKE);
                }
            }
        });
        let mut shutdown = self.core.wake.shutdown.subscribe();
        let cfg = self.core.config.clone();
        // Only runs of the types registered here: other processes may run other types (an
        // engine with a dynamic type runs them all).
        let types = self.core.catalog.leased_types();
        let queues = vec![cfg.task_queue.clone()];
        loop {
            if self.core.is_shutdown() {
                break;
            }
            let free = cfg.max_workflow_tasks.saturating_sub(self.in_flight.get());
            let mut got = 0;
            if free > 0 {
                let now = self.core.now_ms();
                let lease = cfg.lease_ms();
                match self.poll(now, lease, free, &types, &queues).await {
                    Ok(tasks) => {
                        got = tasks.len();
                        for task in tasks {
                            self.in_flight.set(self.in_flight.get() + 1);
                            lanes::run_job(&self, Job::Leased(Box::new(task)));
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
                _ = self.core.wake.workflow.notified() => {}
                _ = shutdown.changed() => {}
                _ = tokio::time::sleep(cfg.poll_interval) => {}
            }
        }
        // Let in-flight tasks finish their commits, and the messages still handed over go
        // through the store (a task may have started meanwhile: wait for it too).
        self.until_idle().await;
        let _ = receiving.await;
        self.until_idle().await;
    }

    /// Returns once no task runs on this thread.
    async fn until_idle(&self) {
        while self.in_flight.get() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Leases up to `max` ready runs on `queues`: of `types`, or of any type (`None`, an
    /// engine with a dynamic workflow type).
    async fn poll(
        &self,
        now: i64,
        lease: i64,
        max: usize,
        types: &Option<Vec<String>>,
        queues: &[String],
    ) -> Result<Vec<crate::store::WorkflowTask>, crate::error::StoreError> {
        let poll = TaskPoll {
            worker_id: self.core.worker_id.clone(),
            now_ms: now,
            lease_ms: lease,
            max,
            filter: TaskFilter {
                workflow_types: types.clone(),
                task_queues: Some(queues.to_vec()),
                build_id: self.core.config.build_id.clone(),
            },
        };
        self.core.store.poll_workflow_tasks(poll).await
    }
}

/// Returns once the engine is stopping.
async fn until_stopped(core: &Core, stopping: &mut tokio::sync::watch::Receiver<bool>) {
    while !core.is_shutdown() {
        if stopping.changed().await.is_err() {
            return;
        }
    }
}
