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
//! - `mod.rs`: the [`Store`] trait, the engine's operations; `admin.rs`: [`StoreAdmin`], the
//!   operators' and the engine's bookkeeping (schedules, engines, builds, purge, listing);
//!   `records.rs`: the rows and requests they speak.
//! - `operation.rs`: every operation as a value ([`Operation`], [`Outcome`]): the one seam
//!   every call passes ([`Store::execute`]), where each operation names its rule, its payloads
//!   and its fault class.
//! - `rules/`: the rules of the contract (retention's purge in `rules/purge.rs`), written once as `async fn`s over [`Tx`], the table
//!   primitives (one SQL statement or one map operation each) every store provides.
//! - `backend.rs`: [`Backend`] (a store's transactions) and the one generic `Store` impl that
//!   runs each operation's rule in one transaction.
//! - `memory/` and `sqlite/`: the two stores, primitives only.
//! - `encoded.rs`: [`EncodedStore`], the wrapper that applies payload codecs to every user
//!   payload going in and out of any store (the one place they are applied), at
//!   [`Store::execute`].
//! - `faults.rs` (feature `fault-injection`): a wrapper that injects I/O errors, full disks,
//!   delays and crashes at a chosen commit into any store, for tests, at [`Store::execute`].
//! - `conformance/` (feature `conformance`): the suite every store must pass, and the macro
//!   `wf_core::store_conformance_tests!` that runs it.
//!
//! May import: `data`, `error`. Knows events and rows, not workflows.

mod admin;
mod backend;
#[cfg(feature = "conformance")]
pub mod conformance;
mod encoded;
#[cfg(feature = "fault-injection")]
pub mod faults;
pub mod memory;
mod operation;
mod records;
mod rules;
pub mod sqlite;

// What a store implementation speaks, in one place.
pub use crate::data::activity::{
    activity_lease, heartbeat_lease, ActivityFailure, ActivityOptions, ActivityResolution,
    RetryPolicy, TimeoutKind, DEFAULT_START_TO_CLOSE_MS,
};
pub use crate::data::codec::{decode_event, decode_events, encode_event, encode_event_into};
pub use crate::data::feed::{
    FeedCursor, FeedDetail, FeedEvent, FeedFilter, FeedKind, FeedPage, MAX_FEED_PAGE,
};
pub use crate::data::flow::{FlowColumns, FlowCount, FlowRow};
pub use crate::data::history::{EventKind, HistoryEvent};
pub use crate::data::message::{InboxMessage, Message};
pub use crate::data::pause::{PauseMark, PAUSE_LEASE_UNTIL};
pub use crate::data::payload::{Payload, MAX_PAYLOAD_BYTES};
pub use crate::data::queue::{queue_columns, queue_of_columns, QueueRow};
pub use crate::data::queue::{QueueAdmission, QueueSpot, QueuedStart, QUEUE_HELD_MS};
pub use crate::data::queue::{QueueCount, QueuePass};
pub use crate::data::run::{
    ChildOutcome, IdConflictPolicy, IdReusePolicy, ListFilter, ParentClosePolicy, ParentInfo,
    RunStatus, RunSummary, TaskFailure, DEFAULT_TASK_QUEUE,
};
pub use crate::data::run_limits::{RunLimits, RunTimeout};
pub use crate::data::stream::{StreamEntry, StreamError, StreamList, StreamPage};
pub use crate::data::update::{UpdateChange, UpdateOutcome, UpdateRecord, UpdateState};
pub use crate::data::versioning::{BuildIdStatus, VersioningBehavior, UNVERSIONED};
pub use crate::error::{BackendError, BackendErrorKind, StoreError};
pub(crate) use rules::run_limits::LIMIT_TIMER_SEQ;
use std::future::Future;
use std::pin::Pin;

pub use admin::StoreAdmin;
pub use backend::{Answer, Backend, Durability, TxFuture, TxOp};
pub use encoded::EncodedStore;
pub use memory::{MemoryStore, MemoryTx};
pub use operation::{FromOutcome, Op, Operation, Outcome};
pub use records::*;
pub use rules::complete::ASYNC_COMPLETION_OWNER;
pub use rules::flow_table::EAGER_LEASE_REFUSED;
pub use rules::tx::{
    attempt_gone, feed_event, ActivityTable, Attempt, BuildTable, ClosedRun, EngineTable,
    EventTable, FeedRow, FeedTable, FlowBlocked, FlowTable, Heartbeat, InboxTable, LeaseState,
    NewActivity, PurgeTable, QueueTable, QueuedRun, Retry, RunChange, RunClosing, RunLease, RunRow,
    RunTable, RunVersioning, ScheduleTable, SearchTable, StartRequestTable, StreamTable, TaskQuery,
    TimerTable, Tx, UpdateRow, UpdateTable,
};
pub use sqlite::{SqliteOptions, SqliteStore, SqliteTx};

/// The future returned by every [`Store`] and [`StoreAdmin`] method.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The durable state of wf, as the engine runs workflows on it: starts, deliveries, workflow
/// task leases and commits, activity attempts, timers, and the reads of one run. The
/// operators' and the engine's bookkeeping (schedules, the engines registry, builds, purge,
/// listing) is [`Store::admin`]'s.
///
/// Implementations: [`SqliteStore`] (embedded, one file), [`MemoryStore`] (tests) and
/// wf-postgres's store, all through the generic impl for every [`Backend`]; a new one is done
/// when it passes the conformance suite (`store::conformance`, feature `conformance`). A store
/// implements one method, [`execute`](Store::execute); every other method is provided: it
/// sends one [`Operation`] through `execute` and unwraps its [`Outcome`]. A wrapper (the
/// payload codec's [`EncodedStore`], fault injection's `FaultStore`) is a store whose
/// `execute` acts on every operation before passing it on.
///
/// Every operation that changes more than one row does so in one transaction.
pub trait Store: AsDynStore + Send + Sync + 'static {
    /// Runs one operation (in one transaction) and answers it: the one method a store
    /// implements.
    fn execute(&self, op: Operation) -> StoreFuture<'_, Outcome>;

    /// The store a wrapper wraps, whose [`changes`](Store::changes),
    /// [`takes_assumed_rows`](Store::takes_assumed_rows) and [`metrics`](Store::metrics) it
    /// reports as its own. The default is `None` (not a wrapper).
    fn wrapped(&self) -> Option<&dyn Store> {
        None
    }

    /// A counter that moves when another process sharing the store committed something an
    /// engine may be waiting for (a message, a ready task, a new due time), if the store can
    /// tell (PostgreSQL's `LISTEN/NOTIFY`); the engine then looks at the store at once instead
    /// of at its next poll. `None`: the engine relies on its peers' pokes and its poll.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.wrapped().and_then(|inner| inner.changes())
    }

    /// Whether commits without a lease should carry the run's row their worker knows
    /// ([`TaskCommit::assumed`]): a store that reads the row over a network saves that read
    /// (one round trip per commit); one that reads it in-process gains nothing, and the
    /// worker does not copy the row for it.
    fn takes_assumed_rows(&self) -> bool {
        self.wrapped()
            .is_some_and(|inner| inner.takes_assumed_rows())
    }

    /// What the store records about its write transactions (group commit sizes, commit and
    /// fsync times), included in the engine's [`metrics`](crate::Engine::metrics). `None`:
    /// the store records nothing.
    fn metrics(&self) -> Option<std::sync::Arc<crate::metrics::StoreMetrics>> {
        self.wrapped().and_then(|inner| inner.metrics())
    }

    /// The operators' and the engine's bookkeeping operations on this store: schedules, the
    /// engines registry, builds, purge, listing.
    fn admin(&self) -> StoreAdmin<'_> {
        StoreAdmin::of(self.as_dyn_store())
    }

    /// Creates a run with its `WorkflowStarted` event (event 1) and start messages, honouring
    /// the id-conflict policy, and makes its first workflow task ready. One transaction.
    fn start_run(&self, req: RunStart) -> StoreFuture<'_, StartOutcome> {
        send(self, Operation::StartRun(req))
    }

    /// Starts a run as [`start_run`](Self::start_run) does and, if it was created, commits
    /// its first workflow task, which the starting process ran in memory without a lease
    /// (`first.without_lease`; `first.run_id` is the new run's id), in one transaction (one
    /// fsync). The start stands even if that commit fails (the task then runs the usual way,
    /// from the ready queue): see [`StartWithTask`].
    fn start_run_with_task(
        &self,
        req: RunStart,
        first: TaskCommit,
    ) -> StoreFuture<'_, StartWithTask> {
        send(self, Operation::StartRunWithTask { start: req, first })
    }

    /// Delivers a message to the latest run of its workflow id (or to its run): dedupe
    /// check, inbox insert, run marked ready, update recorded as `Requested`. One transaction.
    /// A duplicate update is answered with its record, and a duplicate signal id as a
    /// duplicate, even when the run has closed (so that a retry of a message whose answer was
    /// lost learns it was applied).
    fn deliver(&self, delivery: Delivery) -> StoreFuture<'_, DeliverOutcome> {
        send(self, Operation::Deliver(delivery))
    }

    /// Like [`deliver`](Store::deliver), but durable before it answers even for an update
    /// (which `deliver` writes without waiting for the disk): for an update whose caller is
    /// answered at its delivery (`UpdateStage::Admitted`), before any commit records it.
    fn deliver_durable(&self, delivery: Delivery) -> StoreFuture<'_, DeliverOutcome> {
        send(self, Operation::DeliverDurable(delivery))
    }

    /// Leases up to `poll.max` runs that its filter admits, whose workflow task is ready
    /// (`ready_at <= now`) and whose lease is free or expired, oldest ready first; returns
    /// each with its inbox.
    fn poll_workflow_tasks(&self, poll: TaskPoll) -> StoreFuture<'_, Vec<WorkflowTask>> {
        send(self, Operation::PollWorkflowTasks(poll))
    }

    /// Leases one running run if its lease is free or expired (whether or not a task is
    /// ready), and returns it with its inbox; `None` if it is closed, unknown or leased (by
    /// anyone, this worker included), or on a build other than the worker's (a run without a
    /// build is anyone's), or whose delayed start is not yet due. Used to run a task at once
    /// for a message handed over in memory.
    fn lease_run(&self, lease: LeaseRequest) -> StoreFuture<'_, Option<WorkflowTask>> {
        send(self, Operation::LeaseRun(lease))
    }

    /// Commits a workflow task (see [`TaskCommit`]); fails with `Conflict` if the lease or
    /// `next_event_id` do not match, and with `NewMessages` for a close that would drop inbox
    /// messages. On success the lease is released and the run is ready again only if messages
    /// remain in its inbox. Clears the run's task failure. Returns the updated run.
    fn commit_workflow_task(&self, commit: TaskCommit) -> StoreFuture<'_, RunRecord> {
        let committed = self.commit_workflow_task_leasing(commit);
        Box::pin(async move { committed.await.map(|c| c.run) })
    }

    /// [`commit_workflow_task`](Self::commit_workflow_task), answering also which new
    /// activities it leased (see [`TaskCommit::lease_admitted`]).
    fn commit_workflow_task_leasing(&self, commit: TaskCommit) -> StoreFuture<'_, Committed> {
        send(self, Operation::CommitWorkflowTask(commit))
    }

    /// Records a failed workflow task, releases the lease and makes the run ready again at
    /// `failure.retry_at_ms`. Nothing else changes.
    fn fail_workflow_task(
        &self,
        run_id: &str,
        worker_id: &str,
        failure: TaskFailure,
    ) -> StoreFuture<'_, ()> {
        let (run_id, worker_id) = (run_id.to_owned(), worker_id.to_owned());
        let op = Operation::FailWorkflowTask {
            run_id,
            worker_id,
            failure,
        };
        send(self, op)
    }

    /// Releases a lease without committing (shutdown); the run is ready again at once.
    fn release_workflow_task(&self, run_id: &str, worker_id: &str) -> StoreFuture<'_, ()> {
        let (run_id, worker_id) = (run_id.to_owned(), worker_id.to_owned());
        send(self, Operation::ReleaseWorkflowTask { run_id, worker_id })
    }

    /// Leases up to `poll.max` activity tasks that are visible (`visible_at <= now`) and not
    /// leased (expired leases go through [`Store::expired_activities`]). Sets `started_ms`,
    /// the attempt deadline and the lease per [`activity_lease`].
    fn poll_activity_tasks(&self, poll: ActivityPoll) -> StoreFuture<'_, Vec<ActivityTask>> {
        let leases = self.poll_activity_leases(poll);
        Box::pin(async move { leases.await.map(|l| l.tasks) })
    }

    /// [`poll_activity_tasks`](Self::poll_activity_tasks), answering also what each flow limit
    /// started and refused in the poll (what the engine's flow counters count) and whether the
    /// limits may be holding attempts back ([`ActivityLeases::held_back`]).
    fn poll_activity_leases(&self, poll: ActivityPoll) -> StoreFuture<'_, ActivityLeases> {
        send(self, Operation::PollActivityTasks(poll))
    }

    /// Records heartbeat details and extends the lease per [`heartbeat_lease`]. Returns false
    /// if the attempt is no longer current (completed, timed out, cancelled).
    fn heartbeat_activity(
        &self,
        attempt: ActivityAttempt,
        details: Option<Payload>,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let op = Operation::HeartbeatActivity {
            attempt,
            details,
            now_ms,
        };
        send(self, op)
    }

    /// Resolves an activity for good: if the attempt is current, deletes the task, puts an
    /// `ActivityResolved` message in the run's inbox and makes the run ready. Returns false
    /// (and changes nothing) for a stale attempt. One transaction.
    fn resolve_activity(
        &self,
        attempt: ActivityAttempt,
        resolution: ActivityResolution,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let op = Operation::ResolveActivity {
            attempt,
            resolution,
            now_ms,
        };
        send(self, op)
    }

    /// Schedules the next attempt: if the attempt is current, sets attempt + 1, visible at
    /// `visible_at_ms`, clears the lease, keeps the heartbeat details, records the failure.
    /// Returns false for a stale attempt. The failure is in the feed of what runs do
    /// (`activity_failed`, at `now_ms`).
    fn retry_activity(
        &self,
        attempt: ActivityAttempt,
        visible_at_ms: i64,
        failure: ActivityFailure,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        let op = Operation::RetryActivity {
            attempt,
            visible_at_ms,
            failure,
            now_ms,
        };
        send(self, op)
    }

    /// Holds a running attempt for an outside completer (its activity returned
    /// `ActivityError::will_complete_async`): if the attempt is current and its lease has not
    /// run out at `now_ms`, its lease passes to [`ASYNC_COMPLETION_OWNER`] (no engine), its
    /// deadlines unchanged, so it ends only when resolved, retried or expired. Returns false
    /// (and changes nothing) for a stale or expired attempt.
    fn hold_activity_for_completion(
        &self,
        attempt: ActivityAttempt,
        now_ms: i64,
    ) -> StoreFuture<'_, bool> {
        send(
            self,
            Operation::HoldActivityForCompletion { attempt, now_ms },
        )
    }

    /// Clears the lease of a running attempt without counting it (shutdown): visible at once.
    fn release_activity(&self, attempt: ActivityAttempt) -> StoreFuture<'_, ()> {
        send(self, Operation::ReleaseActivity(attempt))
    }

    /// Which of `attempts` are still current: leased, and not resolved, retried, cancelled or
    /// cleared with their run. An engine asks about the attempts it runs when a peer says
    /// activities were cancelled, and tells those that are not.
    fn current_attempts(&self, attempts: Vec<ActivityAttempt>) -> StoreFuture<'_, Vec<bool>> {
        send(self, Operation::CurrentAttempts(attempts))
    }

    /// Activity tasks whose lease expired (`lease_until <= now`) or whose schedule-to-close
    /// deadline passed, at most `max`.
    fn expired_activities(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<ActivityTask>> {
        send(self, Operation::ExpiredActivities { now_ms, max })
    }

    /// Fires every timer due at `now_ms` (at most `max`): deletes it, puts `TimerFired` in the
    /// run's inbox, makes the run ready. One transaction. Returns the timers fired.
    fn fire_due_timers(&self, now_ms: i64, max: usize) -> StoreFuture<'_, Vec<FiredTimer>> {
        send(self, Operation::FireDueTimers { now_ms, max })
    }

    /// The earliest future time (> `now_ms`) at which something becomes due: a timer, a
    /// workflow task retry, an activity becoming visible, a lease or deadline expiring, a
    /// schedule's next check.
    fn next_wakeup(&self, now_ms: i64) -> StoreFuture<'_, Option<i64>> {
        send(self, Operation::NextWakeup { now_ms })
    }

    /// The run `run_id` of `workflow_id`, or its latest run when `run_id` is `None`.
    fn get_run(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<RunRecord>> {
        let (workflow_id, run_id) = (workflow_id.to_owned(), run_id.map(str::to_owned));
        send(
            self,
            Operation::GetRun {
                workflow_id,
                run_id,
            },
        )
    }

    /// The limits (timeouts, retry policy, attempt) recorded in run `run_id`'s
    /// `WorkflowStarted` event, if its start set any (`None` for a run that does not exist).
    fn run_limits(&self, run_id: &str) -> StoreFuture<'_, Option<RunLimits>> {
        let run_id = run_id.to_owned();
        send(self, Operation::RunLimits { run_id })
    }

    /// At most `max` entries of stream `stream` of run `run_id` of `workflow_id` (its latest
    /// run if `None`) from offset `from`, and whether that run is closed; `None` for an unknown
    /// workflow id or run.
    fn read_stream(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
        stream: &str,
        from: u64,
        max: usize,
    ) -> StoreFuture<'_, Option<StreamPage>> {
        send(
            self,
            Operation::ReadStream {
                workflow_id: workflow_id.to_owned(),
                run_id: run_id.map(str::to_owned),
                stream: stream.to_owned(),
                from,
                max,
            },
        )
    }

    /// The streams of run `run_id` of `workflow_id` (its latest run if `None`) that hold an
    /// entry, in name order, each with its entry count and whether it is closed; `None` for
    /// an unknown workflow id or run.
    fn list_streams(
        &self,
        workflow_id: &str,
        run_id: Option<&str>,
    ) -> StoreFuture<'_, Option<StreamList>> {
        send(
            self,
            Operation::ListStreams {
                workflow_id: workflow_id.to_owned(),
                run_id: run_id.map(str::to_owned),
            },
        )
    }

    /// The value last published under event `key` by a run of `workflow_id`
    /// (`ctx.set_event`), if any.
    fn read_event(&self, workflow_id: &str, key: &str) -> StoreFuture<'_, Option<Payload>> {
        send(
            self,
            Operation::ReadEvent {
                workflow_id: workflow_id.to_owned(),
                key: key.to_owned(),
            },
        )
    }

    /// At most `max` events of the feed of what runs do after `after` (and at most
    /// [`MAX_FEED_PAGE`]), those `filter` takes, in feed
    /// order, and the cursor to read on from; from [`FeedCursor::now`], none and the cursor of
    /// the feed's end.
    fn read_feed(
        &self,
        filter: &FeedFilter,
        after: FeedCursor,
        max: usize,
    ) -> StoreFuture<'_, FeedPage> {
        send(self, Operation::ReadFeed(filter.clone(), after, max))
    }

    /// Appends `value` to stream `stream` of running run `run_id` (an activity's write) at
    /// its next offset, or finds the entry already written with `entry_id`. Answers the
    /// entry's offset, or the refusal: the run is closed, the stream closed or full.
    fn append_stream(
        &self,
        run_id: &str,
        stream: &str,
        value: Payload,
        entry_id: Option<&str>,
    ) -> StoreFuture<'_, Result<u64, StreamError>> {
        send(
            self,
            Operation::AppendStream {
                run_id: run_id.to_owned(),
                stream: stream.to_owned(),
                value,
                entry_id: entry_id.map(str::to_owned),
            },
        )
    }

    /// History events of a run with `event_id >= from_event_id`, in order.
    fn read_history(&self, run_id: &str, from_event_id: u64) -> StoreFuture<'_, Vec<HistoryEvent>> {
        let run_id = run_id.to_owned();
        send(
            self,
            Operation::ReadHistory {
                run_id,
                from_event_id,
            },
        )
    }

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
    ) -> StoreFuture<'_, PendingMessages> {
        let run_id = run_id.to_owned();
        send(
            self,
            Operation::PendingMessages {
                run_id,
                history_from,
            },
        )
    }

    /// The update `update_id` in the chain of the latest run of `workflow_id`.
    fn get_update(
        &self,
        workflow_id: &str,
        update_id: &str,
    ) -> StoreFuture<'_, Option<UpdateRecord>> {
        let (workflow_id, update_id) = (workflow_id.to_owned(), update_id.to_owned());
        send(
            self,
            Operation::GetUpdate {
                workflow_id,
                update_id,
            },
        )
    }

    /// Pending (not final) updates of a run.
    fn pending_updates(&self, run_id: &str) -> StoreFuture<'_, Vec<UpdateRecord>> {
        let run_id = run_id.to_owned();
        send(self, Operation::PendingUpdates { run_id })
    }

    /// Pending activities of a run.
    fn pending_activities(&self, run_id: &str) -> StoreFuture<'_, Vec<ActivityTask>> {
        let run_id = run_id.to_owned();
        send(self, Operation::PendingActivities { run_id })
    }

    /// Terminates the latest run of `workflow_id`: appends `WorkflowTerminated`, closes the run,
    /// abandons its updates, drops its inbox, activities and timers. In the same transaction, a
    /// running parent gets `ChildClosed { outcome: Terminated }`, and the run's open children
    /// (from its summary) get their parent close policy: `Terminate` terminates them the same
    /// way (recursively), `RequestCancel` delivers a cancel request.
    fn terminate(
        &self,
        workflow_id: &str,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, RunRecord> {
        let (workflow_id, reason) = (workflow_id.to_owned(), reason.to_owned());
        let op = Operation::Terminate {
            workflow_id,
            reason,
            now_ms,
        };
        send(self, op)
    }

    /// Makes the store's files whole before its last handle goes: the SQLite store folds its
    /// WAL into the database file, so that a cleanly closed database is one self-contained
    /// file. An error says what was left undone (a full disk); nothing committed is lost by
    /// it. The store stays usable. A store with nothing to do answers at once.
    fn close(&self) -> StoreFuture<'_, ()> {
        send(self, Operation::Close)
    }
}

/// Any store as a `dyn Store` (for [`Store::admin`], on concrete stores and trait objects
/// alike); implemented for every sized [`Store`].
#[doc(hidden)]
pub trait AsDynStore {
    /// `self`, as a trait object.
    fn as_dyn_store(&self) -> &dyn Store;
}

impl<S: Store> AsDynStore for S {
    fn as_dyn_store(&self) -> &dyn Store {
        self
    }
}

/// Sends `op` through `store`'s [`execute`](Store::execute) and unwraps its answer.
pub(crate) fn send<'a, S: Store + ?Sized, T: FromOutcome>(
    store: &'a S,
    op: Operation,
) -> StoreFuture<'a, T> {
    let name = op.name();
    let answered = store.execute(op);
    Box::pin(async move {
        T::from_outcome(answered.await?).map_err(|other| {
            StoreError::bug(format!(
                "the store answered {name} with an outcome of another operation ({other})"
            ))
        })
    })
}
