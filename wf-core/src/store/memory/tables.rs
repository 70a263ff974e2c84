//! The memory store's tables, what a transaction does with all of them (keep, undo,
//! savepoints), and the wake-up query that spans them.

use super::undo::{Journal, UndoMap};
use crate::data::flow::FlowRow;
use crate::data::message::Message;
use crate::data::payload::Payload;
use crate::data::queue::QueueRow;
use crate::data::run::RunStatus;
use crate::data::search::SearchValue;
use crate::data::update::UpdateRecord;
use crate::error::{BackendErrorKind, StoreError};
use crate::store::records::{ActivityTask, EngineRecord, ScheduleRow};
use crate::store::rules::tx::{RunRow, Tx};

/// Every table of the memory store: the [`Tx`] of [`MemoryStore`](super::MemoryStore).
/// Reached only through the store's lock.
#[derive(Default)]
pub struct MemoryTx {
    /// Runs by id.
    pub(super) runs: UndoMap<String, RunEntry>,
    /// Run ids by (workflow id, creation order): the last is the latest run.
    pub(super) by_workflow: UndoMap<(String, u64), String>,
    /// Encoded events by (run id, first event id of the row).
    pub(super) events: UndoMap<(String, u64), Vec<u8>>,
    /// Inbox messages by (run id, arrival order).
    pub(super) inbox: UndoMap<(String, u64), Message>,
    /// Updates by (chain id, update id), with their first-write order.
    pub(super) updates: UndoMap<(String, String), (u64, UpdateRecord)>,
    /// Signal dedupe ids by (chain id, signal id).
    pub(super) signal_ids: UndoMap<(String, String), ()>,
    /// Start request ids by (workflow id, request id): the run addressed and its chain.
    pub(super) start_requests: UndoMap<(String, String), (String, String)>,
    /// Pending activities by (run id, seq).
    pub(super) activities: UndoMap<(String, u32), ActivityRow>,
    /// Fire time of each pending timer by (run id, seq) ...
    pub(super) timers: UndoMap<(String, u32), i64>,
    /// ... and the same timers by (fire time, run id, seq): the order in which they fire.
    pub(super) due_timers: UndoMap<(i64, String, u32), ()>,
    /// Schedules by id.
    pub(super) schedules: UndoMap<String, ScheduleRow>,
    /// Engines by id.
    pub(super) engines: UndoMap<String, EngineRecord>,
    /// Search attributes by (run id, key).
    pub(super) search: UndoMap<(String, String), SearchValue>,
    /// Encoded memos by run id.
    pub(super) memos: UndoMap<String, Payload>,
    /// The current build of each task queue.
    pub(super) current_builds: UndoMap<String, String>,
    /// Flow limits by (scope kind, scope name, rule kind).
    pub(super) flow_limits: UndoMap<(String, String, String), FlowRow>,
    /// The settings of each queue of workflow starts, by name.
    pub(super) workflow_queues: UndoMap<String, QueueRow>,
    /// The runs started on a queue, by run id.
    pub(super) queued_runs: UndoMap<String, QueuedRow>,
    /// Stream entries by (run id, stream, offset).
    pub(super) streams: UndoMap<(String, String, u64), StreamRow>,
    /// The offsets of the stream entries written with an id, by (run id, stream, entry id):
    /// an activity's write looks its id up here (SQLite's and PostgreSQL's unique index).
    pub(super) stream_ids: UndoMap<(String, String, String), u64>,
    /// Published events by (workflow id, key): the run that set it and the value.
    pub(super) workflow_events: UndoMap<(String, String), (String, Payload)>,
    /// The feed of what runs do, by sequence number (see `feed.rs`).
    pub(super) feed: UndoMap<u64, super::feed::StoredFeedRow>,
    /// The pass of each fairness key (see `rules/fairness.rs`).
    pub(super) fair_passes: UndoMap<String, f64>,
    /// The virtual clock of fair queuing: one entry, absent until a lease moves it from 0.
    pub(super) fair_clock: UndoMap<(), f64>,
    /// The pass of each fairness key on each queue of workflow starts, by (queue, key).
    pub(super) queue_fair_passes: UndoMap<(String, String), f64>,
    /// The fair-queuing clock of each queue of workflow starts (absent: 0).
    pub(super) queue_fair_clocks: UndoMap<String, f64>,
    /// The last number given to a run, an inbox message, an update. Not undone: a failed call
    /// may leave a gap, which orders nothing differently.
    pub(super) last_seq: u64,
    /// The marks of the open savepoint.
    savepoint: Option<Vec<usize>>,
}

/// A run's row with its queue state.
#[derive(Clone)]
pub(super) struct RunEntry {
    pub(super) row: RunRow,
    /// Creation order, across all runs.
    pub(super) seq: u64,
    /// When its workflow task is ready.
    pub(super) ready_at: Option<i64>,
    /// The `versioning` column: a behaviour's name, `"unversioned"`, or `None` before the
    /// run's first workflow task.
    pub(super) versioning: Option<&'static str>,
    /// The debounce key of a debounced start's run.
    pub(super) debounce_key: Option<String>,
}

/// A stream entry: its value (`None` for the close) and the entry id an activity wrote it
/// with.
pub(super) type StreamRow = (Option<Payload>, Option<String>);

/// A run started on a queue of workflow starts.
#[derive(Clone)]
pub(super) struct QueuedRow {
    /// The order it was recorded in.
    pub(super) seq: u64,
    pub(super) queue: String,
    pub(super) priority: i32,
    pub(super) dedupe_id: Option<String>,
    /// Whether its queue admitted it.
    pub(super) admitted: bool,
    /// Its virtual start in its queue's fair queuing.
    pub(super) vstart: f64,
}

/// A pending activity: the task as returned to callers, plus its queue state.
#[derive(Clone)]
pub(super) struct ActivityRow {
    pub(super) task: ActivityTask,
    pub(super) visible_at: i64,
    pub(super) lease_owner: Option<String>,
    /// Its virtual start in fair queuing (see `rules/fairness.rs`).
    pub(super) vstart: f64,
}

/// The result of a primitive.
pub(super) type Result<T> = std::result::Result<T, StoreError>;

/// A duplicate key, as a SQL constraint reports it.
pub(super) fn taken(what: String) -> StoreError {
    StoreError::backend(BackendErrorKind::Invalid, what)
}

impl MemoryTx {
    /// Whether a lease held by `owner` until `until` is free at `now_ms`: it expired, or its
    /// owner is a registered engine whose liveness lease expired.
    /// `me` is the engine asking, whose own leases never count as lost (it is alive).
    pub(super) fn lease_free(
        &self,
        owner: Option<&str>,
        until: Option<i64>,
        now_ms: i64,
        me: Option<&str>,
    ) -> bool {
        let Some(owner) = owner else {
            return true;
        };
        until.is_some_and(|t| t <= now_ms)
            || (me != Some(owner)
                && self
                    .engines
                    .get(&owner.to_string())
                    .is_some_and(|e| e.lease_until_ms <= now_ms))
    }

    /// The next number of a sequence shared by runs, messages and updates (each only needs to
    /// grow).
    pub(super) fn next_seq(&mut self) -> u64 {
        self.last_seq += 1;
        self.last_seq
    }

    fn journals(&mut self) -> [&mut dyn Journal; 26] {
        [
            &mut self.runs,
            &mut self.by_workflow,
            &mut self.events,
            &mut self.inbox,
            &mut self.updates,
            &mut self.signal_ids,
            &mut self.start_requests,
            &mut self.activities,
            &mut self.timers,
            &mut self.due_timers,
            &mut self.schedules,
            &mut self.engines,
            &mut self.search,
            &mut self.memos,
            &mut self.current_builds,
            &mut self.flow_limits,
            &mut self.fair_passes,
            &mut self.fair_clock,
            &mut self.workflow_queues,
            &mut self.queued_runs,
            &mut self.queue_fair_passes,
            &mut self.queue_fair_clocks,
            &mut self.streams,
            &mut self.stream_ids,
            &mut self.workflow_events,
            &mut self.feed,
        ]
    }

    fn marks(&mut self) -> Vec<usize> {
        self.journals().iter().map(|j| j.mark()).collect()
    }

    fn undo_to(&mut self, marks: &[usize]) {
        for (journal, mark) in self.journals().into_iter().zip(marks) {
            journal.undo_to(*mark);
        }
    }

    /// Ends a transaction that succeeded: its changes stay.
    pub(super) fn keep(&mut self) {
        self.savepoint = None;
        for journal in self.journals() {
            journal.forget();
        }
    }

    /// Ends a transaction that failed: every change it made is undone.
    pub(super) fn undo(&mut self) {
        self.savepoint = None;
        for journal in self.journals() {
            journal.undo_to(0);
        }
    }
}

impl Tx for MemoryTx {
    async fn next_wakeup(&mut self, now_ms: i64) -> Result<Option<i64>> {
        let mut times: Vec<i64> = self.due_timers.range(..).map(|(k, _)| k.0).collect();
        let running = self
            .runs
            .values()
            .filter(|r| r.row.record.status == RunStatus::Running);
        for run in running {
            times.extend(run.ready_at);
            times.extend(run.row.lease_until);
        }
        for row in self.activities.values() {
            if row.lease_owner.is_none() {
                times.push(row.visible_at);
            } else {
                times.extend(row.task.lease_until_ms);
            }
            times.extend(row.task.schedule_deadline_ms());
        }
        times.extend(self.schedules.values().filter_map(|r| r.next_check_ms));
        times.extend(self.engines.values().map(|e| e.lease_until_ms));
        Ok(times.into_iter().filter(|t| *t > now_ms).min())
    }

    async fn savepoint(&mut self) -> Result<()> {
        self.savepoint = Some(self.marks());
        Ok(())
    }

    async fn rollback_to_savepoint(&mut self) -> Result<()> {
        let marks = self
            .savepoint
            .clone()
            .ok_or_else(|| StoreError::bug("no savepoint is open"))?;
        self.undo_to(&marks);
        Ok(())
    }

    async fn release_savepoint(&mut self) -> Result<()> {
        self.savepoint = None;
        Ok(())
    }
}
