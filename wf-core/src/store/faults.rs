//! A store wrapper that injects faults (feature `fault-injection`, for tests): chosen
//! operations fail with an I/O error, a full disk or a busy database, or are delayed; or the
//! process "crashes" at a chosen commit, the way SQLite's own crash tests stop a process at
//! each write.
//!
//! [`FaultStore`] wraps any [`Store`] and numbers its *commits*: the calls that change durable
//! state (a start, a delivery, a workflow task's commit or failure, an activity's result or
//! retry, a heartbeat, a termination, a schedule change), and the polls that leased or fired
//! something (a poll that found nothing changed nothing and is not counted). Liveness
//! renewals (periodic, so their number depends on timing) and reads are never counted. A test
//! runs a scenario once to count its commits, then once per commit `k` with
//! [`crash_at`](FaultStore::crash_at)`(k, ..)`: commit `k` then ends in one of the three
//! [`Crash`] ways, and every later call fails with `Closed`, as the calls of a dead process
//! never reach the disk. Drop the engine on it and open a fresh one on the inner store: it
//! must finish the work.
//!
//! ```
//! use std::sync::Arc;
//! use wf_core::store::faults::{Fault, FaultStore, Target};
//! use wf_core::store::MemoryStore;
//! let store = FaultStore::new(Arc::new(MemoryStore::new()));
//! store.inject(Fault::Full, Target::Writes); // every write: "database or disk is full"
//! store.clear(); // the disk has room again
//! ```

use super::{
    ActivityFailure, ActivityResolution, ActivityTask, BackendErrorKind, BuildIdStatus,
    DeliverOutcome, EngineRecord, HistoryEvent, ListFilter, Message, Payload, PendingMessages,
    RunLimits, RunRecord, RunSearch, ScheduleRow, StartOutcome, StartRequest, Store, StoreError,
    StoreFuture, TaskCommit, TaskFailure, UpdateRecord, WorkflowTask,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// A store operation, as faults choose them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// `start_run`, `start_run_with_task`.
    Start,
    /// `deliver` (signals, updates, cancellations from clients).
    Deliver,
    /// `poll_workflow_tasks`, `poll_workflow_tasks_of`, `lease_run`.
    LeaseWorkflowTask,
    /// `commit_workflow_task`.
    CommitWorkflowTask,
    /// `fail_workflow_task`.
    FailWorkflowTask,
    /// `release_workflow_task`.
    ReleaseWorkflowTask,
    /// `poll_activity_tasks`, `poll_activity_tasks_of`.
    LeaseActivity,
    /// `heartbeat_activity`, `hold_activity_for_completion`.
    Heartbeat,
    /// `resolve_activity`.
    ResolveActivity,
    /// `retry_activity`.
    RetryActivity,
    /// `release_activity`.
    ReleaseActivity,
    /// `fire_due_timers`.
    FireTimers,
    /// `terminate`.
    Terminate,
    /// `purge_closed_runs`.
    Purge,
    /// `create_schedule`, `update_schedule`, `delete_schedule`.
    Schedule,
    /// `register_engine`, `renew_engine`, `remove_engine` (never counted as commits).
    Engine,
    /// `close` (never counted as commits).
    Close,
    /// Every read (never counted as commits).
    Read,
}

impl Op {
    /// Whether the operation writes.
    pub fn is_write(self) -> bool {
        self != Op::Read
    }

    /// Whether a call counts as a commit whatever it returns (polls count only when they
    /// leased or fired something, purges when they deleted something; engine renewals and reads never do).
    fn always_counted(self) -> bool {
        !matches!(
            self,
            Op::LeaseWorkflowTask
                | Op::LeaseActivity
                | Op::FireTimers
                | Op::Purge
                | Op::Engine
                | Op::Close
                | Op::Read
        )
    }
}

/// What an injected fault does to a call it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails with an I/O error (retryable), changing nothing.
    Io,
    /// Fails with a full disk (retryable), changing nothing.
    Full,
    /// Fails with a busy database (retryable), changing nothing.
    Busy,
    /// Waits this long, then runs the call.
    Delay(Duration),
}

/// Which calls a fault hits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every write (reads go through).
    Writes,
    /// Only these operations.
    Ops(Vec<Op>),
}

impl Target {
    fn hits(&self, op: Op) -> bool {
        match self {
            Target::Writes => op.is_write(),
            Target::Ops(ops) => ops.contains(&op),
        }
    }
}

/// How the process dies at the chosen commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Crash {
    /// The commit is durable and answered; the process dies right after.
    AfterCommit,
    /// The commit is durable but the process dies before the fsync returns: its caller gets
    /// an I/O error (and the process is gone).
    AppliedUnacked,
    /// The process dies before the commit reaches the disk: nothing of it is applied, the
    /// caller gets an I/O error. (For a poll, which only the store can tell would lease
    /// something, this is the same as [`AppliedUnacked`](Crash::AppliedUnacked): its lease
    /// is held by a dead process until it expires.)
    NotApplied,
}

/// Every crash variant, for tests that try each.
pub const CRASHES: [Crash; 3] = [Crash::AfterCommit, Crash::AppliedUnacked, Crash::NotApplied];

#[derive(Default)]
struct Plan {
    faults: Vec<(Fault, Target)>,
    crash: Option<(u64, Crash)>,
}

/// A [`Store`] that injects faults into the calls it passes to the store it wraps (see the
/// module documentation).
pub struct FaultStore {
    inner: Arc<dyn Store>,
    plan: Mutex<Plan>,
    commits: AtomicU64,
    injected: AtomicU64,
    dead: watch::Sender<bool>,
}

impl FaultStore {
    /// Wraps `inner`, injecting nothing until told to.
    pub fn new(inner: Arc<dyn Store>) -> Arc<FaultStore> {
        Arc::new(FaultStore {
            inner,
            plan: Mutex::new(Plan::default()),
            commits: AtomicU64::new(0),
            injected: AtomicU64::new(0),
            dead: watch::channel(false).0,
        })
    }

    /// The wrapped store (a fresh engine after a crash opens on it).
    pub fn inner(&self) -> Arc<dyn Store> {
        self.inner.clone()
    }

    /// From now on, the calls `target` names fail (or wait) with `fault`, until
    /// [`clear`](Self::clear). Faults added earlier stay; the first that hits a call applies.
    pub fn inject(&self, fault: Fault, target: Target) {
        self.plan().faults.push((fault, target));
    }

    /// Removes every injected fault (not a planned crash): the disk is well again.
    pub fn clear(&self) {
        self.plan().faults.clear();
    }

    /// Plans a crash at commit `k` (1-based, counted from this store's creation).
    pub fn crash_at(&self, k: u64, how: Crash) {
        self.plan().crash = Some((k, how));
    }

    /// Commits counted so far (see the module documentation).
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::SeqCst)
    }

    /// Calls failed (or delayed) by an injected fault so far, crashes not included.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// Whether the planned crash happened.
    pub fn is_crashed(&self) -> bool {
        *self.dead.borrow()
    }

    /// Waits until the planned crash happens.
    pub async fn crashed(&self) {
        let mut dead = self.dead.subscribe();
        // The sender lives in `self`: the channel cannot close while this borrows it.
        let _ = dead.wait_for(|d| *d).await;
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.plan
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn die(&self) {
        self.dead.send_replace(true);
    }

    /// The error of every call after the crash.
    fn dead_error() -> StoreError {
        StoreError::closed("the process crashed (fault injection): the store takes no more calls")
    }

    /// The fault that hits a call of `op`, if any.
    fn fault_for(&self, op: Op) -> Option<Fault> {
        let plan = self.plan();
        let fault = plan
            .faults
            .iter()
            .find(|(_, t)| t.hits(op))
            .map(|(f, _)| *f);
        if fault.is_some() {
            self.injected.fetch_add(1, Ordering::SeqCst);
        }
        fault
    }

    /// Counts a commit; the crash planned at it, if this is the one.
    fn count(&self) -> Option<Crash> {
        let n = self.commits.fetch_add(1, Ordering::SeqCst) + 1;
        match self.plan().crash {
            Some((k, how)) if k == n => Some(how),
            _ => None,
        }
    }

    /// Runs `call` (which calls the inner store) under the faults and the planned crash.
    /// `did_work` says whether a call of an operation counted only when it does something
    /// (a poll) did.
    fn run<'a, T: Send + 'a>(
        &'a self,
        op: Op,
        call: impl FnOnce() -> StoreFuture<'a, T> + Send + 'a,
        did_work: fn(&T) -> bool,
    ) -> StoreFuture<'a, T> {
        Box::pin(async move {
            if self.is_crashed() {
                return Err(Self::dead_error());
            }
            match self.fault_for(op) {
                Some(Fault::Io) => return Err(injected(BackendErrorKind::Io, op)),
                Some(Fault::Full) => return Err(injected(BackendErrorKind::Full, op)),
                Some(Fault::Busy) => return Err(injected(BackendErrorKind::Busy, op)),
                Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
                None => {}
            }
            let crash = if op.always_counted() {
                self.count()
            } else {
                None
            };
            if crash == Some(Crash::NotApplied) {
                self.die();
                return Err(unacked(op));
            }
            let result = call().await;
            let crash = match &result {
                Ok(v)
                    if matches!(
                        op,
                        Op::LeaseWorkflowTask | Op::LeaseActivity | Op::FireTimers | Op::Purge
                    ) =>
                {
                    if did_work(v) {
                        self.count()
                    } else {
                        None
                    }
                }
                _ => crash,
            };
            match crash {
                None => result,
                Some(Crash::AfterCommit) => {
                    self.die();
                    result
                }
                Some(Crash::AppliedUnacked | Crash::NotApplied) => {
                    self.die();
                    Err(unacked(op))
                }
            }
        })
    }

    /// [`run`](Self::run) for an operation counted whenever it is called (or never).
    fn plain<'a, T: Send + 'a>(
        &'a self,
        op: Op,
        call: impl FnOnce() -> StoreFuture<'a, T> + Send + 'a,
    ) -> StoreFuture<'a, T> {
        self.run(op, call, |_| true)
    }
}

fn injected(kind: BackendErrorKind, op: Op) -> StoreError {
    let what = match kind {
        BackendErrorKind::Full => "database or disk is full",
        BackendErrorKind::Busy => "database is locked",
        _ => "disk I/O error",
    };
    StoreError::backend(kind, format!("{what} (injected fault on {op:?})"))
}

fn unacked(op: Op) -> StoreError {
    StoreError::backend(
        BackendErrorKind::Io,
        format!("disk I/O error: the process crashed during {op:?} (fault injection)"),
    )
}

// A `fn(&T) -> bool` for `T = Vec<_>`, as `run` takes it: a slice would not fit.
#[allow(clippy::ptr_arg)]
fn non_empty<T>(v: &Vec<T>) -> bool {
    !v.is_empty()
}

impl Store for FaultStore {
    fn start_run(&self, req: StartRequest) -> StoreFuture<'_, StartOutcome> {
        self.plain(Op::Start, move || self.inner.start_run(req))
    }

    fn start_run_with_task(
        &self,
        req: StartRequest,
        first: TaskCommit,
    ) -> StoreFuture<'_, (StartOutcome, Option<Result<RunRecord, StoreError>>)> {
        self.plain(Op::Start, move || {
            self.inner.start_run_with_task(req, first)
        })
    }

    fn deliver(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome> {
        let (workflow_id, run_id) = (workflow_id.to_owned(), run_id.map(str::to_owned));
        self.plain(Op::Deliver, move || {
            self.inner
                .deliver(&workflow_id, run_id.as_deref(), message, now_ms)
        })
    }

    fn deliver_durable(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome> {
        let (workflow_id, run_id) = (workflow_id.to_owned(), run_id.map(str::to_owned));
        self.plain(Op::Deliver, move || {
            self.inner
                .deliver_durable(&workflow_id, run_id.as_deref(), message, now_ms)
        })
    }

    fn poll_workflow_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let worker_id = worker_id.to_owned();
        self.run(
            Op::LeaseWorkflowTask,
            move || {
                self.inner
                    .poll_workflow_tasks(&worker_id, now_ms, lease_ms, max)
            },
            non_empty,
        )
    }

    fn lease_run(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Option<WorkflowTask>> {
        let (run_id, worker_id) = (run_id.to_owned(), worker_id.to_owned());
        let build_id = build_id.map(str::to_owned);
        self.run(
            Op::LeaseWorkflowTask,
            move || {
                self.inner
                    .lease_run(&run_id, &worker_id, now_ms, lease_ms, build_id.as_deref())
            },
            Option::is_some,
        )
    }

    fn poll_workflow_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        workflow_types: Vec<String>,
        task_queues: Vec<String>,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let worker_id = worker_id.to_owned();
        let build_id = build_id.map(str::to_owned);
        self.run(
            Op::LeaseWorkflowTask,
            move || {
                self.inner.poll_workflow_tasks_of(
                    &worker_id,
                    now_ms,
                    lease_ms,
                    max,
                    workflow_types,
                    task_queues,
                    build_id.as_deref(),
                )
            },
            non_empty,
        )
    }

    fn poll_workflow_tasks_on(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        task_queues: Vec<String>,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>> {
        let worker_id = worker_id.to_owned();
        let build_id = build_id.map(str::to_owned);
        self.run(
            Op::LeaseWorkflowTask,
            move || {
                self.inner.poll_workflow_tasks_on(
                    &worker_id,
                    now_ms,
                    lease_ms,
                    max,
                    task_queues,
                    build_id.as_deref(),
                )
            },
            non_empty,
        )
    }

    fn poll_activity_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
        names: Vec<String>,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let worker_id = worker_id.to_owned();
        self.run(
            Op::LeaseActivity,
            move || {
                self.inner
                    .poll_activity_tasks_of(&worker_id, now_ms, max, names)
            },
            non_empty,
        )
    }

    fn commit_workflow_task(&self, commit: TaskCommit) -> StoreFuture<'_, RunRecord> {
        self.plain(Op::CommitWorkflowTask, move || {
            self.inner.commit_workflow_task(commit)
        })
    }

    fn fail_workflow_task(
        &self,
        run_id: &str,
        worker_id: &str,
        failure: TaskFailure,
    ) -> StoreFuture<'_, ()> {
        let (run_id, worker_id) = (run_id.to_owned(), worker_id.to_owned());
        self.plain(Op::FailWorkflowTask, move || {
            self.inner.fail_workflow_task(&run_id, &worker_id, failure)
        })
    }

    fn release_workflow_task(&self, run_id: &str, worker_id: &str) -> StoreFuture<'_, ()> {
        let (run_id, worker_id) = (run_id.to_owned(), worker_id.to_owned());
        self.plain(Op::ReleaseWorkflowTask, move || {
            self.inner.release_workflow_task(&run_id, &worker_id)
        })
    }

    fn poll_activity_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let worker_id = worker_id.to_owned();
        self.run(
            Op::LeaseActivity,
            move || self.inner.poll_activity_tasks(&worker_id, now_ms, max),
            non_empty,
        )
    }

    fn heartbeat_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        details: Option<Payload>,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        self.plain(Op::Heartbeat, move || {
            self.inner
                .heartbeat_activity(&run_id, seq, attempt, details, now_ms)
        })
    }

    fn resolve_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        resolution: ActivityResolution,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        self.plain(Op::ResolveActivity, move || {
            self.inner
                .resolve_activity(&run_id, seq, attempt, resolution, now_ms)
        })
    }

    fn retry_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        visible_at_ms: i64,
        failure: ActivityFailure,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        self.plain(Op::RetryActivity, move || {
            self.inner
                .retry_activity(&run_id, seq, attempt, visible_at_ms, failure)
        })
    }

    fn hold_activity_for_completion(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        self.plain(Op::Heartbeat, move || {
            self.inner
                .hold_activity_for_completion(&run_id, seq, attempt, now_ms)
        })
    }

    fn release_activity(&self, run_id: &str, seq: u32, attempt: u32) -> StoreFuture<'_, ()> {
        let run_id = run_id.to_owned();
        self.plain(Op::ReleaseActivity, move || {
            self.inner.release_activity(&run_id, seq, attempt)
        })
    }

    fn current_attempts(&self, attempts: Vec<(String, u32, u32)>) -> StoreFuture<'_, Vec<bool>> {
        self.plain(Op::Read, move || self.inner.current_attempts(attempts))
    }

    fn expired_activities(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.plain(Op::Read, move || self.inner.expired_activities(now_ms, max))
    }

    fn fire_due_timers(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<(String, u32)>> {
        self.run(
            Op::FireTimers,
            move || self.inner.fire_due_timers(now_ms, max),
            non_empty,
        )
    }

    fn next_wakeup(&self, now_ms: i64) -> StoreFuture<'_, Option<i64>> {
        self.plain(Op::Read, move || self.inner.next_wakeup(now_ms))
    }

    fn get_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<RunRecord>> {
        let (workflow_id, run_id) = (workflow_id.to_owned(), run_id.map(str::to_owned));
        self.plain(Op::Read, move || {
            self.inner.get_run(&workflow_id, run_id.as_deref())
        })
    }

    fn run_limits(&self, run_id: &str) -> StoreFuture<'_, Option<RunLimits>> {
        let run_id = run_id.to_owned();
        self.plain(Op::Read, move || self.inner.run_limits(&run_id))
    }

    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>> {
        let run_id = run_id.to_owned();
        self.plain(Op::Read, move || {
            self.inner.read_history(&run_id, from_event_id)
        })
    }

    fn pending_messages(
        &self,
        run_id: &str,
        history_from: Option<u64>,
    ) -> StoreFuture<'_, PendingMessages> {
        let run_id = run_id.to_owned();
        self.plain(Op::Read, move || {
            self.inner.pending_messages(&run_id, history_from)
        })
    }

    fn list_runs(&self, filter: ListFilter) -> StoreFuture<'_, Vec<RunRecord>> {
        self.plain(Op::Read, move || self.inner.list_runs(filter))
    }

    fn get_update(
        &self,
        workflow_id: &str,
        update_id: &str,
    ) -> StoreFuture<'_, Option<UpdateRecord>> {
        let (workflow_id, update_id) = (workflow_id.to_owned(), update_id.to_owned());
        self.plain(Op::Read, move || {
            self.inner.get_update(&workflow_id, &update_id)
        })
    }

    fn pending_updates(&self, run_id: &str) -> StoreFuture<'_, Vec<UpdateRecord>> {
        let run_id = run_id.to_owned();
        self.plain(Op::Read, move || self.inner.pending_updates(&run_id))
    }

    fn pending_activities(&self, run_id: &str) -> StoreFuture<'_, Vec<ActivityTask>> {
        let run_id = run_id.to_owned();
        self.plain(Op::Read, move || self.inner.pending_activities(&run_id))
    }

    fn run_search(&self, run_ids: Vec<String>) -> StoreFuture<'_, Vec<RunSearch>> {
        self.plain(Op::Read, move || self.inner.run_search(run_ids))
    }

    fn create_schedule(&self, row: ScheduleRow) -> StoreFuture<'_, ()> {
        self.plain(Op::Schedule, move || self.inner.create_schedule(row))
    }

    fn update_schedule(
        &self,
        schedule_id: &str,
        expected_version: u64,
        data: Payload,
        next_check_ms: Option<i64>,
    ) -> StoreFuture<'_, bool> {
        let schedule_id = schedule_id.to_owned();
        self.plain(Op::Schedule, move || {
            self.inner
                .update_schedule(&schedule_id, expected_version, data, next_check_ms)
        })
    }

    fn get_schedule(&self, schedule_id: &str) -> StoreFuture<'_, Option<ScheduleRow>> {
        let schedule_id = schedule_id.to_owned();
        self.plain(Op::Read, move || self.inner.get_schedule(&schedule_id))
    }

    fn list_schedules(&self) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.plain(Op::Read, move || self.inner.list_schedules())
    }

    fn delete_schedule(&self, schedule_id: &str) -> StoreFuture<'_, bool> {
        let schedule_id = schedule_id.to_owned();
        self.plain(Op::Schedule, move || {
            self.inner.delete_schedule(&schedule_id)
        })
    }

    fn due_schedules(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.plain(Op::Read, move || self.inner.due_schedules(now_ms, max))
    }

    fn register_engine(&self, engine: EngineRecord) -> StoreFuture<'_, ()> {
        self.plain(Op::Engine, move || self.inner.register_engine(engine))
    }

    fn renew_engine(&self, engine_id: &str, lease_until_ms: i64) -> StoreFuture<'_, bool> {
        let engine_id = engine_id.to_owned();
        self.plain(Op::Engine, move || {
            self.inner.renew_engine(&engine_id, lease_until_ms)
        })
    }

    fn remove_engine(&self, engine_id: &str) -> StoreFuture<'_, ()> {
        let engine_id = engine_id.to_owned();
        self.plain(Op::Engine, move || self.inner.remove_engine(&engine_id))
    }

    fn live_engines(&self, now_ms: i64) -> StoreFuture<'_, Vec<EngineRecord>> {
        self.plain(Op::Read, move || self.inner.live_engines(now_ms))
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        self.plain(Op::Close, move || self.inner.close())
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.inner.changes()
    }

    fn metrics(&self) -> Option<std::sync::Arc<crate::metrics::StoreMetrics>> {
        self.inner.metrics()
    }

    fn takes_assumed_rows(&self) -> bool {
        self.inner.takes_assumed_rows()
    }

    fn terminate(
        &self,
        workflow_id: &str,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, RunRecord> {
        let (workflow_id, reason) = (workflow_id.to_owned(), reason.to_owned());
        self.plain(Op::Terminate, move || {
            self.inner.terminate(&workflow_id, &reason, now_ms)
        })
    }

    fn purge_closed_runs(&self, closed_before_ms: i64, max: usize) -> StoreFuture<'_, Vec<String>> {
        self.run(
            Op::Purge,
            move || self.inner.purge_closed_runs(closed_before_ms, max),
            non_empty,
        )
    }

    fn count_closed_runs(&self, closed_before_ms: i64) -> StoreFuture<'_, u64> {
        self.plain(Op::Read, move || {
            self.inner.count_closed_runs(closed_before_ms)
        })
    }

    // Operators' calls, never faulted (no `Op` names them).
    fn set_current_build(&self, task_queue: &str, build_id: &str) -> StoreFuture<'_, ()> {
        self.inner.set_current_build(task_queue, build_id)
    }

    fn build_ids(&self, task_queue: Option<&str>) -> StoreFuture<'_, Vec<BuildIdStatus>> {
        let task_queue = task_queue.map(str::to_owned);
        self.plain(Op::Read, move || {
            self.inner.build_ids(task_queue.as_deref())
        })
    }

    fn move_to_build(&self, workflow_id: &str, build_id: &str) -> StoreFuture<'_, RunRecord> {
        self.inner.move_to_build(workflow_id, build_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn start(id: &str) -> StartRequest {
        StartRequest {
            run: crate::store::NewRun {
                workflow_id: id.into(),
                run_id: format!("run-{id}"),
                workflow_type: "t".into(),
                input: Payload::encode(&()).expect("unit encodes"),
                random_seed: 1,
                continued_from: None,
                parent: None,
                task_queue: "default".into(),
                memo: Default::default(),
                limits: None,
            },
            policy: Default::default(),
            reuse: Default::default(),
            request_id: None,
            messages: Vec::new(),
            now_ms: 0,
        }
    }

    #[tokio::test]
    async fn an_injected_full_disk_fails_writes_only_until_cleared() {
        let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let store = FaultStore::new(inner.clone());
        store.inject(Fault::Full, Target::Writes);
        let e = store.start_run(start("a")).await.unwrap_err();
        assert!(e.is_retryable(), "{e}");
        assert!(e.to_string().contains("full"), "{e}");
        assert!(store.get_run("a", None).await.unwrap().is_none());
        assert_eq!((store.injected(), store.commits()), (1, 0));
        store.clear();
        store.start_run(start("a")).await.unwrap();
        assert_eq!(store.commits(), 1);
    }

    #[tokio::test]
    async fn each_crash_variant_applies_or_not_then_refuses_everything() {
        for how in CRASHES {
            let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
            let store = FaultStore::new(inner.clone());
            store.crash_at(2, how);
            store.start_run(start("a")).await.unwrap();
            let second = store.start_run(start("b")).await;
            assert_eq!(second.is_ok(), how == Crash::AfterCommit, "{how:?}");
            assert!(store.is_crashed());
            let applied = inner.get_run("b", None).await.unwrap().is_some();
            assert_eq!(applied, how != Crash::NotApplied, "{how:?}");
            let later = store.get_run("a", None).await.unwrap_err();
            assert!(later.to_string().contains("crashed"), "{later}");
            assert!(!later.is_retryable());
            store.crashed().await;
        }
    }
}
