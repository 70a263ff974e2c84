//! Every store operation as a value: [`Operation`] (a request) and [`Outcome`] (its answer).
//! [`Store::execute`] takes one and answers the other; the typed methods of [`Store`] and
//! [`StoreAdmin`](super::StoreAdmin) build the request and unwrap the answer.
//!
//! This is the one seam every store call passes: the generic impl for a [`Backend`] runs the
//! operation's rule in one transaction ([`Operation::run_on`], the one `match` that names each
//! rule), and a wrapper (the payload codec's `EncodedStore`, fault injection's `FaultStore`)
//! implements `execute` once for every operation, from what an operation says of itself here:
//! its name, the payloads it carries ([`HasPayloads`]) and its fault class ([`Op`]).

use super::backend::{Backend, Durability, TxFuture};
use super::records::{
    ActivityAttempt, ActivityLeases, ActivityPoll, ActivityTask, Committed, DeliverOutcome,
    Delivery, EngineRecord, FiredTimer, LeaseRequest, PendingMessages, RunRecord, RunSearch,
    RunStart, ScheduleRow, ScheduleUpdate, StartOutcome, StartWithTask, TaskCommit, TaskPoll,
    WorkflowTask,
};
use super::rules::tx::{ActivityTable, EngineTable, PurgeTable, RunTable, ScheduleTable};
use super::rules::tx::{FlowTable, QueueTable, Tx, UpdateTable};
use super::rules::{
    activities, builds, commit, complete, deliver, engines, feed, flow, leases, pause, purge,
    queue_usage, queues, reads, repair, run_limits, schedules, search, start, streams, terminate,
    timers,
};
use super::StoreFuture;
use crate::data::activity::{ActivityFailure, ActivityResolution};
use crate::data::feed::{FeedCursor, FeedFilter, FeedPage};
use crate::data::flow::{FlowKind, FlowLimit, FlowScope, FlowUsage};
use crate::data::history::HistoryEvent;
use crate::data::message::Message;
use crate::data::pause::PauseMark;
use crate::data::payload::{Payload, PayloadError};
use crate::data::payload_codec::HasPayloads;
use crate::data::queue::{QueueAdmission, QueueSpot, QueueUsage, WorkflowQueue};
use crate::data::run::{ListFilter, TaskFailure};
use crate::data::run_limits::RunLimits;
use crate::data::stream::{StreamError, StreamList, StreamPage};
use crate::data::update::UpdateRecord;
use crate::data::versioning::BuildIdStatus;
use crate::error::StoreError;
use std::future::Future;
use Durability::{Durable, Soft};

mod payloads;

/// One store operation and its arguments: what a [`Store`](super::Store) method asks. Each
/// variant is documented on the method that sends it.
#[derive(Debug, Clone)]
#[non_exhaustive]
// One per call, moved once into its transaction: boxing the commit would cost an allocation
// on the hot path and save nothing.
#[allow(clippy::large_enum_variant, missing_docs)]
pub enum Operation {
    StartRun(RunStart),
    StartRunWithTask {
        start: RunStart,
        first: TaskCommit,
    },
    Deliver(Delivery),
    DeliverDurable(Delivery),
    PollWorkflowTasks(TaskPoll),
    LeaseRun(LeaseRequest),
    CommitWorkflowTask(TaskCommit),
    FailWorkflowTask {
        run_id: String,
        worker_id: String,
        failure: TaskFailure,
    },
    ReleaseWorkflowTask {
        run_id: String,
        worker_id: String,
    },
    PollActivityTasks(ActivityPoll),
    HeartbeatActivity {
        attempt: ActivityAttempt,
        details: Option<Payload>,
        now_ms: i64,
    },
    ResolveActivity {
        attempt: ActivityAttempt,
        resolution: ActivityResolution,
        now_ms: i64,
    },
    RetryActivity {
        attempt: ActivityAttempt,
        visible_at_ms: i64,
        failure: ActivityFailure,
        now_ms: i64,
    },
    HoldActivityForCompletion {
        attempt: ActivityAttempt,
        now_ms: i64,
    },
    ReleaseActivity(ActivityAttempt),
    CurrentAttempts(Vec<ActivityAttempt>),
    ExpiredActivities {
        now_ms: i64,
        max: usize,
    },
    FireDueTimers {
        now_ms: i64,
        max: usize,
    },
    NextWakeup {
        now_ms: i64,
    },
    GetRun {
        workflow_id: String,
        run_id: Option<String>,
    },
    RunLimits {
        run_id: String,
    },
    ReadHistory {
        run_id: String,
        from_event_id: u64,
    },
    PendingMessages {
        run_id: String,
        history_from: Option<u64>,
    },
    GetUpdate {
        workflow_id: String,
        update_id: String,
    },
    PendingUpdates {
        run_id: String,
    },
    PendingActivities {
        run_id: String,
    },
    Terminate {
        workflow_id: String,
        reason: String,
        now_ms: i64,
    },
    Close,
    // The admin operations (see `StoreAdmin`).
    ListRuns(ListFilter),
    RunSearch(Vec<String>),
    CountRuns(ListFilter),
    PauseRun {
        workflow_id: String,
        mark: PauseMark,
    },
    UnpauseRun {
        workflow_id: String,
        now_ms: i64,
    },
    RunPauses(Vec<String>),
    LatestRunPaused {
        workflow_id: String,
    },
    CountClosedRuns {
        closed_before_ms: i64,
    },
    PurgeClosedRuns {
        closed_before_ms: i64,
        max: usize,
    },
    ResetRun(super::records::ResetRequest),
    DeleteRun {
        workflow_id: String,
        run_id: Option<String>,
        reason: String,
        now_ms: i64,
    },
    RepairOrigin {
        run_id: String,
    },
    CreateSchedule(ScheduleRow),
    UpdateSchedule(ScheduleUpdate),
    GetSchedule {
        schedule_id: String,
    },
    ListSchedules,
    DeleteSchedule {
        schedule_id: String,
    },
    DueSchedules {
        now_ms: i64,
        max: usize,
    },
    RegisterEngine(EngineRecord),
    RenewEngine {
        engine_id: String,
        lease_until_ms: i64,
    },
    RemoveEngine {
        engine_id: String,
    },
    LiveEngines {
        now_ms: i64,
    },
    SetCurrentBuild {
        task_queue: String,
        build_id: String,
    },
    BuildIds {
        task_queue: Option<String>,
    },
    MoveToBuild {
        workflow_id: String,
        build_id: String,
    },
    SetFlowLimit {
        limit: FlowLimit,
        now_ms: i64,
    },
    FlowLimits,
    ReadFlowUsage {
        now_ms: i64,
    },
    RemoveFlowLimit {
        scope: FlowScope,
        kind: FlowKind,
    },
    SetWorkflowQueue {
        queue: WorkflowQueue,
        now_ms: i64,
    },
    WorkflowQueues,
    RemoveWorkflowQueue {
        name: String,
    },
    AdmitQueued {
        now_ms: i64,
    },
    QueueSpot {
        run_id: String,
    },
    ReadQueueUsage {
        now_ms: i64,
    },
    QueueSpots {
        run_ids: Vec<String>,
    },
    ReadStream {
        workflow_id: String,
        run_id: Option<String>,
        stream: String,
        from: u64,
        max: usize,
    },
    AppendStream {
        run_id: String,
        stream: String,
        value: Payload,
        entry_id: Option<String>,
    },
    ListStreams {
        workflow_id: String,
        run_id: Option<String>,
    },
    ReadEvent {
        workflow_id: String,
        key: String,
    },
    /// The filter, the cursor read after, the most events wanted.
    ReadFeed(FeedFilter, FeedCursor, usize),
}

/// A store operation, as faults choose them (see `store::faults`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// `start_run`, `start_run_with_task`.
    Start,
    /// `deliver`, `deliver_durable` (signals, updates, cancellations from clients).
    Deliver,
    /// `poll_workflow_tasks`, `lease_run`.
    LeaseWorkflowTask,
    /// `commit_workflow_task`.
    CommitWorkflowTask,
    /// `fail_workflow_task`.
    FailWorkflowTask,
    /// `release_workflow_task`.
    ReleaseWorkflowTask,
    /// `poll_activity_tasks`.
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
    /// `reset_run`, `delete_run`.
    Repair,
    /// `pause_run`, `unpause_run`.
    Pause,
    /// `create_schedule`, `update_schedule`, `delete_schedule`.
    Schedule,
    /// `register_engine`, `renew_engine`, `remove_engine` (never counted as commits).
    Engine,
    /// `close` (never counted as commits).
    Close,
    /// Every read (never counted as commits).
    Read,
}

impl Operation {
    /// The name of the [`Store`](super::Store) method that sends it (`"commit_workflow_task"`).
    pub fn name(&self) -> &'static str {
        self.meta().0
    }

    /// Its fault class; `None` for the operators' build changes, which faults never hit.
    pub fn fault_class(&self) -> Option<Op> {
        self.meta().1
    }

    /// One table of every operation: its method's name and its fault class.
    fn meta(&self) -> (&'static str, Option<Op>) {
        use Operation::*;
        match self {
            StartRun(_) => ("start_run", Some(Op::Start)),
            StartRunWithTask { .. } => ("start_run_with_task", Some(Op::Start)),
            Deliver(_) => ("deliver", Some(Op::Deliver)),
            DeliverDurable(_) => ("deliver_durable", Some(Op::Deliver)),
            PollWorkflowTasks(_) => ("poll_workflow_tasks", Some(Op::LeaseWorkflowTask)),
            LeaseRun(_) => ("lease_run", Some(Op::LeaseWorkflowTask)),
            CommitWorkflowTask(_) => ("commit_workflow_task", Some(Op::CommitWorkflowTask)),
            FailWorkflowTask { .. } => ("fail_workflow_task", Some(Op::FailWorkflowTask)),
            ReleaseWorkflowTask { .. } => ("release_workflow_task", Some(Op::ReleaseWorkflowTask)),
            PollActivityTasks(_) => ("poll_activity_tasks", Some(Op::LeaseActivity)),
            HeartbeatActivity { .. } => ("heartbeat_activity", Some(Op::Heartbeat)),
            ResolveActivity { .. } => ("resolve_activity", Some(Op::ResolveActivity)),
            RetryActivity { .. } => ("retry_activity", Some(Op::RetryActivity)),
            HoldActivityForCompletion { .. } => {
                ("hold_activity_for_completion", Some(Op::Heartbeat))
            }
            ReleaseActivity(_) => ("release_activity", Some(Op::ReleaseActivity)),
            CurrentAttempts(_) => ("current_attempts", Some(Op::Read)),
            ExpiredActivities { .. } => ("expired_activities", Some(Op::Read)),
            FireDueTimers { .. } => ("fire_due_timers", Some(Op::FireTimers)),
            NextWakeup { .. } => ("next_wakeup", Some(Op::Read)),
            GetRun { .. } => ("get_run", Some(Op::Read)),
            RunLimits { .. } => ("run_limits", Some(Op::Read)),
            ReadHistory { .. } => ("read_history", Some(Op::Read)),
            PendingMessages { .. } => ("pending_messages", Some(Op::Read)),
            GetUpdate { .. } => ("get_update", Some(Op::Read)),
            PendingUpdates { .. } => ("pending_updates", Some(Op::Read)),
            PendingActivities { .. } => ("pending_activities", Some(Op::Read)),
            Terminate { .. } => ("terminate", Some(Op::Terminate)),
            Close => ("close", Some(Op::Close)),
            ListRuns(_) => ("list_runs", Some(Op::Read)),
            RunSearch(_) => ("run_search", Some(Op::Read)),
            CountRuns(_) => ("count_runs", Some(Op::Read)),
            PauseRun { .. } => ("pause_run", Some(Op::Pause)),
            UnpauseRun { .. } => ("unpause_run", Some(Op::Pause)),
            RunPauses(_) => ("run_pauses", Some(Op::Read)),
            LatestRunPaused { .. } => ("latest_run_paused", Some(Op::Read)),
            CountClosedRuns { .. } => ("count_closed_runs", Some(Op::Read)),
            PurgeClosedRuns { .. } => ("purge_closed_runs", Some(Op::Purge)),
            ResetRun(_) => ("reset_run", Some(Op::Repair)),
            DeleteRun { .. } => ("delete_run", Some(Op::Repair)),
            RepairOrigin { .. } => ("repair_origin", Some(Op::Read)),
            CreateSchedule(_) => ("create_schedule", Some(Op::Schedule)),
            UpdateSchedule(_) => ("update_schedule", Some(Op::Schedule)),
            GetSchedule { .. } => ("get_schedule", Some(Op::Read)),
            ListSchedules => ("list_schedules", Some(Op::Read)),
            DeleteSchedule { .. } => ("delete_schedule", Some(Op::Schedule)),
            DueSchedules { .. } => ("due_schedules", Some(Op::Read)),
            RegisterEngine(_) => ("register_engine", Some(Op::Engine)),
            RenewEngine { .. } => ("renew_engine", Some(Op::Engine)),
            RemoveEngine { .. } => ("remove_engine", Some(Op::Engine)),
            LiveEngines { .. } => ("live_engines", Some(Op::Read)),
            SetCurrentBuild { .. } => ("set_current_build", None),
            BuildIds { .. } => ("build_ids", Some(Op::Read)),
            MoveToBuild { .. } => ("move_to_build", None),
            SetFlowLimit { .. } => ("set_flow_limit", None),
            FlowLimits => ("flow_limits", Some(Op::Read)),
            ReadFlowUsage { .. } => ("flow_usage", Some(Op::Read)),
            RemoveFlowLimit { .. } => ("remove_flow_limit", None),
            SetWorkflowQueue { .. } => ("set_workflow_queue", None),
            WorkflowQueues => ("workflow_queues", Some(Op::Read)),
            RemoveWorkflowQueue { .. } => ("remove_workflow_queue", None),
            AdmitQueued { .. } => ("admit_queued", None),
            QueueSpot { .. } => ("queue_spot", Some(Op::Read)),
            ReadQueueUsage { .. } => ("workflow_queue_usage", Some(Op::Read)),
            QueueSpots { .. } => ("queue_spots", Some(Op::Read)),
            ReadStream { .. } => ("read_stream", Some(Op::Read)),
            AppendStream { .. } => ("append_stream", None),
            ListStreams { .. } => ("list_streams", Some(Op::Read)),
            ReadEvent { .. } => ("read_event", Some(Op::Read)),
            ReadFeed(..) => ("read_feed", Some(Op::Read)),
        }
    }

    /// What the operation is about, for an error message: its name and the workflow, run or
    /// schedule it names.
    pub fn subject(&self) -> String {
        use Operation::*;
        let name = self.name();
        match self {
            StartRun(req) | StartRunWithTask { start: req, .. } => {
                format!("{name} of workflow {:?}", req.run.workflow_id)
            }
            Deliver(d) | DeliverDurable(d) => format!("{name} to workflow {:?}", d.workflow_id),
            LeaseRun(LeaseRequest { run_id, .. })
            | CommitWorkflowTask(TaskCommit { run_id, .. })
            | FailWorkflowTask { run_id, .. }
            | ReleaseWorkflowTask { run_id, .. }
            | RunLimits { run_id }
            | ReadHistory { run_id, .. }
            | PendingMessages { run_id, .. }
            | PendingUpdates { run_id }
            | PendingActivities { run_id }
            | RepairOrigin { run_id }
            | AppendStream { run_id, .. } => format!("{name} of run {run_id}"),
            ReadStream {
                workflow_id,
                stream,
                ..
            } => format!("{name} {stream:?} of workflow {workflow_id:?}"),
            ReadEvent { workflow_id, key } => format!("{name} {key:?} of workflow {workflow_id:?}"),
            ListStreams { workflow_id, .. } => format!("{name} of workflow {workflow_id:?}"),
            ReadFeed(_, after, _) => format!("{name} after {after}"),
            HeartbeatActivity { attempt, .. }
            | ResolveActivity { attempt, .. }
            | RetryActivity { attempt, .. }
            | HoldActivityForCompletion { attempt, .. }
            | ReleaseActivity(attempt) => {
                format!(
                    "{name} of activity {} of run {}",
                    attempt.seq, attempt.run_id
                )
            }
            GetRun { workflow_id, .. }
            | GetUpdate { workflow_id, .. }
            | Terminate { workflow_id, .. }
            | ResetRun(super::records::ResetRequest { workflow_id, .. })
            | DeleteRun { workflow_id, .. }
            | PauseRun { workflow_id, .. }
            | UnpauseRun { workflow_id, .. }
            | LatestRunPaused { workflow_id }
            | MoveToBuild { workflow_id, .. } => format!("{name} of workflow {workflow_id:?}"),
            CreateSchedule(ScheduleRow { schedule_id, .. })
            | UpdateSchedule(ScheduleUpdate { schedule_id, .. })
            | GetSchedule { schedule_id }
            | DeleteSchedule { schedule_id } => format!("{name} of schedule {schedule_id:?}"),
            _ => name.to_string(),
        }
    }

    /// Runs the operation on `backend`: its rule (or primitive) in one read or write
    /// transaction, durable before it answers when someone waits on it (see [`Durability`]).
    pub fn run_on<B: Backend>(self, backend: &B) -> StoreFuture<'_, Outcome> {
        use Operation::*;
        let b = backend;
        match self {
            StartRun(req) => {
                let workflow_id = req.run.workflow_id.clone();
                b.write_for(Durable, &workflow_id, move |tx| {
                    answer(start::start_run(tx, req))
                })
            }
            StartRunWithTask { start, first } => {
                let workflow_id = start.run.workflow_id.clone();
                b.write_for(Durable, &workflow_id, move |tx| {
                    answer(start::start_run_with_task(tx, start, first))
                })
            }
            Deliver(d) => {
                // An update's caller is answered only once a workflow task has recorded its
                // acceptance, rejection or outcome, in a synced commit; a synced commit makes
                // every earlier write durable too (a write-ahead log reaches the disk in
                // order), so the delivery need not wait for the disk itself. A crash before
                // then loses an update nobody was answered about, and its caller's retry
                // (same id) delivers it again.
                let durability = match d.message {
                    Message::Update { .. } => Soft,
                    _ => Durable,
                };
                // Without a run id, its first read is the workflow id's latest run.
                let latest = d.run_id.is_none().then(|| d.workflow_id.clone());
                let op = tx_op(move |tx: &mut B::Tx| {
                    answer(deliver::deliver(
                        tx,
                        d.workflow_id,
                        d.run_id,
                        d.message,
                        d.now_ms,
                    ))
                });
                match &latest {
                    Some(id) => b.write_for(durability, id, op),
                    None => b.write(durability, op),
                }
            }
            DeliverDurable(d) => b.write(Durable, move |tx| {
                answer(deliver::deliver(
                    tx,
                    d.workflow_id,
                    d.run_id,
                    d.message,
                    d.now_ms,
                ))
            }),
            PollWorkflowTasks(p) => b.write(Soft, move |tx| {
                answer(leases::poll_workflow_tasks(
                    tx,
                    p.worker_id,
                    p.now_ms,
                    p.lease_ms,
                    p.max,
                    p.filter,
                ))
            }),
            LeaseRun(l) => b.write(Soft, move |tx| {
                answer(leases::lease_run(
                    tx,
                    l.run_id,
                    l.worker_id,
                    l.now_ms,
                    l.lease_ms,
                    l.build_id,
                ))
            }),
            CommitWorkflowTask(c) => {
                let durability = if c.sync { Durable } else { Soft };
                let committed = b.write(durability, move |tx| Box::pin(commit::commit(tx, c)));
                // The spent commit is dropped here, on the caller's thread (see
                // `rules::commit`).
                Box::pin(async move {
                    committed
                        .await
                        .map(|(committed, _spent)| Outcome::Committed(committed))
                })
            }
            FailWorkflowTask {
                run_id,
                worker_id,
                failure,
            } => b.write(Soft, move |tx| {
                answer(leases::fail_workflow_task(tx, run_id, worker_id, failure))
            }),
            ReleaseWorkflowTask { run_id, worker_id } => b.write(Soft, move |tx| {
                answer(leases::release_workflow_task(tx, run_id, worker_id))
            }),
            PollActivityTasks(p) => b.write(Soft, move |tx| {
                answer(activities::poll_activity_tasks(
                    tx,
                    p.worker_id,
                    p.now_ms,
                    p.max,
                    p.names,
                    p.task_queues,
                ))
            }),
            HeartbeatActivity {
                attempt,
                details,
                now_ms,
            } => b.write(Soft, move |tx| {
                answer(activities::heartbeat_activity(tx, attempt, details, now_ms))
            }),
            ResolveActivity {
                attempt,
                resolution,
                now_ms,
            } => b.write(Durable, move |tx| {
                answer(activities::resolve_activity(
                    tx, attempt, resolution, now_ms,
                ))
            }),
            RetryActivity {
                attempt,
                visible_at_ms,
                failure,
                now_ms,
            } => b.write(Durable, move |tx| {
                answer(activities::retry_activity(
                    tx,
                    attempt,
                    visible_at_ms,
                    failure,
                    now_ms,
                ))
            }),
            HoldActivityForCompletion { attempt, now_ms } => b.write(Durable, move |tx| {
                answer(complete::hold_activity_for_completion(tx, attempt, now_ms))
            }),
            ReleaseActivity(attempt) => b.write(Durable, move |tx| {
                answer(activities::release_activity(tx, attempt))
            }),
            CurrentAttempts(attempts) => {
                b.read(move |tx| answer(activities::current_attempts(tx, attempts)))
            }
            ExpiredActivities { now_ms, max } => {
                b.read(move |tx| answer(tx.expired_activities(now_ms, max)))
            }
            FireDueTimers { now_ms, max } => b.write(Soft, move |tx| {
                answer(timers::fire_due_timers(tx, now_ms, max))
            }),
            NextWakeup { now_ms } => b.read(move |tx| answer(tx.next_wakeup(now_ms))),
            GetRun {
                workflow_id,
                run_id,
            } => b.read(move |tx| answer(reads::get_run(tx, workflow_id, run_id))),
            RunLimits { run_id } => b.read(move |tx| {
                answer(async move {
                    if tx.load_run(&run_id).await?.is_none() {
                        return Ok(None);
                    }
                    Ok(run_limits::started(tx, &run_id).await?.limits)
                })
            }),
            ReadHistory {
                run_id,
                from_event_id,
            } => b.read(move |tx| answer(reads::read_history(tx, run_id, from_event_id))),
            PendingMessages {
                run_id,
                history_from,
            } => b.read(move |tx| answer(reads::pending_messages(tx, run_id, history_from))),
            GetUpdate {
                workflow_id,
                update_id,
            } => b.read(move |tx| answer(reads::get_update(tx, workflow_id, update_id))),
            PendingUpdates { run_id } => {
                b.read(move |tx| answer(async move { tx.pending_updates(&run_id).await }))
            }
            PendingActivities { run_id } => {
                b.read(move |tx| answer(async move { tx.run_activities(&run_id).await }))
            }
            Terminate {
                workflow_id,
                reason,
                now_ms,
            } => b.write(Durable, move |tx| {
                answer(terminate::terminate(tx, workflow_id, reason, now_ms))
            }),
            Close => {
                let closed = b.close();
                Box::pin(async move { closed.await.map(Outcome::Unit) })
            }
            ListRuns(filter) => {
                b.read(move |tx| answer(async move { tx.list_runs(&filter).await }))
            }
            RunSearch(run_ids) => b.read(move |tx| answer(search::run_search(tx, run_ids))),
            CountRuns(filter) => {
                b.read(move |tx| answer(async move { tx.count_runs(&filter).await }))
            }
            PauseRun { workflow_id, mark } => b.write(Durable, move |tx| {
                answer(pause::pause(tx, workflow_id, mark))
            }),
            UnpauseRun {
                workflow_id,
                now_ms,
            } => b.write(Durable, move |tx| {
                answer(pause::unpause(tx, workflow_id, now_ms))
            }),
            RunPauses(run_ids) => b.read(move |tx| answer(pause::run_pauses(tx, run_ids))),
            LatestRunPaused { workflow_id } => {
                b.read(move |tx| answer(pause::latest_run_paused(tx, workflow_id)))
            }
            CountClosedRuns { closed_before_ms } => {
                b.read(move |tx| answer(tx.count_closed_runs(closed_before_ms)))
            }
            // Losing a purge to a crash loses nothing: the next one deletes the same runs.
            PurgeClosedRuns {
                closed_before_ms,
                max,
            } => b.write(Soft, move |tx| {
                answer(purge::purge_closed_runs(tx, closed_before_ms, max))
            }),
            ResetRun(request) => b.write(Durable, move |tx| answer(repair::reset_run(tx, request))),
            DeleteRun {
                workflow_id,
                run_id,
                reason,
                now_ms,
            } => b.write(Durable, move |tx| {
                answer(async move {
                    repair::delete_run(tx, workflow_id, run_id, reason, now_ms)
                        .await
                        .map(|id| vec![id])
                })
            }),
            RepairOrigin { run_id } => b.read(move |tx| answer(repair::repair_origin(tx, run_id))),
            CreateSchedule(row) => b.write(Durable, move |tx| {
                answer(schedules::create_schedule(tx, row))
            }),
            UpdateSchedule(u) => b.write(Durable, move |tx| {
                answer(schedules::update_schedule(
                    tx,
                    u.schedule_id,
                    u.expected_version,
                    u.data,
                    u.next_check_ms,
                ))
            }),
            GetSchedule { schedule_id } => {
                b.read(move |tx| answer(async move { tx.get_schedule(&schedule_id).await }))
            }
            ListSchedules => b.read(move |tx| answer(tx.list_schedules())),
            DeleteSchedule { schedule_id } => b.write(Durable, move |tx| {
                answer(async move { tx.delete_schedule(&schedule_id).await })
            }),
            DueSchedules { now_ms, max } => b.read(move |tx| answer(tx.due_schedules(now_ms, max))),
            RegisterEngine(engine) => b.write(Soft, move |tx| {
                answer(async move { tx.put_engine(&engine).await })
            }),
            RenewEngine {
                engine_id,
                lease_until_ms,
            } => b.write(Soft, move |tx| {
                answer(async move { tx.renew_engine(&engine_id, lease_until_ms).await })
            }),
            RemoveEngine { engine_id } => b.write(Soft, move |tx| {
                answer(async move { tx.delete_engine(&engine_id).await })
            }),
            LiveEngines { now_ms } => b.read(move |tx| answer(engines::live_engines(tx, now_ms))),
            SetCurrentBuild {
                task_queue,
                build_id,
            } => b.write(Durable, move |tx| {
                answer(builds::set_current_build(tx, task_queue, build_id))
            }),
            BuildIds { task_queue } => b.read(move |tx| answer(builds::build_ids(tx, task_queue))),
            MoveToBuild {
                workflow_id,
                build_id,
            } => b.write(Durable, move |tx| {
                answer(builds::move_to_build(tx, workflow_id, build_id))
            }),
            SetFlowLimit { limit, now_ms } => b.write(Durable, move |tx| {
                answer(flow::set_flow_limit(tx, limit, now_ms))
            }),
            FlowLimits => b.read(move |tx| answer(flow::flow_limits(tx))),
            ReadFlowUsage { now_ms } => b.read(move |tx| answer(flow::flow_usage(tx, now_ms))),
            RemoveFlowLimit { scope, kind } => b.write(Durable, move |tx| {
                answer(async move { tx.delete_flow_limit(&scope, kind).await })
            }),
            SetWorkflowQueue { queue, now_ms } => b.write(Durable, move |tx| {
                answer(queues::set_workflow_queue(tx, queue, now_ms))
            }),
            WorkflowQueues => b.read(move |tx| answer(queues::workflow_queues(tx))),
            RemoveWorkflowQueue { name } => b.write(Durable, move |tx| {
                answer(async move { tx.delete_workflow_queue(&name).await })
            }),
            AdmitQueued { now_ms } => {
                b.write(Durable, move |tx| answer(queues::admit_queued(tx, now_ms)))
            }
            QueueSpot { run_id } => b.read(move |tx| answer(queues::queue_spot(tx, run_id))),
            ReadQueueUsage { now_ms } => {
                b.read(move |tx| answer(queue_usage::workflow_queue_usage(tx, now_ms)))
            }
            QueueSpots { run_ids } => b.read(move |tx| answer(queues::queue_spots(tx, run_ids))),
            ReadStream {
                workflow_id,
                run_id,
                stream,
                from,
                max,
            } => b.read(move |tx| {
                answer(streams::read_stream(
                    tx,
                    workflow_id,
                    run_id,
                    stream,
                    from,
                    max,
                ))
            }),
            AppendStream {
                run_id,
                stream,
                value,
                entry_id,
            } => b.write(Durable, move |tx| {
                answer(streams::append_one(tx, run_id, stream, value, entry_id))
            }),
            ReadEvent { workflow_id, key } => {
                b.read(move |tx| answer(streams::read_event(tx, workflow_id, key)))
            }
            ListStreams {
                workflow_id,
                run_id,
            } => b.read(move |tx| answer(streams::list_streams(tx, workflow_id, run_id))),
            ReadFeed(filter, after, max) => {
                b.read(move |tx| answer(feed::read_feed(tx, filter, after, max)))
            }
        }
    }
}

/// `op`, typed as a [`TxOp`](super::TxOp) where it is made (a closure bound to a name first
/// would not be inferred as one, for every borrow of the transaction).
fn tx_op<X, F>(op: F) -> F
where
    F: for<'t> FnOnce(&'t mut X) -> TxFuture<'t, Outcome> + Clone + Send + 'static,
{
    op
}

/// A rule's future, answering an [`Outcome`].
fn answer<'t, T: Into<Outcome>>(
    rule: impl Future<Output = Result<T, StoreError>> + Send + 't,
) -> TxFuture<'t, Outcome> {
    Box::pin(async move { rule.await.map(Into::into) })
}

/// The visitor's signature, for the impls here.
type Visit<'a> = &'a mut dyn FnMut(&mut Payload) -> Result<(), PayloadError>;

/// A typed answer of an [`Outcome`]: what a store method returns.
pub trait FromOutcome: Sized {
    /// The answer, or the name of the outcome's variant if it is of another type.
    fn from_outcome(outcome: Outcome) -> Result<Self, &'static str>;
}

/// Declares [`Outcome`], one variant per answer type, with the conversions both ways.
macro_rules! outcomes {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// What a store operation answers: one variant per type of answer, named for it
        /// (several operations share one: every `bool` answer is a `Bool`). A store method
        /// unwraps it with [`FromOutcome`].
        #[derive(Debug)]
        #[non_exhaustive]
        // Each variant is its type, which the method that answers it documents.
        #[allow(missing_docs)]
        pub enum Outcome {
            $($variant($ty),)*
        }

        impl Outcome {
            /// The name of its variant, for an error message.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Outcome::$variant(_) => stringify!($variant),)*
                }
            }
        }

        $(
            impl From<$ty> for Outcome {
                fn from(answer: $ty) -> Outcome {
                    Outcome::$variant(answer)
                }
            }

            impl FromOutcome for $ty {
                fn from_outcome(outcome: Outcome) -> Result<Self, &'static str> {
                    match outcome {
                        Outcome::$variant(answer) => Ok(answer),
                        other => Err(other.name()),
                    }
                }
            }
        )*
    };
}

outcomes! {
    Unit(()), Bool(bool), Bools(Vec<bool>), Count(u64), Time(Option<i64>),
    Started(StartOutcome), StartedWithTask(StartWithTask), Delivered(DeliverOutcome),
    WorkflowTasks(Vec<WorkflowTask>), WorkflowTask(Option<WorkflowTask>),
    Run(RunRecord), Committed(Committed), MaybeRun(Option<RunRecord>), Runs(Vec<RunRecord>), RunIds(Vec<String>),
    ActivityTasks(Vec<ActivityTask>), ActivityLeases(ActivityLeases), FiredTimers(Vec<FiredTimer>), Limits(Option<RunLimits>),
    History(Vec<HistoryEvent>), Pending(PendingMessages), Searches(Vec<RunSearch>),
    Update(Option<UpdateRecord>), Updates(Vec<UpdateRecord>),
    Schedule(Option<ScheduleRow>), Schedules(Vec<ScheduleRow>),
    Engines(Vec<EngineRecord>), Builds(Vec<BuildIdStatus>), FlowLimits(Vec<FlowLimit>),
    FlowUsages(Vec<FlowUsage>),
    Origin(Option<crate::data::repair::RepairOrigin>), Pauses(Vec<Option<PauseMark>>),
    RunPaused(Option<(RunRecord, bool)>),
    WorkflowQueues(Vec<WorkflowQueue>), QueueAdmission(QueueAdmission),
    QueueSpot(Option<QueueSpot>), QueueUsages(Vec<QueueUsage>),
    QueueSpots(Vec<Option<QueueSpot>>),
    StreamPage(Option<StreamPage>), StreamAppended(Result<u64, StreamError>),
    EventValue(Option<Payload>), StreamList(Option<StreamList>),
    FeedPage(FeedPage),
}
