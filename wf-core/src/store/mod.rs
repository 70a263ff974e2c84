//! The store: runs, history events, inboxes, task queues with leases, timers, updates and
//! dedupe ids. The engine talks to it only through the [`Store`] trait.
//!
//! The trait assumes nothing about process boundaries: several worker processes may share one
//! store, so every claim on work is a lease with an expiry, and every append to a history is
//! guarded by the run's `next_event_id` and the lease owner. Every method that changes more than
//! one row does so in one transaction.
//!
//! Messages to a run (signals, updates, activity results, fired timers, cancellation) first go
//! to the run's *inbox*, in arrival order; a workflow task consumes inbox messages and writes the
//! events they caused to the history in the same transaction. This keeps client writes from
//! conflicting with a workflow task in flight.

pub mod memory;
pub mod sqlite;

use crate::history::{
    ActivityFailure, ActivityOptions, ChildOutcome, EventKind, HistoryEvent, ParentInfo,
    TimeoutKind, UpdateOutcome,
};
use crate::payload::Payload;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

pub use memory::MemoryStore;
pub use sqlite::{SqliteOptions, SqliteStore};

/// The future returned by every [`Store`] method.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Errors of the store layer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    /// No run has this workflow id (or run id).
    #[error("no workflow with id {workflow_id:?}{}", run_id.as_ref().map(|r| format!(" and run id {r:?}")).unwrap_or_default())]
    NotFound {
        /// The workflow id asked for.
        workflow_id: String,
        /// The run id asked for, if any.
        run_id: Option<String>,
    },
    /// The run is closed and accepts no more messages.
    #[error("workflow {workflow_id:?} run {run_id} is already {status:?}")]
    RunFinished {
        /// The workflow id.
        workflow_id: String,
        /// The closed run.
        run_id: String,
        /// How it closed.
        status: RunStatus,
    },
    /// A run with this workflow id is running and the id-conflict policy says fail.
    #[error("workflow {workflow_id:?} is already running as run {run_id}")]
    AlreadyStarted {
        /// The workflow id.
        workflow_id: String,
        /// The running run.
        run_id: String,
    },
    /// The caller's view of the run is stale: it lost its lease, or the history moved on.
    #[error("run {run_id}: {reason}")]
    Conflict {
        /// The run.
        run_id: String,
        /// What did not match.
        reason: String,
    },
    /// The run cannot close because messages arrived after the workflow task read its inbox;
    /// the task must run again with them.
    #[error("run {run_id}: new messages arrived while the workflow task ran")]
    NewMessages {
        /// The run.
        run_id: String,
    },
    /// A schedule with this id exists.
    #[error("a schedule with id {0:?} already exists")]
    ScheduleExists(String),
    /// The database itself failed (I/O, corruption, a constraint).
    #[error("storage failure: {0}")]
    Backend(String),
}

/// Lifecycle state of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunStatus {
    /// Still running (possibly paused or waiting).
    Running,
    /// Returned a value.
    Completed,
    /// Returned an error.
    Failed,
    /// Continued as a new run of the same workflow id.
    ContinuedAsNew,
    /// Terminated from outside.
    Terminated,
    /// Ended as cancelled after a cancellation request.
    Cancelled,
}

impl RunStatus {
    /// Stable text form used in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::ContinuedAsNew => "continued_as_new",
            RunStatus::Terminated => "terminated",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Parses [`RunStatus::as_str`].
    pub fn parse(s: &str) -> Option<RunStatus> {
        Some(match s {
            "running" => RunStatus::Running,
            "completed" => RunStatus::Completed,
            "failed" => RunStatus::Failed,
            "continued_as_new" => RunStatus::ContinuedAsNew,
            "terminated" => RunStatus::Terminated,
            "cancelled" => RunStatus::Cancelled,
            _ => return None,
        })
    }
}

/// The last failed workflow task of a run, kept until a task succeeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskFailure {
    /// What went wrong (panic message, nondeterminism report...).
    pub message: String,
    /// Whether the failure is a nondeterminism error.
    pub nondeterminism: bool,
    /// Consecutive failed attempts.
    pub attempts: u32,
    /// When the next attempt is due (engine-clock ms).
    pub retry_at_ms: i64,
}

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
}

/// A message waiting in a run's inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InboxKind {
    /// A signal.
    Signal {
        /// Wire name.
        name: String,
        /// Encoded arguments.
        args: Payload,
        /// Dedupe id.
        signal_id: Option<String>,
    },
    /// An update request, not yet validated.
    Update {
        /// The update id.
        update_id: String,
        /// Wire name.
        name: String,
        /// Encoded arguments.
        args: Payload,
    },
    /// An activity finished for good.
    ActivityResolved {
        /// Sequence number of the scheduling command.
        seq: u32,
        /// How it ended.
        resolution: ActivityResolution,
    },
    /// A timer fired.
    TimerFired {
        /// Sequence number of the timer.
        seq: u32,
    },
    /// Cancellation was requested.
    CancelRequested {
        /// Why.
        reason: String,
    },
    /// A child run ended (or could not start).
    ChildClosed {
        /// Sequence number of the parent's start command.
        seq: u32,
        /// How it ended.
        outcome: ChildOutcome,
    },
}

/// How an activity ended for good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ActivityResolution {
    /// It returned a value.
    Completed {
        /// Encoded result.
        result: Payload,
        /// Attempts made.
        attempts: u32,
    },
    /// It failed and will not be retried.
    Failed {
        /// The last failure.
        failure: ActivityFailure,
        /// Attempts made.
        attempts: u32,
    },
    /// It timed out and will not be retried.
    TimedOut {
        /// Which timeout.
        timeout: TimeoutKind,
        /// Attempts made.
        attempts: u32,
    },
}

/// An inbox message with its arrival sequence number (global, increasing).
#[derive(Debug, Clone, PartialEq)]
pub struct InboxMessage {
    /// Arrival order.
    pub seq: u64,
    /// The message.
    pub kind: InboxKind,
}

/// What to do when a run with the requested workflow id is already running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum IdConflictPolicy {
    /// Refuse the start with `AlreadyStarted` (the default).
    #[default]
    Fail,
    /// Keep the running run; deliver any start messages to it.
    UseExisting,
    /// Terminate the running run, then start a new one.
    TerminateExisting,
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
    /// The task queue whose workers run it ([`DEFAULT_TASK_QUEUE`] unless chosen).
    pub task_queue: String,
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
        }
    }
}

/// The task queue of runs and workers that name none.
pub const DEFAULT_TASK_QUEUE: &str = "default";

/// A request to start a run, optionally with messages delivered atomically with the start
/// (signal-with-start, update-with-start).
#[derive(Debug, Clone, PartialEq)]
pub struct StartRequest {
    /// The run to create.
    pub run: NewRun,
    /// What to do if the workflow id is running.
    pub policy: IdConflictPolicy,
    /// Messages for the run (signals and updates), in order.
    pub messages: Vec<Message>,
    /// Engine-clock time.
    pub now_ms: i64,
}

/// The result of a start.
#[derive(Debug, Clone, PartialEq)]
pub struct StartOutcome {
    /// The run now addressed by the workflow id.
    pub run_id: String,
    /// False when an existing run was kept (`UseExisting`).
    pub started: bool,
    /// One outcome per start message, in order.
    pub messages: Vec<DeliverOutcome>,
}

/// A client message for a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A signal; deduped by `signal_id` per continue-as-new chain.
    Signal {
        /// Wire name.
        name: String,
        /// Encoded arguments.
        args: Payload,
        /// Dedupe id.
        signal_id: Option<String>,
    },
    /// An update; deduped by `update_id` per chain.
    Update {
        /// Update id.
        update_id: String,
        /// Wire name.
        name: String,
        /// Encoded arguments.
        args: Payload,
    },
    /// A cancellation request.
    Cancel {
        /// Why.
        reason: String,
    },
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

/// Where an update stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UpdateState {
    /// In the inbox, not yet validated.
    Requested,
    /// Validated, handler running.
    Accepted,
    /// The validator refused it (no event was written).
    Rejected(String),
    /// The handler finished.
    Completed(UpdateOutcome),
    /// The run closed before the handler finished (or before validation).
    Abandoned,
}

impl UpdateState {
    /// Whether the caller waiting for completion can stop waiting.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            UpdateState::Rejected(_) | UpdateState::Completed(_) | UpdateState::Abandoned
        )
    }
}

/// An update as stored, per continue-as-new chain.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRecord {
    /// Update id.
    pub update_id: String,
    /// The run it was delivered to.
    pub run_id: String,
    /// Wire name.
    pub name: String,
    /// Where it stands.
    pub state: UpdateState,
}

/// A leased workflow task: the run and its inbox.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowTask {
    /// The run, as of the lease.
    pub run: RunRecord,
    /// Its inbox, in arrival order.
    pub messages: Vec<InboxMessage>,
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
    pub events: Vec<(i64, EventKind)>,
    /// Inbox messages with `seq <= consumed_through` are deleted.
    pub consumed_through: Option<u64>,
    /// Activities to enqueue.
    pub new_activities: Vec<NewActivityTask>,
    /// Lease the new activities to this worker at once (attempt 1 started now, deadlines per
    /// [`activity_lease`]): the committing process runs them without polling for them.
    pub lease_activities_to: Option<String>,
    /// Pending activities (by seq) to drop.
    pub cancel_activities: Vec<u32>,
    /// Activities resolved in this task straight from an in-process worker: (seq, attempt).
    /// Each must still be pending at that attempt (else the commit fails with `Conflict`);
    /// it is deleted.
    pub resolve_activities: Vec<(u32, u32)>,
    /// Timers to create: (seq, fire_at_ms).
    pub new_timers: Vec<(u32, i64)>,
    /// Timers (by seq) to drop.
    pub cancel_timers: Vec<u32>,
    /// Update state changes: (update_id, name, state).
    pub updates: Vec<(String, String, UpdateState)>,
    /// Close the run (fails with `NewMessages` if the inbox has messages past
    /// `consumed_through`).
    pub close: Option<RunClose>,
    /// Child runs to start: (the parent's command seq, the run, whose `parent` is set). A
    /// child whose workflow id is running is not started; the committing run's inbox gets
    /// `ChildClosed { outcome: StartFailed }` instead.
    pub start_children: Vec<(u32, NewRun)>,
    /// Messages for other workflows (by workflow id, latest run), delivered with dedupe;
    /// missing or closed targets are skipped.
    pub deliver: Vec<(String, Message)>,
    /// Workflows to terminate (workflow id, reason) if running: a parent close policy. Each
    /// is terminated as [`Store::terminate`] does, its own children included.
    pub terminate: Vec<(String, String)>,
    /// Messages for other runs' inboxes (run id, message), skipped if that run is closed: a
    /// child's result for its parent.
    pub notify: Vec<(String, InboxKind)>,
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

/// Filter for [`Store::list_runs`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListFilter {
    /// Only runs of this workflow type.
    pub workflow_type: Option<String>,
    /// Only runs in this state.
    pub status: Option<RunStatus>,
    /// Only the latest run of each workflow id.
    pub latest_only: bool,
    /// At most this many (newest first); 0 = no limit.
    pub limit: usize,
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

/// Start-to-close used when an activity sets neither start-to-close nor schedule-to-close.
pub const DEFAULT_START_TO_CLOSE_MS: i64 = 5 * 60 * 1000;

impl ActivityTask {
    /// The schedule-to-close deadline, if the options set one.
    pub fn schedule_deadline_ms(&self) -> Option<i64> {
        self.options
            .schedule_to_close
            .map(|d| self.scheduled_ms + d.as_millis() as i64)
    }
}

/// Lease deadlines for an attempt starting at `now_ms`: (attempt deadline, lease expiry).
/// Shared by every store so they agree on timeouts.
pub fn activity_lease(options: &ActivityOptions, scheduled_ms: i64, now_ms: i64) -> (i64, i64) {
    let stc = options
        .start_to_close
        .map(|d| d.as_millis() as i64)
        .or_else(|| {
            options
                .schedule_to_close
                .map(|d| scheduled_ms + d.as_millis() as i64 - now_ms)
        })
        .unwrap_or(DEFAULT_START_TO_CLOSE_MS);
    let mut attempt_deadline = now_ms + stc.max(0);
    if let Some(s2c) = options.schedule_to_close {
        attempt_deadline = attempt_deadline.min(scheduled_ms + s2c.as_millis() as i64);
    }
    let lease = match options.heartbeat_timeout {
        Some(hb) => attempt_deadline.min(now_ms + hb.as_millis() as i64),
        None => attempt_deadline,
    };
    (attempt_deadline, lease)
}

/// Lease expiry after a heartbeat at `now_ms`.
pub fn heartbeat_lease(options: &ActivityOptions, attempt_deadline_ms: i64, now_ms: i64) -> i64 {
    match options.heartbeat_timeout {
        Some(hb) => attempt_deadline_ms.min(now_ms + hb.as_millis() as i64),
        None => attempt_deadline_ms,
    }
}

/// The durable state of wf. Implementations: [`SqliteStore`] (embedded, one file) and
/// [`MemoryStore`] (tests). A new implementation is done when it passes the conformance suite
/// in `wf-core/tests/store_conformance/`.
pub trait Store: Send + Sync + 'static {
    /// Creates a run with its `WorkflowStarted` event (event 1) and start messages, honouring
    /// the id-conflict policy, and makes its first workflow task ready. One transaction.
    fn start_run(&self, req: StartRequest) -> StoreFuture<'_, StartOutcome>;

    /// Starts a run as [`start_run`](Self::start_run) does and, if it was created, commits
    /// its first workflow task, which the starting process ran in memory without a lease
    /// (`first.without_lease`; `first.run_id` is the new run's id). The start stands even if
    /// that commit fails (the task then runs the usual way, from the ready queue): the second
    /// value is the commit's outcome, `None` when no run was created (an existing run kept).
    /// A store should do both in one transaction (one fsync); the default does two.
    fn start_run_with_task(
        &self,
        req: StartRequest,
        first: TaskCommit,
    ) -> StoreFuture<'_, (StartOutcome, Option<Result<RunRecord, StoreError>>)> {
        Box::pin(async move {
            let outcome = self.start_run(req).await?;
            if !outcome.started {
                return Ok((outcome, None));
            }
            let first = self.commit_workflow_task(first).await;
            Ok((outcome, Some(first)))
        })
    }

    /// Delivers a message to the latest run of `workflow_id` (or to `run_id` if given): dedupe
    /// check, inbox insert, run marked ready, update recorded as `Requested`. One transaction.
    /// A duplicate update is answered with its record even when the run has closed.
    fn deliver(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome>;

    /// Leases up to `max` runs whose workflow task is ready (`ready_at <= now`) and whose lease
    /// is free or expired, oldest ready first; returns each with its inbox.
    fn poll_workflow_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<WorkflowTask>>;

    /// Leases one running run for `worker_id` if its lease is free or expired (whether or not
    /// a task is ready), and returns it with its inbox; `None` if it is closed, unknown or
    /// leased (by anyone, this worker included). Used to run a task at once for a
    /// message handed over in memory.
    fn lease_run(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> StoreFuture<'_, Option<WorkflowTask>>;

    /// Like [`poll_workflow_tasks`](Store::poll_workflow_tasks), but only runs of these
    /// workflow types on these task queues: a worker leases only what it can run, so processes
    /// with different registrations and queues can share a store.
    fn poll_workflow_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        workflow_types: Vec<String>,
        task_queues: Vec<String>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>>;

    /// Like [`poll_activity_tasks`](Store::poll_activity_tasks), but only activities with these
    /// names.
    fn poll_activity_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
        names: Vec<String>,
    ) -> StoreFuture<'_, Vec<ActivityTask>>;

    /// Commits a workflow task (see [`TaskCommit`]); fails with `Conflict` if the lease or
    /// `next_event_id` do not match, and with `NewMessages` for a close that would drop inbox
    /// messages. On success the lease is released and the run is ready again only if messages
    /// remain in its inbox. Clears the run's task failure. Returns the updated run.
    fn commit_workflow_task(&self, commit: TaskCommit) -> StoreFuture<'_, RunRecord>;

    /// Records a failed workflow task, releases the lease and makes the run ready again at
    /// `failure.retry_at_ms`. Nothing else changes.
    fn fail_workflow_task(
        &self,
        run_id: &str,
        worker_id: &str,
        failure: TaskFailure,
    ) -> StoreFuture<'_, ()>;

    /// Releases a lease without committing (shutdown); the run is ready again at once.
    fn release_workflow_task(&self, run_id: &str, worker_id: &str) -> StoreFuture<'_, ()>;

    /// Leases up to `max` activity tasks that are visible (`visible_at <= now`) and not leased
    /// (or whose lease expired is *not* taken here: expired leases go through
    /// [`Store::expired_activities`]). Sets `started_ms`, the attempt deadline and the lease per
    /// [`activity_lease`].
    fn poll_activity_tasks(
        &self,
        worker_id: &str,
        now_ms: i64,
        max: usize,
    ) -> StoreFuture<'_, Vec<ActivityTask>>;

    /// Records heartbeat details and extends the lease per [`heartbeat_lease`]. Returns false if
    /// the attempt is no longer current (completed, timed out, cancelled).
    fn heartbeat_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        details: Option<Payload>,
        now_ms: i64,
    ) -> StoreFuture<'_, bool>;

    /// Resolves an activity for good: if attempt `attempt` is current, deletes the task, puts
    /// an `ActivityResolved` message in the run's inbox and makes the run ready. Returns false
    /// (and changes nothing) for a stale attempt. One transaction.
    fn resolve_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        resolution: ActivityResolution,
        now_ms: i64,
    ) -> StoreFuture<'_, bool>;

    /// Schedules the next attempt: if `attempt` is current, sets attempt + 1, visible at
    /// `visible_at_ms`, clears the lease, keeps the heartbeat details, records the failure.
    /// Returns false for a stale attempt.
    fn retry_activity(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        visible_at_ms: i64,
        failure: ActivityFailure,
    ) -> StoreFuture<'_, bool>;

    /// Clears the lease of a running attempt without counting it (shutdown): visible at once.
    fn release_activity(&self, run_id: &str, seq: u32, attempt: u32) -> StoreFuture<'_, ()>;

    /// Activity tasks whose lease expired (`lease_until <= now`) or whose schedule-to-close
    /// deadline passed, at most `max`.
    fn expired_activities(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ActivityTask>>;

    /// Fires every timer due at `now_ms` (at most `max`): deletes it, puts `TimerFired` in the
    /// run's inbox, makes the run ready. One transaction. Returns (run_id, seq) of each.
    fn fire_due_timers(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<(String, u32)>>;

    /// The earliest future time (> `now_ms`) at which something becomes due: a timer, a
    /// workflow task retry, an activity becoming visible, a lease or deadline expiring, a
    /// schedule's next check.
    fn next_wakeup(&self, now_ms: i64) -> StoreFuture<'_, Option<i64>>;

    /// The run `run_id` of `workflow_id`, or its latest run when `run_id` is `None`.
    fn get_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<RunRecord>>;

    /// History events of a run with `event_id >= from_event_id`, in order.
    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>>;

    /// Runs matching the filter, newest first.
    fn list_runs(&self, filter: ListFilter) -> StoreFuture<'_, Vec<RunRecord>>;

    /// The update `update_id` in the chain of the latest run of `workflow_id`.
    fn get_update(
        &self,
        workflow_id: &str,
        update_id: &str,
    ) -> StoreFuture<'_, Option<UpdateRecord>>;

    /// Pending (not final) updates of a run.
    fn pending_updates(&self, run_id: &str) -> StoreFuture<'_, Vec<UpdateRecord>>;

    /// Pending activities of a run.
    fn pending_activities(&self, run_id: &str) -> StoreFuture<'_, Vec<ActivityTask>>;

    /// Creates a schedule (version 1); `ScheduleExists` if the id is taken.
    fn create_schedule(&self, row: ScheduleRow) -> StoreFuture<'_, ()>;

    /// Replaces a schedule's data and next check if its version is still `expected_version`
    /// (then the version goes up by one). Returns false on a version mismatch or a missing
    /// schedule.
    fn update_schedule(
        &self,
        schedule_id: &str,
        expected_version: u64,
        data: Payload,
        next_check_ms: Option<i64>,
    ) -> StoreFuture<'_, bool>;

    /// One schedule.
    fn get_schedule(&self, schedule_id: &str) -> StoreFuture<'_, Option<ScheduleRow>>;

    /// Every schedule, by id.
    fn list_schedules(&self) -> StoreFuture<'_, Vec<ScheduleRow>>;

    /// Deletes a schedule; false if it did not exist.
    fn delete_schedule(&self, schedule_id: &str) -> StoreFuture<'_, bool>;

    /// Schedules whose next check is due (`next_check_ms <= now`), at most `max`.
    fn due_schedules(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ScheduleRow>>;

    /// Terminates the latest run of `workflow_id`: appends `WorkflowTerminated`, closes the run,
    /// abandons its updates, drops its inbox, activities and timers. In the same transaction, a
    /// running parent gets `ChildClosed { outcome: Terminated }`, and the run's open children
    /// (from its summary) get their parent close policy: `Terminate` terminates them the same
    /// way (recursively), `RequestCancel` delivers a cancel request.
    fn terminate(&self, workflow_id: &str, reason: &str, now_ms: i64)
        -> StoreFuture<'_, RunRecord>;
}

/// A `Conflict` unless the run is running: workflow tasks commit only to running runs.
pub(crate) fn check_running(run: &RunRecord) -> Result<(), StoreError> {
    if run.status == RunStatus::Running {
        return Ok(());
    }
    Err(StoreError::Conflict {
        run_id: run.run_id.clone(),
        reason: format!("the run is {:?}, not running", run.status),
    })
}

/// What terminating a run means for its relatives, applied by the stores in the same
/// transaction as the termination itself (so a crash cannot leave a parent waiting on a child
/// that is gone, or a child running that its parent's policy says to stop).
pub(crate) struct Fallout {
    /// The parent's run id and the message telling it its child was terminated.
    pub parent: Option<(String, InboxKind)>,
    /// Children (by workflow id) to terminate in turn, with the reason.
    pub terminate: Vec<(String, String)>,
    /// Children (by workflow id) to ask to cancel, with the message.
    pub cancel: Vec<(String, Message)>,
}

impl Fallout {
    /// The fallout of terminating `run` (whose parent, if it is a child, is `parent`) for
    /// `reason`: its parent is told, and each child it still runs gets its parent close policy.
    pub(crate) fn of(run: &RunRecord, parent: Option<ParentInfo>, reason: &str) -> Fallout {
        let parent = parent.map(|p| {
            let kind = InboxKind::ChildClosed {
                seq: p.seq,
                outcome: ChildOutcome::Terminated(reason.to_string()),
            };
            (p.run_id, kind)
        });
        // A summary that does not decode names no children: nothing to apply.
        let summary: crate::machine::RunSummary = run.summary.decode().unwrap_or_default();
        let why = format!("its parent run {} was terminated", run.run_id);
        let mut fallout = Fallout {
            parent,
            terminate: Vec::new(),
            cancel: Vec::new(),
        };
        for (child, policy) in summary.open_children {
            match policy {
                crate::history::ParentClosePolicy::Terminate => {
                    fallout.terminate.push((child, why.clone()))
                }
                crate::history::ParentClosePolicy::RequestCancel => fallout.cancel.push((
                    child,
                    Message::Cancel {
                        reason: why.clone(),
                    },
                )),
                crate::history::ParentClosePolicy::Abandon => {}
            }
        }
        fallout
    }
}

/// The parent recorded in a run's first event, if the run is a child.
pub(crate) fn parent_in(first: Option<&EventKind>) -> Option<ParentInfo> {
    match first {
        Some(EventKind::WorkflowStarted { parent, .. }) => parent.clone(),
        _ => None,
    }
}
