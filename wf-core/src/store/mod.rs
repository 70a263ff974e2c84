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
//!
//! # Where things live
//!
//! - `mod.rs`: the [`Store`] trait; `records.rs`: the rows and requests it speaks.
//! - `rules/`: the rules of the contract (retention's purge in `rules/purge.rs`), written once as `async fn`s over [`Tx`], the table
//!   primitives (one SQL statement or one map operation each) every store provides.
//! - `backend.rs`: [`Backend`] (a store's transactions) and the one generic `Store` impl that
//!   runs each method's rule in one transaction.
//! - `memory/` and `sqlite/`: the two stores, primitives only.
//! - `encoded.rs`: [`EncodedStore`], the wrapper that applies payload codecs to every user
//!   payload going in and out of any store (the one place they are applied).
//! - `faults.rs` (feature `fault-injection`): a wrapper that injects I/O errors, full disks,
//!   delays and crashes at a chosen commit into any store, for tests.
//! - `conformance/` (feature `conformance`): the suite every store must pass, and the macro
//!   `wf_core::store_conformance_tests!` that runs it.
//!
//! May import: `data`, `error`. Knows events and rows, not workflows.

mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
mod encoded;
#[cfg(feature = "fault-injection")]
pub mod faults;
pub mod memory;
mod records;
mod rules;
pub mod sqlite;

// What a store implementation speaks, in one place.
pub use crate::data::activity::{
    activity_lease, heartbeat_lease, ActivityFailure, ActivityOptions, ActivityResolution,
    RetryPolicy, TimeoutKind, DEFAULT_START_TO_CLOSE_MS,
};
pub use crate::data::codec::{decode_event, decode_events, encode_event, encode_event_into};
pub use crate::data::history::{EventKind, HistoryEvent};
pub use crate::data::message::{InboxMessage, Message};
pub use crate::data::payload::{Payload, MAX_PAYLOAD_BYTES};
pub use crate::data::run::{
    ChildOutcome, IdConflictPolicy, IdReusePolicy, ListFilter, ParentClosePolicy, ParentInfo,
    RunStatus, RunSummary, TaskFailure, DEFAULT_TASK_QUEUE,
};
pub use crate::data::run_limits::{RunLimits, RunTimeout};
pub use crate::data::update::{UpdateOutcome, UpdateRecord, UpdateState};
pub use crate::data::versioning::{BuildIdStatus, VersioningBehavior, UNVERSIONED};
pub use crate::error::{BackendError, BackendErrorKind, StoreError};
pub(crate) use rules::run_limits::LIMIT_TIMER_SEQ;
use std::future::Future;
use std::pin::Pin;

pub use backend::{Answer, Backend, Durability, TxFuture, TxOp};
pub use encoded::EncodedStore;
pub use memory::{MemoryStore, MemoryTx};
pub use records::*;
pub use rules::complete::ASYNC_COMPLETION_OWNER;
pub use rules::tx::{
    attempt_gone, ActivityTable, Attempt, BuildTable, ClosedRun, EngineTable, EventTable,
    Heartbeat, InboxTable, LeaseState, NewActivity, PurgeTable, Retry, RunChange, RunClosing,
    RunLease, RunRow, RunTable, RunVersioning, ScheduleTable, SearchTable, StartRequestTable,
    TaskQuery, TimerTable, Tx, UpdateRow, UpdateTable,
};
pub use sqlite::{SqliteOptions, SqliteStore, SqliteTx};

/// The future returned by every [`Store`] method.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The durable state of wf. Implementations: [`SqliteStore`] (embedded, one file) and
/// [`MemoryStore`] (tests), both through the generic impl for every [`Backend`]. A new
/// implementation is done when it passes the conformance suite (`store::conformance`, feature
/// `conformance`).
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
    /// A duplicate update is answered with its record, and a duplicate signal id as a
    /// duplicate, even when the run has closed (so that a retry of a message whose answer was
    /// lost learns it was applied).
    fn deliver(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        message: Message,
        now_ms: i64,
    ) -> StoreFuture<'_, DeliverOutcome>;

    /// Like [`deliver`](Store::deliver), but durable before it answers even for an update
    /// (which `deliver` writes without waiting for the disk): for an update whose caller is
    /// answered at its delivery (`UpdateStage::Admitted`), before any commit records it.
    fn deliver_durable(
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
    /// leased (by anyone, this worker included), or on a build other than `build_id` (the
    /// worker's; a run without a build is anyone's). Used to run a task at once for a
    /// message handed over in memory.
    fn lease_run(
        &self,
        run_id: &str,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Option<WorkflowTask>>;

    /// Like [`poll_workflow_tasks`](Store::poll_workflow_tasks), but only runs of these
    /// workflow types on these task queues, without a build or on `build_id` (the worker's
    /// build, see [`VersioningBehavior`]): a worker leases only what it can run, so processes
    /// with different registrations, queues and builds can share a store.
    // The filters are what a poll is: a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    fn poll_workflow_tasks_of(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        workflow_types: Vec<String>,
        task_queues: Vec<String>,
        build_id: Option<&str>,
    ) -> StoreFuture<'_, Vec<WorkflowTask>>;

    /// Like [`poll_workflow_tasks_of`](Store::poll_workflow_tasks_of), but runs of any
    /// workflow type: for an engine with a dynamic workflow type, which runs every type.
    fn poll_workflow_tasks_on(
        &self,
        worker_id: &str,
        now_ms: i64,
        lease_ms: i64,
        max: usize,
        task_queues: Vec<String>,
        build_id: Option<&str>,
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

    /// Holds a running attempt for an outside completer (its activity returned
    /// `ActivityError::will_complete_async`): if attempt `attempt` is current and its lease
    /// has not run out at `now_ms`, its lease passes to [`ASYNC_COMPLETION_OWNER`] (no engine),
    /// its deadlines unchanged, so it ends only when resolved, retried or expired. Returns
    /// false (and changes nothing) for a stale or expired attempt.
    fn hold_activity_for_completion(
        &self,
        run_id: &str,
        seq: u32,
        attempt: u32,
        now_ms: i64,
    ) -> StoreFuture<'_, bool>;

    /// Clears the lease of a running attempt without counting it (shutdown): visible at once.
    fn release_activity(&self, run_id: &str, seq: u32, attempt: u32) -> StoreFuture<'_, ()>;

    /// Which of `attempts` (run id, seq, attempt) are still current: leased, and not resolved,
    /// retried, cancelled or cleared with their run. An engine asks about the attempts it runs
    /// when a peer says activities were cancelled, and tells those that are not.
    fn current_attempts(&self, attempts: Vec<(String, u32, u32)>) -> StoreFuture<'_, Vec<bool>>;

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

    /// The limits (timeouts, retry policy, attempt) recorded in run `run_id`'s
    /// `WorkflowStarted` event, if its start set any (`None` for a run that does not exist).
    fn run_limits(&self, run_id: &str) -> StoreFuture<'_, Option<RunLimits>>;

    /// History events of a run with `event_id >= from_event_id`, in order.
    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>>;

    /// The messages waiting in run `run_id`'s inbox (delivered, not yet applied by a workflow
    /// task), in arrival order, and, when `history_from` is given, the run's history events
    /// from that event id — read together on one snapshot, so that a message a task applied
    /// meanwhile is in the history or in the inbox, never in both or neither; with the run's
    /// `next_event_id` on that snapshot. An unknown run has none of them. Queries use it to
    /// see acknowledged signals before their task runs.
    fn pending_messages(
        &self,
        run_id: &str,
        history_from: Option<u64>,
    ) -> StoreFuture<'_, PendingMessages>;

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

    /// The search attributes and memo of each of these runs, in their order (empty for a
    /// run that has none, or that does not exist).
    fn run_search(&self, run_ids: Vec<String>) -> StoreFuture<'_, Vec<RunSearch>>;

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

    /// Registers an engine (or replaces its row): its liveness lease runs until
    /// `engine.lease_until_ms`.
    fn register_engine(&self, engine: EngineRecord) -> StoreFuture<'_, ()>;

    /// Extends an engine's liveness lease; false if the engine is not registered (it must
    /// register again).
    fn renew_engine(&self, engine_id: &str, lease_until_ms: i64) -> StoreFuture<'_, bool>;

    /// Removes an engine (a clean shutdown; its leases were released).
    fn remove_engine(&self, engine_id: &str) -> StoreFuture<'_, ()>;

    /// The engines whose liveness lease has not expired at `now_ms`, by id.
    fn live_engines(&self, now_ms: i64) -> StoreFuture<'_, Vec<EngineRecord>>;

    /// Makes the store's files whole before its last handle goes: the SQLite store folds its
    /// WAL into the database file, so that a cleanly closed database is one self-contained
    /// file. An error says what was left undone (a full disk); nothing committed is lost by
    /// it. The store stays usable. The default has nothing to do.
    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    /// A counter that moves when another process sharing the store committed something an
    /// engine may be waiting for (a message, a ready task, a new due time), if the store can
    /// tell (PostgreSQL's `LISTEN/NOTIFY`); the engine then looks at the store at once instead
    /// of at its next poll. The default is `None`: the engine relies on its peers' pokes and
    /// its poll.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// Whether commits without a lease should carry the run's row their worker knows
    /// ([`TaskCommit::assumed`]): a store that reads the row over a network saves that read
    /// (one round trip per commit); one that reads it in-process gains nothing, and the
    /// worker does not copy the row for it. The default is `false`.
    fn takes_assumed_rows(&self) -> bool {
        false
    }

    /// What the store records about its write transactions (group commit sizes, commit and
    /// fsync times), included in the engine's [`metrics`](crate::Engine::metrics). The
    /// default is `None`: the store records nothing.
    fn metrics(&self) -> Option<std::sync::Arc<crate::metrics::StoreMetrics>> {
        None
    }

    /// Terminates the latest run of `workflow_id`: appends `WorkflowTerminated`, closes the run,
    /// abandons its updates, drops its inbox, activities and timers. In the same transaction, a
    /// running parent gets `ChildClosed { outcome: Terminated }`, and the run's open children
    /// (from its summary) get their parent close policy: `Terminate` terminates them the same
    /// way (recursively), `RequestCancel` delivers a cancel request.
    fn terminate(&self, workflow_id: &str, reason: &str, now_ms: i64)
        -> StoreFuture<'_, RunRecord>;

    /// Purges at most `max` closed runs (any status but running) whose close time is before
    /// `closed_before_ms`, oldest close first, in one transaction; returns their run ids (fewer
    /// than `max`: nothing more to purge now). A purged run is gone with its history and
    /// whatever its inbox, activities and timers held: reading it finds nothing, and its
    /// workflow id may be started again. Its continue-as-new chain's update records and signal
    /// dedupe ids go with the chain's last run, so dedupe ids live as long as the runs they
    /// deduplicate for are retained. Running runs are never touched, nor anything a running
    /// parent needs (a child's result is in the parent's inbox from the moment it closed).
    fn purge_closed_runs(&self, closed_before_ms: i64, max: usize) -> StoreFuture<'_, Vec<String>>;

    /// How many closed runs closed before `closed_before_ms`: what purging them all would
    /// delete.
    fn count_closed_runs(&self, closed_before_ms: i64) -> StoreFuture<'_, u64>;

    /// Makes `build_id` the current build of `task_queue` (worker versioning): new runs on the
    /// queue start on it, and its running auto-upgrade runs (and runs that have not run a
    /// workflow task yet) move to it. Pinned runs stay where they are. One transaction.
    fn set_current_build(&self, task_queue: &str, build_id: &str) -> StoreFuture<'_, ()>;

    /// The builds of running runs and current builds, by build id: per build, its running
    /// runs by behaviour and the queues it is current for; of `task_queue` alone if given.
    fn build_ids(&self, task_queue: Option<&str>) -> StoreFuture<'_, Vec<BuildIdStatus>>;

    /// Moves the running latest run of `workflow_id` to `build_id`: from then on only engines
    /// of that build take its workflow tasks (a task in flight elsewhere may still commit).
    /// `NotFound` for an unknown workflow id, `RunFinished` for a closed run.
    fn move_to_build(&self, workflow_id: &str, build_id: &str) -> StoreFuture<'_, RunRecord>;
}
