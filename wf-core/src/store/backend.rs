//! A store is a [`Backend`] — transactions over its tables — and the rules: every store that
//! implements [`Backend`] is a [`Store`], through the one impl here, whose methods each run
//! one rule (or one primitive) in one transaction.

use super::records::{
    ActivityTask, DeliverOutcome, EngineRecord, PendingMessages, RunRecord, RunSearch, ScheduleRow,
    StartOutcome, StartRequest, TaskCommit, WorkflowTask,
};
use super::rules::leases::TaskFilters;
use super::rules::tx::{
    ActivityTable, EngineTable, PurgeTable, RunTable, ScheduleTable, Tx, UpdateTable,
};
use super::rules::{
    activities, builds, commit, complete, deliver, engines, leases, purge, reads, run_limits,
    schedules, search, start, terminate, timers,
};
use super::{Store, StoreFuture};
use crate::data::activity::{ActivityFailure, ActivityResolution};
use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::run::{ListFilter, TaskFailure};
use crate::data::run_limits::RunLimits;
use crate::data::update::UpdateRecord;
use crate::data::versioning::BuildIdStatus;
use crate::error::StoreError;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use Durability::{Durable, Soft};

/// A rule running in a transaction: the future an operation passed to [`Backend::write`] or
/// [`Backend::read`] returns for the transaction it is given.
pub type TxFuture<'t, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 't>>;

/// Whether a write must reach the disk before its caller is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Durable before the caller is answered (an fsync, for a file).
    Durable,
    /// Survives a process crash; an OS crash or power loss may lose it, which only reverts to
    /// a state the engine redoes (leases, heartbeats, retry bookkeeping, internal steps).
    /// A backend makes a soft write durable no later than the next durable write that
    /// follows it (as a write-ahead log does), which the rules rely on: an update's delivery
    /// is soft because its caller is answered only after a durable commit.
    Soft,
}

/// An operation a store call runs in one transaction: a rule with its arguments, given the
/// transaction. Any closure of that shape is one.
///
/// It is `Clone` (its arguments are) so that a store may run it again after a transient
/// failure rolled its transaction back: a PostgreSQL deadlock or serialization failure, or a
/// connection lost before the commit was sent. A store that never needs to never clones it.
///
/// Why a closure returning a boxed future rather than an `AsyncFnOnce(&mut Tx)`: a backend
/// whose transaction is asynchronous (PostgreSQL) awaits the rule inside the `Send` future that
/// every [`Store`] method returns, so the rule's future must be `Send`, and stable Rust cannot
/// require that of an async closure's future (its type cannot be named in a bound). The box is
/// one small allocation per call, beside the request's own.
pub trait TxOp<X, T>:
    for<'t> FnOnce(&'t mut X) -> TxFuture<'t, T> + Clone + Send + 'static
{
}

impl<X, T, F> TxOp<X, T> for F where
    F: for<'t> FnOnce(&'t mut X) -> TxFuture<'t, T> + Clone + Send + 'static
{
}

/// What a store call answers: a value that can be sent to the caller's thread.
pub trait Answer: Send + 'static {}

impl<T: Send + 'static> Answer for T {}

/// What a store must provide for the generic [`Store`] impl: transactions over its tables.
///
/// `write` runs `op` in a transaction that commits if `op` succeeds and is rolled back if it
/// fails (a failed call leaves the store as it was); `read` runs it on a consistent snapshot.
/// A call is queued or done when the method is called, not when its future is first polled:
/// dropping the future does not withdraw it.
///
/// A store whose transactions are asynchronous (PostgreSQL) opens one and awaits
/// `op(&mut tx)` inside the future it returns; a store whose primitives never wait (SQLite on
/// its writer thread, memory under its lock) runs `op` to its end with one poll.
///
/// ```
/// use wf_core::store::{Backend, MemoryStore, SqliteStore};
/// fn is_backend<B: Backend>() {}
/// is_backend::<MemoryStore>();
/// is_backend::<SqliteStore>();
/// ```
pub trait Backend: Send + Sync + 'static {
    /// One transaction on the tables.
    type Tx: Tx;

    /// Runs `op` in a write transaction, answered once it is committed (and, if `how` says so,
    /// durable).
    fn write<T: Answer>(&self, how: Durability, op: impl TxOp<Self::Tx, T>) -> StoreFuture<'_, T>;

    /// [`write`](Backend::write) for an `op` whose first read is the latest run of
    /// `workflow_id` (a start, a message to a workflow id): a backend whose reads cost a round
    /// trip may read it together with those of the writes it commits with. The default is
    /// `write`.
    fn write_for<T: Answer>(
        &self,
        how: Durability,
        workflow_id: &str,
        op: impl TxOp<Self::Tx, T>,
    ) -> StoreFuture<'_, T> {
        let _ = workflow_id;
        self.write(how, op)
    }

    /// Runs `op` in a read transaction (it must not write).
    fn read<T: Answer>(&self, op: impl TxOp<Self::Tx, T>) -> StoreFuture<'_, T>;

    /// See [`Store::close`]; the default has nothing to do.
    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    /// See [`Store::changes`]; the default is `None`.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// See [`Store::takes_assumed_rows`]; the default is `false`.
    fn takes_assumed_rows(&self) -> bool {
        false
    }

    /// See [`Store::metrics`]; the default is `None`.
    fn metrics(&self) -> Option<std::sync::Arc<crate::metrics::StoreMetrics>> {
        None
    }
}

/// `op`, typed as a [`TxOp`] where it is made (a closure bound to a name first would not be
/// inferred as one, for every borrow of the transaction).
fn tx_op<X, T, F>(op: F) -> F
where
    F: for<'t> FnOnce(&'t mut X) -> TxFuture<'t, T> + Clone + Send + 'static,
{
    op
}

/// Runs a rule whose primitives never wait (SQLite, memory) to its end: it is ready on its
/// first poll. One that is not is a bug of the store, reported as such rather than a panic.
pub(crate) fn run_ready<T>(rule: TxFuture<'_, T>) -> Result<T, StoreError> {
    let mut rule = rule;
    match rule.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(StoreError::bug(
            "a store rule waited on a primitive of a store whose primitives never wait",
        )),
    }
}

impl<B: Backend> Store for B {
    fn close(&self) -> StoreFuture<'_, ()> {
        Backend::close(self)
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Backend::changes(self)
    }

    fn metrics(&self) -> Option<std::sync::Arc<crate::metrics::StoreMetrics>> {
        Backend::metrics(self)
    }

    fn takes_assumed_rows(&self) -> bool {
        Backend::takes_assumed_rows(self)
    }

    fn start_run(&self, req: StartRequest) -> StoreFuture<'_, StartOutcome> {
        let workflow_id = req.run.workflow_id.clone();
        self.write_for(Durable, &workflow_id, move |tx| {
            Box::pin(start::start_run(tx, req))
        })
    }

    fn start_run_with_task(
        &self,
        req: StartRequest,
        first: TaskCommit,
    ) -> StoreFuture<'_, (StartOutcome, Option<Result<RunRecord, StoreError>>)> {
        let workflow_id = req.run.workflow_id.clone();
        self.write_for(Durable, &workflow_id, move |tx| {
            Box::pin(start::start_run_with_task(tx, req, first))
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
        // An update's caller is answered only once a workflow task has recorded its
        // acceptance, rejection or outcome, in a synced commit; a synced commit makes every
        // earlier write durable too (a write-ahead log reaches the disk in order), so the
        // delivery need not wait for the disk itself. A crash before then loses an update
        // nobody was answered about, and its caller's retry (same id) delivers it again.
        let durability = match message {
            Message::Update { .. } => Soft,
            _ => Durable,
        };
        // Without a run id, its first read is the workflow id's latest run.
        let latest = run_id.is_none().then(|| workflow_id.clone());
        let op = tx_op(move |tx: &mut B::Tx| {
            Box::pin(deliver::deliver(tx, workflow_id, run_id, message, now_ms))
        });
        match &latest {
            Some(id) => self.write_for(durability, id, op),
            None => self.write(durability, op),
        }
    }

    fn deliver_durable(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome> {
        let (workflow_id, run_id) = (workflow_id.to_owned(), run_id.map(str::to_owned));
        self.write(Durable, move |tx| {
            Box::pin(deliver::deliver(tx, workflow_id, run_id, message, now_ms))
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
        self.write(Soft, move |tx| {
            Box::pin(leases::poll_workflow_tasks(
                tx,
                worker_id,
                now_ms,
                lease_ms,
                max,
                TaskFilters::default(),
            ))
        })
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
        self.write(Soft, move |tx| {
            Box::pin(leases::lease_run(
                tx, run_id, worker_id, now_ms, lease_ms, build_id,
            ))
        })
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
        let filters = TaskFilters {
            workflow_types: Some(workflow_types),
            task_queues: Some(task_queues),
            build_id: build_id.map(str::to_owned),
        };
        poll_filtered(self, worker_id, now_ms, lease_ms, max, filters)
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
        let filters = TaskFilters {
            workflow_types: None,
            task_queues: Some(task_queues),
            build_id: build_id.map(str::to_owned),
        };
        poll_filtered(self, worker_id, now_ms, lease_ms, max, filters)
    }

    fn poll_activity_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
        names: Vec<String>,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let worker_id = worker_id.to_owned();
        self.write(Soft, move |tx| {
            Box::pin(activities::poll_activity_tasks(
                tx,
                worker_id,
                now_ms,
                max,
                Some(names),
            ))
        })
    }

    fn commit_workflow_task(&self, commit: TaskCommit) -> StoreFuture<'_, RunRecord> {
        let durability = if commit.sync { Durable } else { Soft };
        let committed = self.write(durability, move |tx| Box::pin(commit::commit(tx, commit)));
        // The spent commit is dropped here, on the caller's thread (see `rules::commit`).
        Box::pin(async move { committed.await.map(|(record, _spent)| record) })
    }

    fn fail_workflow_task(
        &self,
        run_id: &str,
        worker_id: &str,
        failure: TaskFailure,
    ) -> StoreFuture<'_, ()> {
        let (run_id, worker_id) = (run_id.to_owned(), worker_id.to_owned());
        self.write(Soft, move |tx| {
            Box::pin(leases::fail_workflow_task(tx, run_id, worker_id, failure))
        })
    }

    fn release_workflow_task(&self, run_id: &str, worker_id: &str) -> StoreFuture<'_, ()> {
        let (run_id, worker_id) = (run_id.to_owned(), worker_id.to_owned());
        self.write(Soft, move |tx| {
            Box::pin(leases::release_workflow_task(tx, run_id, worker_id))
        })
    }

    fn poll_activity_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>> {
        let worker_id = worker_id.to_owned();
        self.write(Soft, move |tx| {
            Box::pin(activities::poll_activity_tasks(
                tx, worker_id, now_ms, max, None,
            ))
        })
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
        self.write(Soft, move |tx| {
            Box::pin(activities::heartbeat_activity(
                tx, run_id, seq, attempt, details, now_ms,
            ))
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
        self.write(Durable, move |tx| {
            Box::pin(activities::resolve_activity(
                tx, run_id, seq, attempt, resolution, now_ms,
            ))
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
        self.write(Durable, move |tx| {
            Box::pin(activities::retry_activity(
                tx,
                run_id,
                seq,
                attempt,
                visible_at_ms,
                failure,
            ))
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
        self.write(Durable, move |tx| {
            Box::pin(complete::hold_activity_for_completion(
                tx, run_id, seq, attempt, now_ms,
            ))
        })
    }

    fn release_activity(&self, run_id: &str, seq: u32, attempt: u32) -> StoreFuture<'_, ()> {
        let run_id = run_id.to_owned();
        self.write(Durable, move |tx| {
            Box::pin(activities::release_activity(tx, run_id, seq, attempt))
        })
    }

    fn current_attempts(&self, attempts: Vec<(String, u32, u32)>) -> StoreFuture<'_, Vec<bool>> {
        self.read(move |tx| Box::pin(activities::current_attempts(tx, attempts)))
    }

    fn expired_activities(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ActivityTask>> {
        self.read(move |tx| Box::pin(tx.expired_activities(now_ms, max)))
    }

    fn fire_due_timers(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<(String, u32)>> {
        self.write(Soft, move |tx| {
            Box::pin(timers::fire_due_timers(tx, now_ms, max))
        })
    }

    fn next_wakeup(&self, now_ms: i64) -> StoreFuture<'_, Option<i64>> {
        self.read(move |tx| Box::pin(tx.next_wakeup(now_ms)))
    }

    fn get_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<RunRecord>> {
        let (workflow_id, run_id) = (workflow_id.to_owned(), run_id.map(str::to_owned));
        self.read(move |tx| Box::pin(reads::get_run(tx, workflow_id, run_id)))
    }

    fn run_limits(&self, run_id: &str) -> StoreFuture<'_, Option<RunLimits>> {
        let run_id = run_id.to_owned();
        self.read(move |tx| {
            Box::pin(async move {
                if tx.load_run(&run_id).await?.is_none() {
                    return Ok(None);
                }
                Ok(run_limits::started(tx, &run_id).await?.limits)
            })
        })
    }

    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>> {
        let run_id = run_id.to_owned();
        self.read(move |tx| Box::pin(reads::read_history(tx, run_id, from_event_id)))
    }

    fn pending_messages(
        &self,
        run_id: &str,
        history_from: Option<u64>,
    ) -> StoreFuture<'_, PendingMessages> {
        let run_id = run_id.to_owned();
        self.read(move |tx| Box::pin(reads::pending_messages(tx, run_id, history_from)))
    }

    fn list_runs(&self, filter: ListFilter) -> StoreFuture<'_, Vec<RunRecord>> {
        self.read(move |tx| Box::pin(async move { tx.list_runs(&filter).await }))
    }

    fn get_update(
        &self,
        workflow_id: &str,
        update_id: &str,
    ) -> StoreFuture<'_, Option<UpdateRecord>> {
        let (workflow_id, update_id) = (workflow_id.to_owned(), update_id.to_owned());
        self.read(move |tx| Box::pin(reads::get_update(tx, workflow_id, update_id)))
    }

    fn pending_updates(&self, run_id: &str) -> StoreFuture<'_, Vec<UpdateRecord>> {
        let run_id = run_id.to_owned();
        self.read(move |tx| Box::pin(async move { tx.pending_updates(&run_id).await }))
    }

    fn pending_activities(&self, run_id: &str) -> StoreFuture<'_, Vec<ActivityTask>> {
        let run_id = run_id.to_owned();
        self.read(move |tx| Box::pin(async move { tx.run_activities(&run_id).await }))
    }

    fn run_search(&self, run_ids: Vec<String>) -> StoreFuture<'_, Vec<RunSearch>> {
        self.read(move |tx| Box::pin(search::run_search(tx, run_ids)))
    }

    fn create_schedule(&self, row: ScheduleRow) -> StoreFuture<'_, ()> {
        self.write(Durable, move |tx| {
            Box::pin(schedules::create_schedule(tx, row))
        })
    }

    fn update_schedule(
        &self,
        schedule_id: &str,
        expected_version: u64,
        data: Payload,
        next_check_ms: Option<i64>,
    ) -> StoreFuture<'_, bool> {
        let id = schedule_id.to_owned();
        self.write(Durable, move |tx| {
            Box::pin(schedules::update_schedule(
                tx,
                id,
                expected_version,
                data,
                next_check_ms,
            ))
        })
    }

    fn get_schedule(&self, schedule_id: &str) -> StoreFuture<'_, Option<ScheduleRow>> {
        let id = schedule_id.to_owned();
        self.read(move |tx| Box::pin(async move { tx.get_schedule(&id).await }))
    }

    fn list_schedules(&self) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.read(move |tx| Box::pin(tx.list_schedules()))
    }

    fn delete_schedule(&self, schedule_id: &str) -> StoreFuture<'_, bool> {
        let id = schedule_id.to_owned();
        self.write(Durable, move |tx| {
            Box::pin(async move { tx.delete_schedule(&id).await })
        })
    }

    fn due_schedules(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ScheduleRow>> {
        self.read(move |tx| Box::pin(tx.due_schedules(now_ms, max)))
    }

    fn register_engine(&self, engine: EngineRecord) -> StoreFuture<'_, ()> {
        self.write(Soft, move |tx| {
            Box::pin(async move { tx.put_engine(&engine).await })
        })
    }

    fn renew_engine(&self, engine_id: &str, lease_until_ms: i64) -> StoreFuture<'_, bool> {
        let engine_id = engine_id.to_owned();
        self.write(Soft, move |tx| {
            Box::pin(async move { tx.renew_engine(&engine_id, lease_until_ms).await })
        })
    }

    fn remove_engine(&self, engine_id: &str) -> StoreFuture<'_, ()> {
        let engine_id = engine_id.to_owned();
        self.write(Soft, move |tx| {
            Box::pin(async move { tx.delete_engine(&engine_id).await })
        })
    }

    fn live_engines(&self, now_ms: i64) -> StoreFuture<'_, Vec<EngineRecord>> {
        self.read(move |tx| Box::pin(engines::live_engines(tx, now_ms)))
    }

    fn terminate(
        &self,
        workflow_id: &str,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, RunRecord> {
        let (workflow_id, reason) = (workflow_id.to_owned(), reason.to_owned());
        self.write(Durable, move |tx| {
            Box::pin(terminate::terminate(tx, workflow_id, reason, now_ms))
        })
    }

    fn purge_closed_runs(&self, closed_before_ms: i64, max: usize) -> StoreFuture<'_, Vec<String>> {
        // Losing a purge to a crash loses nothing: the next one deletes the same runs.
        self.write(Soft, move |tx| {
            Box::pin(purge::purge_closed_runs(tx, closed_before_ms, max))
        })
    }

    fn count_closed_runs(&self, closed_before_ms: i64) -> StoreFuture<'_, u64> {
        self.read(move |tx| Box::pin(tx.count_closed_runs(closed_before_ms)))
    }

    fn set_current_build(&self, task_queue: &str, build_id: &str) -> StoreFuture<'_, ()> {
        let (task_queue, build_id) = (task_queue.to_owned(), build_id.to_owned());
        self.write(Durable, move |tx| {
            Box::pin(builds::set_current_build(tx, task_queue, build_id))
        })
    }

    fn build_ids(&self, task_queue: Option<&str>) -> StoreFuture<'_, Vec<BuildIdStatus>> {
        let task_queue = task_queue.map(str::to_owned);
        self.read(move |tx| Box::pin(builds::build_ids(tx, task_queue)))
    }

    fn move_to_build(&self, workflow_id: &str, build_id: &str) -> StoreFuture<'_, RunRecord> {
        let (workflow_id, build_id) = (workflow_id.to_owned(), build_id.to_owned());
        self.write(Durable, move |tx| {
            Box::pin(builds::move_to_build(tx, workflow_id, build_id))
        })
    }
}

/// Leases ready workflow tasks of the runs `filters` admits (see [`TaskFilters`]).
fn poll_filtered<'s, B: Backend>(
    backend: &'s B,
    worker_id: &str,
    now_ms: i64,
    lease_ms: i64,
    max: usize,
    filters: TaskFilters,
) -> StoreFuture<'s, Vec<WorkflowTask>> {
    let worker_id = worker_id.to_owned();
    backend.write(Soft, move |tx| {
        Box::pin(leases::poll_workflow_tasks(
            tx, worker_id, now_ms, lease_ms, max, filters,
        ))
    })
}
