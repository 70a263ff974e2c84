//! [`StoreAdmin`]: the store's operations that no workflow's path takes — schedules, the
//! engines registry, worker-versioning builds, retention's purge, listing and search. The
//! scheduler, the liveness and retention loops, operators' tools and the client's list and
//! describe use them; a workflow task, a delivery or an activity attempt never does.
//!
//! They are apart from [`Store`]'s so that the engine's path reads on its own, as one
//! separates a queue's provider from its management: an operation here may scan (a list, a
//! count, a purge) where the engine's name one run, one task or one attempt.

use super::operation::Operation;
use super::records::{EngineRecord, RunRecord, RunSearch, ScheduleRow, ScheduleUpdate};
use super::{send, Store, StoreFuture};
use crate::data::flow::{FlowKind, FlowLimit, FlowScope, FlowUsage};
use crate::data::pause::PauseMark;
use crate::data::queue::{QueueAdmission, QueueSpot, QueueUsage, WorkflowQueue};
use crate::data::run::ListFilter;
use crate::data::versioning::BuildIdStatus;

/// The operators' and the engine's bookkeeping operations on a store, from
/// [`Store::admin`]: `store.admin().list_schedules().await`.
#[derive(Clone, Copy)]
pub struct StoreAdmin<'a> {
    store: &'a dyn Store,
}

impl<'a> StoreAdmin<'a> {
    /// The admin operations of `store`.
    pub fn of(store: &'a dyn Store) -> Self {
        StoreAdmin { store }
    }

    fn send<T: super::FromOutcome>(&self, op: Operation) -> StoreFuture<'a, T> {
        send(self.store, op)
    }

    /// Runs matching the filter, newest first.
    pub fn list_runs(&self, filter: ListFilter) -> StoreFuture<'a, Vec<RunRecord>> {
        self.send(Operation::ListRuns(filter))
    }

    /// How many runs match the filter (its `limit` and `after_run_id` apply as in
    /// [`list_runs`](Self::list_runs)), counted by the store without reading the runs.
    pub fn count_runs(&self, filter: ListFilter) -> StoreFuture<'a, u64> {
        self.send(Operation::CountRuns(filter))
    }

    /// Pauses the running latest run of `workflow_id` (an operator's pause, recorded with
    /// `mark`), in one transaction: its workflow task lease and each activity waiting for an
    /// attempt are held until [`unpause_run`](Self::unpause_run), so it gets no workflow task
    /// and starts no activity, while messages and fired timers wait in its inbox in order. A
    /// paused run keeps its first mark. `NotFound` for an unknown workflow id, `RunFinished`
    /// for a closed run.
    pub fn pause_run(&self, workflow_id: &str, mark: PauseMark) -> StoreFuture<'a, RunRecord> {
        let workflow_id = workflow_id.to_owned();
        self.send(Operation::PauseRun { workflow_id, mark })
    }

    /// Unpauses the running latest run of `workflow_id`, in one transaction: releases what
    /// [`pause_run`](Self::pause_run) held and makes the run ready at once. A run that is not
    /// paused is left as it is. `NotFound` for an unknown workflow id, `RunFinished` for a
    /// closed run. `now_ms` (engine-clock time) is when the feed says it was unpaused.
    pub fn unpause_run(&self, workflow_id: &str, now_ms: i64) -> StoreFuture<'a, RunRecord> {
        let workflow_id = workflow_id.to_owned();
        self.send(Operation::UnpauseRun {
            workflow_id,
            now_ms,
        })
    }

    /// The pause of each of these runs, in their order (`None`: not paused, closed, or no
    /// such run).
    pub fn run_pauses(&self, run_ids: Vec<String>) -> StoreFuture<'a, Vec<Option<PauseMark>>> {
        self.send(Operation::RunPauses(run_ids))
    }

    /// The latest run of `workflow_id` and whether an operator paused it (`None`: no run),
    /// in one read: where a message goes (a paused run's goes straight to its inbox).
    pub fn latest_run_paused(
        &self,
        workflow_id: &str,
    ) -> StoreFuture<'a, Option<(RunRecord, bool)>> {
        self.send(Operation::LatestRunPaused {
            workflow_id: workflow_id.to_owned(),
        })
    }

    /// The search attributes and memo of each of these runs, in their order (empty for a
    /// run that has none, or that does not exist).
    pub fn run_search(&self, run_ids: Vec<String>) -> StoreFuture<'a, Vec<RunSearch>> {
        self.send(Operation::RunSearch(run_ids))
    }

    /// How many closed runs closed before `closed_before_ms`: what purging them all would
    /// delete.
    pub fn count_closed_runs(&self, closed_before_ms: i64) -> StoreFuture<'a, u64> {
        self.send(Operation::CountClosedRuns { closed_before_ms })
    }

    /// Purges at most `max` closed runs (any status but running) whose close time is before
    /// `closed_before_ms`, oldest close first, in one transaction; returns their run ids
    /// (fewer than `max`: nothing more to purge now). A purged run is gone with its history
    /// and whatever its inbox, activities and timers held: reading it finds nothing, and its
    /// workflow id may be started again. Its continue-as-new chain's update records and
    /// signal dedupe ids go with the chain's last run, so dedupe ids live as long as the runs
    /// they deduplicate for are retained. Running runs are never touched, nor anything a
    /// running parent needs (a child's result is in the parent's inbox from the moment it
    /// closed).
    pub fn purge_closed_runs(
        &self,
        closed_before_ms: i64,
        max: usize,
    ) -> StoreFuture<'a, Vec<String>> {
        self.send(Operation::PurgeClosedRuns {
            closed_before_ms,
            max,
        })
    }

    /// Resets, forks or resumes one run, in one transaction (see `store/rules/repair.rs`): a
    /// reset (or a resume of a closed run) closes the running latest run as `Reset` with a
    /// `WorkflowReset` event, and creates a run of the same chain whose history is the prefix
    /// up to the request's point, its pending activities and timers armed again, its inbox
    /// the signals and updates received after the point unless dropped; a fork creates the
    /// run under a new workflow id (a chain of its own) and leaves the source untouched; a
    /// resume of a running run whose workflow task failed makes that task ready now. The new
    /// run's `WorkflowStarted` records the repair ([`RepairOrigin`](crate::data::repair::RepairOrigin)).
    /// Returns the run that goes on. `Conflict` for a point that is not a workflow task's last
    /// event, a source that is not the latest run (reset, resume), a prefix with open
    /// children; `AlreadyStarted` for a fork onto a running workflow id.
    pub fn reset_run(&self, request: super::records::ResetRequest) -> StoreFuture<'a, RunRecord> {
        self.send(Operation::ResetRun(request))
    }

    /// Deletes one run (the workflow id's latest if `run_id` is `None`) in one transaction:
    /// its row, history, inbox, activities, timers, search attributes and memo, and its chain's
    /// update records, signal ids and start request ids once no run of the chain is left. A
    /// running run is terminated first, with `reason`. Returns the deleted run's id.
    pub fn delete_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'a, Vec<String>> {
        self.send(Operation::DeleteRun {
            workflow_id: workflow_id.to_string(),
            run_id: run_id.map(str::to_string),
            reason: reason.to_string(),
            now_ms,
        })
    }

    /// The repair that made run `run_id`, as its first event records it (`None`: none did).
    pub fn repair_origin(
        &self,
        run_id: &str,
    ) -> StoreFuture<'a, Option<crate::data::repair::RepairOrigin>> {
        self.send(Operation::RepairOrigin {
            run_id: run_id.to_string(),
        })
    }

    /// Creates a schedule (version 1); `ScheduleExists` if the id is taken.
    pub fn create_schedule(&self, row: ScheduleRow) -> StoreFuture<'a, ()> {
        self.send(Operation::CreateSchedule(row))
    }

    /// Replaces a schedule's data and next check if its version is still the one expected
    /// (then the version goes up by one). Returns false on a version mismatch or a missing
    /// schedule.
    pub fn update_schedule(&self, update: ScheduleUpdate) -> StoreFuture<'a, bool> {
        self.send(Operation::UpdateSchedule(update))
    }

    /// One schedule.
    pub fn get_schedule(&self, schedule_id: &str) -> StoreFuture<'a, Option<ScheduleRow>> {
        let schedule_id = schedule_id.to_owned();
        self.send(Operation::GetSchedule { schedule_id })
    }

    /// Every schedule, by id.
    pub fn list_schedules(&self) -> StoreFuture<'a, Vec<ScheduleRow>> {
        self.send(Operation::ListSchedules)
    }

    /// Deletes a schedule; false if it did not exist.
    pub fn delete_schedule(&self, schedule_id: &str) -> StoreFuture<'a, bool> {
        let schedule_id = schedule_id.to_owned();
        self.send(Operation::DeleteSchedule { schedule_id })
    }

    /// Schedules whose next check is due (`next_check_ms <= now`), at most `max`.
    pub fn due_schedules(&self, now_ms: i64, max: usize) -> StoreFuture<'a, Vec<ScheduleRow>> {
        self.send(Operation::DueSchedules { now_ms, max })
    }

    /// Registers an engine (or replaces its row): its liveness lease runs until
    /// `engine.lease_until_ms`.
    pub fn register_engine(&self, engine: EngineRecord) -> StoreFuture<'a, ()> {
        self.send(Operation::RegisterEngine(engine))
    }

    /// Extends an engine's liveness lease; false if the engine is not registered (it must
    /// register again).
    pub fn renew_engine(&self, engine_id: &str, lease_until_ms: i64) -> StoreFuture<'a, bool> {
        let engine_id = engine_id.to_owned();
        self.send(Operation::RenewEngine {
            engine_id,
            lease_until_ms,
        })
    }

    /// Removes an engine (a clean shutdown; its leases were released).
    pub fn remove_engine(&self, engine_id: &str) -> StoreFuture<'a, ()> {
        let engine_id = engine_id.to_owned();
        self.send(Operation::RemoveEngine { engine_id })
    }

    /// The engines whose liveness lease has not expired at `now_ms`, by id.
    pub fn live_engines(&self, now_ms: i64) -> StoreFuture<'a, Vec<EngineRecord>> {
        self.send(Operation::LiveEngines { now_ms })
    }

    /// Makes `build_id` the current build of `task_queue` (worker versioning): new runs on
    /// the queue start on it, and its running auto-upgrade runs (and runs that have not run a
    /// workflow task yet) move to it. Pinned runs stay where they are. One transaction.
    pub fn set_current_build(&self, task_queue: &str, build_id: &str) -> StoreFuture<'a, ()> {
        let (task_queue, build_id) = (task_queue.to_owned(), build_id.to_owned());
        self.send(Operation::SetCurrentBuild {
            task_queue,
            build_id,
        })
    }

    /// The builds of running runs and current builds, by build id: per build, its running
    /// runs by behaviour and the queues it is current for; of `task_queue` alone if given.
    pub fn build_ids(&self, task_queue: Option<&str>) -> StoreFuture<'a, Vec<BuildIdStatus>> {
        let task_queue = task_queue.map(str::to_owned);
        self.send(Operation::BuildIds { task_queue })
    }

    /// Sets a flow limit at `now_ms` (see [`FlowLimit`]), replacing its scope's limit of the
    /// same kind: polls from then on lease under it. A rate limit set again keeps its bucket's
    /// tokens (capped at the new burst). `Invalid` for a limit that
    /// [`check`](FlowLimit::check) refuses. One transaction.
    pub fn set_flow_limit(&self, limit: FlowLimit, now_ms: i64) -> StoreFuture<'a, ()> {
        self.send(Operation::SetFlowLimit { limit, now_ms })
    }

    /// Every flow limit, by scope kind, scope name and rule kind.
    pub fn flow_limits(&self) -> StoreFuture<'a, Vec<FlowLimit>> {
        self.send(Operation::FlowLimits)
    }

    /// Every flow limit with the attempts it covers running and waiting at `now_ms`, and a rate
    /// limit's whole tokens, in one read.
    pub fn flow_usage(&self, now_ms: i64) -> StoreFuture<'a, Vec<FlowUsage>> {
        self.send(Operation::ReadFlowUsage { now_ms })
    }

    /// Removes the limit of kind `kind` of `scope`; whether there was one.
    pub fn remove_flow_limit(&self, scope: FlowScope, kind: FlowKind) -> StoreFuture<'a, bool> {
        self.send(Operation::RemoveFlowLimit { scope, kind })
    }

    /// Sets the settings of a queue of workflow starts at `now_ms`, replacing those of the
    /// same name: admissions from then on obey them. A rate set again keeps its bucket's
    /// tokens (capped at the new limit). `Invalid` for settings that
    /// [`check`](WorkflowQueue::check) refuses.
    pub fn set_workflow_queue(&self, queue: WorkflowQueue, now_ms: i64) -> StoreFuture<'a, ()> {
        self.send(Operation::SetWorkflowQueue { queue, now_ms })
    }

    /// The settings of every queue of workflow starts, by name.
    pub fn workflow_queues(&self) -> StoreFuture<'a, Vec<WorkflowQueue>> {
        self.send(Operation::WorkflowQueues)
    }

    /// Removes the settings of queue `name` (it then admits every start at once); whether it
    /// had any.
    pub fn remove_workflow_queue(&self, name: &str) -> StoreFuture<'a, bool> {
        let name = name.to_owned();
        self.send(Operation::RemoveWorkflowQueue { name })
    }

    /// One admission pass of the queues of workflow starts at `now_ms`: each queue's held
    /// runs that its settings have room for (all, for a queue without settings) are made
    /// ready, lowest priority number first, then in the order they were started. One
    /// transaction; on PostgreSQL each queue's settings row is locked first.
    pub fn admit_queued(&self, now_ms: i64) -> StoreFuture<'a, QueueAdmission> {
        self.send(Operation::AdmitQueued { now_ms })
    }

    /// The queue of run `run_id` and its position among the queue's held runs, if it was
    /// started on a queue.
    pub fn queue_spot(&self, run_id: &str) -> StoreFuture<'a, Option<QueueSpot>> {
        let run_id = run_id.to_owned();
        self.send(Operation::QueueSpot { run_id })
    }

    /// Every queue of workflow starts with settings or with runs on it, by name, with its
    /// runs held and its admitted runs still running at `now_ms`, and its rate's whole tokens;
    /// in one read.
    pub fn workflow_queue_usage(&self, now_ms: i64) -> StoreFuture<'a, Vec<QueueUsage>> {
        self.send(Operation::ReadQueueUsage { now_ms })
    }

    /// [`queue_spot`](Self::queue_spot) of each of these runs, in their order, in one read
    /// of their queue rows and at most one of the held runs (what a list shows).
    pub fn queue_spots(&self, run_ids: Vec<String>) -> StoreFuture<'a, Vec<Option<QueueSpot>>> {
        self.send(Operation::QueueSpots { run_ids })
    }

    /// Moves the running latest run of `workflow_id` to `build_id`: from then on only engines
    /// of that build take its workflow tasks (a task in flight elsewhere may still commit).
    /// `NotFound` for an unknown workflow id, `RunFinished` for a closed run.
    pub fn move_to_build(&self, workflow_id: &str, build_id: &str) -> StoreFuture<'a, RunRecord> {
        let (workflow_id, build_id) = (workflow_id.to_owned(), build_id.to_owned());
        self.send(Operation::MoveToBuild {
            workflow_id,
            build_id,
        })
    }
}
