//! The rows a store keeps and the requests it takes: runs, starts, workflow task commits,
//! activity tasks and schedules.

use crate::data::activity::{duration_ms, ActivityFailure, ActivityOptions};
use crate::data::flow::FlowCount;
use crate::data::history::{EventKind, HistoryEvent};
use crate::data::message::{InboxMessage, Message};
use crate::data::payload::Payload;
use crate::data::run::{IdConflictPolicy, IdReusePolicy, ParentInfo, RunStatus, TaskFailure};
use crate::data::run_limits::RunLimits;
use crate::data::search::{Memo, SearchAttributes};
use crate::data::update::{UpdateChange, UpdateRecord};
use crate::data::versioning::VersioningBehavior;
use crate::error::StoreError;
use crate::store::rules::tx::Attempt;

/// One run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// The user-chosen workflow id.
    pub workflow_id: String,
    /// This run's id (a UUID).
    pub run_id: String,
    /// The first run of the continue-as-new chain this run belongs to; dedupe ids are kept per
    /// chain.
    pub chain_id: String,
    /// The workflow type's wire name.
    pub workflow_type: String,
    /// The task queue whose workers run it.
    pub task_queue: String,
    /// Lifecycle state.
    pub status: RunStatus,
    /// The id the next appended event will get (history length + 1).
    pub next_event_id: u64,
    /// Total encoded size of the history, in bytes.
    pub history_bytes: u64,
    /// Start time (engine-clock ms).
    pub created_ms: i64,
    /// Close time, once closed.
    pub closed_ms: Option<i64>,
    /// The encoded result of a completed run.
    pub result: Option<Payload>,
    /// The error message of a failed or terminated run.
    pub failure: Option<String>,
    /// The last failed workflow task, until a task succeeds.
    pub task_failure: Option<TaskFailure>,
    /// Engine-owned summary for `describe()` (pending work, buffered signals), opaque here.
    pub summary: Payload,
    /// The build whose engines alone take its workflow tasks (worker versioning): the build a
    /// pinned run is on, or the current build of its task queue for an auto-upgrade run or a
    /// run that has not run a task yet. `None`: any engine.
    pub build_id: Option<String>,
    /// Its workflow type's versioning behaviour, recorded by its first workflow task on an
    /// engine with a build id. `None`: no task yet, or unversioned (run first by an engine
    /// without a build id).
    pub versioning: Option<VersioningBehavior>,
    /// When its first workflow task is due, if its start was delayed (see
    /// [`RunStart::start_at_ms`]): no engine leases it before then.
    pub start_at_ms: Option<i64>,
}

/// A run to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// Workflow id.
    pub workflow_id: String,
    /// Fresh run id.
    pub run_id: String,
    /// Workflow type wire name.
    pub workflow_type: String,
    /// Encoded input.
    pub input: Payload,
    /// Seed for deterministic randomness.
    pub random_seed: u64,
    /// The previous run, after continue-as-new.
    pub continued_from: Option<String>,
    /// The parent, for a child run (kept across the child's continue-as-new).
    pub parent: Option<ParentInfo>,
    /// The task queue whose workers run it ([`DEFAULT_TASK_QUEUE`](super::DEFAULT_TASK_QUEUE) unless chosen).
    pub task_queue: String,
    /// Its memo (none when empty). A continue-as-new with an empty memo keeps the previous
    /// run's memo, as it keeps its search attributes.
    pub memo: Memo,
    /// Its timeouts, retry policy and attempt, if the start set any. A continue-as-new (or a
    /// retry) gets the previous run's from the store, whatever it says here.
    pub limits: Option<RunLimits>,
}

impl NewRun {
    /// The run's first event, as every store records it.
    pub fn started_event(&self) -> EventKind {
        EventKind::WorkflowStarted {
            workflow_type: self.workflow_type.clone(),
            input: self.input.clone(),
            random_seed: self.random_seed,
            continued_from: self.continued_from.clone(),
            parent: self.parent.clone(),
            limits: self.limits.clone(),
            repaired_from: None,
        }
    }

    /// The run's row as created: running, its `WorkflowStarted` event (of `history_bytes`)
    /// recorded, nothing else yet.
    pub fn created_record(&self, chain_id: &str, history_bytes: u64, now_ms: i64) -> RunRecord {
        RunRecord {
            workflow_id: self.workflow_id.clone(),
            run_id: self.run_id.clone(),
            chain_id: chain_id.to_string(),
            workflow_type: self.workflow_type.clone(),
            task_queue: self.task_queue.clone(),
            status: RunStatus::Running,
            next_event_id: 2,
            history_bytes,
            created_ms: now_ms,
            closed_ms: None,
            result: None,
            failure: None,
            task_failure: None,
            summary: Payload::default(),
            build_id: None,
            versioning: None,
            start_at_ms: None,
        }
    }
}

/// What lists and describe show of a run besides its row: its search attributes and memo.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSearch {
    /// The search attributes, by key.
    pub attributes: SearchAttributes,
    /// The memo, by key.
    pub memo: Memo,
}

/// A run's start as the store takes it (the engine builds it from a client's
/// `client::StartRequest`): the new run, its id policies and request id, optionally with
/// messages delivered atomically with the start (signal-with-start, update-with-start).
#[derive(Debug, Clone, PartialEq)]
pub struct RunStart {
    /// The run to create.
    pub run: NewRun,
    /// What to do if the workflow id is running.
    pub policy: IdConflictPolicy,
    /// Whether a new run may follow the workflow id's closed latest run.
    pub reuse: IdReusePolicy,
    /// The start's request id: a start with a request id already recorded for the workflow id
    /// returns the run it started and writes nothing.
    pub request_id: Option<String>,
    /// Messages for the run (signals and updates), in order.
    pub messages: Vec<Message>,
    /// Engine-clock time.
    pub now_ms: i64,
    /// When a created run's first workflow task is due, if later than `now_ms` (a start
    /// delay): its row is ready then, and nothing makes it ready earlier (a signal neither).
    pub start_at_ms: Option<i64>,
    /// The start's debounce, if it has one: a running run of the same workflow type and key
    /// that has not begun takes the start instead (see [`StartDebounce`]).
    pub debounce: Option<StartDebounce>,
    /// The queue the start goes on, if any: the created run is held (its start time
    /// [`QUEUE_HELD_MS`](crate::data::queue::QUEUE_HELD_MS)) until its queue admits it.
    pub queue: Option<crate::data::queue::QueuedStart>,
}

/// A start's debounce ([`RunStart::debounce`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartDebounce {
    /// The debounce key (per workflow type).
    pub key: String,
    /// When the waiting run starts after this start: `now + window`, capped at its first
    /// start plus `max_wait_ms`.
    pub window_ms: i64,
    /// How long after its first start the run waits at most.
    pub max_wait_ms: Option<i64>,
}

/// The result of a start.
#[derive(Debug, Clone, PartialEq)]
pub struct StartOutcome {
    /// The workflow id of that run: the start's own, or the waiting run's that a debounced
    /// start joined.
    pub workflow_id: String,
    /// The run now addressed by the workflow id.
    pub run_id: String,
    /// False when an existing run was kept (`UseExisting`), or returned for a request id
    /// that started it before.
    pub started: bool,
    /// One outcome per start message, in order.
    pub messages: Vec<DeliverOutcome>,
}

/// The result of delivering a message.
#[derive(Debug, Clone, PartialEq)]
pub enum DeliverOutcome {
    /// Put in the run's inbox.
    Enqueued {
        /// The run it went to.
        run_id: String,
    },
    /// A signal with this id was delivered before (in this continue-as-new chain); nothing was
    /// written.
    DuplicateSignal {
        /// The latest run of the workflow id.
        run_id: String,
    },
    /// An update with this id exists; nothing was written. Carries its current record.
    DuplicateUpdate(UpdateRecord),
}

/// A leased workflow task: the run and its inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowTask {
    /// The run, as of the lease.
    pub run: RunRecord,
    /// Its inbox, in arrival order.
    pub messages: Vec<InboxMessage>,
}

/// What a query reads of a run besides its cached state: the messages waiting in its inbox
/// (not yet applied by a workflow task) and, if asked for, its history — both from one
/// snapshot, so that a message is in exactly one of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PendingMessages {
    /// The inbox, in arrival order.
    pub inbox: Vec<InboxMessage>,
    /// The history from the event id asked for (empty when none was asked for).
    pub history: Vec<HistoryEvent>,
    /// The run's `next_event_id` (`None`: no such run): a copy of the run at another
    /// position is stale.
    pub next_event_id: Option<u64>,
}

/// An activity to schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct NewActivityTask {
    /// Sequence number of the scheduling command.
    pub seq: u32,
    /// Activity wire name.
    pub name: String,
    /// Encoded input.
    pub input: Payload,
    /// Timeouts and retries.
    pub options: ActivityOptions,
}

/// How a run closes at the end of a workflow task.
#[derive(Debug, Clone, PartialEq)]
// One per closing task, moved once: boxing the continue-as-new run would save nothing.
#[allow(clippy::large_enum_variant)]
pub enum RunClose {
    /// Returned a value.
    Completed(Payload),
    /// Returned an error.
    Failed(String),
    /// Ended as cancelled (the message says why).
    Cancelled(String),
    /// Continues as this new run (same workflow id and chain); carries no inbox messages.
    ContinuedAsNew(NewRun),
}

/// What [`Store::commit_workflow_task_leasing`](super::Store::commit_workflow_task_leasing)
/// answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    /// The run after the commit.
    pub run: RunRecord,
    /// The new activities (by seq) the commit leased to
    /// [`TaskCommit::lease_activities_to`]: all of them, or under
    /// [`TaskCommit::lease_admitted`] those the flow limits admitted.
    pub leased: Vec<u32>,
    /// What each flow limit started and refused among those new activities (under
    /// [`TaskCommit::lease_admitted`]; empty otherwise).
    pub flow: Vec<FlowCount>,
    /// Under [`TaskCommit::lease_admitted`], whether the flow limits may be holding attempts
    /// back after this commit: it left a new activity waiting, or a limit that covers one is
    /// without room now (see [`ActivityLeases::held_back`]). `false` otherwise.
    pub held_back: bool,
}

/// Everything one workflow task produced, committed atomically.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskCommit {
    /// The run.
    pub run_id: String,
    /// The lease owner committing.
    pub worker_id: String,
    /// The task ran without a lease, on a run this worker holds in memory, for work handed to
    /// it in memory: the commit then succeeds only if nobody holds the run's lease (an expired
    /// lease counts as free) and its inbox is empty (else `Conflict` or `NewMessages`; nothing
    /// is written). It saves the lease round trip on the hot path; `expected_next_event_id`
    /// still guards against any other task having committed meanwhile.
    pub without_lease: bool,
    /// Must equal the run's `next_event_id`; events get ids from here on.
    pub expected_next_event_id: u64,
    /// Events to append, with their times.
    pub events: Vec<NewEvent>,
    /// Inbox messages with `seq <= consumed_through` are deleted.
    pub consumed_through: Option<u64>,
    /// Activities to enqueue.
    pub new_activities: Vec<NewActivityTask>,
    /// Lease the new activities to this worker at once (attempt 1 started now, deadlines per
    /// [`activity_lease`](super::activity_lease)): the committing process runs them without polling for them.
    pub lease_activities_to: Option<String>,
    /// With [`lease_activities_to`](Self::lease_activities_to): lease only the new activities
    /// the store's flow limits admit now (counted and spent as a poll counts and spends them),
    /// leaving the others for a poll; [`Committed::leased`] names those leased. Without it, a
    /// commit that would lease an activity a flow limit covers is refused (`Conflict`, reason
    /// [`EAGER_LEASE_REFUSED`](super::EAGER_LEASE_REFUSED)).
    pub lease_admitted: bool,
    /// Pending activities (by seq) to drop.
    pub cancel_activities: Vec<u32>,
    /// Activities resolved in this task straight from an in-process worker. Each must still
    /// be pending at that attempt (else the commit fails with `Conflict`); it is deleted.
    pub resolve_activities: Vec<ResolvedAttempt>,
    /// Timers to create.
    pub new_timers: Vec<NewTimer>,
    /// Timers (by seq) to drop.
    pub cancel_timers: Vec<u32>,
    /// Update state changes.
    pub updates: Vec<UpdateChange>,
    /// Close the run (fails with `NewMessages` if the inbox has messages past
    /// `consumed_through`).
    pub close: Option<RunClose>,
    /// Child runs to start. A child whose workflow id is running is not started; the
    /// committing run's inbox gets `ChildClosed { outcome: StartFailed }` instead.
    pub start_children: Vec<NewChild>,
    /// Messages for other workflows. Each goes to the workflow id's latest run, with dedupe;
    /// missing or closed targets are skipped, and so is a target outside the named chain.
    pub deliver: Vec<OutgoingMessage>,
    /// Workflows to terminate if running: a parent close policy. Each is terminated as
    /// [`Store::terminate`](super::Store::terminate) does, its own children included.
    pub terminate: Vec<Termination>,
    /// Messages for other runs' inboxes, skipped if that run is closed: a child's result for
    /// its parent.
    pub notify: Vec<RunNotice>,
    /// The type of the error a failing close ends the run with (a `WorkflowError` code such as
    /// `"failed"` or `"activity_failed"`), matched against the run's retry policy's
    /// non-retryable error types; `None` counts as `"failed"`.
    pub failure_type: Option<String>,
    /// New describe summary.
    pub summary: Payload,
    /// Someone waits on this commit (a closed run, an update outcome, a message handed over
    /// in memory, effects on other runs): make it durable before answering. `false` for
    /// internal steps (an activity result and the next command, a fired timer): they become
    /// durable with the next synced commit, and a power loss before that only redoes them
    /// (activities are at-least-once). A process crash loses neither.
    pub sync: bool,
    /// Engine-clock time.
    pub now_ms: i64,
    /// The committing engine's build (`None`: an engine without a build id). The run's first
    /// task records it (a pinned run stays on this build); a commit without a lease fails
    /// with `Conflict` on a run whose build is another one.
    pub build: Option<TaskBuild>,
    /// For a commit [`without_lease`](Self::without_lease): the run's row as the committing
    /// worker knows it (the record its last commit returned, or a row just read). A store
    /// may take it for the row it would read instead of reading it, provided its transaction
    /// then fails unless the stored row is still so (running, at this history position and
    /// size, unleased, on no build) and the inbox empty: a commit saves a round trip to a
    /// database server. `None`: the store reads the row.
    pub assumed: Option<Box<RunRecord>>,
    /// The signals the run's code waits for after this task (`signals`, and the earliest
    /// wait's deadline in `deadline_ms`), when they changed since its previous task: the
    /// commit adds a `signal_waiting` row to the feed (no history event). `None`: no change,
    /// or no signal awaited.
    pub signal_waiting: Option<crate::data::feed::FeedDetail>,
}

/// An event a commit appends, with its time.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// When it happened (engine-clock ms).
    pub time_ms: i64,
    /// The event.
    pub kind: EventKind,
}

/// An activity attempt of the committing run, resolved in its workflow task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedAttempt {
    /// Sequence number of the scheduling command.
    pub seq: u32,
    /// The attempt that produced the result.
    pub attempt: u32,
}

/// A timer a commit starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewTimer {
    /// Sequence number of the timer command.
    pub seq: u32,
    /// When it fires (engine-clock ms).
    pub fire_at_ms: i64,
}

/// A child run a commit starts.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChild {
    /// The parent's command seq.
    pub seq: u32,
    /// The run, whose `parent` is set.
    pub run: NewRun,
}

/// A message a commit sends to another workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingMessage {
    /// The target workflow id (its latest run gets the message).
    pub workflow_id: String,
    /// The chain the target must belong to, by its first run id (a child's, for a signal
    /// through a child handle); `None`: any.
    pub chain_id: Option<String>,
    /// The message.
    pub message: Message,
}

/// A workflow a commit terminates (a parent close policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Termination {
    /// Its workflow id.
    pub workflow_id: String,
    /// Why, as `WorkflowTerminated` records it.
    pub reason: String,
}

/// A message a commit puts in another run's inbox (a child's result for its parent).
#[derive(Debug, Clone, PartialEq)]
pub struct RunNotice {
    /// The run.
    pub run_id: String,
    /// The message.
    pub message: Message,
}

/// The build of the engine committing a workflow task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskBuild {
    /// Its build id.
    pub build_id: String,
    /// The versioning behaviour of the run's workflow type on that engine.
    pub behavior: VersioningBehavior,
}

impl TaskCommit {
    /// Whether committing this task changes nothing but the run's summary (and clears its
    /// ready mark and lease): no events, no consumed messages, no commands, no effects.
    pub fn records_nothing(&self) -> bool {
        self.events.is_empty()
            && self.consumed_through.is_none()
            && self.new_activities.is_empty()
            && self.cancel_activities.is_empty()
            && self.resolve_activities.is_empty()
            && self.new_timers.is_empty()
            && self.cancel_timers.is_empty()
            && self.updates.is_empty()
            && self.close.is_none()
            && self.start_children.is_empty()
            && self.deliver.is_empty()
            && self.terminate.is_empty()
            && self.notify.is_empty()
    }
}

/// A pending activity as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityTask {
    /// The run that scheduled it.
    pub run_id: String,
    /// That run's workflow id.
    pub workflow_id: String,
    /// Sequence number of the scheduling command.
    pub seq: u32,
    /// Activity wire name.
    pub name: String,
    /// Encoded input.
    pub input: Payload,
    /// Timeouts and retries.
    pub options: ActivityOptions,
    /// Current attempt, from 1.
    pub attempt: u32,
    /// When it was scheduled (engine-clock ms).
    pub scheduled_ms: i64,
    /// When the current attempt started, if leased.
    pub started_ms: Option<i64>,
    /// When the current attempt's start-to-close deadline passes, if leased.
    pub attempt_deadline_ms: Option<i64>,
    /// When the current lease expires (start-to-close or heartbeat deadline), if leased.
    pub lease_until_ms: Option<i64>,
    /// Details of the last heartbeat (carried to the next attempt).
    pub heartbeat: Option<Payload>,
    /// The previous attempt's failure.
    pub last_failure: Option<ActivityFailure>,
    /// The task queue of the run that scheduled it (what a
    /// [`FlowScope::TaskQueue`](crate::FlowScope::TaskQueue) limit counts it under).
    pub task_queue: String,
}

/// A schedule as stored: its engine-owned state (opaque here), a version for optimistic
/// updates, and when it next needs attention.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRow {
    /// The schedule id.
    pub schedule_id: String,
    /// Engine-owned state (spec, action, policies, progress), encoded.
    pub data: Payload,
    /// Incremented by every update.
    pub version: u64,
    /// When the scheduler must look at it next (engine-clock ms); `None` while paused.
    pub next_check_ms: Option<i64>,
}

impl ActivityTask {
    /// Its current attempt.
    pub fn current_attempt(&self) -> ActivityAttempt {
        ActivityAttempt {
            run_id: self.run_id.clone(),
            seq: self.seq,
            attempt: self.attempt,
        }
    }

    /// The schedule-to-close deadline, if the options set one.
    pub fn schedule_deadline_ms(&self) -> Option<i64> {
        self.options
            .schedule_to_close
            .map(|d| self.scheduled_ms.saturating_add(duration_ms(d)))
    }
}

/// An engine known to the store: one process's workers, alive while it renews its liveness
/// lease. A lease (of a workflow task or an activity attempt) held by an engine whose liveness
/// lease expired is free at once, whatever its own expiry: a crashed process delays its work by
/// seconds, not by its activities' timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineRecord {
    /// The engine's id (its lease owner name).
    pub engine_id: String,
    /// Where other engines poke it when work or an outcome for it is committed, if it
    /// listens: `unix-abstract:NAME` (a unix datagram socket in Linux's abstract namespace) or
    /// `unix:PATH` (a socket file). Client-only engines register too (they hold no lease).
    /// Engines skip an address they cannot parse or reach.
    pub wake_address: Option<String>,
    /// The task queue its workflow worker serves.
    pub task_queue: String,
    /// When it started (engine-clock ms).
    pub started_ms: i64,
    /// When its liveness lease expires unless renewed (engine-clock ms).
    pub lease_until_ms: i64,
}

/// An activity attempt, by its run, seq and attempt number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActivityAttempt {
    /// The run that scheduled the activity.
    pub run_id: String,
    /// Sequence number of the scheduling command.
    pub seq: u32,
    /// The attempt, from 1.
    pub attempt: u32,
}

impl ActivityAttempt {
    /// The attempt as the tables' primitives name it.
    pub fn key(&self) -> Attempt<'_> {
        Attempt {
            run_id: &self.run_id,
            seq: self.seq,
            attempt: self.attempt,
        }
    }
}

/// A timer that fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiredTimer {
    /// The run that started it.
    pub run_id: String,
    /// Sequence number of the timer command.
    pub seq: u32,
}

/// The result of a start with its first workflow task (see
/// [`Store::start_run_with_task`](super::Store::start_run_with_task)).
#[derive(Debug)]
pub struct StartWithTask {
    /// The start's outcome.
    pub start: StartOutcome,
    /// The first task's commit: `None` when no run was created (an existing run kept), else
    /// the committed run or why the commit failed (the start stands either way).
    pub first_task: Option<Result<RunRecord, StoreError>>,
}

/// A message to deliver (see [`Store::deliver`](super::Store::deliver)).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The workflow it is for.
    pub workflow_id: String,
    /// Its run; `None`: the workflow id's latest run.
    pub run_id: Option<String>,
    /// The message.
    pub message: Message,
    /// Engine-clock time.
    pub now_ms: i64,
}

impl Delivery {
    /// `message` for the latest run of `workflow_id`, at `now_ms`.
    pub fn new(workflow_id: impl Into<String>, message: Message, now_ms: i64) -> Delivery {
        Delivery {
            workflow_id: workflow_id.into(),
            run_id: None,
            message,
            now_ms,
        }
    }

    /// The same message for run `run_id` of the workflow only.
    pub fn to_run(self, run_id: impl Into<String>) -> Delivery {
        Delivery {
            run_id: Some(run_id.into()),
            ..self
        }
    }
}

/// A poll for ready workflow tasks (see
/// [`Store::poll_workflow_tasks`](super::Store::poll_workflow_tasks)).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskPoll {
    /// The worker that takes the leases.
    pub worker_id: String,
    /// Engine-clock time: runs ready at or before it.
    pub now_ms: i64,
    /// How long the leases last.
    pub lease_ms: i64,
    /// At most this many tasks.
    pub max: usize,
    /// Which runs.
    pub filter: TaskFilter,
}

/// Which runs a poll leases: a worker leases only what it can run, so processes with
/// different registrations, queues and builds can share a store. The default takes any
/// workflow type on any task queue, of no build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// These workflow types only; `None`: any (an engine with a dynamic workflow type).
    pub workflow_types: Option<Vec<String>>,
    /// These task queues only; `None`: any.
    pub task_queues: Option<Vec<String>>,
    /// The poller's build (see [`VersioningBehavior`]): it takes runs of that build or of
    /// none; without one, runs of none only.
    pub build_id: Option<String>,
}

/// A lease of one running run, whether or not a task is ready (see
/// [`Store::lease_run`](super::Store::lease_run)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRequest {
    /// The run.
    pub run_id: String,
    /// The worker that takes the lease.
    pub worker_id: String,
    /// Engine-clock time.
    pub now_ms: i64,
    /// How long the lease lasts.
    pub lease_ms: i64,
    /// The worker's build; a run on another build is not leased.
    pub build_id: Option<String>,
}

/// A poll for visible activity tasks (see
/// [`Store::poll_activity_tasks`](super::Store::poll_activity_tasks)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityPoll {
    /// The worker that takes the leases.
    pub worker_id: String,
    /// Engine-clock time.
    pub now_ms: i64,
    /// At most this many tasks.
    pub max: usize,
    /// Activities with these names only; `None`: any.
    pub names: Option<Vec<String>>,
    /// The task queues the poller serves: an activity sent to a task queue
    /// ([`ActivityOptions::task_queue`](crate::data::activity::ActivityOptions::task_queue)) is
    /// leased only by a poll that names its queue; the others by any. `None`: any queue.
    pub task_queues: Option<Vec<String>>,
}

/// What [`Store::poll_activity_leases`](super::Store::poll_activity_leases) answers: the
/// attempts leased, what each flow limit started and refused in the poll, and whether the
/// limits may be holding attempts back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ActivityLeases {
    /// The attempts leased, in the order they were found.
    pub tasks: Vec<ActivityTask>,
    /// Per flow limit that started or refused an attempt in the poll.
    pub flow: Vec<FlowCount>,
    /// Whether the store's flow limits may be holding attempts back: a limit refused one, or
    /// one is without room after the poll. An engine that sees `false` need not look for work
    /// when one of its attempts ends (no limit was full); `true` may be a false alarm.
    pub held_back: bool,
}

/// A new state for a schedule, if its version is still the one read (see
/// [`StoreAdmin::update_schedule`](super::StoreAdmin::update_schedule)).
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleUpdate {
    /// The schedule.
    pub schedule_id: String,
    /// The version it must still have.
    pub expected_version: u64,
    /// Its new engine-owned state, encoded.
    pub data: Payload,
    /// When the scheduler must look at it next; `None` while paused.
    pub next_check_ms: Option<i64>,
}

/// A reset, fork or resume of one run, as the store takes it (see
/// [`StoreAdmin::reset_run`](crate::store::StoreAdmin::reset_run)).
#[derive(Debug, Clone, PartialEq)]
pub struct ResetRequest {
    /// The workflow id of the run to repair.
    pub workflow_id: String,
    /// The run (`None`: the workflow id's latest run). A reset or resume must name the latest.
    pub run_id: Option<String>,
    /// Which workflow task the new run starts from (a resume: the last good one).
    pub point: crate::data::repair::ResetPoint,
    /// Reset, fork or resume.
    pub kind: crate::data::repair::RepairKind,
    /// A fork's new workflow id (required for a fork, ignored otherwise).
    pub new_workflow_id: Option<String>,
    /// The new run's id (fresh).
    pub new_run_id: String,
    /// Leave out the signals and updates received after the point (a fork always does).
    pub drop_messages: bool,
    /// Why, as the operator said.
    pub reason: String,
    /// Who asked (over HTTP, the caller's token role).
    pub identity: String,
    /// Now, engine-clock ms.
    pub now_ms: i64,
}
