//! The primitives of queues of workflow starts (see [`Tx`](super::tx::Tx)): the
//! `workflow_queues` table of queue settings, and the `queued_runs` table, one row per run
//! started on a queue, held until its queue admits it.

use crate::data::queue::{QueueCount, QueueRow, QueuedStart};
use crate::error::StoreError;
use std::future::Future;

/// A run on a queue, as the admission reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedRun {
    /// The run.
    pub run_id: String,
    /// Its queue.
    pub queue: String,
    /// Whether its queue admitted it.
    pub admitted: bool,
    /// Its virtual start in its queue's fair queuing (see `rules/queues.rs`).
    pub vstart: f64,
}

/// The `workflow_queues` and `queued_runs` tables.
pub trait QueueTable {
    /// The settings of every queue, by name.
    fn workflow_queues(&mut self)
        -> impl Future<Output = Result<Vec<QueueRow>, StoreError>> + Send;

    /// The settings of queue `name`, if it has any. With `lock`, a store whose writers run at
    /// once (PostgreSQL) locks the row until the transaction ends, so that two admissions of
    /// one queue take turns.
    fn workflow_queue(
        &mut self,
        name: &str,
        lock: bool,
    ) -> impl Future<Output = Result<Option<QueueRow>, StoreError>> + Send;

    /// Inserts the settings, or replaces those of the same name.
    fn put_workflow_queue(
        &mut self,
        row: &QueueRow,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets the rate's token bucket of queue `name`.
    fn set_queue_tokens(
        &mut self,
        name: &str,
        tokens: f64,
        refilled_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes the settings of `name`; whether there were any.
    fn delete_workflow_queue(
        &mut self,
        name: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The virtual start of a run of fairness key `key` costing `cost` held on queue `queue`:
    /// `max(clock, pass)` of the queue's clock and the key's pass on it (the clock when the
    /// key has none); moves the key's pass to that plus `cost` (see `rules/fairness.rs`).
    fn queue_fair_turn(
        &mut self,
        queue: &str,
        key: &str,
        cost: f64,
    ) -> impl Future<Output = Result<f64, StoreError>> + Send;

    /// Moves the fair-queuing clock of queue `queue` to `vstart` if it is later.
    fn advance_queue_clock(
        &mut self,
        queue: &str,
        vstart: f64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Records that run `run_id` was started on a queue, held, with virtual start `vstart`,
    /// after every run recorded before it.
    fn insert_queued_run(
        &mut self,
        run_id: &str,
        start: &QueuedStart,
        vstart: f64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The run of queue `queue` with deduplication id `dedupe_id` that is still running (held
    /// or admitted), if any: its workflow id and run id.
    fn queue_dedupe_holder(
        &mut self,
        queue: &str,
        dedupe_id: &str,
    ) -> impl Future<Output = Result<Option<(String, String)>, StoreError>> + Send;

    /// The held runs of every queue whose run is running, by queue name, then in admission
    /// order (priority, lower first; then virtual start, lower first; then the order they
    /// were recorded).
    fn held_runs(&mut self) -> impl Future<Output = Result<Vec<QueuedRun>, StoreError>> + Send;

    /// How many admitted runs of queue `queue` are running.
    fn admitted_running(
        &mut self,
        queue: &str,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Marks run `run_id` admitted by its queue if it is still held; whether it was (another
    /// engine's pass may have admitted it since this one read it).
    fn mark_admitted(
        &mut self,
        run_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the queue rows of runs `run_ids` (purged or deleted).
    fn delete_queued_runs(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The queue rows of those of runs `run_ids` that were started on a queue, in one read,
    /// in any order.
    fn queued_runs(
        &mut self,
        run_ids: &[String],
    ) -> impl Future<Output = Result<Vec<QueuedRun>, StoreError>> + Send;

    /// Per queue with runs that are running (held, or admitted), by name: how many are held
    /// and how many admitted. A read: it retires nothing.
    fn queue_counts(&mut self) -> impl Future<Output = Result<Vec<QueueCount>, StoreError>> + Send;
}
