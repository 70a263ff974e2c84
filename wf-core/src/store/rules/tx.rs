//! The table primitives every store provides and the rules are written against: each one is a
//! single statement of a SQL store, or a single operation on one map of the memory store.
//!
//! A primitive checks nothing the rules check: it reads or writes exactly what it says, inside
//! the transaction the store opened for the rule (see [`Backend`](crate::store::Backend)).
//! Where a primitive can fail on the data itself, it fails as a SQL constraint would (a
//! duplicate key is a [`StoreError::Backend`]), and the rule's transaction is rolled back.
//!
//! The primitives are `async` so that a store whose transaction is asynchronous (PostgreSQL)
//! implements the same traits. An implementation whose primitives never wait writes them as
//! plain `async fn`s with no `.await` inside: their futures are ready on the first poll.
//!
//! The traits are split by table so that an implementation can keep one file per table; [`Tx`]
//! gathers them.

pub use super::feed_table::{feed_event, FeedRow, FeedTable};
pub use super::flow_table::FlowTable;
pub use super::queue_table::{QueueTable, QueuedRun};
pub use super::stream_table::StreamTable;
pub use super::task_query::{FlowBlocked, TaskQuery};
use crate::data::activity::{ActivityFailure, ActivityOptions};
use crate::data::message::{InboxMessage, Message};
use crate::data::payload::Payload;
use crate::data::run::{ListFilter, RunStatus, TaskFailure};
use crate::data::search::SearchAttributes;
use crate::data::update::{UpdateRecord, UpdateState};
use crate::error::StoreError;
use crate::store::records::{ActivityTask, EngineRecord, NewActivityTask, RunRecord, ScheduleRow};
use std::future::Future;

/// A run's row: its record and its workflow task lease.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The run as callers see it.
    pub record: RunRecord,
    /// The worker holding the workflow task lease, if any (it may have expired).
    pub lease_owner: Option<String>,
    /// When that lease expires.
    pub lease_until: Option<i64>,
}

/// The one change a workflow task commit, or a termination, makes to its run's row. It always
/// clears the workflow task lease.
#[derive(Debug, Clone, PartialEq)]
pub struct RunChange<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The run's new `next_event_id`.
    pub next_event_id: u64,
    /// Bytes added to `history_bytes`.
    pub added_bytes: u64,
    /// A commit's new summary; a commit also clears the task failure. `None` (a termination)
    /// keeps both.
    pub summary: Option<&'a Payload>,
    /// When the run's next workflow task is ready (`None`: not ready).
    pub ready_at: Option<i64>,
    /// How the run closes, if it does.
    pub close: Option<RunClosing<'a>>,
    /// What a workflow task records of worker versioning (`None`, a termination: nothing).
    pub versioning: Option<RunVersioning<'a>>,
}

/// The versioning part of a [`RunChange`]: each field is written only where the run has none
/// yet, so that the run's first workflow task fixes them and later ones change nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunVersioning<'a> {
    /// The `versioning` column: a [`VersioningBehavior`](crate::data::versioning::VersioningBehavior)'s
    /// name, or [`UNVERSIONED`](crate::data::versioning::UNVERSIONED).
    pub behavior: &'static str,
    /// The build a pinned run stays on (`None`: the run keeps the build it has).
    pub build_id: Option<&'a str>,
}

/// The closing part of a [`RunChange`].
#[derive(Debug, Clone, PartialEq)]
pub struct RunClosing<'a> {
    /// The final status.
    pub status: RunStatus,
    /// Close time.
    pub closed_ms: i64,
    /// The result of a completed run (`None` keeps the stored one).
    pub result: Option<&'a Payload>,
    /// The failure message of a failed, cancelled or terminated run (`None` keeps the stored
    /// one).
    pub failure: Option<&'a str>,
}

/// A workflow task lease to give.
#[derive(Debug, Clone, PartialEq)]
pub struct RunLease<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The worker taking it.
    pub owner: &'a str,
    /// When it expires.
    pub until_ms: i64,
    /// The build id of the engine taking it: [`lease_if_free`](RunTable::lease_if_free) leaves
    /// a run whose build is another one alone (a run without one is anyone's).
    pub build_id: Option<&'a str>,
}

/// An update record to write.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRow<'a> {
    /// The continue-as-new chain it belongs to.
    pub chain_id: &'a str,
    /// The run it is delivered to (kept from the first write).
    pub run_id: &'a str,
    /// The update id.
    pub update_id: &'a str,
    /// Its wire name.
    pub name: &'a str,
    /// Where it stands.
    pub state: &'a UpdateState,
}

/// An activity to insert: attempt 1, scheduled and visible at `scheduled_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewActivity<'a> {
    /// The run that scheduled it.
    pub run_id: &'a str,
    /// That run's workflow id.
    pub workflow_id: &'a str,
    /// That run's task queue (the activity's own, if its options name one, comes first: see
    /// [`queue`](Self::queue)).
    pub task_queue: &'a str,
    /// What to run.
    pub task: &'a NewActivityTask,
    /// Schedule time.
    pub scheduled_ms: i64,
    /// Leased at once, its attempt started at `scheduled_ms`: (owner, attempt deadline, lease
    /// expiry).
    pub lease: Option<(&'a str, i64, i64)>,
}

impl NewActivity<'_> {
    /// The task queue its attempts count under: its options' own, else its run's.
    pub fn queue(&self) -> &str {
        self.task.options.queue_or(self.task_queue)
    }

    /// Whether it was sent to a task queue, so that only polls serving that queue lease it.
    pub fn pinned(&self) -> bool {
        self.task.options.task_queue.is_some()
    }

    /// The schedule-to-close deadline, if the options set one.
    pub fn schedule_deadline_ms(&self) -> Option<i64> {
        self.task.options.schedule_to_close.map(|d| {
            self.scheduled_ms
                .saturating_add(crate::data::activity::duration_ms(d))
        })
    }
}

/// One attempt of an activity: a call about an attempt that is no longer current changes
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attempt<'a> {
    /// The run that scheduled the activity.
    pub run_id: &'a str,
    /// The activity's seq.
    pub seq: u32,
    /// The attempt, from 1.
    pub attempt: u32,
}

/// What a heartbeat needs to know of an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseState {
    /// The activity's options.
    pub options: ActivityOptions,
    /// The attempt's start-to-close deadline, if it is leased.
    pub attempt_deadline_ms: Option<i64>,
    /// When its lease expires, if it is leased.
    pub lease_until_ms: Option<i64>,
    /// Who holds the lease.
    pub lease_owner: Option<String>,
}

/// A heartbeat to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat<'a> {
    /// The attempt.
    pub attempt: Attempt<'a>,
    /// Its details, if it sent any (else the last ones are kept).
    pub details: Option<&'a Payload>,
    /// The lease's new expiry.
    pub lease_until_ms: i64,
}

/// The next attempt of an activity to schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry<'a> {
    /// The attempt that failed.
    pub attempt: Attempt<'a>,
    /// When the next attempt becomes visible.
    pub visible_at_ms: i64,
    /// Why the attempt failed.
    pub failure: &'a ActivityFailure,
}

/// The `runs` table.
pub trait RunTable {
    /// The run `run_id`.
    fn load_run(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<RunRow>, StoreError>> + Send;

    /// The latest run (last created) of `workflow_id`.
    fn latest_run(
        &mut self,
        workflow_id: &str,
    ) -> impl Future<Output = Result<Option<RunRow>, StoreError>> + Send;

    /// Inserts the row of a run as just created (running, at event 2, an empty summary),
    /// ready at its creation time, on the current build of its task queue if it has one (in
    /// the same statement). A taken run id is a `Backend` error.
    fn insert_run(
        &mut self,
        run: &RunRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Applies a [`RunChange`].
    fn update_run(
        &mut self,
        change: &RunChange<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Makes the run's workflow task ready at `at_ms`, unless it is ready earlier already.
    fn set_ready(
        &mut self,
        run_id: &str,
        at_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets when the run's first workflow task is due (its start delay) and makes it ready
    /// then, whatever its ready time was.
    fn delay_start(
        &mut self,
        run_id: &str,
        start_at_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The latest created running run of `workflow_type` with debounce key `key`, if any. A
    /// store whose transactions run at once takes a lock of the type and key first, held to
    /// the end of the transaction, so that two starts with one key cannot both miss a run.
    fn debounced_run(
        &mut self,
        workflow_type: &str,
        key: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// Sets the run's debounce key.
    fn set_debounce_key(
        &mut self,
        run_id: &str,
        key: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Replaces the stored row of the run's first event (its `WorkflowStarted`, alone in its
    /// row) with `data`, and sets the run's `history_bytes` (a debounced start's new input).
    fn replace_started(
        &mut self,
        run_id: &str,
        data: &[u8],
        history_bytes: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Gives the workflow task lease.
    fn set_lease(
        &mut self,
        lease: &RunLease<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Gives the lease if the run is running, its lease is free or expired at `now_ms`, it
    /// has no build or the lease's build, and its start is due (no start time, or one not
    /// after `now_ms`); whether it did.
    fn lease_if_free(
        &mut self,
        lease: &RunLease<'_>,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Clears the lease if `owner` holds it, and makes the run ready at once.
    fn release_lease(
        &mut self,
        run_id: &str,
        owner: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Records a failed workflow task, clears the lease and makes the run ready at the
    /// failure's retry time.
    fn record_task_failure(
        &mut self,
        run_id: &str,
        failure: &TaskFailure,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Ids of running runs ready at the query's time whose lease is free or expired, oldest
    /// ready first (then oldest created), of the query's workflow types and task queues, with
    /// no build or the query's build: one statement, the build a column of the row it reads.
    fn ready_runs(
        &mut self,
        query: &TaskQuery<'_>,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Sets the run's build, whatever it was (an operator moving a run).
    fn set_run_build(
        &mut self,
        run_id: &str,
        build_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Runs matching the filter, newest first.
    fn list_runs(
        &mut self,
        filter: &ListFilter,
    ) -> impl Future<Output = Result<Vec<RunRecord>, StoreError>> + Send;

    /// How many runs [`list_runs`](Self::list_runs) would list with the filter (one count,
    /// reading no run).
    fn count_runs(
        &mut self,
        filter: &ListFilter,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// The `events` table: a row holds one or more consecutive encoded events (one commit's), keyed
/// by the first one's id.
pub trait EventTable {
    /// Stores consecutive encoded events, the first with id `first_id`, as one row.
    fn insert_events(
        &mut self,
        run_id: &str,
        first_id: u64,
        data: &[u8],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The rows of a run from the one holding event `from_id` on, in order: (first event id,
    /// encoded events).
    fn event_rows(
        &mut self,
        run_id: &str,
        from_id: u64,
    ) -> impl Future<Output = Result<Vec<(u64, Vec<u8>)>, StoreError>> + Send;

    /// The row whose first event is `event_id`, if any.
    fn event_row(
        &mut self,
        run_id: &str,
        event_id: u64,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, StoreError>> + Send;
}

/// The `inbox` table: messages waiting for a run's next workflow task, by a global arrival
/// sequence number.
pub trait InboxTable {
    /// Appends a message to the run's inbox.
    fn push_inbox(
        &mut self,
        run_id: &str,
        message: Message,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The run's inbox, in arrival order.
    fn inbox(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<Vec<InboxMessage>, StoreError>> + Send;

    /// Whether the run's inbox holds a message after sequence number `after` (any message when
    /// `None`).
    fn inbox_has_after(
        &mut self,
        run_id: &str,
        after: Option<u64>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the run's messages up to sequence number `through`.
    fn consume_inbox(
        &mut self,
        run_id: &str,
        through: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the run's whole inbox.
    fn delete_inbox(&mut self, run_id: &str)
        -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The `updates` and `signal_ids` tables: update records and signal dedupe ids, per
/// continue-as-new chain.
pub trait UpdateTable {
    /// Records a signal id in the chain; false if it was there already.
    fn insert_signal_id(
        &mut self,
        chain_id: &str,
        signal_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Whether the chain holds the signal id (without recording it).
    fn has_signal_id(
        &mut self,
        chain_id: &str,
        signal_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The update `id` of the chain.
    fn get_update(
        &mut self,
        chain_id: &str,
        id: &str,
    ) -> impl Future<Output = Result<Option<UpdateRecord>, StoreError>> + Send;

    /// Inserts an update, or sets the name and state of the chain's update with that id (whose
    /// run stays the one it was first written for). An update keeps its place in
    /// [`pending_updates`](Self::pending_updates) from its first write.
    fn put_update(
        &mut self,
        row: &UpdateRow<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Marks every update of the run that is not final `Abandoned`.
    fn abandon_updates(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The run's updates that are not final, in the order of their first write.
    fn pending_updates(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<Vec<UpdateRecord>, StoreError>> + Send;
}

/// The `start_requests` table: the request ids of starts, per workflow id, with the run each
/// start addressed and that run's continue-as-new chain. A chain's request ids go when
/// retention purges its last run.
pub trait StartRequestTable {
    /// The run that the start with `request_id` of `workflow_id` addressed, if recorded.
    fn start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// Records that the start with `request_id` of `workflow_id` addressed run `run_id` of
    /// chain `chain_id`; a request id already recorded for the workflow id is a `Backend`
    /// error.
    fn insert_start_request(
        &mut self,
        workflow_id: &str,
        request_id: &str,
        run_id: &str,
        chain_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The `activities` table: pending activities by (run id, seq), with their current attempt.
pub trait ActivityTable {
    /// Inserts an activity; a (run id, seq) already pending is a `Backend` error.
    fn insert_activity(
        &mut self,
        activity: &NewActivity<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the activity if this attempt is current; whether it did.
    fn delete_attempt(
        &mut self,
        attempt: &Attempt<'_>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes an activity whatever its attempt (none is fine).
    fn delete_activity(
        &mut self,
        run_id: &str,
        seq: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes every activity of the run.
    fn delete_activities(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The lease state of an attempt, if it is current.
    fn lease_state(
        &mut self,
        attempt: &Attempt<'_>,
    ) -> impl Future<Output = Result<Option<LeaseState>, StoreError>> + Send;

    /// Leases the task's current attempt to `owner`, with the task's `started_ms`,
    /// `attempt_deadline_ms` and `lease_until_ms`.
    fn lease_activity(
        &mut self,
        task: &ActivityTask,
        owner: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Records a heartbeat of the attempt if it is current.
    fn heartbeat_activity(
        &mut self,
        beat: &Heartbeat<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// If the attempt is current: the next attempt, visible at the retry's time, lease
    /// cleared, heartbeat details kept, failure recorded. Whether it was current.
    fn retry_activity(
        &mut self,
        retry: &Retry<'_>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Clears the lease of the attempt if it is current (its visible time is unchanged).
    fn release_activity(
        &mut self,
        attempt: &Attempt<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Unleased activities visible at the query's time and not past their schedule-to-close
    /// deadline, with the query's names and none of its blocked names, task queues and flow
    /// keys; by visible time, then run id and seq.
    fn visible_activities(
        &mut self,
        query: &TaskQuery<'_>,
    ) -> impl Future<Output = Result<Vec<ActivityTask>, StoreError>> + Send;

    /// At most `max` activities whose lease expired or whose schedule-to-close deadline passed
    /// at `now_ms`, by run id and seq.
    fn expired_activities(
        &mut self,
        now_ms: i64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<ActivityTask>, StoreError>> + Send;

    /// The run's activities, by seq.
    fn run_activities(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<Vec<ActivityTask>, StoreError>> + Send;
}

/// The `timers` table.
pub trait TimerTable {
    /// Inserts a timer; a (run id, seq) already pending is a `Backend` error.
    fn insert_timer(
        &mut self,
        run_id: &str,
        seq: u32,
        fire_at_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes a timer (none is fine).
    fn delete_timer(
        &mut self,
        run_id: &str,
        seq: u32,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes every timer of the run.
    fn delete_timers(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// At most `max` timers due at `now_ms`, by fire time, then run id and seq.
    fn due_timers(
        &mut self,
        now_ms: i64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<(String, u32)>, StoreError>> + Send;
}

/// The `schedules` table.
pub trait ScheduleTable {
    /// Inserts a schedule at version 1; false if the id is taken.
    fn insert_schedule(
        &mut self,
        row: &ScheduleRow,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Replaces the schedule's data and next check and increments its version, if its version
    /// is still `row.version`; whether it did.
    fn update_schedule(
        &mut self,
        row: &ScheduleRow,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// One schedule.
    fn get_schedule(
        &mut self,
        schedule_id: &str,
    ) -> impl Future<Output = Result<Option<ScheduleRow>, StoreError>> + Send;

    /// Every schedule, by id.
    fn list_schedules(
        &mut self,
    ) -> impl Future<Output = Result<Vec<ScheduleRow>, StoreError>> + Send;

    /// Deletes a schedule; whether it existed.
    fn delete_schedule(
        &mut self,
        schedule_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// At most `max` schedules whose next check is due at `now_ms`, soonest first.
    fn due_schedules(
        &mut self,
        now_ms: i64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<ScheduleRow>, StoreError>> + Send;
}

/// The `engines` table: the engines working on the store, with their liveness leases.
pub trait EngineTable {
    /// Inserts the engine, or replaces the row of the same id.
    fn put_engine(
        &mut self,
        engine: &EngineRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets the engine's liveness lease expiry; false if the engine is not registered.
    fn renew_engine(
        &mut self,
        engine_id: &str,
        lease_until_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the engine's row (none is fine).
    fn delete_engine(
        &mut self,
        engine_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Every registered engine, alive or not, by id.
    fn engines(&mut self) -> impl Future<Output = Result<Vec<EngineRecord>, StoreError>> + Send;
}

/// The `task_queue_builds` table (each task queue's current build) and the counts of running
/// runs by build that operators read.
pub trait BuildTable {
    /// Makes `build_id` the current build of `task_queue`.
    fn put_current_build(
        &mut self,
        task_queue: &str,
        build_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Moves the running runs of `task_queue` that follow its current build (auto-upgrade
    /// runs, and runs that have not run a workflow task yet) to `build_id`.
    fn route_to_build(
        &mut self,
        task_queue: &str,
        build_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The current builds: (task queue, build id), by task queue; of `task_queue` alone if
    /// given.
    fn current_builds(
        &mut self,
        task_queue: Option<&str>,
    ) -> impl Future<Output = Result<Vec<(String, String)>, StoreError>> + Send;

    /// The running runs that have a build, counted by (build id, `versioning` column: `None`
    /// for a run that has not run a task yet), by build id; of `task_queue` alone if given.
    fn count_by_build(
        &mut self,
        task_queue: Option<&str>,
    ) -> impl Future<Output = Result<Vec<(String, Option<String>, u64)>, StoreError>> + Send;
}

/// A closed run a purge may delete, with what its dedupe ids are keyed by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedRun {
    /// The run.
    pub run_id: String,
    /// Its workflow id.
    pub workflow_id: String,
    /// Its continue-as-new chain (whose runs all share the workflow id).
    pub chain_id: String,
}

/// The deletes of a purge (see `rules/purge.rs`): each one statement over a batch of runs (or
/// of their continue-as-new chains), so that a batch of hundreds of runs costs a handful of
/// statements.
pub trait PurgeTable {
    /// At most `max` closed runs whose close time is before `closed_before_ms`, oldest close
    /// first (then oldest created). A store whose writers lock rows may skip runs another
    /// transaction holds: a later batch purges them.
    fn closed_runs(
        &mut self,
        closed_before_ms: i64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<ClosedRun>, StoreError>> + Send;

    /// How many closed runs closed before `closed_before_ms`.
    fn count_closed_runs(
        &mut self,
        closed_before_ms: i64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes the rows of these runs (none is fine).
    fn delete_runs(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the history events of these runs.
    fn delete_runs_events(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the inbox messages of these runs.
    fn delete_runs_inbox(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the activities of these runs.
    fn delete_runs_activities(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the timers of these runs.
    fn delete_runs_timers(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Those of these chains, given as (workflow id, chain id), that some run still belongs
    /// to.
    fn chains_in_use(
        &mut self,
        chains: &[(String, String)],
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Deletes the update records of these chains.
    fn delete_chains_updates(
        &mut self,
        chain_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the signal dedupe ids of these chains.
    fn delete_chains_signal_ids(
        &mut self,
        chain_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the start request ids of these chains.
    fn delete_chains_start_requests(
        &mut self,
        chain_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The `search_attributes` and `memos` tables: the typed key-values lists find runs by (one
/// row per run and key: its kind and the canonical text of its value, indexed by key and
/// value), and each run's memo.
pub trait SearchTable {
    /// Sets these search attributes of the run, replacing the values of keys it had.
    fn put_search_attributes(
        &mut self,
        run_id: &str,
        attributes: &SearchAttributes,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The run's search attributes (a stored row that does not read back is skipped).
    fn search_attributes(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<SearchAttributes, StoreError>> + Send;

    /// Sets the run's memo (an encoded [`Memo`](crate::data::search::Memo)).
    fn put_memo(
        &mut self,
        run_id: &str,
        memo: &Payload,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The run's encoded memo, if it has one.
    fn memo(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<Payload>, StoreError>> + Send;

    /// Deletes the search attributes and memos of these runs.
    fn delete_runs_search(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// One transaction on a store's tables: every table's primitives, plus what spans tables.
///
/// A lease held by a registered engine whose liveness lease expired counts as expired
/// (`ready_runs`, `lease_if_free`, `expired_activities`); a lease held by an owner that is not
/// registered (a test, an older engine) lasts until its own expiry.
pub trait Tx:
    RunTable
    + EventTable
    + InboxTable
    + UpdateTable
    + StartRequestTable
    + ActivityTable
    + TimerTable
    + ScheduleTable
    + EngineTable
    + PurgeTable
    + SearchTable
    + BuildTable
    + FlowTable
    + QueueTable
    + StreamTable
    + FeedTable
    + Send
{
    /// The earliest time after `now_ms` at which something becomes due: a timer, a running
    /// run's ready time or lease expiry, an activity's visible time (unleased) or lease expiry
    /// (leased) or schedule-to-close deadline, a schedule's next check, an engine's liveness
    /// lease expiry.
    fn next_wakeup(
        &mut self,
        now_ms: i64,
    ) -> impl Future<Output = Result<Option<i64>, StoreError>> + Send;

    /// Opens a nested savepoint (one level) inside the rule's transaction.
    fn savepoint(&mut self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Undoes every change since [`savepoint`](Self::savepoint); the savepoint stays open.
    fn rollback_to_savepoint(&mut self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Closes the savepoint, keeping its changes as part of the enclosing transaction.
    fn release_savepoint(&mut self) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// [`load_run`](RunTable::load_run), and, when `inbox_after` is given, whether the run's
    /// inbox holds a message past it ([`inbox_has_after`](InboxTable::inbox_has_after); `false`
    /// when the run is missing). A backend that can ask both in one round trip does so (a
    /// workflow task's commit asks both before anything else).
    fn load_run_and_peek_inbox(
        &mut self,
        run_id: &str,
        inbox_after: Option<Option<u64>>,
    ) -> impl Future<Output = Result<(Option<RunRow>, bool), StoreError>> + Send {
        async move {
            let row = self.load_run(run_id).await?;
            let waiting = match inbox_after {
                Some(after) if row.is_some() => self.inbox_has_after(run_id, after).await?,
                _ => false,
            };
            Ok((row, waiting))
        }
    }

    /// The read of a commit without a lease, whose worker says what the run's row is
    /// ([`TaskCommit::assumed`](crate::store::TaskCommit::assumed)): the row and whether the
    /// run's inbox holds any message, as
    /// [`load_run_and_peek_inbox`](Self::load_run_and_peek_inbox) with `Some(None)` answers
    /// them. A backend may answer `assumed` (unleased) and `false` without reading, provided
    /// its transaction then fails unless the stored row is still running at `assumed`'s
    /// `next_event_id` and `history_bytes`, unleased, on no build, and the inbox is empty;
    /// the failure must let the caller run the commit again with a read (a `Busy` error).
    fn assume_run(
        &mut self,
        run_id: &str,
        assumed: &RunRecord,
    ) -> impl Future<Output = Result<(Option<RunRow>, bool), StoreError>> + Send {
        let _ = assumed;
        self.load_run_and_peek_inbox(run_id, Some(None))
    }

    /// Writes a new run: its row as just created ([`insert_run`](RunTable::insert_run)), with
    /// `first` applied if given ([`update_run`](RunTable::update_run): its first workflow
    /// task, committed with the start), and its `WorkflowStarted` event (`started`, event 1,
    /// [`insert_events`](EventTable::insert_events)). A backend that can write them in one
    /// statement does so.
    fn insert_new_run(
        &mut self,
        run: &RunRecord,
        started: &[u8],
        first: Option<&RunChange<'_>>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            self.insert_run(run).await?;
            if let Some(change) = first {
                self.update_run(change).await?;
            }
            self.insert_events(&run.run_id, 1, started).await
        }
    }

    /// Stores a workflow task's events ([`insert_events`](EventTable::insert_events), first
    /// id `first_id`; nothing when `events` is empty) and applies the task's change to its
    /// run ([`update_run`](RunTable::update_run)); a change that closes the run also clears
    /// it ([`clear_run`](Tx::clear_run)). A backend that can make these changes in one
    /// statement does so.
    fn append_and_update_run(
        &mut self,
        first_id: u64,
        events: &[u8],
        change: &RunChange<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            if !events.is_empty() {
                self.insert_events(change.run_id, first_id, events).await?;
            }
            self.update_run(change).await?;
            if change.close.is_some() {
                self.clear_run(change.run_id).await?;
            }
            Ok(())
        }
    }

    /// Deletes the activity of a current attempt that a workflow task resolves
    /// ([`delete_attempt`](ActivityTable::delete_attempt)); a `Conflict` on its run if the
    /// attempt is no longer current. A backend may send the statement with the transaction's
    /// later ones and fail the transaction there (the rule writes on after it in any case).
    fn resolve_attempt(
        &mut self,
        attempt: &Attempt<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            if self.delete_attempt(attempt).await? {
                Ok(())
            } else {
                Err(attempt_gone(attempt))
            }
        }
    }

    /// Drops a closed run's inbox, activities and timers, and marks its unfinished updates
    /// `Abandoned` ([`delete_inbox`](InboxTable::delete_inbox),
    /// [`delete_activities`](ActivityTable::delete_activities),
    /// [`delete_timers`](TimerTable::delete_timers),
    /// [`abandon_updates`](UpdateTable::abandon_updates)). A backend that can make the four
    /// changes in one statement does so.
    fn clear_run(&mut self, run_id: &str) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            self.delete_inbox(run_id).await?;
            self.delete_activities(run_id).await?;
            self.delete_timers(run_id).await?;
            self.abandon_updates(run_id).await
        }
    }
}

/// The conflict of a workflow task that resolves an attempt that is no longer current.
pub fn attempt_gone(attempt: &Attempt<'_>) -> StoreError {
    StoreError::conflict(
        attempt.run_id,
        format!(
            "activity #{} attempt {} is no longer pending",
            attempt.seq, attempt.attempt
        ),
    )
}
